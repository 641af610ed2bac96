#!/usr/bin/env bash
# boundary= through ublk: the kernel gets it as chunk_sectors and splits
# every request at its multiples before the device sees it.  One 1 MiB
# O_DIRECT write at offset 64K reaches a boundary=128K disk as
# 64K + 7 x 128K + 64K; md raid0 over two such disks splits at its own
# chunk and at theirs; no request reaches a disk across a boundary.
#   blkemu-vm --kernel 6.12 scenarios/ublk-boundary.sh
# Skips (77) without ublk_drv.
# blkemu-vm: needs ublk_drv
# budget: 50 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe raid0 2>/dev/null || true

# sizes NAME: the write sizes the disk saw, "SIZExCOUNT" ascending.
sizes () {
  disk_stat "$1" '.ops.write.sizes | to_entries | map(select(.key != "other"))
    | sort_by(.key | tonumber) | map("\(.key | tonumber / 1024)Kx\(.value)")
    | join(" ")'
}
b="size=256M,boundary=128K,max-transfer=1M,oversize=error,trace=$results"

section "one 1 MiB write at 64K on a boundary=128K disk"
dev=$(ublk_disk_start one "$b/one.trace") || exit 1
q=/sys/block/${dev#/dev/}/queue
check "chunk_sectors $(cat $q/chunk_sectors) = boundary 128K" "$(cat $q/chunk_sectors)" -eq 256
ctl one reset
dd if=/dev/urandom of="$dev" bs=1M count=1 seek=65536 oflag=direct,seek_bytes 2>/dev/null
seen one
check "the device saw 64K + 7 x 128K + 64K ($(sizes one))" "$(sizes one)" = "64Kx2 128Kx7"
check "none crossed a boundary ($(disk_stat one .boundary.crossed)), none refused ($(disk_stat one .ops.write.errors))" \
  "$(disk_stat one .boundary.crossed)/$(disk_stat one .ops.write.errors)" = 0/0
check "1 MiB arrived ($(disk_stat one .ops.write.bytes) bytes)" "$(disk_stat one .ops.write.bytes)" -eq $((1 << 20))
ublk_disk_stop one

section "md raid0 (chunk 256K) over two boundary=128K disks: 4 MiB writes at 64K"
d0=$(ublk_disk_start leg0 "$b/leg0.trace") || exit 1
d1=$(ublk_disk_start leg1 "$b/leg1.trace") || exit 1
md_create /dev/md0 0 "$d0" "$d1" -- --chunk=256
queue_limits "${d0#/dev/}" md0
ctl leg0 reset; ctl leg1 reset
fio --name=md --filename=/dev/md0 --ioengine=libaio --direct=1 --rw=write \
    --bs=4M --offset=64k --size=64M --iodepth=4 --output=/dev/null
for n in leg0 leg1; do
  seen $n
  check "$n: largest write $(max_size $n write) <= 128K, none crossed ($(disk_stat $n .boundary.crossed)) or refused ($(disk_stat $n .ops.write.errors))" \
    "$(max_size $n write)" -le $((128 << 10)) -a \
    "$(disk_stat $n .boundary.crossed)/$(disk_stat $n .ops.write.errors)" = 0/0
done
total=$(( $(disk_stat leg0 .ops.write.bytes) + $(disk_stat leg1 .ops.write.bytes) ))
check "the legs got the 64 MiB between them ($total bytes)" "$total" -eq $((64 << 20))
mdadm --stop /dev/md0 > /dev/null 2>&1
ublk_disk_stop leg0
ublk_disk_stop leg1
finish
