#!/usr/bin/env bash
# Timing: the latency blkemu adds is what was set, queue-depth=1
# serializes, bandwidth holds.  The device's own measurement (arrival to
# completion, in the server) is held to 3%; what a client sees also holds
# its scheduler's wake-ups, which a loaded machine stretches, so the
# client-side checks only bound it from both sides.  bench/nbd-bench
# prints the exact figures.
source "$(dirname "$0")/functions.sh"
requires fio --version
requires jq --version
fio --enghelp 2>/dev/null | grep -qw nbd || { echo "SKIP: fio has no nbd engine"; exit 77; }

# fio_nbd OUT FIO-ARGS -- SPEC...: run fio against a fresh disk.
fio_nbd () {
  local out=$1; shift
  local fio_args=()
  while [ "$1" != -- ]; do fio_args+=("$1"); shift; done; shift
  nbdkit -U - "$PLUGIN" "$@" stats="$out.stats" --run '
    fio --name=t --ioengine=nbd --uri="$uri" '"${fio_args[*]}"' \
        --output-format=json --output='"$out"
}

mean_us () { jqr "$1" ".jobs[0].$2.clat_ns.mean / 1000"; }

# How late the device may be is judged against what this host adds to a
# wake-up, measured without blkemu (tests/wake-ref: threads sleeping to
# absolute deadlines 1 ms apart, as blkemu's engine does, and the thread
# each wakes) just before each measurement, with as many waiters as the
# measurement has requests in flight.  blkemu may add its own
# completion path on top: 100 us in the plain build (a 200 us lateness
# regression fails here on a quiet host, a 50 us one in
# bench/model-accuracy), 300 under AddressSanitizer, where every
# completion costs several times more and, at QD8 on two cores, the
# completions queue behind one another (CI's ASan run measured QD8 at
# 1151-1153 us where the plain build measures 1020-1075).
own_us=100
[ -n "${BLKEMU_PRELOADED_ASAN:-}" ] && own_us=300
WAKE_REF=${WAKE_REF:-$BLKEMU_BUILD/tests/wake-ref}
[ -x "$WAKE_REF" ] || fail "no $WAKE_REF (build the tree)"
# reference PAIRS: sets ref_mean (timer lateness), ref_handoff and
# ref_p50 (timer plus the wake-up of the thread that replies, as a
# request's completion is), in microseconds.
reference () {
  "$WAKE_REF" --pairs "$1" --seconds 2 > "$tmp/ref.json" || fail "wake-ref failed"
  ref_mean=$(jqr "$tmp/ref.json" .timer_late_us.mean)
  ref_p50=$(jqr "$tmp/ref.json" .handoff_late_us.p50)
  ref_handoff=$(jqr "$tmp/ref.json" .handoff_late_us.mean)
  echo "host reference ($1 waiter(s), no blkemu): wake-ups late by ${ref_mean} us on average, ${ref_handoff} us with a hand-off (p50 ${ref_p50})"
}
# late_ok STATS: is the server-side mean within [995, 1000 + ref + own]?
late_ok () {
  awk -v m="$(jqr "$1" .ops.read.latency_us.mean)" -v r="$ref_handoff" -v o="$own_us" \
    'BEGIN { exit !(m >= 995 && m <= 1000 + r + o) }'
}
# bound BASE REF...: BASE plus the references and blkemu's own share.
bound () { awk -v b="$1" -v o="$own_us" 'BEGIN { s = b + o; for (i = 1; i < ARGC; i++) s += ARGV[i]; printf "%.0f", s }' "${@:2}"; }

common="--rw=randread --bs=4k --size=64M --time_based --runtime=2"
# measure OUT QD: the host's reference with QD waiters, then a 1 ms disk
# at iodepth QD.  A host stall of tens of milliseconds moves a 2 s mean by
# a few percent: when blkemu's mean is out of bounds, the host and blkemu
# are measured once more before judging (a real regression fails both).
measure () {
  local out=$1 qd=$2 try
  for try in 1 2; do
    reference "$qd"
    fio_nbd "$out" $common --iodepth="$qd" -- size=64M latency-read=1ms
    late_ok "$out.stats" && return 0
    [ $try = 1 ] && echo "QD$qd server-side mean $(jqr "$out.stats" .ops.read.latency_us.mean) us: measuring again"
  done
  return 0
}
fio_nbd "$tmp/base.json" $common --iodepth=1 -- size=64M
measure "$tmp/lat.json" 1
base=$(mean_us "$tmp/base.json" read)
lat=$(mean_us "$tmp/lat.json" read)
added=$(awk -v a="$lat" -v b="$base" 'BEGIN { print a - b }')
echo "QD1: client mean ${lat}us, zero-latency ${base}us, added ${added}us"
# The client waits for blkemu's deadline and then for its own wake-up.
between "added latency at QD1 (us)" "$added" 950 "$(bound 1400 "$ref_handoff" "$ref_handoff")"
# Never early; late by at most what this host adds to a wake-up, plus
# blkemu's own share.  The tight figures are bench/model-accuracy's.
between "server-side mean (us)" "$(jqr "$tmp/lat.json.stats" .ops.read.latency_us.mean)" 995 "$(bound 1000 "$ref_handoff")"
between "server-side p50 (us)" "$(jqr "$tmp/lat.json.stats" .ops.read.latency_us.p50)" 995 "$(bound 1000 "$ref_p50")"

# QD8 on a device that holds one request: each waits for the 7 before it,
# and each of those was as late as a wake-up.
reference 1
fio_nbd "$tmp/qd1.json" $common --iodepth=8 -- size=64M latency-read=1ms queue-depth=1
# The wait is the queue the device saw (its mean depth at arrival, the
# request included), not the one fio meant to keep: a slow client (an
# ASan nbdkit beside a busy guest: 7.3 deep, 7315 us) keeps a shorter one.
qd1_max=$(awk -v r="$ref_handoff" -v o="$own_us" 'BEGIN { printf "%.0f", 8 * (1000 + r + o) }')
qd1_depth=$(jqr "$tmp/qd1.json.stats" .queue_depth.mean)
between "the device's mean queue at arrival, QD8 on queue-depth=1" "$qd1_depth" 6 8
qd1_min=$(awk -v d="$qd1_depth" 'BEGIN { printf "%.0f", 950 * d }')
between "QD8 latency on queue-depth=1 (us)" "$(mean_us "$tmp/qd1.json" read)" "$qd1_min" $((qd1_max + 800))
between "QD8 on queue-depth=1, server-side mean (us)" "$(jqr "$tmp/qd1.json.stats" .ops.read.latency_us.mean)" "$qd1_min" "$qd1_max"
expect_eq "device saw a queue" "$(jqr "$tmp/qd1.json.stats" '.queue_depth.max >= 8')" true

# QD8 with the default depth: requests overlap, each still costs 1 ms.
# Eight waiters on two cores: a host stall shows here first.
measure "$tmp/qd8.json" 8
between "QD8 latency on queue-depth=128 (us)" "$(mean_us "$tmp/qd8.json" read)" 950 "$(bound 1500 "$ref_handoff" "$ref_handoff")"
between "QD8 on queue-depth=128, server-side mean (us)" "$(jqr "$tmp/qd8.json.stats" .ops.read.latency_us.mean)" 995 "$(bound 1000 "$ref_handoff")"

# Bandwidth: 100 MiB/s sequential writes, 1M requests, 4 in flight.  The
# cap is a ceiling, held to +5% on any host.  Under it, the host may be
# what takes time away: a stall of the client or of the completion
# thread longer than the queue's 30 ms of work leaves the device idle.
# Beside the VM scenarios and the sanitizer runs (make check in CI) it
# measured 92-94 MiB/s with 1% of the writes over 100 ms late, while
# nbdkit's memory plugin moved 2 GiB/s: not throughput, stalls.  The
# reference is tests/wake-ref, a thread sleeping 10 ms at a time beside
# the run: the time it lost to late wake-ups, as a fraction of the run,
# comes off the -5% floor.  Out of bounds, both are measured once more.
bw_job="--rw=write --bs=1M --size=64M --iodepth=4 --time_based --runtime=3"
for try in 1 2; do
  "$WAKE_REF" --pairs 1 --period-us 10000 --seconds 3 > "$tmp/bw-ref.json" &
  ref_pid=$!
  fio_nbd "$tmp/bw.json" $bw_job -- size=64M bandwidth=100M
  wait $ref_pid || fail "wake-ref failed"
  bw=$(jqr "$tmp/bw.json" '.jobs[0].write.bw_bytes / 1048576')
  lost=$(jqr "$tmp/bw-ref.json" '.timer_late_us.mean * .timer_late_us.samples / 3000000')
  floor=$(awk -v l="$lost" 'BEGIN { printf "%.2f", 95 * (1 - l) }')
  echo "write bandwidth: ${bw} MiB/s capped at 100; the host took $(awk -v l="$lost" 'BEGIN { printf "%.2f", l * 100 }')% of the run from a sleeper beside it: floor ${floor}"
  awk -v b="$bw" -v f="$floor" 'BEGIN { exit !(b >= f && b <= 105) }' && break
  [ $try = 1 ] && echo "measuring again"
done
between "write bandwidth (MiB/s)" "$bw" "$floor" 105
