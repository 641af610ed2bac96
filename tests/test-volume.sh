#!/usr/bin/env bash
# The volume throttle (volume-* keys, blkemu-models(7) "volume") through
# the plugin and fio: an IOPS cap holds, a burst bucket drains and then
# the baseline holds, a 1 MiB read counts as four 256 KiB I/Os, the
# stats' volume object says so, the keys change at runtime and bad
# combinations are refused with the rule.  Timing is held from below
# (a throttle that lets I/Os through early fails) and loosely from above
# (a loaded host is slower, never faster); the exact arithmetic,
# including gp2's full-size 2,000 s burst, is test-models' in virtual time.
source "$(dirname "$0")/functions.sh"
requires jq --version
requires fio --version

refuses "volume-burst-iops=1000: needs volume-burst-credits (the bucket) and a baseline" \
  nbdkit -U - "$PLUGIN" size=16M volume-iops=100 volume-burst-iops=1000 --run true
refuses "volume-burst-iops=1000: needs volume-burst-credits (the bucket) and a baseline" \
  nbdkit -U - "$PLUGIN" size=16M volume-burst-iops=1000 volume-burst-credits=10 --run true

# fio_secs URI FIO-ARGS...: one fio job on URI; prints the seconds it
# took.  fio_ios N URI: N 4K random reads at QD4.
cat > "$tmp/fio_secs" <<'SCRIPT'
#!/usr/bin/env bash
uri=$1; shift
t0=$(date +%s%N)
fio --name=v --ioengine=nbd --uri="$uri" --output=/dev/null "$@" || exit 1
t1=$(date +%s%N)
awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f\n", d / 1e9 }'
SCRIPT
chmod +x "$tmp/fio_secs"
fio_secs=$tmp/fio_secs
printf '#!/bin/sh\nexec %s "$2" --rw=randread --bs=4k --iodepth=4 --number_ios="$1" --size=16M\n' \
  "$fio_secs" > "$tmp/fio_ios"
chmod +x "$tmp/fio_ios"
fio_ios=$tmp/fio_ios

# Upper bounds catch a throttle that holds too long; beside the VM
# suite under a sanitizer (CI's check-asan) the host is too slow for
# them to mean anything, and only the lower bounds are held.
slack=1
nbdkit_wrapped && slack=20
# took WHAT SECS LO HI: SECS at least LO (the throttle's floor) and
# under HI (times the slack)
took () { awk -v s="$2" -v lo="$3" -v hi="$4" -v k=$slack 'BEGIN { exit !(s >= lo && s < hi * k) }' ||
  fail "$1 took $2 s (want $3 at least, under $4)"; }
# spent WHAT LEFT MAX: a bucket holds under MAX after it was drained
spent () { awk -v c="$2" -v m="$3" 'BEGIN { exit !(c < m) }' || fail "$1: $2 left after the bucket was spent"; }

# 200 IOPS, 300 reads: 1.5 s at the cap (the first leaves at once).
nbdkit -U - "$PLUGIN" size=16M volume-iops=200 stats="$tmp/cap.json" \
    --run "$fio_ios 300 \$uri > $tmp/cap.s" || fail "volume-iops=200 did not serve"
secs=$(cat "$tmp/cap.s")
took "volume-iops=200: 300 reads (1.5 s)" "$secs" 1.45 6
expect_eq "volume-iops=200: I/Os counted" "$(jqr "$tmp/cap.json" .volume.ios)" 300
expect_eq "volume-iops=200: baseline" "$(jqr "$tmp/cap.json" .volume.baseline_iops)" 200
jq -e '.volume.delayed > 250 and .volume.delayed_ms > 0' "$tmp/cap.json" > /dev/null ||
  fail "volume-iops=200: the throttle held no requests: $(jq -c .volume "$tmp/cap.json")"
expect_eq "a throttled disk is admitted under the lock" "$(jqr "$tmp/cap.json" .admission)" locked
echo "ok: volume-iops=200: 300 reads in $secs s"

# A burst of 2,000 IOPS on 190 credits over a baseline of 100: the
# bucket drains at 1,900 a second, 0.1 s and 200 reads, then 100 reads
# at the baseline, 1 s: 1.1 s for 300 (3 s without the burst).
nbdkit -U - "$PLUGIN" size=16M volume-iops=100 volume-burst-iops=2000 \
    volume-burst-credits=190 stats="$tmp/burst.json" \
    --run "$fio_ios 300 \$uri > $tmp/burst.s" || fail "the burst disk did not serve"
secs=$(cat "$tmp/burst.s")
took "burst: 300 reads (1.1 s: the burst, then the baseline)" "$secs" 1.05 2.6
credits=$(jqr "$tmp/burst.json" .volume.credits)
spent "burst: credits" "$credits" 20
echo "ok: burst: 300 reads in $secs s, $credits credits left"

# A throughput burst: 100 MiB/s over a 10 MiB/s baseline on a 20 MiB
# bucket draining at 90 MiB/s: 0.22 s and 22 MiB at the burst, then the
# other 8 MiB of 30 at the baseline, 0.8 s: 1.02 s (3 s without).
refuses "volume-burst-bandwidth=100M: needs volume-burst-bytes (the bucket)" \
  nbdkit -U - "$PLUGIN" size=32M volume-bandwidth=10M volume-burst-bandwidth=100M --run true
nbdkit -U - "$PLUGIN" size=32M volume-bandwidth=10M volume-burst-bandwidth=100M \
    volume-burst-bytes=20M stats="$tmp/bwburst.json" \
    --run "$fio_secs \$uri --rw=read --bs=1M --iodepth=4 --size=30M > $tmp/bwburst.s" ||
  fail "the throughput burst disk did not serve"
secs=$(cat "$tmp/bwburst.s")
took "throughput burst: 30 MiB (1.02 s: the burst, then the baseline)" "$secs" 0.97 2.5
left=$(jqr "$tmp/bwburst.json" .volume.burst_bytes)
spent "throughput burst: bytes" "$left" $((4 << 20))
echo "ok: throughput burst: 30 MiB in $secs s, $left bytes left"

# 256 KiB accounting, the summary line, and runtime changes.
nbdkit -U - "$PLUGIN" size=16M volume-iops=1000 volume-io-unit=256K \
    control="$tmp/c.sock" --run '
  set -e
  "$NBD_IO" "$uri" read 0 1048576 > /dev/null
  "$BLKEMU_CTL" "'"$tmp"'/c.sock" stats > "'"$tmp"'/unit.json"
  "$BLKEMU_CTL" "'"$tmp"'/c.sock" summary > "'"$tmp"'/sum.txt"
  "$BLKEMU_CTL" "'"$tmp"'/c.sock" set volume-iops=0
  "$BLKEMU_CTL" "'"$tmp"'/c.sock" stats > "'"$tmp"'/off.json"
  "$BLKEMU_CTL" "'"$tmp"'/c.sock" set volume-iops=500 volume-burst-iops=100 2>&1 |
    grep -q "volume-burst-iops=100: needs volume-burst-credits"
' || fail "runtime changes"
expect_eq "a 1 MiB read in 256K units" "$(jqr "$tmp/unit.json" .volume.ios)" 4
expect_eq "volume-iops=0 at runtime: no throttle" "$(jqr "$tmp/off.json" .volume)" null
expect_eq "and the plain path again" "$(jqr "$tmp/off.json" .admission)" plain
grep -q "^volume: 4 I/Os counted, baseline 1000 IOPS" "$tmp/sum.txt" ||
  fail "summary: no volume line: $(cat "$tmp/sum.txt")"
echo "ok: 256K accounting, summary, runtime on and off"

# Every cloud profile loads and throttles.
for p in "$top"/profiles/cloud-*.conf; do
  name=$(basename "$p" .conf)
  nbdkit -U - "$PLUGIN" profile="$name" size=100G stats="$tmp/$name.json" --run true ||
    fail "$name does not load"
  jq -e '.volume.baseline_iops > 0' "$tmp/$name.json" > /dev/null || fail "$name: no throttle"
done
expect_eq "cloud-aws-gp2 at 100G: 3 IOPS/GiB" "$(jqr "$tmp/cloud-aws-gp2.json" .volume.baseline_iops)" 300
expect_eq "a full bucket at the start" "$(jqr "$tmp/cloud-aws-gp2.json" .volume.credits)" 5400000
echo "ok: the cloud profiles"
