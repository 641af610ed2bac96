#!/usr/bin/env bash
# ublk: blkemu's limits become the device's own.  With nbd and loop the
# kernel makes up the hardware limits and blkemu-attach can only lower the
# soft one; through blkemu-ublk, max_hw_sectors_kb, block sizes, io_opt,
# discard limits and the tag count are what the spec says, md inherits
# them at assembly like it would from real disks, and the kernel splits
# before the device sees anything (nothing is refused as oversize).
#   blkemu-vm --kernel 6.12 scenarios/ublk-limits.sh
# Skips (77) on kernels without ublk_drv (Debian's 6.1).
# blkemu-vm: needs ublk_drv
# budget: 60 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe raid1
MB64=$((64 << 20))

# ublk_start ARGS...: run blkemu-ublk, wait for its devices; sets $ublk_pid
# and dev[NAME]=/dev/ublkbN.
declare -A dev
ublk_start () {
  rm -f "$work/ready"
  "$UBLK" --ready-file "$work/ready" "$@" > "$work/ublk.log" 2>&1 &
  ublk_pid=$!
  local i
  for i in $(seq 300); do
    [ -e "$work/ready" ] && break
    kill -0 $ublk_pid 2>/dev/null || { cat "$work/ublk.log"; echo "blkemu-ublk exited"; exit 1; }
    sleep 0.1
  done
  [ -e "$work/ready" ] || { cat "$work/ublk.log"; echo "blkemu-ublk: no devices after 30 s"; exit 1; }
  local name d
  while read -r name d; do dev[$name]=$d; done < "$work/ready"
  sed 's/^/  /' "$work/ublk.log"
  ublk_log_seen=$(wc -l < "$work/ublk.log")
}
# ublk_stop: SIGTERM, wait; what it said since start-up (stats written,
# any sanitizer report) is shown; returns its exit status.
ublk_stop () {
  kill -TERM $ublk_pid
  local rc=0
  wait $ublk_pid || rc=$?
  tail -n +$((ublk_log_seen + 1)) "$work/ublk.log" | sed 's/^/  /'
  return $rc
}
# spec NAME KEYS: a --disk spec with the scenario's control socket and stats
spec () { echo "name=$1,control=$work/$1.ctl,stats=$results/$1.json,trace=$results/$1.trace,$2"; }

section "two disks as ublk devices: 127K and 512K, 4K physical blocks on the second"
ublk_start \
  --disk "$(spec slow size=256M,max-transfer=127K,oversize=error,queue-depth=32,latency-write=200us,bandwidth=400M)" \
  --disk "$(spec fast size=256M,max-transfer=512K,oversize=error,physical-block-size=4096,min-io=4K,opt-io=1M,max-discard=1M,rotational=yes,latency-write=200us)"
s=${dev[slow]#/dev/} f=${dev[fast]#/dev/}
queue_limits "$s" "$f"
q () { cat "/sys/block/$1/queue/$2"; }
check "slow: max_hw_sectors_kb $(q $s max_hw_sectors_kb) = max-transfer 127K" "$(q $s max_hw_sectors_kb)" -eq 127
check "fast: max_hw_sectors_kb $(q $f max_hw_sectors_kb) = 512" "$(q $f max_hw_sectors_kb)" -eq 512
tags=$(cat /sys/block/$s/mq/0/nr_tags)
check "slow: $tags tags = queue-depth 32" "$tags" -eq 32
check "fast: physical_block_size $(q $f physical_block_size) = 4096" "$(q $f physical_block_size)" -eq 4096
check "fast: optimal_io_size $(q $f optimal_io_size) = 1M" "$(q $f optimal_io_size)" -eq $((1 << 20))
check "fast: minimum_io_size $(q $f minimum_io_size) = 4K" "$(q $f minimum_io_size)" -eq 4096
check "fast: rotational (rotational=yes) $(q $f rotational)" "$(q $f rotational)" -eq 1
check "fast: discard_max_hw_bytes $(q $f discard_max_hw_bytes) = max-discard 1M" "$(q $f discard_max_hw_bytes)" -eq $((1 << 20))
check "slow: a volatile write cache ($(q $s write_cache))" "$(q $s write_cache)" = "write back"
check "stats name the device ($(disk_stat slow .transport.device))" "$(disk_stat slow .transport.device)" = "${dev[slow]}"

section "4 MiB O_DIRECT writes straight to each device"
for n in slow fast; do
  ctl $n reset
  dd if=/dev/zero of="${dev[$n]}" bs=4M count=16 oflag=direct 2>&1 | tail -1 | sed 's/^/  dd: /'
  seen $n
done
check "slow: largest write $(max_size slow write) = 127K: the kernel split at the device's limit" \
  "$(max_size slow write)" -eq $((127 << 10))
check "fast: largest write $(max_size fast write) = 512K" "$(max_size fast write)" -eq $((512 << 10))
check "nothing refused as oversize ($(disk_stat slow .oversize.rejected) + $(disk_stat fast .oversize.rejected))" \
  "$(( $(disk_stat slow .oversize.rejected) + $(disk_stat fast .oversize.rejected) ))" -eq 0
check "slow: 64 MiB written ($(disk_stat slow .ops.write.bytes))" "$(disk_stat slow .ops.write.bytes)" -eq $MB64

section "md raid1 over the two: md inherits the hardware limit, not just the soft one"
md_create /dev/md0 1 "${dev[slow]}" "${dev[fast]}"
queue_limits "$s" "$f" md0
check "md0 max_hw_sectors_kb $(q md0 max_hw_sectors_kb) = 127 (from the slow leg)" "$(q md0 max_hw_sectors_kb)" -eq 127
check "md0 physical_block_size $(q md0 physical_block_size) = 4096 (the larger)" "$(q md0 physical_block_size)" -eq 4096
sync; ctl slow reset; ctl fast reset
dd if=/dev/zero of=/dev/md0 bs=4M count=16 oflag=direct 2>&1 | tail -1 | sed 's/^/  dd: /'
seen slow
check "through md, slow leg: largest write $(max_size slow write) <= 127K" "$(max_size slow write)" -le $((127 << 10))
check "through md, fast leg: md's 124K pieces merged by the leg's own queue ($(max_size fast write) > 127K, <= 512K)" \
  "$(max_size fast write)" -gt $((127 << 10)) -a "$(max_size fast write)" -le $((512 << 10))
mdadm --stop /dev/md0 >/dev/null 2>&1

section "queue depth: 128 random reads in flight, 2 ms each, the device holds 32"
ctl slow set latency-read=2ms; ctl slow reset
fio --name=qd --filename="${dev[slow]}" --direct=1 --ioengine=libaio --iodepth=128 \
  --rw=randread --bs=4k --runtime=2 --time_based --eta=never --output="$work/qd.out" || true
check "the device saw at most its 32 tags at once ($(disk_stat slow .queue_depth.max))" \
  "$(disk_stat slow .queue_depth.max)" -eq 32
ctl slow set latency-read=0

section "data, flush and discard"
if fio --name=v --eta=never --filename="${dev[fast]}" --direct=1 --ioengine=libaio --iodepth=8 \
    --numjobs=4 --rw=randwrite --bsrange=4k-1m --size=32M --offset_increment=32M \
    --verify=crc32c --verify_fatal=1 --verify_state_save=0 --group_reporting \
    --output="$work/fio.out"; then verify=ok; else verify=failed; cat "$work/fio.out"; fi
check "fio verify=crc32c, 4 jobs, 4K-1M writes through ublk: $verify" "$verify" = ok
ctl fast reset
dd if=/dev/urandom of="${dev[fast]}" bs=1M count=4 conv=fsync 2>/dev/null
check "fsync reaches the device as flushes ($(disk_stat fast .ops.flush.requests))" "$(disk_stat fast .ops.flush.requests)" -gt 0
blkdiscard -o 0 -l $((8 << 20)) "${dev[fast]}"
check "blkdiscard of 8M: trims $(disk_stat fast .ops.trim.requests), largest $(max_size fast trim) <= 1M" \
  "$(max_size fast trim)" -le $((1 << 20)) -a "$(disk_stat fast .ops.trim.bytes)" -eq $((8 << 20))
check "discarded range reads back as zeroes" \
  "$(dd if="${dev[fast]}" bs=1M count=8 iflag=direct 2>/dev/null | tr -d '\0' | wc -c)" -eq 0

section "an injected error reaches the reader, and the disk keeps serving"
ctl slow set error-mode=once error-op=read error-offset=0 error-length=64K error-errno=EIO
if dd if="${dev[slow]}" of=/dev/null bs=64K count=1 iflag=direct 2> "$work/dd.err"; then first=ok; else first=failed; fi
sed 's/^/  dd: /' "$work/dd.err" | head -2
if dd if="${dev[slow]}" of=/dev/null bs=64K count=1 iflag=direct 2>/dev/null; then second=ok; else second=failed; fi
check "the first read fails with the injected EIO ($first), the next is served ($second)" \
  "$first/$second" = failed/ok
check "as EIO, not a medium error's ENODATA (an injected fault, no bad sector)" \
  "$(grep -c 'Input/output error' "$work/dd.err")" -ge 1
check "the disk counted it ($(disk_stat slow .faults.errors) injected)" "$(disk_stat slow .faults.errors)" -ge 1

section "SIGTERM: devices removed, stats written"
ublk_stop
check "blkemu-ublk exited 0 on SIGTERM" "$?" -eq 0
check "${dev[slow]} is gone" ! -e "${dev[slow]}"
check "stats file written at exit ($(jq .ops.write.requests "$results/fast.json" 2>/dev/null) writes)" \
  "$(jq .ops.write.requests "$results/fast.json" 2>/dev/null || echo 0)" -gt 0
section "the kernel's other limits: a virtual boundary and discard geometry"
ublk_start --disk "$(spec geo size=64M,physical-block-size=4K,virt-boundary=4K,discard-granularity=64K,discard-alignment=4K,max-discard=1M)"
g=${dev[geo]#/dev/}
check "virt_boundary_mask $(q $g virt_boundary_mask) = virt-boundary 4K - 1" "$(q $g virt_boundary_mask)" -eq 4095
check "discard_granularity $(q $g discard_granularity) = 64K" "$(q $g discard_granularity)" -eq 65536
# ublk hands discard_alignment to the kernel, but the kernels we run show
# 0 here (measured on 6.12); the device applies it either way (below).
echo "  info  /sys/block/$g/discard_alignment: $(cat /sys/block/$g/discard_alignment) (discard-alignment=4K sent)"
check "max_discard_segments $(q $g max_discard_segments) = 1 (ublk_drv's only choice)" "$(q $g max_discard_segments)" -eq 1
dd if=/dev/urandom of="${dev[geo]}" bs=1M count=1 oflag=direct 2>/dev/null
ctl geo reset
blkdiscard -o 0 -l $((1 << 20)) "${dev[geo]}"
check "blkdiscard of 1M reached the device whole ($(disk_stat geo .ops.trim.bytes) bytes)" \
  "$(disk_stat geo .ops.trim.bytes)" -eq $((1 << 20))
check "64K units from 4K: the device freed 15 whole units and kept $(disk_stat geo .discard.kept_bytes) bytes (4K + 60K)" \
  "$(disk_stat geo .discard.kept_bytes)" -eq 65536
head_bytes=$(dd if="${dev[geo]}" bs=4K count=1 iflag=direct 2>/dev/null | tr -d '\0' | wc -c)
units=$(dd if="${dev[geo]}" bs=4K skip=1 count=240 iflag=direct 2>/dev/null | tr -d '\0' | wc -c)
check "the 4K before the first unit keeps its data ($head_bytes non-zero bytes), the units read zeroes ($units)" \
  "$head_bytes" -gt 0 -a "$units" -eq 0
ublk_stop

section "segment limits (max-segments and co.) need Linux 6.15: this kernel is $(uname -r)"
rm -f "$work/ready"
"$UBLK" --ready-file "$work/ready" --disk "name=seg,size=64M,max-segments=16,max-segment-size=64K" \
  > "$work/seg.log" 2>&1 &
seg_pid=$!
for i in $(seq 100); do [ -e "$work/ready" ] || ! kill -0 $seg_pid 2>/dev/null && break; sleep 0.1; done
sed 's/^/  /' "$work/seg.log"
if [ -e "$work/ready" ]; then
  sg=$(awk '{ print $2 }' "$work/ready"); sg=${sg#/dev/}
  check "max_segments $(q $sg max_segments) = 16" "$(q $sg max_segments)" -eq 16
  check "max_segment_size $(q $sg max_segment_size) = 64K" "$(q $sg max_segment_size)" -eq 65536
  kill -TERM $seg_pid; wait $seg_pid
else
  rc=0; wait $seg_pid || rc=$?
  check "refused (exit $rc) with the keys and the kernel named" \
    "$rc" -ne 0 -a -n "$(grep -F "max-segments=16 max-segment-size=64K: Linux $(uname -r)'s ublk_drv does not take UBLK_PARAM_TYPE_SEGMENT" "$work/seg.log")"
  check "no ublk device left behind ($(ls /sys/class/ublk-char 2>/dev/null | wc -l))" \
    "$(ls /sys/class/ublk-char 2>/dev/null | wc -l)" -eq 0
fi

section "a server killed with SIGKILL: the kernel stops its device, --delete-stale removes it"
ublk_start --disk "name=doomed,size=64M"
d=${dev[doomed]}
c=/dev/ublkc${d#/dev/ublkb}
kill -KILL $ublk_pid; wait $ublk_pid 2>/dev/null
for i in $(seq 100); do [ -e "$d" ] || break; sleep 0.1; done
check "$d went away with its server" ! -e "$d"
check "$c is left behind" -e "$c"
"$UBLK" --delete-stale 2>&1 | sed 's/^/  /'
check "--delete-stale removed $c" ! -e "$c"

section "--features: what this kernel's ublk_drv offers"
rc=0
"$UBLK" --features > "$work/features" 2>&1 || rc=$?
sed 's/^/  /' "$work/features"
check "--features answers (exit $rc)" "$rc" -eq 0
# the two blkemu-ublk's zoned disks need, in the driver since 6.6
check "user-copy offered" -n "$(grep -E '^  yes +user-copy ' "$work/features")"
check "zoned offered" -n "$(grep -E '^  yes +zoned ' "$work/features")"

for n in slow fast; do
  "$PLOT" --title "ublk-limits: $n" -o "$results/$n.svg" \
    "$results/$n.trace" 2>&1 | sed 's/^/  /'
done
check "a plot of each disk's trace in the results (slow.svg, fast.svg)" \
  -s "$results/slow.svg" -a -s "$results/fast.svg"
finish
