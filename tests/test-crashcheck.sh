#!/usr/bin/env bash
# blkemu-crashcheck on a real file system: ext4 on a loop device over a
# write-cached blkemu-fuse disk.  A metadata-heavy epoch (create, write,
# rename, fsync, unlink) ends in a power-off with its unflushed writes
# kept; every torn crash state of it must mount (journal replay, into the
# view's scratch overlay) and fsck clean.  The same epoch with
# barrier=0 (ext4 sends no flushes, so the cache holds everything in any
# order) must yield corrupt states: the check that the explorer finds
# what it exists to find.  The disk itself is never changed by the views.
source "$(dirname "$0")/functions.sh"
source "$(dirname "$0")/metadata-epoch.sh"
requires_fuse_loop
requires mkfs.ext4 -V
requires jq --version
crashcheck="$top/tools/blkemu-crashcheck"
states=${CRASHCHECK_STATES:-20}
mnt=$tmp/mnt
sock=$tmp/fs.sock
# trace= and no stats=, as in blkemu-crashcheck(1)'s own example: the
# write fates come from the trace alone.
fuse_mount "$mnt" --disk "name=fs,size=64M,write-cache=yes,cache-size=64M,physical-block-size=4096,control=$sock,trace=$tmp/fs.trace"
dev=$(loop_attach "$mnt/fs" --direct-io=on)
ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
mkdir -p "$tmp/fs" "$tmp/check"

# The check each state must pass: the journal replays (mount), the file
# system is consistent (fsck -n after the replay).
check="mount -t ext4 {dev} $tmp/check && umount $tmp/check && fsck.ext4 -fn {dev}"

# epoch MOUNT_OPTIONS: a workload on a fresh file system, then the power
# goes with its unflushed writes kept, and the dead file system is let go.
epoch () {
  # No lazy init: a kernel thread zeroing inode tables behind the
  # workload would flush (or not) at its own pace.
  mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
  mount -o "$1" "$dev" "$tmp/fs"
  metadata_workload "$tmp/fs"
  ctl power-off > /dev/null || fail "power-off"
  umount "$tmp/fs" 2> /dev/null || umount -l "$tmp/fs"
  blockdev --flushbufs "$dev" 2> /dev/null || true
}

# The views leave the disk as it was: the same cache before and after,
# and after power-on the same bytes as before the views.
epoch defaults
ctl power-on > /dev/null
before=$(sha256sum < "$mnt/fs")
ctl power-off > /dev/null
cached=$(jq .write_cache.entries "$mnt/.blkemu/fs/stats")
[ "$cached" -gt 0 ] || fail "the epoch left nothing unflushed in the cache"
echo "ok: the epoch left $cached writes unflushed"
"$crashcheck" --control "$sock" --dev "$dev" --states "$states" --seed 1000 \
    --mode torn --check "$check" > "$tmp/barrier.out" 2>&1 && rc=0 || rc=$?
cat "$tmp/barrier.out"
[ $rc = 0 ] || fail "with barriers a crash state failed its check"
grep -q "^blkemu-crashcheck: $states states of mode torn (seeds 1000..$((1000 + states - 1))): $states passed, 0 failed$" "$tmp/barrier.out" ||
  fail "the summary line"
expect_eq "the cache still holds the epoch's writes" \
  "$(jq .write_cache.entries "$mnt/.blkemu/fs/stats")" "$cached"
expect_eq "views opened" "$(jq .faults.views "$mnt/.blkemu/fs/stats")" "$states"

ctl power-on > /dev/null
expect_eq "after the views and power-on the disk is byte for byte the same" \
  "$(sha256sum < "$mnt/fs")" "$before"

# Without barriers the cache is never flushed: the explorer must find
# states that do not mount or do not fsck clean.
flushes=$(jq .ops.flush.requests "$mnt/.blkemu/fs/stats")
epoch barrier=0
echo "barrier=0: $(jq .write_cache.entries "$mnt/.blkemu/fs/stats") writes unflushed, $(( $(jq .ops.flush.requests "$mnt/.blkemu/fs/stats") - flushes )) flushes in the epoch"
"$crashcheck" --control "$sock" --dev "$dev" --states "$states" --seed 2000 \
    --mode torn --keep-going --log "$tmp/logs" --check "$check" > "$tmp/nobarrier.out" 2>&1 && rc=0 || rc=$?
cat "$tmp/nobarrier.out"
[ $rc = 1 ] || fail "barrier=0: no crash state failed its check (exit $rc)"
bad=$(sed -n 's/.* failed: seeds \(.*\)$/\1/p' "$tmp/nobarrier.out")
[ -n "$bad" ] || fail "barrier=0: no failing seeds listed"
echo "ok: barrier=0: failing states found: seeds $bad"
grep -q "write [0-9]*: offset [0-9]* length [0-9]* \(persisted\|lost\|torn\)" "$tmp/nobarrier.out" ||
  fail "a failing state's writes are not listed"
# The acknowledgement log: what the disk acknowledged as durable before
# the cut, and each write the state decided, issued after the last
# flush (with barrier=0 none covers them: nothing lost was promised).
grep -q "acknowledged durable before the cut: [1-9][0-9]* flushes, [0-9]* FUA writes; the last flush done at [0-9.]* s" \
  "$tmp/nobarrier.out" || fail "no acknowledgement log: $(grep -m1 acknowledged "$tmp/nobarrier.out")"
grep -q "write [0-9]*: offset [0-9]* length [0-9]* lost (issued at [0-9.]* s, after the last flush: never acknowledged durable)" \
  "$tmp/nobarrier.out" || fail "no lost write placed after the last flush"
! grep -q "before the last flush" "$tmp/nobarrier.out" ||
  fail "a write issued before the last flush was still undecided in a state"
! grep -q "issue time not in the trace" "$tmp/nobarrier.out" ||
  fail "a cached write matched no write of the trace"
echo "ok: the acknowledgement log: $(grep -m1 acknowledged "$tmp/nobarrier.out" | sed 's/^ *//')"
# --replay gives the same verdict for a failing seed.
first=${bad%% *}
"$crashcheck" --control "$sock" --dev "$dev" --replay "$first" --mode torn \
    --check "$check" > "$tmp/replay.out" 2>&1 && fail "replay of seed $first passed"
grep -q "seed $first: .*FAILED" "$tmp/replay.out" || fail "replay output: $(cat "$tmp/replay.out")"
echo "ok: --replay $first fails again"

# The same through blkemu-fuse's attribute files, on the epoch left
# (blkemu-crashcheck leaves the disk off: power it on first).
a=$mnt/.blkemu/fs
expect_eq "power reads on" "$(cat "$a/power")" on
echo on > "$a/power"
echo off > "$a/power"
expect_eq "power reads off" "$(cat "$a/power")" off
echo "torn 2003" > "$a/view"
fuse_view=$(cat "$a/view")
sock_view=$(ctl view end > /dev/null; ctl view torn 2003)
expect_eq "a view through the file is the socket's" "$fuse_view" "$sock_view"
echo end > "$a/view"
expect_eq "view reads end" "$(cat "$a/view")" end
echo "sideways" > "$a/view" 2> /dev/null && fail "view sideways accepted"
echo "crash subset 9 9" > "$a/power" 2> /dev/null && fail "crash with two seeds accepted"
echo "crash subset 9" > "$a/power"
case $(cat "$a/power") in
  "mode=subset seed=9 persisted="*) echo "ok: power: $(cat "$a/power")" ;;
  *) fail "power after a crash: $(cat "$a/power")" ;;
esac
[ "$(jq -r .faults.last_crash.mode "$a/stats")" = subset ] || fail "the crash is not in stats"
echo on > "$a/power"
ctl power-on > /dev/null
echo "ok: power and view files drive the disk as the socket does"

# Bad use is refused with the option and the rule.
out=$("$crashcheck" --control "$sock" --check true --states 0 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-crashcheck: --states 0: must be a whole number >= 1" ] ||
  fail "--states 0: exit $rc: $out"
out=$("$crashcheck" --control "$sock" --check 'fsck {dev}' 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-crashcheck: --check uses {dev}: say what it is with --dev" ] ||
  fail "{dev} without --dev: exit $rc: $out"
for bad in "--mode sideways:--mode sideways: must be subset, torn, lose-all or pick" \
           "--seed 1x:--seed 1x: must be a whole number below 10^18" \
           "--replay -1:--replay -1: must be a whole number below 10^19" \
           "--frobnicate:unknown option '--frobnicate' (--help lists them)" \
           "--dev /nonexistent:--dev /nonexistent: no such file or device"; do
  opt=${bad%%:*} want=${bad#*:}
  # shellcheck disable=SC2086
  out=$("$crashcheck" --control "$sock" --check true $opt 2>&1) && rc=0 || rc=$?
  [ $rc = 2 ] && [ "$out" = "blkemu-crashcheck: $want" ] || fail "$opt: exit $rc: $out"
done
out=$("$crashcheck" --check true 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-crashcheck: --control SOCKET is required" ] ||
  fail "no --control: exit $rc: $out"
"$crashcheck" --help | grep -q -- "--keep-going" || fail "--help lists no --keep-going"
echo "ok: bad options refused"
ctl power-on > /dev/null

# A small epoch is enumerated, not sampled: three unflushed 4K writes
# over flushed ones give 2^3 states, each checked once, each different,
# and seed 1 (mode pick) keeps the oldest write alone.
pattern () { head -c 4096 /dev/zero | tr '\0' "$1"; }
for b in 0 2 4; do
  pattern o | dd of="$dev" bs=4K seek=$b oflag=direct conv=notrunc,fsync status=none
done
for b in 0 2 4; do
  pattern n | dd of="$dev" bs=4K seek=$b oflag=direct conv=notrunc status=none
done
ctl power-off > /dev/null
: > "$tmp/seen"
peek="for b in 0 2 4; do dd if={dev} bs=4K skip=\$b count=1 iflag=direct status=none | head -c1; done >> $tmp/seen; echo >> $tmp/seen"
"$crashcheck" --control "$sock" --dev "$dev" --mode subset --states 20 -q \
    --check "$peek" > "$tmp/enum.out" 2>&1 || fail "enumeration: $(cat "$tmp/enum.out")"
cat "$tmp/enum.out"
grep -q "^blkemu-crashcheck: 3 unflushed writes: checking all 8 subset states" "$tmp/enum.out" ||
  fail "a 3-write epoch with --states 20 was not enumerated"
grep -q "8 states of mode pick (seeds 0..7): 8 passed" "$tmp/enum.out" || fail "the enumeration's summary"
expect_eq "states seen" "$(wc -l < "$tmp/seen")" 8
expect_eq "different states" "$(sort -u "$tmp/seen" | wc -l)" 8
expect_eq "seed 0 keeps none" "$(sed -n 1p "$tmp/seen")" ooo
expect_eq "seed 1 keeps the oldest write" "$(sed -n 2p "$tmp/seen")" noo
expect_eq "seed 4 keeps the newest" "$(sed -n 5p "$tmp/seen")" oon
expect_eq "seed 7 keeps all" "$(sed -n 8p "$tmp/seen")" nnn
ctl power-on > /dev/null
for b in $(seq 6 22); do
  pattern x | dd of="$dev" bs=4K seek=$b oflag=direct conv=notrunc status=none
done
out=$("$crashcheck" --control "$sock" --dev "$dev" --enumerate --check true 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [[ $out == *"--enumerate: the epoch left 20 unflushed writes; 2^20 states are too many (at most 16 writes)"* ]] ||
  fail "--enumerate over 20 writes: exit $rc: $out"
echo "ok: $out"
ctl power-on > /dev/null

# --workload: the freeze-settle-cut sequence as one command.  A workload
# writing files it never syncs (direct writes: they reach the disk's
# cache) on ext4 with barriers, committing its journal every second:
# frozen after 1 s, settled 2 s (past a commit), the power cut with what
# it left unflushed, its file system let go; every state then mounts
# and fscks clean.
out=$("$crashcheck" --control "$sock" --settle 2 --check true 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-crashcheck: --freeze-after, --settle and --unmount go with --workload" ] ||
  fail "--settle without --workload: exit $rc: $out"
out=$("$crashcheck" --control "$sock" --workload true --freeze-after soon --check true 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-crashcheck: --freeze-after soon: must be a number of seconds" ] ||
  fail "--freeze-after soon: exit $rc: $out"
out=$("$crashcheck" --control "$sock" --workload true --unmount "$tmp" --check true 2>&1) && rc=0 || rc=$?
[ $rc = 2 ] && [ "$out" = "blkemu-crashcheck: --unmount $tmp: not a mount point" ] ||
  fail "--unmount of a plain directory: exit $rc: $out"
mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mount -o commit=1 "$dev" "$tmp/fs"
"$crashcheck" --control "$sock" --dev "$dev" --states 4 --seed 70 --mode torn \
    --workload "i=0; while :; do i=\$((i + 1)); dd if=/dev/urandom of=$tmp/fs/w\$i bs=4K count=2 oflag=direct status=none; done" \
    --freeze-after 1 --settle 2 --unmount "$tmp/fs" --check "$check" > "$tmp/workload.out" 2>&1 &&
  rc=0 || rc=$?
cat "$tmp/workload.out"
[ $rc = 0 ] || fail "--workload: a state failed or the run did not: exit $rc"
grep -Eq "^blkemu-crashcheck: the workload frozen after 1 s; settled 2 s; power cut with [0-9]+ writes unflushed$" \
  "$tmp/workload.out" || fail "--workload: the freeze-settle-cut line"
grep -q "4 states of mode torn (seeds 70..73): 4 passed, 0 failed" "$tmp/workload.out" ||
  fail "--workload: the summary"
mountpoint -q "$tmp/fs" && fail "--unmount left $tmp/fs mounted"
echo "ok: --workload froze, settled, cut and let the file system go; 4 states clean"
ctl power-on > /dev/null
