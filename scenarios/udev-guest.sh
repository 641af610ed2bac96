#!/usr/bin/env bash
# The guest as a booted system with udev, for suites that expect one
# (blktests and the device-mapper and LVM tools wait on udev; multipath
# finds paths by the identifiers udev reads): blkemu-vm --udev (or the
# line below) starts systemd-udevd, replays the boot's uevents and
# settles before the script.  A blkemu-scsi disk gets its
# /dev/disk/by-id links from its VPD 0x83 identifier and INQUIRY
# strings, udevadm settle and wait return, and dmsetup and LVM run with
# udev synchronisation on (DM_DISABLE_UDEV unset), their nodes made by
# udev's rules.
#   blkemu-vm scenarios/udev-guest.sh
# Skips (77) without target_core_user and tcm_loop.
# blkemu-vm: udev
# blkemu-vm: needs target_core_user tcm_loop
# budget: 40 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2

section "udevd is running and the boot's events are processed"
check "systemd-udevd runs in the guest" -n "$(pidof systemd-udevd)"
check "DM_DISABLE_UDEV is not set" -z "${DM_DISABLE_UDEV:-}"
t0=$SECONDS
udevadm settle --timeout=60
rc=$?
check "udevadm settle returns 0 ($rc, $((SECONDS - t0)) s)" "$rc" -eq 0
check "the udev database knows the boot's block devices (/run/udev/data)" \
  "$(ls /run/udev/data 2>/dev/null | grep -c '^b')" -ge 1

section "a SCSI disk's by-id links from its own identifiers"
scsi_require
scsi_start s --disk "name=arr,size=64M,profile=san-hsv400,control=$work/arr.ctl"
dev=${sd[arr]}
b=${dev#/dev/}
wwid=$(cat /sys/block/$b/device/wwid)
naa=${wwid#naa.}
echo "  $dev: wwid $wwid, vendor '$(cat /sys/block/$b/device/vendor)' model '$(cat /sys/block/$b/device/model)'"
link=/dev/disk/by-id/wwn-0x$naa
t0=$SECONDS
udevadm wait --timeout=60 "$link"
rc=$?
check "udevadm wait $link returns 0 ($rc, $((SECONDS - t0)) s)" "$rc" -eq 0
check "$link points at $dev" "$(readlink -f "$link")" = "$dev"
props=$(udevadm info --query=property --name="$dev")
echo "$props" | grep -E '^ID_(VENDOR|MODEL|SERIAL|WWN_WITH_EXTENSION)=' | sed 's/^/  /'
check "udev's ID_WWN_WITH_EXTENSION is the disk's NAA (0x$naa)" \
  "$(echo "$props" | sed -n 's/^ID_WWN_WITH_EXTENSION=//p')" = "0x$naa"
check "ID_VENDOR is the profile's INQUIRY vendor (HP)" \
  "$(echo "$props" | sed -n 's/^ID_VENDOR=//p')" = HP
serial=$(echo "$props" | sed -n 's/^ID_SERIAL=//p')
check "a scsi-ID_SERIAL link points at $dev too" \
  "$(readlink -f "/dev/disk/by-id/scsi-$serial")" = "$dev"

section "device-mapper and LVM with udev synchronisation"
dmsetup create blkemu-lin --table "0 $(blockdev --getsz "$dev") linear $dev 0" 2> "$work/dm.err" ||
  sed 's/^/  /' "$work/dm.err"
check "dmsetup create returns with /dev/mapper/blkemu-lin made" -b /dev/mapper/blkemu-lin
check "udev's rules made /dev/disk/by-id/dm-name-blkemu-lin" -L /dev/disk/by-id/dm-name-blkemu-lin
check "dmsetup udevcookies: no cookie left waiting" \
  "$(dmsetup udevcookies 2>/dev/null | grep -c '^0x')" -eq 0
dmsetup remove blkemu-lin
udevadm settle --timeout=60
check "dmsetup remove: the by-id link is gone" ! -e /dev/disk/by-id/dm-name-blkemu-lin
pvcreate -q -f "$dev" > "$work/lvm.log" 2>&1 &&
  vgcreate -q blkemuvg "$dev" >> "$work/lvm.log" 2>&1 &&
  lvcreate -q -y -L 16M -n lv0 blkemuvg >> "$work/lvm.log" 2>&1 || sed 's/^/  /' "$work/lvm.log"
check "lvcreate: /dev/blkemuvg/lv0 from udev's LVM rules" -b /dev/blkemuvg/lv0
check "and /dev/disk/by-id/dm-name-blkemuvg-lv0" -L /dev/disk/by-id/dm-name-blkemuvg-lv0
vgchange -q -an blkemuvg > /dev/null 2>&1
udevadm settle --timeout=60
check "vgchange -an: udev removed /dev/blkemuvg/lv0" ! -e /dev/blkemuvg/lv0
vgremove -q -f blkemuvg > /dev/null 2>&1

section "the disk leaves as a real one does"
scsi_stop s
udevadm settle --timeout=60
check "after blkemu-scsi exits, $link is removed" ! -e "$link"
finish
