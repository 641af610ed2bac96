# metadata_workload DIR: the crash tests' epoch on a mounted ext4 at DIR
# (sourced by tests/test-crashcheck.sh and scenarios/crashcheck-ublk.sh).
# Files made and synced (the checkpoint), then created, written, renamed,
# some fdatasync'ed, unlinked and moved into new directories, then
# direct writes that reach the disk at once with no flush after them:
# unflushed data in the disk's cache, and their metadata in a journal
# transaction not yet committed.
metadata_workload () {
  local d=$1/d i f
  mkdir "$d"
  for i in $(seq 20); do head -c $((i * 5000)) /dev/urandom > "$d/base$i"; done
  sync -f "$1"                  # the checkpoint: all flushed
  for i in $(seq 60); do
    f=$d/f$i
    head -c $((4096 + i * 700)) /dev/urandom > "$f.tmp"
    [ $((i % 3)) = 0 ] && sync -d "$f.tmp"
    mv "$f.tmp" "$f"
    [ $((i % 4)) = 0 ] && rm -f "$d/base$((i / 4))"
    [ $((i % 10)) = 0 ] && mkdir "$d/sub$i" && mv "$d/f$((i - 1))" "$d/sub$i/"
  done
  for i in $(seq 8); do
    dd if=/dev/urandom of="$d/direct$i" bs=64K count=$i oflag=direct status=none
  done
}
