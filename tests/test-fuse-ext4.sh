#!/usr/bin/env bash
# A filesystem on a loop device over a blkemu-fuse disk: mkfs, mount,
# write, sync, unmount, fsck clean; then fio crc32c verification with
# several jobs through the loop device, in both loop modes.
source "$(dirname "$0")/functions.sh"
requires_fuse_loop
requires mkfs.ext4 -V
requires fio --version
mnt=$tmp/mnt
fuse_mount "$mnt" --disk name=fs,size=256M,max-transfer=128K,oversize=split,latency-write=50us \
                  --disk name=raw,size=128M,backend=file,file=$tmp/raw.img,max-transfer=64K,oversize=split
dev=$(loop_attach "$mnt/fs" --direct-io=on)
mkfs.ext4 -q -F "$dev"
mkdir "$tmp/fs"
mount "$dev" "$tmp/fs"
cleanup_hooks=("fs_umount '$tmp/fs'" "${cleanup_hooks[@]}")
for i in $(seq 20); do head -c $((i * 37000)) /dev/urandom > "$tmp/fs/file$i"; done
sha256sum "$tmp"/fs/file* | sed "s|$tmp/fs/||" > "$tmp/sums"
sync
umount "$tmp/fs"
cleanup_hooks=("${cleanup_hooks[@]:1}")
fsck.ext4 -n -f "$dev" > "$tmp/fsck.out" 2>&1 || { cat "$tmp/fsck.out"; fail "fsck found problems"; }
echo "ok: fsck clean"
mount -o ro "$dev" "$tmp/fs"
(cd "$tmp/fs" && sha256sum -c --quiet "$tmp/sums") || fail "file contents changed"
umount "$tmp/fs"
echo "ok: 20 files intact after remount"
expect_eq "device saw flushes" "$(jq '.ops.flush.requests > 0' "$mnt/.blkemu/fs/stats")" true

for mode in on off; do
  rdev=$(loop_attach "$mnt/raw" --direct-io=$mode)
  fio --name=v --filename="$rdev" --direct=1 --ioengine=libaio --iodepth=8 \
      --numjobs=4 --rw=randwrite --bsrange=4k-256k --size=32M \
      --offset_increment=32M --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
      --group_reporting --output="$tmp/fio.out" ||
    { cat "$tmp/fio.out"; fail "fio verify failed (direct-io=$mode)"; }
  echo "ok: fio verify through loop (direct-io=$mode)"
done
expect_eq "raw: no device errors" "$(jq '.ops.write.errors + .ops.read.errors' "$mnt/.blkemu/raw/stats")" 0
