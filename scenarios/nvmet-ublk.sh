#!/usr/bin/env bash
# The kernel's NVMe target over blkemu-ublk disks: the host's nvme driver
# on a disk blkemu emulates, with what qemu's NVMe controller cannot
# carry.  A 4K/16K disk becomes a namespace whose NAWUPF the host reads
# as its atomic write unit, min-io and opt-io as NPWG and NOWS; two loop
# ports give native NVMe multipath, and an ANA change on one path moves
# the I/O to the other; fio verifies through the head node; a bad block
# arrives as the NVMe status nvmet makes of it; a crash keeps exactly
# what the host flushed; a zoned disk becomes a ZNS namespace with
# blkemu's own zones.  blkemu-nvmet(8) does the configfs work.
#   blkemu-vm --kernel 6.12 scenarios/nvmet-ublk.sh
# Skips (77) without ublk_drv (Debian's 6.1).
# blkemu-vm: needs ublk_drv nvmet nvme-loop
# budget: 90 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe -a nvmet nvme-loop 2>/dev/null ||
  { echo "SKIP: this kernel has no nvmet or nvme-loop"; exit 77; }
trap '"$NVMET" remove a 2>/dev/null; "$NVMET" remove z 2>/dev/null' EXIT

section "a 4K/16K disk as a namespace on two paths"
a=$(ublk_disk_start a size=256M logical-block-size=4096 physical-block-size=16K \
  min-io=16K opt-io=256K max-transfer=128K oversize=error write-cache=yes) ||
  { cat "$work/a.log"; exit 1; }
ns=$("$NVMET" export a "$a" --paths 2 --model "blkemu nvmet" --firmware 0.9 2> "$work/export.err")
sed 's/^/  /' "$work/export.err"
check "blkemu-nvmet export printed the namespace's device ($ns)" -b "$ns"
mapfile -t ctrls < <(sed -n 's/.*path(s): //p' "$work/export.err" | tr ' ' '\n')
check "two controllers, one a path (${ctrls[*]})" "${#ctrls[@]}" -eq 2
path1=$(basename /sys/class/nvme/"${ctrls[0]}"/nvme*n1)
path2=$(basename /sys/class/nvme/"${ctrls[1]}"/nvme*n1)
queue_limits "$a" "$ns" "$path1"
h=/sys/block/${ns#/dev/}/queue p=/sys/block/$path1/queue
echo "  $path1: atomic_write_unit_min/max_bytes $(cat $p/atomic_write_unit_min_bytes 2>/dev/null)/$(cat $p/atomic_write_unit_max_bytes 2>/dev/null); head: $(cat $h/atomic_write_unit_max_bytes 2>/dev/null)"
check "logical block 4096 (the LBA format)" "$(cat $h/logical_block_size)" -eq 4096
check "physical block 16K (NPWG from min-io, NAWUPF from the physical block)" \
  "$(cat $h/physical_block_size)" -eq 16384
check "io_min 16K, io_opt 256K (NPWG, NOWS)" \
  "$(cat $h/minimum_io_size)/$(cat $h/optimal_io_size)" = 16384/262144
if [ -e $p/atomic_write_unit_max_bytes ]; then
  check "the path's atomic write unit is the 16K physical block (NAWUPF 3)" \
    "$(cat $p/atomic_write_unit_max_bytes)" -eq 16384
fi
c=/sys/class/nvme/${ctrls[0]}
echo "  ${ctrls[0]}: model '$(cat $c/model)', firmware '$(cat $c/firmware_rev)', transport $(cat $c/transport), $(cat $c/address)"
check "the model and firmware blkemu-nvmet set" \
  "$(sed "s/ *$//" $c/model)/$(sed "s/ *$//" $c/firmware_rev)" = "blkemu nvmet/0.9"
check "both paths optimized" \
  "$(cat /sys/block/$path1/ana_state)/$(cat /sys/block/$path2/ana_state)" = optimized/optimized
"$NVMET" list | sed 's/^/  list: /'

section "fio verify through the head node; the disk's 128K cap still holds"
ctl a reset > /dev/null
fio --name=v --filename="$ns" --direct=1 --ioengine=libaio --iodepth=8 \
  --rw=randwrite --bsrange=4k-1m --size=24M --verify=crc32c --do_verify=1 \
  --randseed=7 --output="$work/fio.out" > /dev/null 2>&1
rc=$?
grep -E "err=|WRITE:|READ:" "$work/fio.out" | sed 's/^/  /'
check "fio wrote and verified 24M (exit $rc)" "$rc" -eq 0
check "every write reached the disk at most 128K ($(kib "$(max_size a write)")K)" \
  "$(max_size a write)" -le 131072

section "ANA: path 1 inaccessible, the I/O moves to path 2"
sectors () { awk '{ print $3 + $7 }' "/sys/block/$1/stat"; }
"$NVMET" ana a 1 inaccessible | sed 's/^/  /'
check "the host sees path 1 inaccessible" "$(cat /sys/block/$path1/ana_state)" = inaccessible
s1=$(sectors "$path1") s2=$(sectors "$path2")
dd if=/dev/urandom of="$work/ana" bs=1M count=4 status=none
dd if="$work/ana" of="$ns" bs=1M seek=40 oflag=direct status=none
dd if="$ns" of="$work/ana.back" bs=1M skip=40 count=4 iflag=direct status=none
check "4M written and read back through the head" "$(cmp -s "$work/ana" "$work/ana.back" && echo same)" = same
echo "  sectors through path 1: +$(( $(sectors "$path1") - s1 )), path 2: +$(( $(sectors "$path2") - s2 ))"
check "none through the inaccessible path" "$(( $(sectors "$path1") - s1 ))" -eq 0
check "16384 sectors (8M) through path 2" "$(( $(sectors "$path2") - s2 ))" -ge 16384
"$NVMET" ana a 1 optimized | sed 's/^/  /'
check "path 1 optimized again" "$(cat /sys/block/$path1/ana_state)" = optimized

section "a bad block: the NVMe status nvmet makes of a medium error"
ctl a bad add $((100 << 20)) 4K > /dev/null
dmesg -C 2>/dev/null
dd if="$ns" of=/dev/null bs=64K skip=1600 count=1 iflag=direct 2> "$work/dd.err"
rc=$?
sed 's/^/  dd: /' "$work/dd.err" | head -2
status=$(dmesg | grep -o 'nvme[0-9a-z]*: I/O Cmd.*' | head -1)
echo "  kernel: ${status:-nothing logged}"
check "a 64K read over a bad 4K fails (dd exit $rc)" "$rc" -ne 0
check "as Access Denied (sct 0x2 / sc 0x86), nvmet's status for a medium error" \
  "$(grep -c 'sct 0x2 / sc 0x86' <<< "$status")" -eq 1
check "the reader gets ENODATA, as from a real disk's unreadable sector" \
  "$(grep -c 'No data available' "$work/dd.err")" -ge 1
check "the disk counted the unreadable reads" "$(disk_stat a .faults.medium_errors)" -gt 0
ctl a bad clear 0 256M > /dev/null

section "a crash keeps what the host flushed, and only that"
ctl a reset > /dev/null
head -c 1M /dev/urandom > "$work/kept"
head -c 1M /dev/urandom > "$work/lost"
dd if="$work/kept" of="$ns" bs=1M seek=60 oflag=direct conv=fsync status=none
dd if="$work/lost" of="$ns" bs=1M seek=61 oflag=direct status=none
echo "  cached: $(disk_stat a .write_cache.bytes) bytes; flushes: $(disk_stat a .ops.flush.requests)"
check "the host's fsync reached the disk as a flush (nvmet's VWC)" \
  "$(disk_stat a .ops.flush.requests)" -ge 1
ctl a crash > /dev/null
ctl a power-on > /dev/null
dd if="$ns" of="$work/kept.back" bs=1M skip=60 count=1 iflag=direct status=none
dd if="$ns" of="$work/lost.back" bs=1M skip=61 count=1 iflag=direct status=none
check "the flushed 1M survived" "$(cmp -s "$work/kept" "$work/kept.back" && echo same)" = same
check "the unflushed 1M did not" "$(cmp -s "$work/lost" "$work/lost.back" && echo same || echo lost)" = lost
check "the crash discarded writes ($(disk_stat a .faults.lost_writes))" "$(disk_stat a .faults.lost_writes)" -gt 0
"$NVMET" remove a
check "blkemu-nvmet remove a: its controllers gone" -z "$(ls /sys/class/nvme 2>/dev/null)"
ublk_disk_stop a

section "a zoned disk as a ZNS namespace"
z=$(ublk_disk_start z size=256M zoned=host-managed zone-size=16M max-open-zones=6 max-active-zones=8) ||
  { cat "$work/z.log"; exit 1; }
zhead=$("$NVMET" export z "$z" 2> "$work/export-z.err")
sed 's/^/  /' "$work/export-z.err"
check "exported ($zhead)" -b "$zhead"
q=/sys/block/${zhead#/dev/}/queue
echo "  $zhead: zoned=$(cat $q/zoned) nr_zones=$(cat $q/nr_zones) chunk_sectors=$(cat $q/chunk_sectors) max_open_zones=$(cat $q/max_open_zones) max_active_zones=$(cat $q/max_active_zones) zone_append_max_bytes=$(cat $q/zone_append_max_bytes)"
check "host-managed, 16 zones of 16M" \
  "$(cat $q/zoned)/$(cat $q/nr_zones)/$(cat $q/chunk_sectors)" = host-managed/16/32768
check "the open and active limits (6/8)" \
  "$(cat $q/max_open_zones)/$(cat $q/max_active_zones)" = 6/8
check "zone append carried (ZASL)" "$(cat $q/zone_append_max_bytes)" -gt 0
dd if=/dev/urandom of="$zhead" bs=1M count=3 seek=16 oflag=direct status=none
wp=$(blkzone report -o 32768 -c 1 "$zhead" | sed -n 's/.*wptr 0x0*\([0-9a-f]*\).*/\1/p')
echo "  zone 1 after 3M: $(blkzone report -o 32768 -c 1 "$zhead")"
check "zone 1's write pointer 3M in (0x${wp:-?} = 6144 sectors)" "$((16#${wp:-0}))" -eq 6144
check "the disk agrees: one zone implicitly open" \
  "$(disk_stat z '.zones.conditions.implicit_open')" -eq 1
dd if=/dev/zero of="$zhead" bs=4K count=1 seek=$(( (32 << 20) / 4096 + 16 )) oflag=direct status=none 2>/dev/null
check "a write off zone 2's write pointer fails" $? -ne 0
blkzone reset -o 32768 -c 1 "$zhead"
check "zone reset: zone 1 empty again on the disk" \
  "$(disk_stat z '.zones.conditions.implicit_open')" -eq 0
"$NVMET" remove z
ublk_disk_stop z
trap - EXIT
finish
