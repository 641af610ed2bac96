#!/usr/bin/env bash
# Seed 001: md raid1 over legs with different max-transfer inherits the
# smallest; 4 MiB O_DIRECT writes reach no leg above its limit, the
# larger leg sees merged requests; again with 4 KiB logical blocks; then
# with the cap lifted.
#   blkemu-vm scenarios/md-raid1-mixed-limits.sh
# kernels: 6.1 6.12 (6.12 aligns md's splits to the physical block: 124K pieces with 4K blocks)
# budget: 80 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
modprobe nbd nbds_max=8
modprobe raid1
# MiB written through md0 in each experiment: 64, or 16 at quick scale
# (the suite's: 4 writes of 4M are still 33 pieces each on the slow leg
# and 512K merges on the fast one, and the three experiments went from
# 36 s alone to 161 s beside a loaded host at 64).
mib=64
[ "${BLKEMU_SCENARIO_SCALE:-full}" = quick ] && mib=16
bytes=$((mib << 20))

# run LBS SLOW_LIMIT FAST_LIMIT: one raid1 experiment.
run () {
  local lbs=$1 slow=$2 fast=$3
  local s=slow$lbs f=fast$lbs
  section "raid1, logical block $lbs, legs at $slow and $fast"
  disk_start $s size=256M logical-block-size=$lbs max-transfer=$slow oversize=error \
    latency-write=200us bandwidth=400M
  disk_start $f size=256M logical-block-size=$lbs max-transfer=$fast oversize=error \
    latency-write=200us bandwidth=400M
  "$ATTACH" nbd "$work/$s.sock" /dev/nbd0
  "$ATTACH" nbd "$work/$f.sock" /dev/nbd1
  md_create /dev/md0 1 /dev/nbd0 /dev/nbd1
  queue_limits nbd0 nbd1 md0
  local lbk=$((lbs / 1024)) want
  [ "$lbk" -ge 1 ] || lbk=1
  want=$(( $(cat /sys/block/nbd0/queue/max_sectors_kb) / lbk * lbk ))
  check "md0 max_sectors_kb ($(cat /sys/block/md0/queue/max_sectors_kb)) == smaller leg rounded to the block ($want)" \
    "$(cat /sys/block/md0/queue/max_sectors_kb)" -eq "$want"

  sync; sleep 0.5
  ctl $s reset; ctl $f reset
  dd if=/dev/zero of=/dev/md0 bs=4M count=$((mib / 4)) oflag=direct 2>&1 | tail -1 | sed 's/^/  dd: /'
  sync
  seen $s; seen $f
  local ms=$(( $(cat /sys/block/nbd0/queue/max_sectors_kb) * 1024 ))
  local mf=$(( $(cat /sys/block/nbd1/queue/max_sectors_kb) * 1024 ))
  check "slow leg: largest write $(max_size $s write) <= $ms" "$(max_size $s write)" -le "$ms"
  check "fast leg: largest write $(max_size $f write) <= $mf" "$(max_size $f write)" -le "$mf"
  check "fast leg: merged requests above the slow leg's limit ($(max_size $f write) > $ms)" "$(max_size $f write)" -gt "$ms"
  check "no leg refused a request" "$(( $(disk_stat $s .oversize.rejected) + $(disk_stat $f .oversize.rejected) ))" -eq 0
  for leg in $s $f; do
    local b; b=$(disk_stat $leg .ops.write.bytes)
    check "$leg leg: bytes written $b = $mib MiB (+ md superblock writes < 64K)" \
      "$b" -ge "$bytes" -a "$b" -lt $((bytes + 65536))
  done
  mdadm --stop /dev/md0 >/dev/null 2>&1
  "$ATTACH" detach /dev/nbd0; "$ATTACH" detach /dev/nbd1
  disk_stop $s; disk_stop $f
}

run 512 127K 512K
run 4096 124K 512K

section "the same legs with the cap lifted (max-transfer 512K on both)"
disk_start slow size=256M max-transfer=127K oversize=error latency-write=200us bandwidth=400M
disk_start fast size=256M max-transfer=512K oversize=error latency-write=200us bandwidth=400M
"$ATTACH" nbd "$work/slow.sock" /dev/nbd0
"$ATTACH" nbd "$work/fast.sock" /dev/nbd1
md_create /dev/md0 1 /dev/nbd0 /dev/nbd1
echo "  before: md0 max_sectors_kb=$(cat /sys/block/md0/queue/max_sectors_kb)"
mdadm --stop /dev/md0 >/dev/null 2>&1
ctl slow set max-transfer=512K
"$ATTACH" apply /dev/nbd0 $((512 << 10))
mdadm --assemble /dev/md0 /dev/nbd0 /dev/nbd1 >/dev/null 2>&1
queue_limits nbd0 nbd1 md0
check "md0 limit follows the lifted cap after re-assembly" "$(cat /sys/block/md0/queue/max_sectors_kb)" -eq 512
sync; ctl slow reset; ctl fast reset
dd if=/dev/zero of=/dev/md0 bs=4M count=$((mib / 4)) oflag=direct 2>&1 | tail -1 | sed 's/^/  dd: /'
seen slow
check "the once-slow leg now sees requests above 127K ($(max_size slow write))" "$(max_size slow write)" -gt $((127 << 10))
check "and none above 512K" "$(max_size slow write)" -le $((512 << 10))
mdadm --stop /dev/md0 >/dev/null 2>&1
"$ATTACH" detach /dev/nbd0; "$ATTACH" detach /dev/nbd1
disk_stop slow; disk_stop fast
finish
