#!/usr/bin/env bash
# In the guest of test-vm-scenarios.sh: three disks the host serves on
# qemu's own controllers (blkemu-vm --frontend ...), checked through the
# guest's drivers (nvme, libata + sd, virtio_blk) and through blkemu-ctl
# on their bridged control ports.
#   n0: nvme, max-transfer=128K, 4K logical blocks, a write cache
#   n1: nvme, 4K blocks with 8 bytes of metadata, T10 PI type 1
#   s0: sata, 4K physical blocks, rpm=5400, product=WDC-WD5002ABYS, a
#       write cache
#   v0: virtio-blk, 16K physical, min-io 16K, opt-io 64K, max-discard 1M,
#       a write cache
# Prints "controllers: N checks, F failed" last; exits 0 when F is 0.
# The scenarios' helpers (check, $work, $CTL, $CRASHCHECK) serve here.
source "${BLKEMU_TOP:?run by blkemu-vm from a source tree}/scenarios/lib.sh" || exit 2
q () { cat "/sys/block/${1#/dev/}/queue/$2"; }
stat_of () { "$CTL" "$1" stats | jq -r "$2"; }
largest () { stat_of "$1" "[.ops.$2.sizes | keys[] | tonumber] | max // 0"; }
n0=$BLKEMU_DEV_N0 n1=$BLKEMU_DEV_N1 s0=$BLKEMU_DEV_S0 v0=$BLKEMU_DEV_V0
cn=$BLKEMU_CTL_N0 cn1=$BLKEMU_CTL_N1 cs=$BLKEMU_CTL_S0 cv=$BLKEMU_CTL_V0
head -c 8M /dev/urandom > "$work/data"

# write_read_back DEV: 8 MiB in 4 MiB direct writes, read back and
# checked by fio's verify (a crc32c header in every block).
write_read_back () {
  fio --name=verify --filename="$1" --direct=1 --ioengine=psync --rw=write \
    --bs=4M --size=8M --verify=crc32c --verify_fatal=1 --output="$work/fio.out" > /dev/null 2>&1
  check "8 MiB written and read back, fio's crc32c verify" $? -eq 0
}

# read_error DEV PORT: a 4K bad range at 1M fails a direct read there,
# then a write heals it.  Prints dd's status.
read_error () {
  "$CTL" "$2" bad add 1048576 4096 > /dev/null
  dd if="$1" of=/dev/null bs=4k skip=256 count=1 iflag=direct status=none 2> /dev/null
  echo $?
  dd if=/dev/zero of="$1" bs=4k seek=256 count=1 oflag=direct status=none
}
# check_bad_read DEV PORT: the kernel's log cleared, a bad range fails
# a read (the log then holds the controller's own error).
check_bad_read () {
  local r
  dmesg -C
  r=$(read_error "$1" "$2")
  check "a bad range fails the read (dd status $r)" "$r" -ne 0
}

# crash_through_flushes DEV PORT: a crash state through the guest's
# flushes (NVMe's FLUSH, ATA's FLUSH CACHE EXT, VIRTIO_BLK_T_FLUSH):
# what was flushed stays, what was only cached goes with the power.
crash_through_flushes () {
  local cached
  dd if="$work/data" of="$1" bs=1M count=1 seek=16 oflag=direct conv=fsync status=none
  dd if="$work/data" of="$1" bs=1M count=1 skip=1 seek=17 oflag=direct status=none
  cached=$(stat_of "$2" .write_cache.entries)
  "$CTL" "$2" crash > /dev/null && "$CTL" "$2" power-on > /dev/null
  cmp -s <(dd if="$1" bs=1M skip=16 count=1 iflag=direct status=none) <(head -c 1M "$work/data")
  check "a crash keeps the flushed MiB" $? -eq 0
  cmp -s <(dd if="$1" bs=1M skip=17 count=1 iflag=direct status=none) <(head -c 1M /dev/zero)
  local r=$?
  check "and loses the one only cached ($cached cache entries before it)" "$r" -eq 0 -a "$cached" -gt 0
}

# mdts_sized PORT OP: "ok" when 8 MiB of OP reached the disk in commands
# of at most 128K (MDTS 5), nearly all of exactly 128K.  The guest's
# block layer now and then cuts one in two, where depending on the
# buffer's place in memory (seen: 96K + 32K, 124K + 4K, 88K + 40K, two
# or four pieces in 8 MiB): what MDTS holds is the bound.
mdts_sized () {
  stat_of "$1" ".ops.$2 | if .bytes == 8388608 and
    ([.sizes | keys[] | select(. != \"other\") | tonumber] | max) <= 131072 and
    (.sizes[\"131072\"] // 0) >= 56 then \"ok\" else \"no\" end"
}

echo "== nvme: $n0"
nvme id-ctrl "$n0" > "$work/id-ctrl" 2>&1
grep -E "^(sn|mn|mdts|vwc) " "$work/id-ctrl" | sed 's/^/  /'
check "MDTS 5 from max-transfer=128K: max_hw_sectors_kb 128" "$(q $n0 max_hw_sectors_kb)" -eq 128
check "nvme id-ctrl: mdts 5, serial n0" \
  "$(awk '$1 == "mdts" { m = $3 } $1 == "sn" { s = $3 } END { print m "/" s }' "$work/id-ctrl")" = 5/n0
check "the LBA format: logical_block_size 4096" "$(q $n0 logical_block_size)" -eq 4096
check "write-cache=yes: a volatile write cache, FUA ($(q $n0 write_cache), fua $(q $n0 fua))" \
  "$(q $n0 write_cache)/$(q $n0 fua)" = "write back/1"
check "the control port answers: max-transfer 128K" "$("$CTL" "$cn" get max-transfer)" = 128K
"$CTL" "$cn" reset > /dev/null
write_read_back "$n0"
check "8 MiB in 4 MiB direct writes reach the disk as MDTS-sized commands ($(stat_of "$cn" '.ops.write.sizes | tostring'))" \
  "$(mdts_sized "$cn" write)" = ok
check_bad_read "$n0" "$cn"
dmesg | grep -m1 -i "nvme.*\(error\|status\)" | sed 's/^/  kernel: /'
# NVMe status: SCT 2 (media errors), SC 0x81 (Unrecovered Read Error).
check "as the controller's own error: Unrecovered Read Error (sct 0x2 / sc 0x81)" \
  "$(dmesg | grep -ci "sc 0x81\|unrecovered read error")" -ge 1
crash_through_flushes "$n0" "$cn"
# Crash views through the port: blkemu-crashcheck as on any disk; every
# state keeps the flushed MiB whatever it does with the cached one.
head -c 1M "$work/data" > "$work/first"
dd if="$work/first" of="$n0" bs=1M seek=24 oflag=direct conv=fsync status=none
dd if="$work/data" of="$n0" bs=1M count=1 skip=2 seek=25 oflag=direct status=none
"$CRASHCHECK" --control "$cn" --dev "$n0" --states 3 --mode subset --seed 1 -q \
  --check "cmp -s <(dd if={dev} bs=1M skip=24 count=1 iflag=direct status=none) $work/first" \
  > "$work/views.out" 2>&1
r=$?
tail -1 "$work/views.out" | sed 's/^/  /'
check "blkemu-crashcheck over the port: 3 crash views keep the flushed MiB (exit $r)" \
  "$r/$(grep -c "3 passed, 0 failed" "$work/views.out")" = 0/1
"$CTL" "$cn" power-on > /dev/null

# flipped_read DEV PORT OFFSET: one 4K direct read at OFFSET while the
# disk flips a bit of every read; prints "STATUS SAME" (SAME 1 when the
# block read as it was written, from $work/data's MiB 0).
flipped_read () {
  local r same
  "$CTL" "$2" set bit-flip-probability=1 > /dev/null
  dd if="$1" of="$work/flipped" bs=4k skip=$(($3 / 4096)) count=1 iflag=direct status=none 2> /dev/null
  r=$?
  "$CTL" "$2" set bit-flip-probability=0 > /dev/null
  cmp -s "$work/flipped" <(dd if="$work/data" bs=4k skip=$(($3 / 4096 % 256)) count=1 status=none)
  same=$((!$?))
  echo "$r $same"
}
# Without protection information a flipped bit reaches the reader.
dd if="$work/data" of="$n0" bs=1M count=1 seek=32 oflag=direct status=none
r=$(flipped_read "$n0" "$cn" $((32 << 20)))
check "n0, no protection: a bit flipped on its way back is read as data, silently (status, same: $r)" "$r" = "0 0"

echo "== nvme with protection information: $n1"
nvme id-ns "$n1" -H > "$work/id-ns" 2>&1
grep -E "^(nsze|flbas|dps) |in use" "$work/id-ns" | sed 's/^/  /'
check "metadata-size=8: LBA format 4096 + 8 bytes of metadata in use" \
  "$(grep -c "Metadata Size: 8 .*Data Size: 4096 .*(in use)" "$work/id-ns")" -eq 1
check "protection=type1: dps 1, the kernel's profile $(cat /sys/block/${n1#/dev/}/integrity/format)" \
  "$(awk '$1 == "dps" { print $3 }' "$work/id-ns")/$(cat /sys/block/${n1#/dev/}/integrity/format)" = 0x1/T10-DIF-TYPE1-CRC
# The metadata lives after the data: 64M / (4096 + 8) blocks.
check "the disk holds 64M / 4104 blocks: $(( $(cat /sys/block/${n1#/dev/}/size) / 8 ))" \
  "$(( $(cat /sys/block/${n1#/dev/}/size) / 8 ))" -eq $(( (64 << 20) / 4104 ))
write_read_back "$n1"
dd if="$work/data" of="$n1" bs=128k count=8 oflag=direct status=none
dmesg -C
r=$(flipped_read "$n1" "$cn1" 65536)
# Where the bit lands decides who sees it: qemu checks the guard of
# what it read (End-to-end Guard Check Error, sc 0x82), the kernel the
# guard of what arrived ("guard tag error").
guard='sc 0x82\|guard tag error'
dmesg | grep -m1 "$guard" | sed 's/^/  kernel: /'
check "a bit flipped on its way back fails the read ($r): a guard check error" \
  "${r% *}/$(dmesg | grep -c "$guard")" = 1/1
cmp -s <(dd if="$n1" bs=4k skip=16 count=1 iflag=direct status=none) <(dd if="$work/data" bs=4k skip=16 count=1 status=none)
check "and reads whole again once the disk stops flipping" $? -eq 0

echo "== sata: $s0"
hdparm -I "$s0" 2> /dev/null | grep -E "Model Number|Serial Number|Rotation Rate|Physical Sector" | sed 's/^/  /'
check "IDENTIFY: model WDC-WD5002ABYS, serial s0" \
  "$(hdparm -I "$s0" 2> /dev/null | awk -F': *' '/Model Number/ { m = $2 } /Serial Number/ { s = $2 } END { gsub(/ /, "", m); gsub(/ /, "", s); print m "/" s }')" = WDC-WD5002ABYS/s0
check "rpm=5400 as the nominal media rotation rate: rotational 1" \
  "$(hdparm -I "$s0" 2> /dev/null | grep -c 'Rotation Rate: 5400')/$(q $s0 rotational)" = 1/1
check "physical-block-size=4K: physical_block_size 4096" "$(q $s0 physical_block_size)" -eq 4096
check "libata's own limit: max_hw_sectors_kb 128 ($(q $s0 max_hw_sectors_kb))" "$(q $s0 max_hw_sectors_kb)" -eq 128
check "NCQ: queue_depth 32" "$(cat /sys/block/${s0#/dev/}/device/queue_depth)" -eq 32
check "write-cache=yes: IDENTIFY's write cache on ($(q $s0 write_cache))" "$(q $s0 write_cache)" = "write back"
"$CTL" "$cs" reset > /dev/null
write_read_back "$s0"
check "4 MiB direct writes arrive in libata's 128K ($(largest "$cs" write))" "$(largest "$cs" write)" -eq 131072
check_bad_read "$s0" "$cs"
dmesg | grep -m2 -i "failed command: READ\|error: {" | sed 's/^/  kernel: /'
# qemu's ide answers any error of its drive with ABRT (ide_dma_error),
# where a disk would set UNC: libata sees an aborted command.
check "as qemu's ATA error: READ FPDMA QUEUED aborted (ABRT)" \
  "$(dmesg | grep -c "error: { ABRT }")" -ge 1
crash_through_flushes "$s0" "$cs"

echo "== virtio-blk: $v0"
check "block sizes and hints: 512/16384, min 16384, opt 65536" \
  "$(q $v0 logical_block_size)/$(q $v0 physical_block_size)/$(q $v0 minimum_io_size)/$(q $v0 optimal_io_size)" = 512/16384/16384/65536
check "max-discard=1M: discard_max_hw_bytes 1048576" "$(q $v0 discard_max_hw_bytes)" -eq 1048576
check "no FUA field: fua 0" "$(q $v0 fua)" -eq 0
check "write-cache=yes: VIRTIO_BLK_F_FLUSH, writeback ($(q $v0 write_cache))" "$(q $v0 write_cache)" = "write back"
"$CTL" "$cv" reset > /dev/null
blkdiscard -o 0 -l 4M "$v0"
check "blkdiscard of 4M reaches the disk as trims of at most 1M ($(stat_of "$cv" .ops.trim.bytes) bytes, largest $(largest "$cv" trim))" \
  "$(stat_of "$cv" .ops.trim.bytes)/$(largest "$cv" trim)" = 4194304/1048576
write_read_back "$v0"
check_bad_read "$v0" "$cv"
dmesg | grep -m1 "I/O error, dev ${v0#/dev/}" | sed 's/^/  kernel: /'
check "as virtio-blk's VIRTIO_BLK_S_IOERR: an I/O error on ${v0#/dev/}" \
  "$(dmesg | grep -c "I/O error, dev ${v0#/dev/}")" -ge 1
crash_through_flushes "$v0" "$cv"

echo "== the seeds on the controllers"
# Seed 004's 4 MiB direct reads: on NVMe they arrive as MDTS-sized
# commands (the driver splits at max_hw_sectors_kb, from MDTS 5).
"$CTL" "$cn" reset > /dev/null
dd if="$n0" of=/dev/null bs=4M count=2 iflag=direct status=none
check "seed 004: two 4 MiB direct reads reach the NVMe disk as MDTS-sized reads ($(stat_of "$cn" '.ops.read.sizes | tostring'))" \
  "$(mdts_sized "$cn" read)" = ok
# Seed 001's raid1, on an NVMe leg and a SATA leg: md takes the legs'
# limits at assembly, writes whole to both, and a medium error on the
# NVMe leg is rewritten from the SATA one by md's check.
modprobe raid1 2> /dev/null
md_create /dev/md0 1 "$n0" "$s0" -- --size=16384
check "seed 001: md0 over nvme (128K) and sata (128K): max_hw_sectors_kb $(q /dev/md0 max_hw_sectors_kb), lbs $(q /dev/md0 logical_block_size)" \
  "$(q /dev/md0 max_hw_sectors_kb)/$(q /dev/md0 logical_block_size)" = 128/4096
"$CTL" "$cn" reset > /dev/null
"$CTL" "$cs" reset > /dev/null
dd if="$work/data" of=/dev/md0 bs=4M oflag=direct status=none
# Each leg gets the 8 MiB and md's superblock updates (a few KiB).
wn=$(stat_of "$cn" .ops.write.bytes) ws=$(stat_of "$cs" .ops.write.bytes)
check "8 MiB through md0 reach both legs (nvme $wn bytes, sata $ws; 8 MiB + md's superblocks)" \
  "$wn" -ge 8388608 -a "$wn" -le $((8388608 + 65536)) -a "$ws" -ge 8388608 -a "$ws" -le $((8388608 + 65536))
check "none above 128K on either leg (nvme $(largest "$cn" write), sata $(largest "$cs" write))" \
  "$(largest "$cn" write)/$(largest "$cs" write)" = 131072/131072
off=$(( $(cat /sys/block/md0/md/dev-${n0#/dev/}/offset) * 512 + (2 << 20) ))
"$CTL" "$cn" bad add "$off" 64K > /dev/null
md_check /dev/md0
dmesg | grep -i "raid1.*\(read error\|corrected\|redirect\)" | tail -2 | sed 's/^/  kernel: /'
left=$("$CTL" "$cn" bad) errs=$(stat_of "$cn" .faults.medium_errors)
check "md's check rewrote the NVMe leg's bad range from the SATA leg (left: $left; reads failed on it: $errs)" \
  "$left" = 0 -a "$errs" -gt 0
check "both legs still in the array" "$(grep -c '\[UU\]' /proc/mdstat)" -ge 1
cmp -s <(dd if=/dev/md0 bs=1M count=8 iflag=direct status=none) "$work/data"
check "the array reads back as written" $? -eq 0
mdadm --stop /dev/md0 > /dev/null 2>&1

finish
r=$?
echo "controllers: $checks checks, $failures failed"
exit $r
