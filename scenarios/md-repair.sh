#!/usr/bin/env bash
# Latent sector errors repaired from redundancy: md raid1 over two blkemu
# disks, a stretch of leg a made unreadable (`bad add`: reads fail with a
# medium error until written).  `echo check > sync_action` reads both
# legs; md's read-error handling fetches the data from leg b and writes
# it back to leg a, which heals the sectors.  The array keeps both legs,
# the data reads back whole, and the disks' counters say what happened.
#   blkemu-vm scenarios/md-repair.sh
# budget: 70 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
modprobe nbd nbds_max=4
modprobe raid1 2>/dev/null || true
spec=(size=128M latency-read=50us latency-write=50us)
disk_start a "${spec[@]}"
disk_start b "${spec[@]}"
raid1_on a b

section "data on the array, then 3 stretches of leg a unreadable"
head -c $((64 << 20)) /dev/urandom > "$work/data"
dd if="$work/data" of=/dev/md0 bs=1M oflag=direct status=none
sync
data_off=$(( $(cat /sys/block/md0/md/dev-nbd0/offset) * 512 ))
for mib in 8 21 40; do
  ctl a bad add $((data_off + (mib << 20))) 64K > /dev/null
done
echo "  leg a data offset $data_off; unreadable: $(ctl a bad)"
check "leg a has 3 unreadable ranges" "$(ctl a bad | cut -d' ' -f1)" = 3

section "md check reads both legs and repairs leg a from leg b"
md_check /dev/md0
echo "  sync_action $(cat /sys/block/md0/md/sync_action) after the check"
dmesg | grep -i "raid1.*\(read error\|corrected\|redirect\)" | tail -3 | sed 's/^/  kernel: /'
grep -A1 '^md0' /proc/mdstat | sed 's/^/  /'
errs=$(disk_stat a .faults.medium_errors)
check "leg a failed reads with a medium error ($errs)" "$errs" -ge 1
check "md rewrote every unreadable stretch: none left ($(ctl a bad))" "$(ctl a bad)" = 0
check "both legs still in the array" "$(grep -c '\[UU\]' /proc/mdstat)" -ge 1
check "leg b saw no medium errors" "$(disk_stat b .faults.medium_errors)" = 0
dd if=/dev/md0 of="$work/back" bs=1M count=64 iflag=direct status=none
check "the array's data reads back whole" "$(cmp -s "$work/data" "$work/back" && echo same)" = same
# Leg a itself, read directly past md: the repaired stretches hold the data.
dd if=/dev/nbd0 of="$work/leg" bs=1M skip="$data_off" count=64 \
  iflag=direct,skip_bytes status=none
check "leg a read directly holds the data, repaired stretches included" \
  "$(cmp -s "$work/data" "$work/leg" && echo same)" = same

mdadm --stop /dev/md0 > /dev/null 2>&1
for d in 0 1; do "$ATTACH" detach /dev/nbd$d > /dev/null; done
disk_stop a
disk_stop b
finish
