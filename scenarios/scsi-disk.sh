#!/usr/bin/env bash
# SCSI disks through LIO's TCMU: blkemu-scsi serves a disk as /dev/sdX
# (tcm_loop), and the kernel's sd driver learns its limits the way it
# does from an array: MAXIMUM and OPTIMAL TRANSFER LENGTH from the Block
# Limits VPD page become the cap and the default of max_sectors_kb and
# optimal_io_size, the block sizes come from READ CAPACITY(16), discard
# from the unmap fields and LBPME, the cache from the caching mode page;
# sg3-utils read the same pages, and seed 000's HSV400 answers INQUIRY
# as the seed's.  Then seed 004's 4 MiB direct reads reach the disk cut
# to its 1 MiB, data written is read back, a bad range is a MEDIUM ERROR
# naming its first bad block, which md raid1 over a SCSI and a ublk leg
# rewrites from the other leg; a crashed disk is NOT READY, a power
# cycle a UNIT ATTENTION; the host turns the write cache off (MODE
# SELECT: what it held is written back) and on; a zoned disk is a ZBC
# drive sd_zbc reads;
# RWF_ATOMIC writes arrive as WRITE ATOMIC(16) (6.12); exported over
# iSCSI (open-iscsi logged in on the loopback address) seed 000's array
# takes whole 4 MiB writes; a full queue
# answers TASK SET FULL and the kernel lowers its depth; a stall past
# the command timeout is aborted and counted, a slow command ends at its
# abort and is retried; nothing is left in configfs after the server
# exits.
#   blkemu-vm --kernel 6.12 scenarios/scsi-disk.sh
# Skips (77) without target_core_user and tcm_loop.
# blkemu-vm: needs target_core_user tcm_loop
# kernels: 6.1 6.12 (sd reads the atomic write fields from 6.11 on; 6.1 refuses a max_sectors_kb above the cap and has no ublk leg)
# budget: 180 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
scsi_require

spec="name=arr,size=256M,logical-block-size=512,physical-block-size=4K"
spec+=",max-transfer=1M,opt-io=1M,min-io=4K,max-discard=16M"
spec+=",max-discard-segments=4,rotational=1,write-cache=on"
spec+=",control=$work/arr.ctl,stats=$results/arr.json,trace=$results/arr.trace"

section "an array disk: 256M, 512/4K blocks, max-transfer=1M, opt-io=1M"
scsi_start s --disk "$spec"
dev=${sd[arr]}
b=${dev#/dev/}
q=/sys/block/$b/queue
sed 's/^/  /' "$work/s.log"
queue_limits "$b"
echo "  vendor '$(cat /sys/block/$b/device/vendor)' model '$(cat /sys/block/$b/device/model)' write_cache '$(cat $q/write_cache)'"
# sd takes OPTIMAL TRANSFER LENGTH as the default request size and caps
# what max_sectors_kb may be raised to at MAXIMUM TRANSFER LENGTH (the
# queue's max_dev_sectors); max_hw_sectors_kb is tcm_loop's host limit.
check "OPTIMAL TRANSFER LENGTH as the default: max_sectors_kb 1024" \
  "$(cat $q/max_sectors_kb)" -eq 1024
echo 2048 2>/dev/null > $q/max_sectors_kb # 6.1 refuses it; 6.12 clamps it
check "MAXIMUM TRANSFER LENGTH caps it: 2048 written, max_sectors_kb stays 1024" \
  "$(cat $q/max_sectors_kb)" -eq 1024
check "opt-io as OPTIMAL TRANSFER LENGTH: optimal_io_size 1048576" \
  "$(cat $q/optimal_io_size)" -eq 1048576
check "min-io as its granularity: minimum_io_size 4096" \
  "$(cat $q/minimum_io_size)" -eq 4096
check "READ CAPACITY(16): 512-byte logical, 4096-byte physical blocks" \
  "$(cat $q/logical_block_size)/$(cat $q/physical_block_size)" = 512/4096
check "capacity 256M ($(cat /sys/block/$b/size) sectors)" \
  "$(cat /sys/block/$b/size)" -eq 524288
check "unmap: discard_max_hw_bytes is max-discard (16M)" \
  "$(cat $q/discard_max_hw_bytes)" -eq 16777216
check "rotational from the Block Device Characteristics page" \
  "$(cat $q/rotational)" -eq 1
check "the caching page's WCE: write_cache 'write back'" \
  "$(cat $q/write_cache)" = "write back"
check "the mode header's DPOFUA: sd sends FUA (queue/fua 1)" "$(cat $q/fua)" -eq 1
check "INQUIRY: vendor BLKEMU, product the disk's name" \
  "$(cat /sys/block/$b/device/vendor | tr -d ' ')/$(cat /sys/block/$b/device/model | tr -d ' ')" = BLKEMU/arr
wwid=$(cat /sys/block/$b/device/wwid 2>/dev/null)
echo "  wwid: $wwid"
check "VPD 0x83: an NAA identifier (wwid naa.6001405...)" \
  "$(echo "$wwid" | grep -c '^naa\.6001405')" -eq 1

if same_on_every_kernel "sg3-utils, INQUIRY and iSCSI"; then
  section "sg3-utils read what the spec says"
  if command -v sg_vpd > /dev/null; then
    sg_vpd -p bl "$dev" > "$work/bl" 2>&1
    sed 's/^/  /' "$work/bl"
    vpd () { sed -n "s/^ *$1: *\([0-9]*\).*/\1/p" "$work/bl" | head -1; }
    check "sg_vpd -p bl: Maximum transfer length 2048 blocks (1M)" "$(vpd 'Maximum transfer length')" -eq 2048
    check "sg_vpd -p bl: Optimal transfer length 2048 blocks" "$(vpd 'Optimal transfer length')" -eq 2048
    check "sg_vpd -p bl: Optimal transfer length granularity 8 blocks (min-io 4K)" \
      "$(vpd 'Optimal transfer length granularity')" -eq 8
    check "sg_vpd -p bl: Maximum unmap LBA count 32768 (16M)" "$(vpd 'Maximum unmap LBA count')" -eq 32768
    check "sg_vpd -p bl: Maximum unmap block descriptor count 4" \
      "$(vpd 'Maximum unmap block descriptor count')" -eq 4
    sg_vpd -p bdc "$dev" > "$work/bdc" 2>&1
    grep -i "rotation" "$work/bdc" | sed 's/^/  /'
    check "sg_vpd -p bdc: the rotation rate is rpm= (7200)" "$(grep -ci 'rotation rate: 7200' "$work/bdc")" -eq 1
    sg_readcap --16 "$dev" > "$work/rc" 2>&1
    sed 's/^/  /' "$work/rc" | head -12
    check "sg_readcap --16: physical block exponent 3 (4K of 512)" \
      "$(grep -c 'blocks per physical block exponent=3' "$work/rc")" -eq 1
    check "sg_readcap --16: logical block provisioning (LBPME=1)" "$(grep -ci 'lbpme=1' "$work/rc")" -eq 1
    sg_opcodes "$dev" > "$work/op" 2>&1
    sed 's/^/  /' "$work/op" | head -30
    check "sg_opcodes: REPORT SUPPORTED OPERATION CODES lists WRITE SAME(16) and UNMAP" \
      "$(grep -ciE 'write same\(16\)|^ *42 .*unmap' "$work/op")" -eq 2
    sg_opcodes -o 0x88 "$dev" > "$work/op1" 2>&1
    sed 's/^/  /' "$work/op1" | head -8
    check "sg_opcodes -o 0x88: READ(16) supported as the standard says" \
      "$(grep -ciE 'supported \[conforming|supported.*standard' "$work/op1")" -ge 1
    ctl arr reset > /dev/null
    sg_unmap --force --lba=131072 --num=2048 "$dev"
    check "sg_unmap: one 1M UNMAP reached the disk as a trim" \
      "$(disk_stat arr .ops.trim.bytes)" -eq 1048576
    sg_write_same --16 --unmap --lba=133120 --num=2048 "$dev"
    sg_write_same --16 --in=/dev/zero --lba=135168 --num=16 "$dev"
    check "sg_write_same --16 (with UNMAP, then of zeroes): two zeroings" \
      "$(disk_stat arr .ops.zero.requests)" -eq 2
    # A block that is not zeroes: repeated over 1 MiB, written in pieces
    # of at most 256K (a command pins that much, not its whole range).
    head -c 512 /dev/urandom > "$work/pattern"
    ctl arr reset > /dev/null
    sg_write_same --16 --in="$work/pattern" --lba=137216 --num=2048 "$dev"
    for _ in $(seq 4); do cat "$work/pattern"; done > "$work/pattern4"
    check "WRITE SAME of a pattern: 1 MiB written, in writes of at most 256K ($(disk_stat arr '.ops.write | "\(.bytes) bytes, largest \(.sizes | keys | map(tonumber) | max)"'))" \
      "$(disk_stat arr .ops.write.bytes)/$(max_size arr write)" = 1048576/262144
    dd if="$dev" bs=2048 skip=$((137216 / 4 + 511)) count=1 iflag=direct status=none 2>/dev/null |
      cmp -s - "$work/pattern4"
    check "WRITE SAME of a pattern: its last blocks hold the pattern" $? -eq 0
  else
    check "sg3-utils installed (tools/install-deps vm)" 0 -eq 1
  fi

  section "a seed's array by its profile: INQUIRY says HP HSV400"
  scsi_start hsv --disk "name=hsv,profile=san-hsv400,size=64M"
  hb=${sd[hsv]#/dev/}
  lsscsi 2>/dev/null | grep "${sd[hsv]}" | sed 's/^/  /'
  sg_inq "${sd[hsv]}" 2>/dev/null | grep -E "identification|revision" | sed 's/^/  /'
  check "sysfs vendor/model: HP/HSV400 (seed 000's strings)" \
    "$(tr -d ' ' < /sys/block/$hb/device/vendor)/$(tr -d ' ' < /sys/block/$hb/device/model)" = HP/HSV400
  check "sg_inq prints seed 000's 'Vendor identification: HP'" \
    "$(sg_inq "${sd[hsv]}" 2>/dev/null | grep -c 'Vendor identification: HP')" -eq 1
  check "lsscsi shows it" "$(lsscsi 2>/dev/null | grep "${sd[hsv]}" | grep -c 'HP *HSV400')" -eq 1
  sg_vpd -p bl "${sd[hsv]}" 2>/dev/null | grep -i "transfer length" | sed 's/^/  /'
  check "its max-transfer (32767K) as MAXIMUM TRANSFER LENGTH: 65534 blocks" \
    "$(sg_vpd -p bl "${sd[hsv]}" 2>/dev/null | grep -c 'Maximum transfer length: 65534')" -eq 1
  scsi_stop hsv

  section "seed 000 over iSCSI: the HSV400 disk takes whole 4 MiB writes"
  # The same profile exported through LIO's iSCSI target on the loopback
  # address, logged in to with open-iscsi: the sd disk iSCSI makes has the
  # Block Limits page's 32767K maximum, so max_sectors_kb can be the seed's
  # 4096, and each 4 MiB direct write reaches the disk as one command.
  scsi_start is --iscsi 127.0.0.1:3260 --disk "name=is,profile=san-hsv400,size=64M,control=$work/is.ctl"
  read -r iqn portal <<< "${sd[is]}"
  echo "  the ready file: is $iqn $portal"
  check "the ready file names the target (iqn.2026-12.org.blkemu:is on 127.0.0.1:3260)" \
    "$iqn $portal" = "iqn.2026-12.org.blkemu:is 127.0.0.1:3260"
  if idev=$(iscsi_login "$iqn" "$portal"); then
    ib=${idev#/dev/}
    echo "  logged in: $idev, $(cat /sys/block/$ib/device/vendor) $(cat /sys/block/$ib/device/model), max_hw_sectors_kb $(cat /sys/block/$ib/queue/max_hw_sectors_kb), max_sectors_kb $(cat /sys/block/$ib/queue/max_sectors_kb)"
    check "an iSCSI session's disk, seed 000's HSV400" \
      "$(cat /sys/block/$ib/device/model | tr -d ' ')/$(ls /sys/class/iscsi_session | wc -l)" = HSV400/1
    echo 4096 > /sys/block/$ib/queue/max_sectors_kb
    ctl is reset > /dev/null
    dd if=/dev/zero of="$idev" bs=4M count=8 oflag=direct 2>/dev/null
    check "max_sectors_kb 4096: every 4 MiB write arrived whole ($(disk_stat is '.ops.write.sizes | tostring'))" \
      "$(disk_stat is '.ops.write.sizes | tostring')" = '{"4194304":8}'
    check "the disk's transport says iSCSI ($(disk_stat is .transport.scsi_iscsi_portal))" \
      "$(disk_stat is .transport.device)/$(disk_stat is .transport.scsi_iscsi_portal)" = "$iqn/127.0.0.1:3260"
    iscsi_logout "$iqn" "$portal"
  else
    check "log in to the iSCSI target" 1 -eq 0
  fi

  section "iSCSI access: an initiator list and (mutual) CHAP"
  # --iscsi-auth: only the listed initiator gets in, and only with the
  # CHAP secret; with mutual CHAP the target proves itself too.  Another
  # target that lists only someone else refuses this guest outright.
  cat > "$work/auth" <<'EOF'
# who may log in to blkemu's iSCSI targets
initiator iqn.2026-12.org.blkemu:guest
chap blkemu-guest guest-secret-1234
mutual-chap blkemu-target target-secret-5678
EOF
  scsi_start ia --iscsi 127.0.0.1:3264 --iscsi-auth "$work/auth" --disk "name=ia,size=16M,control=$work/ia.ctl"
  read -r iqn portal <<< "${sd[ia]}"
  tpg=/sys/kernel/config/target/iscsi/$iqn/tpgt_1
  check "an ACL for the guest, no demo mode, authentication on" \
    "$(ls "$tpg/acls")/$(cat "$tpg/attrib/generate_node_acls")/$(cat "$tpg/attrib/authentication")" = "iqn.2026-12.org.blkemu:guest/0/1"
  # logged_in IQN: how many sessions this guest has with IQN.
  logged_in () { cat /sys/class/iscsi_session/*/targetname 2>/dev/null | grep -cx "$1"; }
  iscsi_login "$iqn" "$portal" > /dev/null 2>&1
  check "no CHAP secret: the login is refused" "$(logged_in "$iqn")" -eq 0
  ISCSI_CHAP="blkemu-guest wrong-secret-0000" iscsi_login "$iqn" "$portal" > /dev/null 2>&1
  check "a wrong secret: refused" "$(logged_in "$iqn")" -eq 0
  ISCSI_CHAP="blkemu-guest guest-secret-1234 blkemu-target not-the-target-0" \
    iscsi_login "$iqn" "$portal" > /dev/null 2>&1
  check "a target that cannot prove itself (mutual CHAP): the guest walks away" \
    "$(logged_in "$iqn")" -eq 0
  if adev=$(ISCSI_CHAP="blkemu-guest guest-secret-1234 blkemu-target target-secret-5678" \
              iscsi_login "$iqn" "$portal"); then
    check "the right secrets both ways: logged in, $adev" -b "$adev"
    dd if=/dev/zero of="$adev" bs=64k count=16 oflag=direct status=none
    check "and it carries I/O ($(disk_stat ia .ops.write.requests) writes)" \
      "$(disk_stat ia .ops.write.requests)" -gt 0
    iscsi_logout "$iqn" "$portal"
  else
    check "the right secrets both ways: logged in" 1 -eq 0
  fi
  scsi_stop ia
  check "stopping removed the target, its ACL with it" ! -e "$tpg"
  printf 'chap blkemu-guest guest-secret-1234\n' > "$work/auth-chap"
  scsi_start ic --iscsi 127.0.0.1:3268 --iscsi-auth "$work/auth-chap" --disk "name=ic,size=16M"
  read -r iqn portal <<< "${sd[ic]}"
  iscsi_login "$iqn" "$portal" > /dev/null 2>&1
  check "any initiator, but CHAP: refused without the secret" "$(logged_in "$iqn")" -eq 0
  if cdev=$(ISCSI_CHAP="blkemu-guest guest-secret-1234" iscsi_login "$iqn" "$portal"); then
    check "and let in with it ($cdev)" -b "$cdev"
    iscsi_logout "$iqn" "$portal"
  else
    check "and let in with it" 1 -eq 0
  fi
  iscsi_chap "$iqn" "$portal"
  scsi_stop ic
  echo "initiator iqn.2026-12.org.blkemu:someone-else" > "$work/auth-other"
  scsi_start io --iscsi 127.0.0.1:3266 --iscsi-auth "$work/auth-other" --disk "name=io,size=16M"
  read -r iqn portal <<< "${sd[io]}"
  iscsi_login "$iqn" "$portal" > /dev/null 2>&1
  check "a target listing only another initiator refuses this guest" \
    "$(logged_in "$iqn")" -eq 0
  scsi_stop io
  scsi_stop is
  check "the iSCSI target is gone from configfs" \
    "$(ls /sys/kernel/config/target/iscsi 2>/dev/null | grep -c blkemu)" -eq 0
fi

section "4 MiB direct reads reach the disk cut to its MAXIMUM TRANSFER LENGTH, 1 MiB"
ctl arr reset > /dev/null
dd if="$dev" of=/dev/null bs=4M count=16 iflag=direct 2>/dev/null
check "64 MiB read, the largest READ the disk saw is 1 MiB ($(max_size arr read))" \
  "$(max_size arr read)" -eq 1048576
check "none refused as oversize" "$(disk_stat arr .oversize.rejected)" -eq 0

section "data: written through sd, read back"
head -c 8M /dev/urandom > "$work/data"
dd if="$work/data" of="$dev" bs=1M seek=10 oflag=direct conv=fsync 2>/dev/null
dd if="$dev" of="$work/back" bs=1M skip=10 count=8 iflag=direct 2>/dev/null
check "8 MiB read back as written" "$(cmp -s "$work/data" "$work/back" && echo same)" = same
check "SYNCHRONIZE CACHE reached the disk as flushes" \
  "$(disk_stat arr .ops.flush.requests)" -gt 0
blkdiscard -o $((64 << 20)) -l $((32 << 20)) "$dev"
check "blkdiscard of 32M: UNMAP reached the disk as trims of <= 16M" \
  "$(disk_stat arr '.ops.trim.bytes')/$(max_size arr trim)" = 33554432/16777216

section "a medium error names its first bad block"
ctl arr bad add $(( (100 << 20) + (16 << 10) )) 4K > /dev/null
dmesg -C 2>/dev/null
dd if="$dev" of=/dev/null bs=64K skip=1600 count=1 iflag=direct 2> "$work/dd.err"
rc=$?
sed 's/^/  dd: /' "$work/dd.err" | head -3
check "a 64K read over a bad 4K fails (dd exit $rc: the kernel's ENODATA for a medium error)" "$rc" -ne 0
dmesg | grep -i "sense\|medium\|critical\|info fld" | head -6 | sed 's/^/  /'
check "sd logged a Medium Error" "$(dmesg | grep -ci 'medium error')" -ge 1
check "at the bad block, 16K into the read (sector 204832), not the read's first (204800)" \
  "$(dmesg | grep -c 'sector 204832')/$(dmesg | grep -c 'sector 204800')" = 1/0
if command -v sg_verify > /dev/null; then
  # VERIFY reads the medium: over the bad block it fails as a read does;
  # with BYTCHK=1 it compares, and a difference is a MISCOMPARE.
  sg_verify --lba=204800 --count=128 "$dev" > "$work/v.out" 2>&1
  rc=$?
  # sg3-utils: 3 a medium error, 18 one with the information field set
  check "sg_verify over the bad block: MEDIUM ERROR (exit $rc: $(grep -im1 'medium\|error' "$work/v.out"))" \
    "$rc" -eq 3 -o "$rc" -eq 18
  sg_verify --lba=20480 --count=128 "$dev" > /dev/null 2>&1
  check "sg_verify of readable blocks: GOOD" $? -eq 0
  dd if="$dev" of="$work/v.data" bs=64K skip=160 count=1 iflag=direct status=none
  sg_verify --lba=20480 --count=128 --ndo=65536 --in="$work/v.data" "$dev" > /dev/null 2>&1
  check "sg_verify --ndo (BYTCHK=1) of the same data: GOOD" $? -eq 0
  printf 'X' | dd of="$work/v.data" bs=1 seek=1000 conv=notrunc status=none
  sg_verify --lba=20480 --count=128 --ndo=65536 --in="$work/v.data" "$dev" > "$work/v.out" 2>&1
  rc=$?
  check "sg_verify --ndo of data that differs at byte 1000: MISCOMPARE (exit $rc: $(grep -im1 'miscompare' "$work/v.out"))" "$rc" -eq 14
else
  check "sg3-utils installed (tools/install-deps vm)" 0 -eq 1
fi
ctl arr bad clear 0 256M > /dev/null

section "power cycle: NOT READY while off, UNIT ATTENTION after power-on"
dmesg -C 2>/dev/null
ctl arr crash > /dev/null
dd if="$dev" of=/dev/null bs=4K count=1 skip=7 iflag=direct 2>/dev/null
rc=$?
dmesg | grep -i "not ready\|intervention" | head -2 | sed 's/^/  /'
check "a read of the crashed disk fails (dd exit $rc)" "$rc" -ne 0
check "as NOT READY, manual intervention required (not a medium error)" \
  "$(dmesg | grep -ci 'manual intervention required')/$(dmesg | grep -ci 'medium error')" = 1/0
dmesg -C 2>/dev/null
ctl arr power-on > /dev/null
dd if="$dev" of=/dev/null bs=4K count=1 iflag=direct 2>/dev/null
rc=$?
dmesg | grep -i "power-on\|unit attention" | head -3 | sed 's/^/  /'
check "sd reports it: 'Power-on or device reset occurred'" \
  "$(dmesg | grep -c 'Power-on or device reset occurred')" -ge 1
check "and the midlayer's retry reads the block (dd exit $rc)" "$rc" -eq 0

section "the host turns the write cache off and on: MODE SELECT of WCE"
ct=$(echo /sys/block/$b/device/scsi_disk/*/cache_type)
# sd's cache_type: MODE SENSE of the caching page, WCE changed, MODE
# SELECT of it, then a revalidation that reads the page again.
head -c 64K /dev/urandom > "$work/wce1"
dd if="$work/wce1" of="$dev" bs=64K seek=200 oflag=direct 2>/dev/null # cached
echo "write through" > "$ct"
check "cache_type 'write through' taken: queue/write_cache '$(cat $q/write_cache)'" \
  "$(cat $q/write_cache)" = "write through"
check "and the disk's write-cache is off ($(ctl arr get write-cache))" \
  "$(ctl arr get write-cache)" = no
ctl arr crash > /dev/null
ctl arr power-on > /dev/null
dd if="$dev" of=/dev/null bs=4K count=1 iflag=direct 2>/dev/null # the UNIT ATTENTION
check "the write cached before WCE=0 was written back: a crash keeps it" \
  "$(dd if="$dev" bs=64K skip=200 count=1 iflag=direct 2>/dev/null | cmp - "$work/wce1" && echo same)" = same
out=$( (echo none > "$ct") 2>&1)
check "RCD cannot be set: 'none' refused ($out), cache_type stays" \
  "$(cat "$ct")" = "write through"
echo "write back" > "$ct"
check "cache_type 'write back': write_cache '$(cat $q/write_cache)', write-cache $(ctl arr get write-cache)" \
  "$(cat $q/write_cache)/$(ctl arr get write-cache)" = "write back/yes"
head -c 64K /dev/urandom > "$work/wce2"
dd if="$work/wce2" of="$dev" bs=64K seek=200 oflag=direct 2>/dev/null # cached again
ctl arr crash > /dev/null
ctl arr power-on > /dev/null
dd if="$dev" of=/dev/null bs=4K count=1 iflag=direct 2>/dev/null
check "with WCE=1 again an unflushed write is lost in a crash" \
  "$(dd if="$dev" bs=64K skip=200 count=1 iflag=direct 2>/dev/null | cmp - "$work/wce1" && echo old)" = old

section "md raid1, a SCSI leg and a ublk one (6.1: SCSI): a medium error repaired"
modprobe raid1 2>/dev/null
scsi_start ma --disk "name=ma,size=64M,max-transfer=256K,opt-io=256K,control=$work/ma.ctl"
if ublk_available; then
  mb=$(ublk_disk_start mb size=64M max-transfer=1M)
else # 6.1 has no ublk: a second SCSI disk with other limits
  scsi_start mb --disk "name=mb,size=64M,max-transfer=512K,control=$work/mb.ctl"
  mb=${sd[mb]}
fi
ma=${sd[ma]}
md_create /dev/md0 1 "$ma" "$mb"
queue_limits "$ma" "$mb" md0
check "md inherits the smaller leg's limit: max_sectors_kb 256" \
  "$(cat /sys/block/md0/queue/max_sectors_kb)" -eq 256
head -c $((16 << 20)) /dev/urandom > "$work/mdata"
dd if="$work/mdata" of=/dev/md0 bs=1M oflag=direct status=none
off=$(( $(cat /sys/block/md0/md/dev-${ma#/dev/}/offset) * 512 + (5 << 20) + (12 << 10) ))
ctl ma bad add $off 4K > /dev/null
dmesg -C 2>/dev/null
ctl ma reset > /dev/null
md_check /dev/md0
dmesg | grep -i "medium error\|raid1.*\(read error\|corrected\)" | tail -3 | sed 's/^/  kernel: /'
check "sd logged the MEDIUM ERROR at the bad sector ($((off / 512)))" \
  "$(dmesg | grep -c "critical medium error.*sector $((off / 512)) ")" -ge 1
check "md rewrote it from the other leg: nothing unreadable left ($(ctl ma bad))" "$(ctl ma bad)" = 0
echo "  md's corrected errors on ${ma#/dev/}: $(cat /sys/block/md0/md/dev-${ma#/dev/}/errors)"
check "by a write to the SCSI leg during a read-only check ($(disk_stat ma .ops.write.requests))" \
  "$(disk_stat ma .ops.write.requests)" -ge 1
check "both legs still in the array" "$(grep -A1 '^md0' /proc/mdstat | grep -c '\[UU\]')" -eq 1
dd if=/dev/md0 of="$work/mback" bs=1M count=16 iflag=direct status=none
check "the array's data reads back whole" "$(cmp -s "$work/mdata" "$work/mback" && echo same)" = same
mdadm --stop /dev/md0 > /dev/null 2>&1
scsi_stop ma
if [ -n "${sd[mb]:-}" ]; then scsi_stop mb; else ublk_disk_stop mb; fi

section "a host-managed zoned disk as ZBC: sd_zbc sees the disk's zones"
scsi_start zb --disk "name=zb,size=256M,zoned=host-managed,zone-size=4M,conventional-zones=4,max-open-zones=6,latency-zone=100us,control=$work/zb.ctl"
zdev=${sd[zb]}
zq=/sys/block/${zdev#/dev/}/queue
echo "  $zdev: zoned=$(cat $zq/zoned) chunk_sectors=$(cat $zq/chunk_sectors) nr_zones=$(cat $zq/nr_zones) max_open_zones=$(cat $zq/max_open_zones)"
sg_inq "$zdev" 2>/dev/null | grep -i "peripheral device type" | sed 's/^/  /'
check "INQUIRY type 0x14: the kernel sees a host-managed disk" "$(cat $zq/zoned)" = host-managed
check "64 zones of 4M (chunk_sectors 8192)" "$(cat $zq/nr_zones)/$(cat $zq/chunk_sectors)" = 64/8192
check "VPD 0xB6: max_open_zones 6" "$(cat $zq/max_open_zones)" -eq 6
sg_vpd -p zbdc "$zdev" 2>/dev/null | grep -i "open sequential\|unrestricted" | sed 's/^/  /'
blkzone report "$zdev" > "$work/zreport.txt"
check "REPORT ZONES: blkzone lists 64 zones, 4 conventional, 60 empty" \
  "$(wc -l < "$work/zreport.txt")/$(grep -c 'CONVENTIONAL' "$work/zreport.txt")/$(grep -c 'cond: 1(em)' "$work/zreport.txt")" = 64/4/60
zl () { blkzone report -o $(( $1 * 8192 )) -c 1 "$zdev"; }
blkzone open -o $((10 * 8192)) -c 1 "$zdev"
check "OPEN ZONE: zone 10 explicitly open, the disk counted it" \
  "$(zl 10 | grep -c 'cond: 3(oe)')/$(disk_stat zb .zones.commands.open)" = 1/1
dd if=/dev/urandom of="$zdev" bs=64K count=4 seek=$((10 * 64)) oflag=direct 2>/dev/null
check "256K written at its start: the write pointer at +512 sectors" \
  "$(zl 10 | grep -o 'wptr 0x[0-9a-f]*')" = "wptr 0x000200"
dmesg -C 2>/dev/null
dd if=/dev/zero of="$zdev" bs=4K count=1 seek=$((20 * 1024 + 8)) oflag=direct 2>/dev/null
rc=$?
dmesg | grep -i "sense\|unaligned" | head -2 | sed 's/^/  /'
check "a write off the write pointer fails (dd exit $rc), as UNALIGNED WRITE COMMAND" \
  "$rc/$(dmesg | grep -ci 'unaligned write command')" = 1/1
check "and the disk counted the violation" "$(disk_stat zb .zones.violations.write_pointer)" -ge 1
ctl zb zone read-only 120M > /dev/null
dmesg -C 2>/dev/null
dd if=/dev/zero of="$zdev" bs=4K count=1 seek=$((30 * 1024)) oflag=direct 2>/dev/null
rc=$?
check "a write to a read-only zone fails (dd exit $rc) as DATA PROTECT, ZONE IS READ ONLY" \
  "$rc/$(dmesg | grep -ci 'zone is read only')" = 1/1
ctl zb zone online 120M > /dev/null
blkzone finish -o $((11 * 8192)) -c 1 "$zdev"
blkzone reset -o $((10 * 8192)) -c 2 "$zdev"
check "FINISH then RESET WRITE POINTER: zones 10 and 11 empty" \
  "$(blkzone report -o $((10 * 8192)) -c 2 "$zdev" | grep -c 'cond: 1(em)')" -eq 2
fio --name=zbd --filename="$zdev" --direct=1 --zonemode=zbd --rw=write --bs=64k \
  --offset=$((16 << 20)) --size=$((32 << 20)) --max_open_zones=4 --ioengine=psync \
  --verify=crc32c --do_verify=1 --output="$work/zfio" > /dev/null 2>&1
rc=$?
check "fio zonemode=zbd writes 32M through 8 zones and verifies (exit $rc)" "$rc" -eq 0
check "the last zone fio wrote (11) is full" \
  "$(zl 11 | grep -c 'cond:14(fu)')" -eq 1
scsi_stop zb
scsi_start zc --disk "name=zc,size=64M,zoned=host-managed,zone-size=4M,zone-capacity=3M,conventional-zones=1"
blkzone report -o 8192 -c 1 "${sd[zc]}" | sed 's/^/  /'
check "zone-capacity 3M of 4M: sd_zbc reads the gap zones as capacity (cap 0x001800, len 0x002000)" \
  "$(blkzone report -o 8192 -c 1 "${sd[zc]}" | grep -c 'len 0x002000, cap 0x001800')" -eq 1
check "and still 16 zones" "$(cat /sys/block/${sd[zc]#/dev/}/queue/nr_zones)" -eq 16
scsi_stop zc

section "atomic writes: the Block Limits page's atomic fields, WRITE ATOMIC(16)"
scsi_start at --disk "name=at,size=64M,physical-block-size=4K,atomic-write-max=64K,atomic-write-granularity=4K,write-cache=on,stats=$results/at.json"
aq=/sys/block/${sd[at]#/dev/}/queue
sg_vpd -p bl "${sd[at]}" 2>/dev/null | grep -i "atomic" | head -3 | sed 's/^/  /'
check "sg_vpd -p bl: Maximum atomic transfer length 128 blocks (64K)" \
  "$(sg_vpd -p bl "${sd[at]}" 2>/dev/null | grep -c 'Maximum atomic transfer length: 128')" -eq 1
if [ -e $aq/atomic_write_max_bytes ]; then # sd reads them since Linux 6.11
  echo "  atomic_write_max_bytes=$(cat $aq/atomic_write_max_bytes) unit_min=$(cat $aq/atomic_write_unit_min_bytes) unit_max=$(cat $aq/atomic_write_unit_max_bytes)"
  check "the kernel's atomic limits are the spec's: max 65536, unit 4096..65536" \
    "$(cat $aq/atomic_write_max_bytes)/$(cat $aq/atomic_write_unit_min_bytes)/$(cat $aq/atomic_write_unit_max_bytes)" = 65536/4096/65536
  # pwritev2(RWF_ATOMIC), O_DIRECT, from an aligned buffer (Debian 12's
  # headers predate RWF_ATOMIC: its value, 0x40, by hand).
  aw () { python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
size, off = int(sys.argv[2]), int(sys.argv[3])
buf = mmap.mmap(-1, size); buf.write(os.urandom(size))
try:
    os.pwritev(fd, [buf], off, 0x40)
    print("ok")
except OSError as e:
    print(os.strerror(e.errno))
' "${sd[at]}" "$@"; }
  r=$(aw 16384 16384)
  check "pwritev2(RWF_ATOMIC) of 16K at 16K: $r" "$r" = ok
  r=$(aw 16384 4096)
  check "16K at 4K (not naturally aligned): the kernel refuses it ($r)" "$r" = "Invalid argument"
  r=$(aw 131072 0)
  check "128K, past atomic_write_unit_max: refused ($r)" "$r" = "Invalid argument"
  scsi_stop at
  check "the disk served it as WRITE ATOMIC(16) ($(jq -r .transport.scsi_atomic_writes "$results/at.json"))" \
    "$(jq -r .transport.scsi_atomic_writes "$results/at.json")" -eq 1
else
  echo "  $(uname -r): sd reads no atomic write fields before Linux 6.11"
  scsi_stop at
fi

if same_on_every_kernel "max-transfer=32M"; then
  section "max-transfer=32M: neither LIO nor blkemu-scsi caps it below tcm_loop's 32767K"
  scsi_start big --disk "name=big,size=128M,max-transfer=32M,control=$work/big.ctl"
  bq=/sys/block/${sd[big]#/dev/}/queue
  queue_limits "${sd[big]#/dev/}"
  check "no optimal size: sd's default max_sectors_kb, 1280" \
    "$(cat $bq/max_sectors_kb)" -eq 1280
  echo 32767 > $bq/max_sectors_kb
  check "raised to tcm_loop's 32767 (LIO's default hw_max_sectors would stop it at 64K)" \
    "$(cat $bq/max_sectors_kb)" -eq 32767
  attr=/sys/kernel/config/target/core/user_2846/big/attrib
  check "LIO's own limit is the spec's: hw_max_sectors 65536 blocks of 512" \
    "$(cat $attr/hw_max_sectors)/$(cat $attr/hw_block_size)" = 65536/512
  scsi_stop big
fi

section "a full queue: TASK SET FULL, and the kernel lowers the queue depth"
scsi_start q --disk "name=q,size=64M,queue-depth=4,latency-read=2ms,stats=$results/q.json"
qdev=/sys/block/${sd[q]#/dev/}/device/queue_depth
qd0=$(cat $qdev)
fio --name=q --filename="${sd[q]}" --direct=1 --rw=randread --bs=4k \
    --iodepth=32 --ioengine=libaio --runtime=2 --time_based \
    --output="$work/q.fio" > /dev/null 2>&1
rc=$?
qd1=$(cat $qdev)
check "fio at QD32 on a queue-depth=4 disk: no error (exit $rc)" "$rc" -eq 0
check "the kernel lowered the device's queue depth ($qd0 -> $qd1)" "$qd1" -lt "$qd0"
scsi_stop q
check "the disk answered TASK SET FULL ($(jq -r .transport.scsi_task_set_full "$results/q.json") times)" \
  "$(jq -r .transport.scsi_task_set_full "$results/q.json")" -gt 0

section "a stalled disk: the midlayer times out, aborts, and the disk counts it"
scsi_start st --disk "name=st,size=16M,control=$work/st.ctl"
sb=${sd[st]#/dev/}
echo 2 > /sys/block/$sb/device/timeout
dmesg -C 2>/dev/null
ctl st set stall=5s > /dev/null
t0=$(date +%s)
dd if="${sd[st]}" of=/dev/null bs=4K count=1 iflag=direct 2>/dev/null
rc=$? t=$(( $(date +%s) - t0 ))
dmesg | grep -i "abort\|timing out\|reset" | head -4 | sed 's/^/  /'
aborted=$(disk_stat st .transport.scsi_aborted_commands)
check "a read held 5 s past a 2 s command timeout: the kernel aborted it, the disk counted $aborted" \
  "$aborted" -ge 1
check "and once the stall ended the read completed (dd exit $rc after ${t}s)" "$rc" -eq 0
check "a stalled disk answers no abort: none ended early ($(disk_stat st .transport.scsi_aborts_ended))" \
  "$(disk_stat st .transport.scsi_aborts_ended)" = 0
scsi_stop st

section "a slow command: the abort ends it at once, no reset follows"
# A 20 s latency spike on one read, a 2 s timeout: the midlayer aborts
# it, the disk drops it at the abort (ABORT TASK through LIO's TMR
# notification), and the midlayer's retry is served at once.  (The
# spike is drawn when the read arrives: spikes stop once it is in.  A
# retry that timed out again would go straight to a LUN reset.)
# slow_read_start: a direct read of sl in the background (ddpid, from t0)
# given a 20 s spike; spikes stop once it is in the disk.
slow_read_start () {
  ctl sl set spike-probability=1 spike-latency=20s > /dev/null
  t0=$(date +%s)
  dd if="${sd[sl]}" of=/dev/null bs=4K count=1 iflag=direct 2>/dev/null &
  ddpid=$!
  for i in $(seq 100); do
    [ "$(disk_stat sl .in_flight)" -ge 1 ] && break
    sleep 0.05
  done
  ctl sl set spike-probability=0 > /dev/null
}
scsi_start sl --disk "name=sl,size=16M,control=$work/sl.ctl"
sb=${sd[sl]#/dev/}
echo 2 > /sys/block/$sb/device/timeout
slow_read_start
wait $ddpid
rc=$? t=$(( $(date +%s) - t0 ))
ended=$(disk_stat sl .transport.scsi_aborts_ended)
echo "  dd exit $rc after ${t}s: $(disk_stat sl .transport.scsi_aborted_commands) aborted, $ended ended at the abort, $(disk_stat sl .aborted) requests the disk ended early, $(disk_stat sl .transport.scsi_resets) resets"
check "the aborted command ended at the abort ($ended), counted by the disk too ($(disk_stat sl .aborted))" \
  "$ended/$(disk_stat sl .aborted)" = 1/1
check "the retry read the block well before the 20 s spike (dd exit $rc after ${t}s)" \
  "$rc" -eq 0 -a "$t" -lt 15
check "the error handler stopped at the abort: no LUN reset ($(disk_stat sl .transport.scsi_resets))" \
  "$(disk_stat sl .transport.scsi_resets)" = 0
# A LUN reset asked for by hand (sg_reset) while a read waits out its
# spike: the reset ends it too, and the read is retried.
echo 30 > /sys/block/$sb/device/timeout
slow_read_start
sg_reset -d "${sd[sl]}" > "$work/sg_reset.out" 2>&1
wait $ddpid
rc=$? t=$(( $(date +%s) - t0 ))
echo "  sg_reset -d: $(cat "$work/sg_reset.out"); dd exit $rc after ${t}s, $(disk_stat sl .transport.scsi_resets) resets, $(disk_stat sl .transport.scsi_aborts_ended) ended"
check "a LUN reset ends the waiting read, which is retried (dd exit $rc after ${t}s; resets $(disk_stat sl .transport.scsi_resets), ended $(disk_stat sl .transport.scsi_aborts_ended))" \
  "$rc/$(disk_stat sl .transport.scsi_resets)/$(disk_stat sl .transport.scsi_aborts_ended)" = 0/1/2 -a "$t" -lt 15
scsi_stop sl

section "a killed server's leftovers: --delete-stale removes them"
scsi_start k --disk "name=k,size=16M"
kill -KILL "$(cat "$work/k.pid")"
wait "$(cat "$work/k.pid")" 2>/dev/null
check "after SIGKILL the backstore is still in configfs" \
  "$(test -d /sys/kernel/config/target/core/user_2846/k && echo left)" = left
# The SCSI disk's removal sends commands (SYNCHRONIZE CACHE) to a ring
# nobody serves: --delete-stale answers them while it removes, or each
# would wait out TCMU's 30 s timeout and sd's retries (125 s measured).
t0=$SECONDS
timeout 180 "$SCSI" --delete-stale > "$work/stale.log" 2>&1
took=$((SECONDS - t0))
check "--delete-stale: $(cat "$work/stale.log")" \
  "$(test -d /sys/kernel/config/target/core/user_2846/k && echo left || echo gone)" = gone
check "in ${took} s: the stale ring answered, no TCMU timeout (30 s) waited out" "$took" -lt 25
check "a running server's disk stays (arr is still served)" \
  "$(test -d /sys/kernel/config/target/core/user_2846/arr && test -b "$dev" && echo kept)" = kept
check "a second server for a served name is refused" \
  "$("$SCSI" --disk name=arr,size=16M 2>&1 | grep -c 'a running blkemu-scsi serves')" -eq 1
check "and the SCSI disk went with it" \
  "$(test -e /sys/block/${sd[k]#/dev/} && echo there || echo gone)" = gone
# A killed iSCSI export: the target stays until --delete-stale.
scsi_start ki --iscsi 127.0.0.1:3262 --disk "name=ki,size=16M"
kill -KILL "$(cat "$work/ki.pid")"
wait "$(cat "$work/ki.pid")" 2>/dev/null
check "after SIGKILL the iSCSI target is still in configfs" \
  "$(test -d /sys/kernel/config/target/iscsi/iqn.2026-12.org.blkemu:ki && echo left)" = left
timeout 180 "$SCSI" --delete-stale > "$work/stale-iscsi.log" 2>&1
check "--delete-stale removes it and its backstore: $(cat "$work/stale-iscsi.log")" \
  "$(test -d /sys/kernel/config/target/iscsi/iqn.2026-12.org.blkemu:ki && echo left || echo gone)/$(test -d /sys/kernel/config/target/core/user_2846/ki && echo left || echo gone)" = gone/gone

section "exit: the disk and its configfs entries are gone"
scsi_stop s
check "blkemu-scsi exited 0" $? -eq 0
check "/dev/$b is gone" "$(test -e /sys/block/$b && echo there || echo gone)" = gone
check "nothing of blkemu in LIO's configfs" \
  "$(ls /sys/kernel/config/target/core 2>/dev/null | grep -c user_2846)" -eq 0
check "stats= written, transport scsi" \
  "$(jq -r .transport.frontend "$results/arr.json")" = scsi

echo
echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
