#!/usr/bin/env bash
# blkemu-fuse's command line: clear errors for bad input; SIGTERM unmounts
# cleanly and writes stats.
source "$(dirname "$0")/functions.sh"
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

bad () { refuses "$1" "$BLKEMU_FUSE" -f "${@:2}"; }
mkdir -p "$tmp/m"
bad "nope': No such file or directory" "$tmp/nope" --disk size=1M
bad "no disks" "$tmp/m"
bad "name=x: two disks with this name" "$tmp/m" --disk name=x,size=1M --disk name=x,size=1M
bad "name=a/b: must be a plain file name" "$tmp/m" --disk name=a/b,size=1M
bad "name=.blkemu: reserved for the attribute directory" "$tmp/m" --disk name=.blkemu,size=1M
bad "logical-block-size=3000: must be a power of two" "$tmp/m" --disk size=1M,logical-block-size=3000
bad "unknown key 'speed'" "$tmp/m" --disk size=1M,speed=9
bad "no mount point" --disk size=1M
bad "zoned=host-managed: FUSE has no zone commands, zone reports or zone append: needs a frontend that carries it (blkemu-ctl carriage)" "$tmp/m" --disk size=64M,zoned=host-managed,zone-size=4M
# Into a file first: grep -q stops reading early, and a long --help would
# die of SIGPIPE under pipefail.
"$BLKEMU_FUSE" --help > "$tmp/help"
grep -q -- "--disk SPEC" "$tmp/help" || fail "--help lacks --disk"
grep -q "max-transfer=SIZE" "$tmp/help" || fail "--help lacks the keys"
grep -q -- "--list-profiles" "$tmp/help" || fail "--help lacks --list-profiles"
echo "ok: --help lists options and keys"

command -v fusermount3 >/dev/null || { echo "SKIP: the rest needs fusermount3"; exit 77; }
mnt=$tmp/mnt
fuse_mount "$mnt" --disk name=d0,size=8M,stats="$tmp/d0.json",control="$tmp/d0.ctl"
bad "already a mount point" "$mnt" --disk size=1M
# The control socket and the attribute files are two views of one control.
"$BLKEMU_CTL" "$tmp/d0.ctl" set latency-read=2ms max-transfer=64K
expect_eq "attr sees socket change" "$(cat "$mnt/.blkemu/d0/latency-read")" 2ms
echo 128K > "$mnt/.blkemu/d0/max-transfer"
expect_eq "socket sees attr change" "$("$BLKEMU_CTL" "$tmp/d0.ctl" get max-transfer)" 128K
dd if=/dev/zero of="$mnt/d0" bs=64k count=4 conv=notrunc status=none
kill -TERM "$fuse_pid"
wait "$fuse_pid" || fail "blkemu-fuse exited non-zero on SIGTERM"
mountpoint -q "$mnt" && fail "still mounted after SIGTERM"
expect_eq "stats written at exit" "$(jq .ops.write.bytes "$tmp/d0.json")" 262144

# Eight disks, a control socket each: one control thread serves them all
# (it was one thread a disk, each waking five times a second), each
# socket answers for its own disk, and SIGUSR1 dumps every disk's stats.
mnt8=$tmp/mnt8
specs=()
for i in $(seq 8); do
  specs+=(--disk "name=c$i,size=8M,latency-read=${i}ms,control=$tmp/c$i.ctl,stats=$tmp/c$i.json")
done
fuse_mount "$mnt8" "${specs[@]}"
for i in $(seq 8); do
  expect_eq "c$i answers for itself" "$("$BLKEMU_CTL" "$tmp/c$i.ctl" get latency-read)" "${i}ms"
done
expect_eq "control threads for 8 disks" \
  "$(grep -lx blkemu-control /proc/$fuse_pid/task/*/comm | wc -l)" 1
kill -USR1 "$fuse_pid"
for i in $(seq 50); do
  [ "$(ls "$tmp"/c*.json 2>/dev/null | wc -l)" -eq 8 ] && break
  sleep 0.1
done
expect_eq "SIGUSR1: stats of every disk written" "$(ls "$tmp"/c*.json | wc -l)" 8
# One disk's stop leaves the others served (blkemu-fuse stops them in
# turn at exit: the last one ends the thread).
kill -TERM "$fuse_pid"
wait "$fuse_pid" || fail "blkemu-fuse with 8 controlled disks exited non-zero"
for i in $(seq 8); do
  [ -e "$tmp/c$i.ctl" ] && fail "c$i: control socket left behind"
done
echo "ok: sockets removed at exit"
