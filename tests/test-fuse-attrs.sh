#!/usr/bin/env bash
# Every attribute file of every disk under .blkemu reads and writes that
# disk's key, and only that one: three disks, each file compared with
# `blkemu-ctl get` on the disk's own control socket, every runtime key
# written (with its own value, then with a value that tells the disks
# apart) and read back through both.  (power and view drive the disk, not
# a key: test-crashcheck covers them.)  With a fixed 64 inode slots per
# disk, d0's last keys were d1's first ones (`echo 1M > d0/stall` set d1's
# max-transfer) and the last disk's last 22 files returned ENOENT.
source "$(dirname "$0")/functions.sh"
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v fusermount3 >/dev/null || { echo "SKIP: fusermount3 not installed"; exit 77; }
mnt=$tmp/mnt
specs=()
for d in 0 1 2; do
  specs+=(--disk "name=d$d,size=$((d + 1))M,latency-read=$((d + 1))00us,control=$tmp/d$d.sock")
done
fuse_mount "$mnt" "${specs[@]}"

ctl () { "$BLKEMU_CTL" "$tmp/d$1.sock" "${@:2}"; }
nkeys=$(ctl 0 get | wc -w)
runtime=" $(ctl 0 keys) "

# compare_all: each file of each disk holds what its control socket says.
compare_all () {
  local d f key want got n=0
  for d in 0 1 2; do
    for f in "$mnt/.blkemu/d$d"/*; do
      key=${f##*/}
      case $key in stats|summary|reset|power|view|bad|stuck) continue ;; esac
      got=$(cat "$f") || fail "d$d/$key: read failed"
      want=$(ctl "$d" get "$key") || fail "d$d/$key: no such key on the socket"
      [ "$got" = "$want" ] || fail "d$d/$key: file '$got', socket '$want' ($1)"
      n=$((n + 1))
    done
  done
  echo "ok: $n attribute files match their disk's control socket ($1)"
}

for d in 0 1 2; do
  listed=$(ls "$mnt/.blkemu/d$d" | wc -l)
  # Every key but stats and summary (reached through the fixed files of
  # those names), plus stats, summary, reset, power, view, bad and stuck.
  expect_eq "d$d: files listed" "$listed" $((nkeys - 2 + 7))
  jq -e ".config.name == \"d$d\"" "$mnt/.blkemu/d$d/stats" > /dev/null ||
    fail "d$d/stats is another disk's"
done
compare_all "as started"

# Write every runtime key of every disk with the value it holds: each
# write must be taken (a file that is another disk's key refuses values
# that are not its own kind).
written=0
for d in 0 1 2; do
  for key in $runtime; do
    v=$(cat "$mnt/.blkemu/d$d/$key")
    printf '%s\n' "$v" > "$mnt/.blkemu/d$d/$key" ||
      fail "d$d/$key: writing back its own value '$v' was refused"
    written=$((written + 1))
  done
done
echo "ok: $written runtime attribute files took their own value back"
compare_all "after writing each key back"

# Values that tell the disks apart, on the keys the old layout crossed.
for d in 0 1 2; do
  echo "$((d + 2))s" > "$mnt/.blkemu/d$d/stall"
  echo "$((d + 1))0" > "$mnt/.blkemu/d$d/error-after"
  echo "$((d + 1))M" > "$mnt/.blkemu/d$d/link-bandwidth"
  echo "$((d + 5))" > "$mnt/.blkemu/d$d/slowdown"
done
for d in 0 1 2; do
  expect_eq "d$d: stall through the socket" "$(ctl $d get stall)" "$((d + 2))s"
  expect_eq "d$d: error-after" "$(ctl $d get error-after)" "$((d + 1))0"
  expect_eq "d$d: link-bandwidth" "$(ctl $d get link-bandwidth)" "$((d + 1))M"
  expect_eq "d$d: slowdown" "$(ctl $d get slowdown)" "$((d + 5))"
  expect_eq "d$d: max-transfer untouched" "$(ctl $d get max-transfer)" 32M
done
# And the other way: set through each socket, read through the files.
for d in 0 1 2; do
  ctl "$d" set "latency-write=$((d + 7))ms" "error-offset=$((d + 1))M" > /dev/null
done
compare_all "after distinct values"
for d in 0 1 2; do
  expect_eq "d$d/latency-write" "$(cat "$mnt/.blkemu/d$d/latency-write")" "$((d + 7))ms"
done
kill -0 "$fuse_pid" || fail "blkemu-fuse died"
