#!/usr/bin/env bash
# blkemu-fiemap maps a file's bytes to the disk under its file system:
# ext4 on a loop device, whole and in a partition, each range checked by
# reading the disk image there; and it refuses what it cannot map (data
# still delayed, unwritten extents, holes, another device, bytes in two
# ranges with --keys).  Skips without root and loop devices.
source "$(dirname "$0")/functions.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: loop devices and mounts need root"; exit 77; }
losetup -f > /dev/null 2>&1 || { echo "SKIP: no free loop device"; exit 77; }
requires mkfs.ext4 -V
FIEMAP=$BLKEMU_BUILD/tools/blkemu-fiemap
mnt=$tmp/mnt
mkdir -p "$mnt"
cleanup_hooks+=("umount '$mnt' 2>/dev/null")

# same_bytes IMAGE DISK_OFFSET FILE FILE_OFFSET LENGTH: the image holds
# the file's bytes there.
same_bytes () {
  cmp -s <(tail -c +$(($2 + 1)) "$1" | head -c "$5") <(tail -c +$(($4 + 1)) "$3" | head -c "$5")
}

# check_file IMAGE DEV FILE: every range blkemu-fiemap prints for FILE
# holds its bytes in IMAGE; prints how many ranges.
check_file () {
  "$FIEMAP" --dev "$2" "$3" > "$tmp/ranges" || fail "blkemu-fiemap $3 refused: $(cat "$tmp/ranges")"
  local off len at total=0
  while read -r off len at; do
    same_bytes "$1" "$off" "$3" "$at" "$len" ||
      fail "$3: the disk at $off does not hold its bytes $at+$len"
    total=$((total + len))
  done < "$tmp/ranges"
  [ "$total" -eq "$(stat -c %s "$3")" ] || fail "$3: ranges cover $total of $(stat -c %s "$3") bytes"
  wc -l < "$tmp/ranges"
}

# ext4 on the whole (loop) disk.
truncate -s 64M "$tmp/disk.img"
mkfs.ext4 -q -F -b 4096 "$tmp/disk.img"
dev=$(loop_attach "$tmp/disk.img")
mount "$dev" "$mnt"
head -c 300000 /dev/urandom > "$mnt/data"
sync -f "$mnt"
n=$(check_file "$tmp/disk.img" "$dev" "$mnt/data") || exit 1
echo "ok: a 300000-byte file on a whole disk: $n range(s), each holding its bytes"
read -r off len _ < <("$FIEMAP" "$mnt/data" 8192 8192)
same_bytes "$tmp/disk.img" "$off" "$mnt/data" 8192 8192 || fail "bytes 8192+8192 not at $off"
expect_eq "a sub-range: its own length" "$len" 8192
keys=$("$FIEMAP" --dev "$dev" --keys "$mnt/data" 8192 8192)
expect_eq "--keys" "$keys" "error-offset=$off error-length=8192"

# What cannot be mapped is refused, with the reason.
refused () {
  local want=$1; shift
  if "$FIEMAP" "$@" > "$tmp/out" 2>&1; then fail "[$*] accepted: $(cat "$tmp/out")"; fi
  grep -qF -- "$want" "$tmp/out" || fail "[$*]: lacks '$want': $(cat "$tmp/out")"
  echo "ok: refused: $(cat "$tmp/out")"
}
head -c 20000 /dev/urandom > "$mnt/fresh"   # not synced: delayed allocation
refused "delayed allocation" "$mnt/fresh"
fallocate -l 1M "$mnt/prealloc"
refused "unwritten" "$mnt/prealloc"
truncate -s 1M "$mnt/sparse"
refused "a hole in the range" "$mnt/sparse"
refused "past the file's end" "$mnt/data" 299000 4096
refused "not a regular file" "$mnt"
other=$(loop_attach "$tmp/disk.img")
refused "its file system is on device" --dev "$other" "$mnt/data"
refused "not a block device" --dev "$tmp/disk.img" "$mnt/data"
# Two ranges: a file written in two halves far apart on the disk.
dd if=/dev/urandom of="$mnt/split" bs=4096 count=1 status=none conv=fsync
head -c 8M /dev/zero > "$mnt/filler" && sync -f "$mnt"
dd if=/dev/urandom of="$mnt/split" bs=4096 count=1 seek=1 status=none conv=fsync,notrunc
n=$(check_file "$tmp/disk.img" "$dev" "$mnt/split") || exit 1
if [ "$n" -ge 2 ]; then
  refused "--keys takes one" --keys "$mnt/split"
fi
umount "$mnt"

# ext4 in a partition: offsets of the whole disk carry the partition's
# start; of the partition itself, not.
truncate -s 64M "$tmp/part.img"
p1=
if command -v sfdisk > /dev/null && echo 'start=4096, type=83' | sfdisk -q "$tmp/part.img" 2> /dev/null; then
  pdev=$(loop_attach "$tmp/part.img" -P)
  p1=${pdev}p1 sys=/sys/class/block/${pdev#/dev/}p1
  for _ in $(seq 50); do [ -b "$p1" ] || [ -e "$sys/dev" ] && break; sleep 0.1; done
  # Without udev (a container) the partition has no node: make one.
  if [ ! -b "$p1" ] && [ -e "$sys/dev" ]; then
    IFS=: read -r ma mi < "$sys/dev"
    mknod "$tmp/p1" b "$ma" "$mi" && p1=$tmp/p1
  fi
fi
if [ -n "${p1:-}" ] && [ ! -b "$p1" ]; then
  echo "skipped: the partition case (the kernel made no partition of $pdev: losetup -P scans nothing here)"
elif [ -n "${p1:-}" ]; then
  mkfs.ext4 -q -F -b 4096 "$p1"
  mount "$p1" "$mnt"
  head -c 100000 /dev/urandom > "$mnt/data"
  sync -f "$mnt"
  n=$(check_file "$tmp/part.img" "$pdev" "$mnt/data") || exit 1
  read -r whole _ < <("$FIEMAP" --dev "$pdev" "$mnt/data")
  read -r inpart _ < <("$FIEMAP" --dev "$p1" "$mnt/data")
  expect_eq "the partition's start (2 MiB) between disk and partition offsets" $((whole - inpart)) $((4096 * 512))
  echo "ok: ext4 in a partition: $n range(s) at the whole disk's offsets, the partition's own with --dev PART"
  umount "$mnt"
else
  echo "skipped: the partition case (no sfdisk)"
fi
# Usage errors: exit 2, naming what is wrong.
out=$("$FIEMAP" "$tmp/disk.img" x 10 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-fiemap: OFFSET x LENGTH 10: must be numbers of bytes, LENGTH at least 1" ] ||
  fail "a bad OFFSET: exit $rc: $out"
out=$("$FIEMAP" --bogus "$tmp/disk.img" 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-fiemap: unknown option '--bogus' (see --help)" ] ||
  fail "an unknown option: exit $rc: $out"
echo "ok: usage errors exit 2 with the reason"
"$FIEMAP" --help | grep -q "error-offset=N error-length=N" || fail "--help lacks --keys"
echo "ok: blkemu-fiemap"
