#!/usr/bin/env bash
# Crash states: `crash subset|torn SEED` lets a seeded choice of the
# cached writes (torn: of their atomic units) reach the medium.  One
# history of overlapping writes -- flushed ones, FUA'd ones, cached ones
# -- then a crash in each mode; crash-state-check.py reads the disk back
# and checks every sector against the block layer's promises and against
# the fates the trace lists.  The same seed on the same history gives the
# same image; another seed another one.
source "$(dirname "$0")/functions.sh"
requires jq --version
requires nbdcopy --version
requires python3 --version
check="$(dirname "$0")/crash-state-check.py"
sock="$tmp/ctl.sock"

# The history: 8 flushed writes, then 46 more, every eighth FUA'd
# (the FUA'd ones in a range of their own: a FUA over a cached write
# shrinks what the cache holds of it, which crash-state-check does not
# model; test-crash covers that).  Offsets and lengths in 512-byte
# sectors, so writes cut atomic units anywhere.
awk 'BEGIN {
  srand(20261202); seed = 1
  for (i = 0; i < 8; i++) {
    off = int(rand() * 1800) * 512; len = (1 + int(rand() * 128)) * 512
    print off, len, seed++, "flushed"
  }
  for (i = 0; i < 46; i++) {
    if (i % 8 == 7) {
      off = 1048576 + int(rand() * 900) * 512; len = (1 + int(rand() * 64)) * 512
      print off, len, seed++, "fua"
    } else {
      off = int(rand() * 1800) * 512; len = (1 + int(rand() * 128)) * 512
      print off, len, seed++, "cached"
    }
  }
}' > "$tmp/history"
ncached=$(grep -c ' cached$' "$tmp/history")

# run_crash NAME SPEC... -- MODE [SEED]: the history, the crash, the
# image in $tmp/NAME.img, the reply in $tmp/NAME.reply.
run_crash () {
  local name=$1; shift
  local spec=()
  while [ "$1" != -- ]; do spec+=("$1"); shift; done
  shift
  rm -f "$sock"
  export name tmp sock history="$tmp/history" crash_args="$*"
  nbdkit -U - "$PLUGIN" size=2M write-cache=yes "${spec[@]}" \
      control="$sock" trace="$tmp/$name.trace" stats="$tmp/$name.json" --run '
    set -e
    flushed=1
    while read -r off len seed kind; do
      if [ "$kind" = cached ] && [ $flushed = 1 ]; then
        "$NBD_IO" "$uri" flush > /dev/null
        flushed=0
      fi
      op=write; [ "$kind" = fua ] && op=write-fua
      "$NBD_IO" "$uri" $op "$off" "$len" "$seed" > /dev/null
    done < "$history"
    "$BLKEMU_CTL" "$sock" crash $crash_args > "$tmp/$name.reply"
    "$BLKEMU_CTL" "$sock" power-on > /dev/null
    nbdcopy "$uri" "$tmp/$name.img"
  ' || fail "$name: the run failed"
}

# state_check NAME MODE UNIT: the image against the promises and fates.
state_check () {
  python3 "$check" "$tmp/$1.img" "$tmp/history" "$tmp/$1.trace" "$2" "$3" ||
    fail "$1: crash-state-check"
}

run_crash subset1 physical-block-size=4096 -- subset 1
state_check subset1 subset 4096
reply=$(cat "$tmp/subset1.reply")
case $reply in
  "mode=subset seed=1 persisted="*" torn=0") echo "ok: subset reply: $reply" ;;
  *) fail "subset reply: $reply" ;;
esac
s="$tmp/subset1.json"
expect_eq "subset: stats last_crash.mode" "$(jqr "$s" .faults.last_crash.mode)" subset
expect_eq "subset: stats last_crash.seed" "$(jqr "$s" .faults.last_crash.seed)" 1
expect_eq "subset: persisted + lost = the cached writes" \
  "$(jqr "$s" '.faults.last_crash | .persisted + .lost + .torn')" "$ncached"
persisted=$(jqr "$s" .faults.last_crash.persisted)
between "subset: some writes persisted, some lost" "$persisted" 1 $((ncached - 1))
expect_eq "subset: lost_writes counts the lost" \
  "$(jqr "$s" .faults.lost_writes)" "$(jqr "$s" .faults.last_crash.lost)"
expect_eq "subset: one trace line per cached write" \
  "$(grep -c '^# crash-write ' "$tmp/subset1.trace")" "$ncached"
grep -q '^# crash [0-9.]* mode=subset seed=1$' "$tmp/subset1.trace" ||
  fail "subset: the trace lacks the crash line"

# The checker can fail: told that one persisted write was lost, it
# finds that write's data on the disk.
sed '0,/ persisted$/s// lost/' "$tmp/subset1.trace" > "$tmp/wrong.trace"
if python3 "$check" "$tmp/subset1.img" "$tmp/history" "$tmp/wrong.trace" \
     subset 4096 > "$tmp/wrong.out" 2>&1; then
  fail "crash-state-check accepted a state against the wrong fates"
fi
echo "ok: against one wrong fate the checker says: $(cat "$tmp/wrong.out")"

# The same seed on the same history: the same image.  Another seed:
# another state, equally legal.
run_crash subset1b physical-block-size=4096 -- subset 1
cmp -s "$tmp/subset1.img" "$tmp/subset1b.img" ||
  fail "subset seed 1 twice: the images differ"
echo "ok: subset seed 1 twice: identical images"
run_crash subset2 physical-block-size=4096 -- subset 2
state_check subset2 subset 4096
cmp -s "$tmp/subset1.img" "$tmp/subset2.img" &&
  fail "subset seeds 1 and 2 gave the same image"
echo "ok: seeds 1 and 2 give different states"

# Torn at the physical block, and at a larger atomic-unit.
run_crash torn4k physical-block-size=4096 -- torn 7
state_check torn4k torn 4096
torn=$(jqr "$tmp/torn4k.json" .faults.last_crash.torn)
between "torn: some writes torn" "$torn" 1 "$ncached"
expect_eq "torn: torn_writes" "$(jqr "$tmp/torn4k.json" .faults.torn_writes)" "$torn"
run_crash torn16k physical-block-size=4096 atomic-unit=16K -- torn 7
state_check torn16k torn 16384
# With no seed the device picks one and says which.
run_crash tornany -- torn
seed=$(sed -n 's/^mode=torn seed=\([0-9]*\) .*/\1/p' "$tmp/tornany.reply")
[ -n "$seed" ] || fail "torn without a seed: reply $(cat "$tmp/tornany.reply")"
state_check tornany torn 512
run_crash tornagain -- torn "$seed"
cmp -s "$tmp/tornany.img" "$tmp/tornagain.img" ||
  fail "torn: replaying the reported seed $seed gave another image"
echo "ok: torn: the reported seed $seed replays the same state"

# lose-all by name is the plain crash: no cached write survives.
run_crash loseall -- lose-all
state_check loseall lose-all 512
case $(cat "$tmp/loseall.reply") in
  "mode=lose-all seed="*" persisted=0 lost=$ncached torn=0") echo "ok: lose-all reply" ;;
  *) fail "lose-all reply: $(cat "$tmp/loseall.reply")" ;;
esac
run_crash plain --
state_check plain lose-all 512
cmp -s "$tmp/loseall.img" "$tmp/plain.img" || fail "crash and crash lose-all differ"
echo "ok: crash lose-all = crash"

# Refusals name the argument and the rule; the disk serves on.
nbdkit -U - "$PLUGIN" size=1M write-cache=yes control="$sock" --run '
  set -e
  refused () {
    r=$("$BLKEMU_CTL" "$sock" crash "$@" 2>&1) && exit 1
    echo "$r"
  }
  refused sideways | grep -qx "blkemu-ctl: error: crash sideways: MODE must be lose-all, subset, torn, interrupted or pick"
  refused subset -3 | grep -qx "blkemu-ctl: error: crash subset -3: SEED must be a whole number below 2^64"
  refused subset 99999999999999999999 | grep -q "SEED must be a whole number below 2^64"
  refused subset 1 2 | grep -q "crash \[lose-all|subset|torn|interrupted|pick \[SEED\]\]"
  # Views: only after power-off, one at a time, with a mode.
  view () {
    r=$("$BLKEMU_CTL" "$sock" view "$@" 2>&1) && exit 1
    echo "$r"
  }
  view torn 1 | grep -qx "blkemu-ctl: error: view: the disk must be powered off with its cache kept first (power-off)"
  view | grep -qx "blkemu-ctl: error: view needs MODE \[SEED\] or end"
  view end | grep -qx "blkemu-ctl: error: view end: no view is open"
  view end now | grep -qx "blkemu-ctl: error: view end: takes no SEED"
  view sideways | grep -qx "blkemu-ctl: error: view sideways: MODE must be lose-all, subset, torn, interrupted or pick"
  "$BLKEMU_CTL" "$sock" power-off > /dev/null
  r=$("$BLKEMU_CTL" "$sock" power-off 2>&1) && exit 1
  echo "$r" | grep -q "power-off: the disk is already off"
  "$BLKEMU_CTL" "$sock" view subset 3 > /dev/null
  view subset 4 | grep -qx "blkemu-ctl: error: view: a view is open; end it first (view end)"
  "$BLKEMU_CTL" "$sock" power-on > /dev/null
  "$NBD_IO" "$uri" write 0 4096 3 > /dev/null
  "$NBD_IO" "$uri" read 0 4096 3 > /dev/null
' || fail "bad crash arguments"
echo "ok: bad modes, seeds and views refused, the disk serves on"
