#!/usr/bin/env bash
# Media that fails as media does: unreadable sectors (latent sector
# errors) fail reads with EIO until a write covers them, and a crash in
# mode interrupted leaves the sectors of the writes in flight unreadable.
source "$(dirname "$0")/functions.sh"
requires jq --version
sock="$tmp/ctl.sock"
export sock tmp

nbdkit -U - "$PLUGIN" size=16M logical-block-size=4096 control="$sock" \
    stats="$tmp/bad.json" trace="$tmp/bad.trace" --run '
  set -e
  io () { "$NBD_IO" "$uri" "$@"; }
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  io write 0 1048576 1 > /dev/null
  [ "$(ctl bad)" = 0 ]
  ctl bad add 64K 8K
  ctl bad add 72K 4K                    # abuts: one range
  ctl bad add 1M 4K
  [ "$(ctl bad)" = "2 65536+12288 1048576+4096" ]
  # A read touching them fails; around them the data is there.
  [ "$(io read 61440 8192 2>/dev/null)" = EIO ]
  [ "$(io read 1048576 4096 2>/dev/null)" = EIO ]
  io read 0 65536 1 > /dev/null
  io read 77824 65536 1 > /dev/null
  # A write heals what it covers: part of the first range.
  io write 65536 4096 7 > /dev/null
  io read 65536 4096 7 > /dev/null
  [ "$(io read 69632 4096 2>/dev/null)" = EIO ]
  [ "$(ctl bad)" = "2 69632+8192 1048576+4096" ]
  io zero 69632 8192 > /dev/null            # write-zeroes heals too
  io read-zeros 69632 8192 > /dev/null
  ctl bad clear 1M 4K
  [ "$(ctl bad)" = 0 ]
  io read 1048576 4096 2>/dev/null | grep -qv EIO
  # Bad requests name the rule.
  ctl bad add 1000 4K 2>&1 | grep -q "multiples of the logical block (4096)"
  ctl bad add 16M 4K 2>&1 | grep -q "beyond the end of the disk"
  ctl bad wipe 0 4K 2>&1 | grep -q "usage: bad \[add|clear OFFSET LENGTH\]"
' || fail "unreadable sectors"
expect_eq "medium errors counted" "$(jqr "$tmp/bad.json" .faults.medium_errors)" 3
expect_eq "not counted as injected faults" "$(jqr "$tmp/bad.json" .faults.errors)" 0
expect_eq "reads traced with the medium mark" \
  "$(grep -c ' EIO medium$' "$tmp/bad.trace")" 3

# A crash in mode interrupted: the write in flight (2 s of latency) leaves
# its sectors unreadable; a write that completed before, cached or not,
# does not.  The in-flight write itself fails (EIO), and a later write
# heals its sectors.
nbdkit -U - "$PLUGIN" size=16M write-cache=yes latency-write=2s \
    control="$sock" stats="$tmp/int.json" --run '
  set -e
  io () { "$NBD_IO" "$uri" "$@"; }
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  io write 0 1048576 1 > /dev/null; io flush > /dev/null
  io write 2097152 65536 2 > /dev/null         # completed, cached
  io write 4194304 131072 3 > "$tmp/inflight.out" 2> /dev/null &
  sleep 0.5
  ctl crash interrupted 5 > "$tmp/reply"
  ctl power-on
  wait
  [ "$(cat "$tmp/inflight.out")" = EIO ] || { echo "in flight: $(cat "$tmp/inflight.out")"; exit 1; }
  [ "$(ctl bad)" = "1 4194304+131072" ] || { echo "bad: $(ctl bad)"; exit 1; }
  [ "$(io read 4194304 4096 2>/dev/null)" = EIO ]
  io read 0 1048576 1 > /dev/null             # flushed: intact and readable
  io read 2097152 4096 > /dev/null              # cached: some version, readable
  io write 4194304 131072 4 > /dev/null
  io read 4194304 131072 4 > /dev/null
  [ "$(ctl bad)" = 0 ]
  # A view cannot be interrupted: the mode is a crash'"'"'s.
  io write 8388608 4096 6 > /dev/null
  ctl power-off
  ctl view interrupted 1 2>&1 | grep -q "view interrupted: a view shows data"
  ctl power-on
' || fail "crash interrupted"
grep -q "^mode=interrupted seed=5 " "$tmp/reply" || fail "reply: $(cat "$tmp/reply")"

# cached_disk SCRIPT: SCRIPT (with io and ctl) against a write-cached
# 16M disk of 4K blocks whose first MiB holds durable data of seed 1.
cached_disk () {
  nbdkit -U - "$PLUGIN" size=16M logical-block-size=4096 write-cache=yes \
      control="$sock" --run '
    set -e
    io () { "$NBD_IO" "$uri" "$@"; }
    ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
    io write-fua 0 1048576 1 > /dev/null
    '"$1"
}

# A crash view shows unreadable sectors as the matching crash leaves
# them: a read of one fails in the view as after the crash, until the
# view writes it; the view's writes heal its copy only, and the next
# view starts from the medium again.
cached_disk '
  ctl bad add 64K 4K
  io write 524288 4096 2 > /dev/null      # something cached for the views
  ctl power-off > /dev/null
  ctl view subset 1 > /dev/null
  [ "$(io read 65536 4096 2>/dev/null)" = EIO ] || { echo "view: a bad sector read"; exit 1; }
  io read 0 65536 1 > /dev/null           # around it, the data
  io write 65536 4096 3 > /dev/null       # the view writes it: readable there
  io read 65536 4096 3 > /dev/null
  ctl view end > /dev/null
  ctl view subset 2 > /dev/null
  [ "$(io read 65536 4096 2>/dev/null)" = EIO ] || { echo "the next view: healed by the last"; exit 1; }
  ctl view end > /dev/null
  ctl crash subset 1 > /dev/null
  ctl power-on > /dev/null
  [ "$(io read 65536 4096 2>/dev/null)" = EIO ] || { echo "crash: a bad sector read"; exit 1; }
  [ "$(ctl bad)" = "1 65536+4096" ]
' || fail "crash views and unreadable sectors"
echo "ok: a crash view reads unreadable sectors as the crash leaves them"

# A repair that a crash undoes is no repair: a cached write heals a bad
# sector, the crash puts its old contents back, and with them the
# unreadability (before, the sector silently returned the stale data);
# a view of the same crash shows it so too.  A repair that was flushed
# stays.
cached_disk '
  ctl bad add 64K 8K
  io write 61440 8192 2 > /dev/null       # heals 64K+4K, cached
  io read 65536 4096 2 > /dev/null
  [ "$(ctl bad)" = "1 69632+4096" ]
  ctl power-off > /dev/null
  ctl view lose-all > /dev/null
  [ "$(io read 65536 4096 2>/dev/null)" = EIO ] || { echo "view: the undone repair reads"; exit 1; }
  io read 61440 4096 1 > /dev/null        # what was readable: its old data
  ctl view end > /dev/null
  ctl crash lose-all > /dev/null
  ctl power-on > /dev/null
  [ "$(io read 65536 4096 2>/dev/null)" = EIO ] || { echo "crash: the undone repair reads stale data"; exit 1; }
  [ "$(ctl bad)" = "1 65536+8192" ] || { echo "bad: $(ctl bad)"; exit 1; }
  io write 65536 8192 3 > /dev/null       # repaired again, and flushed
  io flush 0 0 > /dev/null
  ctl crash lose-all > /dev/null
  ctl power-on > /dev/null
  io read 65536 8192 3 > /dev/null
  [ "$(ctl bad)" = 0 ]
' || fail "a crash undoing a repair"
echo "ok: a crash that undoes a repair write leaves the sector unreadable again"

# The repair undone under an older cached write: the crash puts back the
# data from before that older write (its undo entry saw no bad sector),
# and the sector is still unreadable, since the repair never reached the
# medium (before, only the entry whose data came back was asked).
cached_disk '
  io write 65536 4096 1 > /dev/null       # cached, before the defect
  ctl bad add 64K 4K
  io write 65536 4096 2 > /dev/null       # the repair, cached
  ctl power-off > /dev/null
  ctl view lose-all > /dev/null
  [ "$(io read 65536 4096 2>/dev/null)" = EIO ] || { echo "view: the undone repair reads"; exit 1; }
  ctl view end > /dev/null
  ctl crash lose-all > /dev/null
  ctl power-on > /dev/null
  [ "$(io read 65536 4096 2>/dev/null)" = EIO ] || { echo "crash: the undone repair reads"; exit 1; }
  [ "$(ctl bad)" = "1 65536+4096" ] || { echo "bad: $(ctl bad)"; exit 1; }
' || fail "a crash undoing a repair over an older cached write"
echo "ok: ... and so when an older cached write's data comes back"

# Where the head was: a misdirected write in flight at an interrupted
# crash leaves the place it was landing on unreadable, its own place
# readable; a write the drive was losing touched no sector.
nbdkit -U - "$PLUGIN" size=16M latency-write=2s control="$sock" --run '
  set -e
  io () { "$NBD_IO" "$uri" "$@"; }
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  ctl set misdirected-write-probability=1 > /dev/null
  io write 4194304 131072 3 > /dev/null 2>&1 &
  sleep 0.5
  ctl crash interrupted 5 > /dev/null
  ctl power-on
  wait
  bad=$(ctl bad)
  echo "misdirected in flight: unreadable $bad"
  case $bad in "1 4194304+"*) exit 1 ;; "1 "*"+131072") ;; *) exit 1 ;; esac
  at=${bad#1 }; at=${at%+*}
  [ "$(io read "$at" 4096 2>/dev/null)" = EIO ]
  io read 4194304 131072 > /dev/null
  ctl bad clear 0 16M > /dev/null
  ctl set misdirected-write-probability=0 lost-write-probability=1 > /dev/null
  io write 4194304 131072 3 > /dev/null 2>&1 &
  sleep 0.5
  ctl crash interrupted 5 > /dev/null
  ctl power-on
  wait
  [ "$(ctl bad)" = 0 ] || { echo "lost in flight: unreadable $(ctl bad)"; exit 1; }
' || fail "an interrupted misdirected or lost write"
echo "ok: interrupted: a misdirected write leaves its landing place unreadable, a lost one nothing"
expect_eq "interrupted writes counted" "$(jqr "$tmp/int.json" .faults.interrupted)" 1
expect_eq "last crash mode" "$(jqr "$tmp/int.json" .faults.last_crash.mode)" interrupted
expect_eq "the in-flight write aborted" "$(jqr "$tmp/int.json" .faults.crash_aborted)" 1

# The same through blkemu-fuse's bad file, for loop-device users: a read
# of the range fails with EIO, a write over it heals it, a bad value is
# refused with the rule.
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null && [ "$(id -u)" -eq 0 ]; then
  mnt=$tmp/mnt
  fuse_mount "$mnt" --disk "size=4M,logical-block-size=4096"
  bad=$mnt/.blkemu/d0/bad
  dd if=/dev/urandom of="$mnt/d0" bs=64K count=64 conv=notrunc status=none
  expect_eq "fuse bad: none at first" "$(cat "$bad")" 0
  echo "add 64K 8K" > "$bad"
  expect_eq "fuse bad: the range listed" "$(cat "$bad")" "1 65536+8192"
  dd if="$mnt/d0" of=/dev/null bs=4K skip=17 count=1 iflag=direct status=none 2> "$tmp/dd.err" &&
    fail "fuse bad: a read of an unreadable sector succeeded"
  grep -q "Input/output error" "$tmp/dd.err" || fail "fuse bad: read said $(cat "$tmp/dd.err")"
  dd if="$mnt/d0" of=/dev/null bs=4K skip=15 count=1 iflag=direct status=none ||
    fail "fuse bad: the sector before the range did not read"
  dd if=/dev/zero of="$mnt/d0" bs=4K seek=16 count=1 conv=notrunc oflag=direct status=none
  expect_eq "fuse bad: a write healed its block" "$(cat "$bad")" "1 69632+4096"
  echo "clear 64K 8K" > "$bad"
  expect_eq "fuse bad: cleared" "$(cat "$bad")" 0
  (echo "add 1000 4K" > "$bad") 2>/dev/null && fail "fuse bad: a misaligned range was taken"
  grep -q "multiples of the logical block (4096)" "$mnt.log" ||
    fail "fuse bad: no rule in the log: $(tail -2 "$mnt.log")"
  (echo "wipe 0 4K" > "$bad") 2>/dev/null && fail "fuse bad: 'wipe' was taken"
  grep -q "usage: bad \[add|clear OFFSET LENGTH\]" "$mnt.log" ||
    fail "fuse bad: no usage in the log"
  echo "ok: the FUSE bad file marks, lists, heals and refuses as the socket does"
  # And the stuck file: a bit that reads 1 under any write, until cleared.
  stuck=$mnt/.blkemu/d0/stuck
  dd if=/dev/zero of="$mnt/d0" bs=4K count=1 conv=notrunc oflag=direct status=none
  echo "add 5 7 1" > "$stuck"
  expect_eq "fuse stuck: listed" "$(cat "$stuck")" "1 5:7=1"
  expect_eq "fuse stuck: the bit reads 1 over a written 0" \
    "$(dd if="$mnt/d0" bs=4K count=1 iflag=direct status=none | od -An -tx1 -j5 -N1 | tr -d ' ')" 80
  (echo "add 5 9 1" > "$stuck") 2>/dev/null && fail "fuse stuck: bit 9 was taken"
  grep -q "BIT is 0 (the least significant) to 7" "$mnt.log" ||
    fail "fuse stuck: no rule in the log"
  echo clear > "$stuck"
  expect_eq "fuse stuck: cleared" "$(cat "$stuck")" 0
  expect_eq "fuse stuck: the medium kept the 0" \
    "$(dd if="$mnt/d0" bs=4K count=1 iflag=direct status=none | od -An -tx1 -j5 -N1 | tr -d ' ')" 00
  echo "ok: the FUSE stuck file sets, lists, refuses and clears as the socket does"
else
  echo "skipped: the FUSE bad file (needs /dev/fuse, fusermount3 and root)"
fi
