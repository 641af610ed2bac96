#!/usr/bin/env bash
# blkemu-calibrate against blkemu-ublk disks, whose limits the kernel
# takes as a real disk's: every shipped profile's disk is read
# (--limits-only) and a disk made from what was read shows the kernel
# the same queue limits; then wd-red-1t is calibrated (found an hdd, its
# rpm) and a disk made from the result is probed the same way (printed:
# TCG's late wake-ups keep timing from round-tripping here).
#   blkemu-vm --kernel 6.12 scenarios/calibrate-ublk.sh
# Skips (77) on kernels without ublk_drv (Debian's 6.1).
# blkemu-vm: needs ublk_drv
# quiet: the hdd fit reads latencies of a few ms, and a TCG guest beside a
#   busy host read the transport alone at 4.8 ms and fitted "fixed"
# budget: 260 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
CAL=${top:+$top/tools/}blkemu-calibrate
profiles_dir=${top:+$top/profiles}
[ -n "$profiles_dir" ] || profiles_dir=$(dirname "$(command -v blkemu-calibrate)")/../share/blkemu/profiles

# The queue files a disk's spec sets (and a few it must leave alone).
limits="logical_block_size physical_block_size minimum_io_size optimal_io_size
max_hw_sectors_kb chunk_sectors zoned max_open_zones max_active_zones
zone_append_max_bytes discard_max_hw_bytes discard_granularity
write_zeroes_max_bytes virt_boundary_mask max_segments max_segment_size
dma_alignment rotational write_cache fua nr_requests"
queue_of () {
  local q=/sys/block/${1#/dev/}/queue f
  echo "size $(< "/sys/block/${1#/dev/}/size")"
  for f in $limits; do [ -e "$q/$f" ] && echo "$f $(< "$q/$f")"; done
}

section "limits of every shipped profile, read and served again"
# Every profile's disk in one blkemu-ublk, their copies in another: a
# server per disk spent more time starting than the tool reading.
declare -A dev
profiles=() disks=() copies=()
for conf in "$profiles_dir"/*.conf; do
  p=$(basename "$conf" .conf)
  sized=
  grep -q '^size' "$conf" || sized=,size=4G   # a profile of a disk of any size
  profiles+=("$p")
  disks+=(--disk "name=$p,profile=$p$sized")
  copies+=(--disk "name=$p-copy,profile=$work/$p.conf")
done
ublk_serve originals "${disks[@]}"
while read -r n d; do dev[$n]=$d; done < "$work/originals.ready"
for p in "${profiles[@]}"; do
  "$CAL" "${dev[$p]}" -o "$work/$p.conf" --limits-only -q
done
ublk_serve copies "${copies[@]}"
while read -r n d; do dev[$n]=$d; done < "$work/copies.ready"
for p in "${profiles[@]}"; do
  queue_of "${dev[$p]}" > "$work/$p.queue"
  queue_of "${dev[$p-copy]}" > "$work/$p-copy.queue"
  if ! diff "$work/$p.queue" "$work/$p-copy.queue" > "$work/$p.diff"; then sed 's/^/    /' "$work/$p.diff"; fi
  check "$p: $(wc -l < "$work/$p.queue") queue limits identical ($(grep -E '^(max_hw_sectors_kb|logical_block_size|zoned) ' "$work/$p.queue" | tr '\n' ' '))" \
    -z "$(cat "$work/$p.diff")"
done
check "all ${#profiles[@]} shipped profiles compared" "${#profiles[@]}" -ge 10
disk_stop copies
disk_stop originals

section "timing round trip: wd-red-1t (hdd, 5400 rpm)"
d=$(ublk_disk_start wd profile=wd-red-1t)
# the same transport with nothing behind it: what ublk under TCG adds
# to each request (~0.4 ms), taken out before the fit
null=$(ublk_disk_start null backend=null size=1T)
"$CAL" "$d" -o "$work/wd.conf" --runtime 1.5 --probes "$work/wd.probes" --baseline "$null"
grep -E '^(model|rpm|seek-avg|zone-rate-outer) ' "$work/wd.conf" | sed 's/^/  /'
check "model hdd" "$(awk '$1 == "model" { print $3 }' "$work/wd.conf")" = hdd
# Under TCG a request that waits ~10 ms is woken up to a millisecond or
# two late, at random: that widens the rotational spread the rpm comes
# from (on the host, with loop and FUSE, the same fit lands on 7200).
rpm=$(awk '$1 == "rpm" { print $3 }' "$work/wd.conf")
# Alone on the host the estimate errs low (late wake-ups widen the
# spread): 4200 to 5400 over seven runs.  With the host's own tests
# running beside the guest (make check) it measured 6775 once, the
# fit's floor of seek time taken by the same lateness.  Held to
# -30%..+35%: a wrong model or unit is far outside that; the 10% figure
# is test-calibrate's, on the host.
check "rpm from -30% to +35% of 5400 (${rpm:-none})" "${rpm:-0}" -ge 3780 -a "${rpm:-0}" -le 7290
c=$(ublk_disk_start wd-copy "profile=$work/wd.conf")
# The copy's probes are printed, not held to 10% here: under TCG every
# request that waits is woken ~2 ms late, at random (rand-4k measures
# ~21 ms where the model gives ~18).  The fit takes that lateness in as
# seek time and the copy adds its own (+14..+37% on the seek-bound
# probes), and the zone rates, from 1M's transfer time at each edge (a
# difference of two latencies that each carry it), come out ~20% low.
# On the host, through FUSE and loop, where wake-ups are on time, the
# same round trip holds the reads under 1M to 15% (tests/test-calibrate.sh).
"$CAL" "$c" --compare "$work/wd.probes" --runtime 0.5 --tolerance 1000 -q > "$work/compare" 2>&1
sed 's/^/  /' "$work/compare"
# Answered: a figure for every probe, within the tolerance or not (a
# sequential 4K read once measured +1205% here, a TCG wake-up's worth).
check "the copy answered all $(wc -l < "$work/wd.probes") probes" \
  "$(grep -cE ' (ok|MISS)$' "$work/compare")" -eq "$(wc -l < "$work/wd.probes")"
cp "$work/wd.conf" "$results/wd-red-1t.calibrated.conf"
ublk_disk_stop wd-copy
ublk_disk_stop null
ublk_disk_stop wd
finish
