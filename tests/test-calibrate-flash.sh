#!/usr/bin/env bash
# blkemu-calibrate --flash on blkemu SSDs whose flash is known (blkemu-fuse
# under loop devices with direct I/O): an SLC cache's cliff, the native
# rate past it and the refill after idle; garbage collection's fall from
# fresh to steady state and the spare area it implies; a disk with
# neither says so; and the probes never write without consent.  Bounds
# are loose (a fifth to a third): the figures are measured through FUSE
# and a loop device, and the point is which keys come out, near what.
source "$(dirname "$0")/functions.sh"
requires_fuse_loop
requires fio --version
requires jq --version
requires nbdkit --version
cal=$top/tools/blkemu-calibrate
key () { profile_key "$@"; }
within () { awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
  fail "$1: $2, want $3 to $4"; echo "ok: $1: $2 (in $3..$4)"; }

truncate -s 16M "$tmp/f"
refuses "--flash writes the whole device (or --range): give --destructive" "$cal" "$tmp/f" -o x --flash
refuses "--flash-idle x: must be a number of seconds" "$cal" "$tmp/f" -o x --flash --destructive --flash-idle x
refuses "--flash-seconds 0: must be a number of seconds from 1" "$cal" "$tmp/f" -o x --flash --destructive --flash-seconds 0
refuses "--flash measures a DEVICE for a fit" "$cal" "$tmp/f" --compare "$tmp/f" --flash --range 0:16M
"$cal" --help | grep -q -- --flash-seconds || fail "--help lacks --flash-seconds"

# slc: 6 MiB of SLC at 25 MB/s (the bus), then 2 dies of 200 us + 128K
# at 4 MiB/s each: 8.2 MB/s; folding 6 MiB/s when idle.  gc: no cache,
# 4 flash units of 500 us programs, 28% spare, 128K erase blocks.
mnt=$tmp/mnt
gc_spec=size=16M,model=ssd,channels=2,dies=2,queue-depth=32,channel-bandwidth=400M,latency-read=50us,latency-write=500us,over-provisioning=28%,flash-page=4K,flash-block=128K
fuse_mount "$mnt" \
  --disk name=slc,size=16M,model=ssd,channels=1,dies=2,queue-depth=32,channel-bandwidth=25M,latency-read=50us,latency-write=200us,latency-slc-write=100us,native-write-rate=4M,slc-cache=6M,slc-fold-rate=6M \
  --disk name=gc,$gc_spec --disk name=gc2,$gc_spec

slc=$(loop_attach "$mnt/slc" --direct-io=on)
# --model fixed: the flash keys come out commented (they need model=ssd)
"$cal" "$slc" -o "$tmp/slc.conf" --model fixed --destructive --yes --flash --runtime 0.2 \
  --flash-idle 0.5 --flash-seconds 2 --json "$tmp/slc.json" 2> "$tmp/slc.log" ||
  { cat "$tmp/slc.log"; fail "calibrating the SLC disk"; }
grep '^# SLC\|^# GC' "$tmp/slc.conf"
grep -q 'the flash keys need model=ssd' "$tmp/slc.conf" || fail "--model fixed: no note why"
[ -z "$(key slc-cache "$tmp/slc.conf")" ] || fail "--model fixed: slc-cache not commented out"
# as a model=ssd profile, the keys uncommented
sed -E 's/^# ((slc-|native-|latency-slc-)[a-z-]* = )/\1/; s/^model = .*/model = ssd/' \
  "$tmp/slc.conf" > "$tmp/slc-ssd.conf"
s=$(key slc-cache "$tmp/slc-ssd.conf")
[ -n "$s" ] || fail "no slc-cache key: $(cat "$tmp/slc.conf")"
within "slc-cache (6 MiB)" "$(awk -v k="${s%K}" 'BEGIN { print k / 1024 }')" 4.8 7.2
[ -n "$(key native-write-rate "$tmp/slc-ssd.conf")" ] || fail "no native-write-rate key"
# The native rate key depends on the fit's units and latency-write; what
# the disk did past its cache is in the note.
past=$(sed -n 's/^# SLC: .* then \([0-9]*\) MiB\/s.*/\1/p' "$tmp/slc.conf")
within "past the cliff, MiB/s (7.9)" "$past" 5 10.5
f=$(key slc-fold-rate "$tmp/slc-ssd.conf")
[ -n "$f" ] || fail "no slc-fold-rate key"
# Half a second of idle folds half the cache: the rate is the refill
# over the idle the drive had (a loaded host stretches it, and the
# refill grows with it), never over the idle asked for.  Stretched past
# a second, all of the cache is folded and the key is a lower bound.
note=$(grep -B2 'slc-fold-rate' "$tmp/slc-ssd.conf" | grep 'went in fast again after')
idle=$(sed -n 's/.* after \([0-9.]*\)s idle.*/\1/p' <<< "$note")
[ -n "$idle" ] || fail "no idle in the fold-rate note: $(grep -B2 slc-fold-rate "$tmp/slc-ssd.conf")"
within "the idle the drive had, s (0.5 asked)" "$idle" 0.5 30
rate=$(awk -v f="$f" 'BEGIN { print f / 1048576 }')
case $note in
*"at least"*) within "slc-fold-rate, MiB/s (6; a lower bound: all folded in ${idle}s)" "$rate" 0.1 7.5 ;;
*) within "slc-fold-rate, MiB/s (6)" "$rate" 4.5 7.5 ;;
esac
grep -q '^# GC: random 4K writes stopped after .* too few to tell' "$tmp/slc.conf" ||
  fail "--flash-seconds 2: no 'too few' note: $(grep '^# GC' "$tmp/slc.conf")"
grep -q 'over-provisioning' "$tmp/slc.conf" && fail "over-provisioning written for a disk without GC"
jq -e '(.notes | length) >= 3' "$tmp/slc.json" > /dev/null || fail "the JSON lacks the flash notes"
nbdkit -U - "$PLUGIN" profile="$tmp/slc-ssd.conf" --run true || fail "the SLC keys do not load"
echo "ok: the SLC disk"

# calibrate_gc NAME: the GC probes on a fresh disk NAME of the mount.
calibrate_gc () {
  gc_disk=$1
  gc=$(loop_attach "$mnt/$1" --direct-io=on)
  "$cal" "$gc" -o "$tmp/gc.conf" --model ssd --destructive --yes --flash --runtime 0.2 \
    --flash-idle 0 --json "$tmp/gc.json" 2> "$tmp/gc.log" || { cat "$tmp/gc.log"; fail "calibrating the GC disk"; }
  grep '^# SLC\|^# GC' "$tmp/gc.conf"
}
calibrate_gc gc
# The steady state is judged on a timed series (the last fifth flat
# within 10%): a loaded host's stall can leave it "still falling" after
# 4 spans.  Once, a second fresh disk of the same spec is probed.
if ! grep -q '^# GC: random 4K writes fell from .* at steady state' "$tmp/gc.conf"; then
  echo "note: no steady state on the first disk ($(grep '^# GC' "$tmp/gc.conf")); a second one"
  calibrate_gc gc2
fi
grep -q '^# SLC: no cliff' "$tmp/gc.conf" || fail "the disk without a cache: a cliff"
[ -z "$(key slc-cache "$tmp/gc.conf")" ] || fail "slc-cache written for a disk without one"
grep -q '^# GC: random 4K writes fell from .* at steady state' "$tmp/gc.conf" ||
  fail "no steady state seen: $(grep '^# GC' "$tmp/gc.conf")"
op=$(key over-provisioning "$tmp/gc.conf")
within "over-provisioning (28%)" "${op%\%}" 12 45
jq -e '.ftl.gc_relocations > 1000' "$mnt/.blkemu/$gc_disk/stats" > /dev/null ||
  fail "the probe did not make the FTL collect: $(jq -c .ftl "$mnt/.blkemu/$gc_disk/stats")"
jq -e '.keys["over-provisioning"]' "$tmp/gc.json" > /dev/null || fail "the JSON lacks over-provisioning"
nbdkit -U - "$PLUGIN" profile="$tmp/gc.conf" --run true || fail "the GC profile does not load"
echo "ok: the GC disk"

