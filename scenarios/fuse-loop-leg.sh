#!/usr/bin/env bash
# raid1 with one nbd leg (127K) and one loop-over-blkemu-fuse leg (512K):
# both frontends, one core, the same stacked limit and invariants.
#   blkemu-vm scenarios/fuse-loop-leg.sh
# budget: 40 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
modprobe nbd nbds_max=4
modprobe raid1
modprobe fuse
modprobe loop
MB64=$((64 << 20))

disk_start nleg size=256M max-transfer=127K oversize=error latency-write=200us bandwidth=400M
"$ATTACH" nbd "$work/nleg.sock" /dev/nbd0
mkdir -p "$work/fmnt"
"$FUSE" "$work/fmnt" --disk name=fleg,size=256M,max-transfer=512K,oversize=error,latency-write=200us,bandwidth=400M,control="$work/fleg.ctl" \
  2> "$work/fuse.log" || { cat "$work/fuse.log"; exit 1; }
loopdev=$("$ATTACH" loop "$work/fmnt/fleg")
md_create /dev/md0 1 /dev/nbd0 "$loopdev"
section "queue limits"
queue_limits nbd0 "$loopdev" md0
check "md0 max_sectors_kb = the nbd leg's 127" "$(cat /sys/block/md0/queue/max_sectors_kb)" -eq 127
check "FUSE cap reported ($(disk_stat fleg .transport.fuse_max_request))" "$(disk_stat fleg .transport.fuse_max_request)" -ge $((512 << 10))

sync; ctl nleg reset; ctl fleg reset
section "4 MiB O_DIRECT writes to md0"
dd if=/dev/zero of=/dev/md0 bs=4M count=16 oflag=direct 2>&1 | tail -1 | sed 's/^/  dd: /'
sync
seen nleg; seen fleg
check "nbd leg: no write above 127K ($(max_size nleg write))" "$(max_size nleg write)" -le 130048
check "fuse leg: no write above its 512K ($(max_size fleg write))" "$(max_size fleg write)" -le $((512 << 10))
check "fuse leg: md's 127K pieces merged in the loop queue ($(max_size fleg write) > 127K)" "$(max_size fleg write)" -gt 130048
for leg in nleg fleg; do
  b=$(disk_stat $leg .ops.write.bytes)
  check "$leg: 64 MiB written ($b)" "$b" -ge "$MB64" -a "$b" -lt $((MB64 + 65536))
done

section "the fuse leg alone, at its own 512K"
mdadm --stop /dev/md0 >/dev/null 2>&1
ctl fleg reset
dd if=/dev/zero of="$loopdev" bs=4M count=16 oflag=direct 2>&1 | tail -1 | sed 's/^/  dd: /'
check "fuse leg: merged requests above 127K ($(max_size fleg write))" "$(max_size fleg write)" -gt 130048
check "fuse leg: none above 512K" "$(max_size fleg write)" -le $((512 << 10))
"$ATTACH" detach "$loopdev"
fusermount3 -u "$work/fmnt"
"$ATTACH" detach /dev/nbd0
disk_stop nleg
finish
