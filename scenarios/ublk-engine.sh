#!/usr/bin/env bash
# blkemu-ublk's engine: one thread per hardware queue, whatever the depth.
#  1. A deep queue: 2 hardware queues of 1024 tags under fio verify (two
#     jobs at iodepth 512, mixed sizes): the data reads back intact, the
#     disk holds more than the old 128-tag default at once, and the
#     server runs queues + 4 threads at most.
#  2. Shutdown under stall=3600s with 64 requests waiting: SIGTERM ends
#     the server within a second, the readers get errors, and stats=
#     counts the 64 as cancelled.
#   blkemu-vm --kernel 6.12 scenarios/ublk-engine.sh
# Skips (77) without ublk_drv.
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
queues=2
[ "$(nproc)" -ge 2 ] || queues=1

# start_ublk NAME ARGS...: serve, wait for the device; sets pid and dev.
start_ublk () {
  local name=$1; shift
  rm -f "$work/ready"
  "$UBLK" --ready-file "$work/ready" "$@" > "$work/$name.log" 2>&1 &
  pid=$!
  local i
  for i in $(seq 300); do [ -e "$work/ready" ] && break; sleep 0.1; done
  [ -e "$work/ready" ] || { cat "$work/$name.log"; echo "blkemu-ublk did not start"; exit 1; }
  dev=$(awk '{ print $2 }' "$work/ready")
}

section "deep queue: $queues hardware queue(s) x 1024 tags, fio verify"
start_ublk deep --queues $queues --disk "name=deep,size=256M,queue-depth=1024,latency-read=100ms,latency-write=100ms,control=$work/deep.ctl"
b=${dev#/dev/}
check "$queues hardware queue(s) of 1024 tags" \
  "$(ls "/sys/block/$b/mq" | wc -l)/$(cat "/sys/block/$b/mq/0/nr_tags")" = "$queues/1024"
# The scheduler would hold requests back: the device should see them.
echo none > "/sys/block/$b/queue/scheduler" 2>/dev/null || true
fio --name=deep --filename="$dev" --ioengine=libaio --direct=1 --rw=randwrite \
    --bsrange=4k-64k --iodepth=512 --iodepth_batch_submit=64 --numjobs=2 --size=64M \
    --offset_increment=64M --verify=crc32c --verify_fatal=1 --do_verify=1 \
    --group_reporting --output="$work/fio-deep.out" > /dev/null 2>&1 &
fio_pid=$!
maxthreads=0
while kill -0 $fio_pid 2>/dev/null; do
  n=$(ls /proc/$pid/task 2>/dev/null | wc -l)
  if [ "$n" -gt "$maxthreads" ]; then
    maxthreads=$n
    names=$(cat /proc/$pid/task/*/comm 2>/dev/null | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
  fi
  sleep 0.2
done
rc=0
wait $fio_pid || rc=$?
[ $rc -eq 0 ] || { sed 's/^/  /' "$work/fio-deep.out" | tail -20; sed 's/^/  /' "$work/deep.log"; dmesg | tail -30; }
check "fio verify: written data read back intact (exit $rc)" $rc -eq 0
grep -q "verify" "$work/fio-deep.out" && grep -E "(WRITE|READ):" "$work/fio-deep.out" | sed 's/^ */  /'
qdmax=$(disk_stat deep .queue_depth.max)
echo "  the disk held up to $qdmax requests at once; the server ran up to $maxthreads threads ($names)"
check "more than 128 requests in the disk at once ($qdmax)" "$qdmax" -gt 128
check "threads <= queues + 4 ($maxthreads <= $((queues + 4)))" "$maxthreads" -le $((queues + 4))
kill -TERM $pid
rc=0
wait $pid || rc=$?
check "blkemu-ublk stopped cleanly (exit $rc)" $rc -eq 0

section "shutdown under stall=3600s with 64 reads waiting"
# The stall is set once the device is up: the kernel reads the partition
# table while the device starts.
start_ublk stall --disk "name=stall,size=64M,stats=$results/stall.json,control=$work/stall.ctl"
ctl stall set stall=3600s > /dev/null
readers=()
for i in $(seq 0 63); do
  dd if="$dev" of=/dev/null bs=4k count=1 skip=$i iflag=direct status=none 2>/dev/null &
  readers+=($!)
done
sleep 3
alive=0
for p in "${readers[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
check "64 readers waiting on the stalled disk ($alive)" "$alive" -eq 64
t0=$(date +%s%N)
kill -TERM $pid
rc=0
wait $pid || rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "  SIGTERM to exit: $took ms (exit $rc)"
check "blkemu-ublk exited within 1 s of SIGTERM ($took ms)" "$took" -le 1000
failed=0
for p in "${readers[@]}"; do wait "$p" || failed=$((failed + 1)); done
check "every reader got an error ($failed of 64)" "$failed" -eq 64
cancelled=$(jq -r .cancelled "$results/stall.json" 2>/dev/null || echo none)
check "stats written, 64 requests cancelled ($cancelled)" "$cancelled" = 64

finish
