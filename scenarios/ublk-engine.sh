#!/usr/bin/env bash
# blkemu-ublk's engine: one thread per hardware queue, whatever the depth.
#  1. A deep queue: 2 hardware queues of 1024 tags under fio verify (two
#     jobs at iodepth 512, mixed sizes): the data reads back intact, the
#     disk holds more than the old 128-tag default at once, and the
#     server runs queues + 4 threads at most.
#  2. Shutdown under stall=3600s with 64 requests waiting: SIGTERM ends
#     the server within a second of an idle one's exit in the same guest
#     (the kernel's teardown of a ublk device under TCG is the rest), the
#     readers get errors, and stats= counts the 64 as cancelled.
#  3. Limits the kernel splits on: boundary=64K becomes chunk_sectors and
#     no request reaching the disk crosses 64K; max-transfer=127K with 4K
#     physical blocks is max_hw_sectors_kb 127, but the kernel aligns its
#     splits to the physical block: requests top out at 124K.
#  4. Reads of zeroes (a null disk, a memory disk's holes) come from the
#     zero page, not the tag's buffer: after writes filled every tag's
#     buffer with data, they still read back zeroes.
#   blkemu-vm --kernel 6.12 scenarios/ublk-engine.sh
# Skips (77) without ublk_drv.
# blkemu-vm: needs ublk_drv
# budget: 40 s
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
# The reference: an idle server's SIGTERM to exit, in this guest now
# (the kernel's teardown of a ublk device, slower under TCG as the
# host's load grows); what the 64 stalled reads may add is 1 s.
start_ublk idle --drain-timeout 0 --disk "name=idle,size=64M"
t0=$(date +%s%N)
kill -TERM $pid
wait $pid || true
idle_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
# The stall is set once the device is up: the kernel reads the partition
# table while the device starts.
# --drain-timeout 0: the reads are not let finish (by default a stop
# gives them 5 s; scenarios/ublk-recovery.sh checks that drain).
start_ublk stall --drain-timeout 0 --disk "name=stall,size=64M,stats=$results/stall.json,control=$work/stall.ctl"
ctl stall set stall=3600s > /dev/null
readers=()
for i in $(seq 0 63); do
  # every other block: adjacent reads would be merged into one request
  dd if="$dev" of=/dev/null bs=4k count=1 skip=$((i * 2)) iflag=direct status=none 2>/dev/null &
  readers+=($!)
done
for i in $(seq 300); do
  [ "$(disk_stat stall .in_flight)" = 64 ] && break
  sleep 0.1
done
alive=0
for p in "${readers[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
check "64 readers waiting on the stalled disk ($alive)" "$alive" -eq 64
t0=$(date +%s%N)
kill -TERM $pid
rc=0
wait $pid || rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "  SIGTERM to exit: $took ms (exit $rc); an idle server: $idle_ms ms"
check "blkemu-ublk exited within 1 s of an idle one's exit ($took ms, idle $idle_ms ms)" \
  "$took" -le $((idle_ms + 1000))
failed=0
for p in "${readers[@]}"; do wait "$p" || failed=$((failed + 1)); done
check "every reader got an error ($failed of 64)" "$failed" -eq 64
cancelled=$(jq -r .cancelled "$results/stall.json" 2>/dev/null || echo none)
check "stats written, 64 requests cancelled ($cancelled)" "$cancelled" = 64

section "reads of zeroes after writes filled the tags' buffers"
start_ublk zeroes --disk "name=nul,backend=null,size=64M,queue-depth=4" \
  --disk "name=mem,backend=memory,size=64M,queue-depth=4"
nul=$(awk '$1 == "nul" { print $2 }' "$work/ready")
mem=$(awk '$1 == "mem" { print $2 }' "$work/ready")
head -c 8M /dev/urandom > "$work/random"
# Reads of zeroes first (the tags' buffers zeroed), then data through
# the same buffers, then reads of zeroes again.
for d in $nul $mem; do
  dd if="$d" of=/dev/null bs=128k count=128 iflag=direct status=none
  dd if="$work/random" of="$d" bs=128k oflag=direct status=none
done
# null: the writes were dropped; memory: 8M of data, then holes.
check "null disk: 8M read back after 8M of writes is zeroes" \
  "$(dd if="$nul" bs=128k count=64 iflag=direct status=none | cmp - <(head -c 8M /dev/zero) 2>&1 || echo differ)" = ""
dd if="$mem" of="$work/back" bs=128k count=128 iflag=direct status=none
check "memory disk: the 8M written read back" \
  "$(head -c 8M "$work/back" | cmp - "$work/random" 2>&1 || echo differ)" = ""
check "memory disk: the 8M of holes after it read as zeroes" \
  "$(tail -c 8M "$work/back" | cmp - <(head -c 8M /dev/zero) 2>&1 || echo differ)" = ""
kill -TERM $pid
wait $pid || true

section "limits the kernel splits on: boundary (chunk_sectors), 127K over 4K blocks"
start_ublk limits \
  --disk "name=chunk,size=64M,boundary=64K,oversize=error,control=$work/chunk.ctl" \
  --disk "name=pb4k,size=64M,max-transfer=127K,physical-block-size=4K,control=$work/pb4k.ctl"
chunk=$(awk '$1 == "chunk" { print $2 }' "$work/ready")
pb4k=$(awk '$1 == "pb4k" { print $2 }' "$work/ready")
q () { cat "/sys/block/${1#/dev/}/queue/$2"; }
check "chunk: chunk_sectors $(q $chunk chunk_sectors) = boundary 64K" "$(q $chunk chunk_sectors)" -eq 128
for d in $chunk $pb4k; do
  fio --name=big --filename="$d" --ioengine=libaio --direct=1 --rw=randwrite \
      --bs=1M --iodepth=4 --size=32M --offset=4k --output=/dev/null 2>&1 | head -5
done
check "chunk: largest write $(max_size chunk write) <= 64K" "$(max_size chunk write)" -le $((64 << 10))
check "chunk: no request reached the disk across a boundary ($(disk_stat chunk .boundary.crossed) crossed, $(disk_stat chunk .ops.write.errors) errors)" \
  "$(disk_stat chunk .boundary.crossed)/$(disk_stat chunk .ops.write.errors)" = 0/0
check "pb4k: max_hw_sectors_kb $(q $pb4k max_hw_sectors_kb) = 127" "$(q $pb4k max_hw_sectors_kb)" -eq 127
check "pb4k: largest write $(max_size pb4k write) = 124K: splits aligned to the 4K physical block" \
  "$(max_size pb4k write)" -eq $((124 << 10))
kill -TERM $pid
rc=0
wait $pid || rc=$?
check "blkemu-ublk stopped cleanly (exit $rc)" $rc -eq 0

finish
