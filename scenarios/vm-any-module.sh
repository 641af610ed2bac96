#!/usr/bin/env bash
# blkemu-vm for any experiment: modules load on demand as on a booted
# system (a script that loads nothing by hand gets dm-mod, loop and btrfs
# when it uses them), and beyond the initramfs from the kernel's whole tree (dm-dust, null_blk and nvme-loop where the kernel
# builds them: Debian's have no dm-dust, and 6.1 no nvme-loop, so dm-flakey
# and nvme-tcp stand in), and device nodes appear as users expect without
# udev: dmsetup create makes its /dev/mapper node, LVM its /dev/VG/LV on a
# blkemu disk, losetup -P its partitions.  Then the README's replay
# recipe: blktrace captured on a loop device, replayed by fio on a blkemu
# disk.  Prints the guest's CPU count (blkemu-vm --cpus may exceed the
# host's).
#   blkemu-vm scenarios/vm-any-module.sh
# kernels: 6.1 6.12 (6.1 has no nvme-loop: nvme-tcp stands in)
# budget: 80 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2

section "module autoload: a script that loads nothing by hand"
# As on a booted system: dmsetup opens /dev/mapper/control, mount asks
# for btrfs and losetup for loop-control, and the kernel loads each.
loaded () { [ -d "/sys/module/$1" ] && echo loaded || echo absent; }
check "dm_mod, btrfs and loop not loaded yet" \
  "$(loaded dm_mod)/$(loaded btrfs)/$(loaded loop)" = absent/absent/absent
check "the static node /dev/mapper/control is there before dm_mod" -c /dev/mapper/control
dmsetup create blkemu-zero --table "0 2048 zero" 2> "$work/auto-dm.err" || sed 's/^/  /' "$work/auto-dm.err"
check "dmsetup create: dm_mod loaded on demand, /dev/mapper/blkemu-zero made" -b /dev/mapper/blkemu-zero
dmsetup remove blkemu-zero 2>/dev/null
truncate -s 160M "$work/auto-btrfs.img"
mkfs.btrfs -q "$work/auto-btrfs.img" > /dev/null 2>&1
mkdir -p "$work/auto-mnt"
mount -o loop "$work/auto-btrfs.img" "$work/auto-mnt" 2> "$work/auto-mount.err" ||
  sed 's/^/  /' "$work/auto-mount.err"
check "mount -t btrfs of a fresh btrfs: loop and btrfs loaded on demand" \
  "$(grep -c " $work/auto-mnt btrfs " /proc/mounts)/$(loaded loop)/$(loaded btrfs)" = 1/loaded/loaded
umount "$work/auto-mnt" 2>/dev/null
modprobe nbd nbds_max=2
modprobe loop

section "modules from the kernel's whole tree ($(uname -r), $(nproc) CPUs)"
# The suite boots this with --cpus N --env EXPECT_CPUS=N (blkemu-vm's
# environment reaches the script).
[ -z "${EXPECT_CPUS:-}" ] ||
  check "$EXPECT_CPUS CPUs, as --cpus asked (--env EXPECT_CPUS)" "$(nproc)" -eq "$EXPECT_CPUS"
# first_module A B: the first of the modules this kernel has.
first_module () { local m; for m; do modprobe -n "$m" 2> /dev/null && { echo "$m"; return; }; done; echo "$1"; }
dm_target=$(first_module dm_dust dm_flakey)
dm_target=${dm_target#dm_}
for m in dm_$dm_target null_blk $(first_module nvme_loop nvme_tcp); do
  modprobe "$m" 2> "$work/$m.err" || sed 's/^/  /' "$work/$m.err"
  check "modprobe $m" -d "/sys/module/$m"
done
check "null_blk made /dev/nullb0" -b /dev/nullb0

if same_on_every_kernel "device-mapper, LVM, partitions and the replay recipe"; then
  section "device-mapper and LVM on a blkemu disk, no udev"
  disk_start lv size=256M max-transfer=127K oversize=split
  "$ATTACH" nbd "$work/lv.sock" /dev/nbd0 > /dev/null
  sectors=$(blockdev --getsz /dev/nbd0)
  if [ $dm_target = dust ]; then table="0 $sectors dust /dev/nbd0 0 512"
  else table="0 $sectors flakey /dev/nbd0 0 60 0"; fi
  dmsetup create blkemu-dm --table "$table" 2> "$work/dm.err" || sed 's/^/  /' "$work/dm.err"
  check "dmsetup create (dm-$dm_target) makes /dev/mapper/blkemu-dm" -b /dev/mapper/blkemu-dm
  ctl lv reset
  dd if=/dev/mapper/blkemu-dm of=/dev/null bs=64k count=16 iflag=direct status=none
  check "reads through dm-$dm_target reach the disk" "$(disk_stat lv .ops.read.requests)" -gt 0
  dmsetup remove blkemu-dm
  pvcreate -q /dev/nbd0 > "$work/lvm.out" 2>&1 && vgcreate -q blkemuvg /dev/nbd0 >> "$work/lvm.out" 2>&1 &&
    lvcreate -q -y -L 64M -n lv0 blkemuvg >> "$work/lvm.out" 2>&1
  check "lvcreate makes /dev/blkemuvg/lv0" -b /dev/blkemuvg/lv0
  ctl lv reset
  dd if=/dev/zero of=/dev/blkemuvg/lv0 bs=1M count=8 oflag=direct status=none
  lv_writes=$(disk_stat lv .ops.write.requests) lv_max=$(max_size lv write)
  check "writes through LVM reach the disk ($lv_writes), none above 127K ($lv_max)" \
    "$lv_writes" -gt 0 -a "$lv_max" -le 130048
  vgchange -q -an blkemuvg > /dev/null 2>&1
  check "vgchange -an removes /dev/blkemuvg/lv0 (no udev)" ! -b /dev/blkemuvg/lv0
  grep -v "^ *$" "$work/lvm.out" | sed 's/^/  lvm: /' | head -5

  section "partitions on a loop device (losetup -P)"
  truncate -s 64M "$work/p.img"
  printf 'label: dos\n,32M\n,\n' | sfdisk -q "$work/p.img" > "$work/sfdisk.out" 2>&1 || sed 's/^/  /' "$work/sfdisk.out"
  loopdev=$(losetup -f --show -P "$work/p.img")
  check "losetup -P makes ${loopdev}p1 and p2" -b "${loopdev}p2"
  losetup -d "$loopdev"
  nbd-client -d /dev/nbd0 > /dev/null 2>&1 || true
  disk_stop lv

  section "the replay recipe: blktrace on a real device, fio replays it on blkemu"
  if command -v blktrace > /dev/null; then
    mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
    truncate -s 64M "$work/real.img"
    real=$(losetup -f --show "$work/real.img")
    mkdir "$work/cap"
    blktrace -d "$real" -D "$work/cap" -o cap > "$work/blktrace.log" 2>&1 &
    bt=$!
    sleep 1
    fio --name=real --filename="$real" --direct=1 --rw=randwrite --bsrange=4k-64k \
        --blockalign=4k --number_ios=200 --size=64M --output=/dev/null
    kill -INT $bt; wait $bt || true
    blkparse -q -i "$work/cap/cap" -d "$work/cap.bin" -O
    captured=$(blkparse -i "$work/cap/cap" -f "%a %d\n" 2>/dev/null | grep -c '^C W' || true)
    losetup -d "$real"
    disk_start replay size=64M
    fio --name=replay --ioengine=nbd --uri="nbd+unix:///?socket=$work/replay.sock" \
        --read_iolog="$work/cap.bin" --replay_redirect=disk0 --output=/dev/null
    check "blktrace captured the 200 writes on $real ($captured)" "$captured" -ge 200
    check "fio replayed them on a blkemu disk ($(disk_stat replay .ops.write.requests))" \
      "$(disk_stat replay .ops.write.requests)" -eq "$captured"
    disk_stop replay
  else
    echo "  (blktrace is not installed on the host: apt install blktrace)"
  fi
fi
finish
