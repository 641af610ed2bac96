#!/usr/bin/env bash
# Injected faults through the real plugin: an error rule fires exactly on
# the range, op and count it names, the disk keeps serving everything
# else, and every fault is counted in stats and marked in the trace.
source "$(dirname "$0")/functions.sh"
requires jq --version
sock="$tmp/ctl.sock"
export sock tmp

# Writes to [1M, 2M) fail with ENOSPC once, after two matching writes.
nbdkit -U - "$PLUGIN" size=16M control="$sock" stats="$tmp/s.json" \
    trace="$tmp/trace" error-mode=once error-op=write error-offset=1M \
    error-length=1M error-errno=ENOSPC error-after=2 --run '
  set -e
  io () { "$NBD_IO" "$uri" "$@"; }
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  io write 1048576 4096 1                       # match 1: passes
  io read 1048576 4096 1                        # a read: not matched
  io write 0 4096 1                             # outside: not matched
  io write 1052672 4096 1                       # match 2: passes
  [ "$(io write 1056768 4096 1)" = ENOSPC ]     # match 3: fails
  io write 1056768 4096 2                       # once: served again
  io read 1056768 4096 2                        # and the data is there
  # sticky at runtime: every read of [4M, 4M+64K) fails with EIO from the
  # first hit on, other reads are served.
  ctl set error-mode=sticky error-op=read error-offset=4M error-length=64K \
          error-errno=EIO error-after=0
  for i in 1 2 3; do [ "$(io read 4194304 4096)" = EIO ]; done
  [ "$(io read 4259840 4096)" = ok ]            # just past the range
  [ "$(io read 4190208 8192)" = EIO ]           # straddling its start
  ctl set error-mode=off
  [ "$(io read 4194304 4096)" = ok ]
  # A latency spike on every request, then a stall: the next read waits.
  ctl set spike-probability=1 spike-latency=30ms
  io read 0 4096
  ctl set spike-probability=0 stall=400ms
  start=$(date +%s%N); io read 0 4096; end=$(date +%s%N)
  echo $(( (end - start) / 1000000 )) > "$tmp/stall_ms"
  ctl set slowdown=10 latency-read=2ms
  io read 0 4096
  ctl set slowdown=1 latency-read=0
'
s="$tmp/s.json"
expect_eq "injected errors" "$(jqr "$s" .faults.errors)" 5
expect_eq "write errors" "$(jqr "$s" .ops.write.errors)" 1
expect_eq "read errors" "$(jqr "$s" .ops.read.errors)" 4
expect_eq "spikes" "$(jqr "$s" .faults.spikes)" 1
expect_eq "stalled" "$(jqr "$s" .faults.stalled)" 1
expect_eq "slowed" "$(jqr "$s" .faults.slowed)" 1
between "stalled read took (ms)" "$(cat "$tmp/stall_ms")" 300 2000
between "read max latency (us, the spike or the stall)" \
  "$(jqr "$s" .ops.read.latency_us.max)" 30000 2000000
expect_eq "trace: fault marks" "$(grep -c 'fault' "$tmp/trace")" 5
grep -q ' W 1056768 4096 .* ENOSPC fault$' "$tmp/trace" ||
  fail "trace lacks the failed write: $(grep ENOSPC "$tmp/trace")"
expect_eq "trace: spike" "$(grep -c 'spike' "$tmp/trace")" 1
spike=$(awk '$NF ~ /spike/ { print $5 }' "$tmp/trace")
between "the spiked read (us)" "${spike%.*}" 30000 60000
expect_eq "trace: stall" "$(grep -c 'stall' "$tmp/trace")" 1
slow=$(awk '$NF ~ /slow/ { print $5 }' "$tmp/trace")
between "slowdown=10 on a 2ms read (us)" "${slow%.*}" 19000 25000

# Probability: error-probability=10% over 400 reads, seeded.
nbdkit -U - "$PLUGIN" size=1M error-mode=always error-op=read \
    error-probability=10% seed=7 stats="$tmp/p.json" --run '
  for i in $(seq 400); do "$NBD_IO" "$uri" read 0 4096 >/dev/null || true; done
'
between "10% of 400 reads failed" "$(jqr "$tmp/p.json" .ops.read.errors)" 20 65

# The drop fault ends the client connections; the server keeps serving.
nbdkit -U - "$PLUGIN" size=1M control="$sock" stats="$tmp/d.json" --run '
  "$BLKEMU_CTL" "$sock" drop
  # The first read gets an error, the second finds the connection gone.
  "$NBD_IO" "$uri" read-twice 0 4096 > "$tmp/drop.out" 2> "$tmp/drop.err" || true
  "$NBD_IO" "$uri" write 0 4096 3
  "$NBD_IO" "$uri" read 0 4096 3
'
expect_eq "dropped" "$(jqr "$tmp/d.json" .faults.dropped)" 1
expect_eq "read on the dropped connection" "$(cut -d' ' -f1 "$tmp/drop.out")" ESHUTDOWN
second=$(cut -d' ' -f2 "$tmp/drop.out")
[ "$second" != ok ] || fail "the connection survived the drop"
echo "ok: the next request on it: $second ($(tail -1 "$tmp/drop.err"))"
expect_eq "served after the drop" "$(jqr "$tmp/d.json" .ops.write.requests)" 1

# slowdown=7 rounds times to the device clock and back: no request may
# complete before it arrived (a wrapped subtraction once gave a latency of
# 18446744073709551 us to requests with no service time of their own).
nbdkit -U - "$PLUGIN" size=16M slowdown=7 stats="$tmp/slow.json" \
    trace="$tmp/slow.trace" --run '
  fio --name=slow --ioengine=nbd --uri="$uri" --rw=randread --bs=4k \
      --iodepth=4 --number_ios=3000 --size=16M --output=/dev/null'
maxlat=$(jqr "$tmp/slow.json" .ops.read.latency_us.max)
between "slowdown=7: read max latency (us)" "${maxlat%.*}" 0 1000000
between "slowdown=7: read mean latency (us)" \
  "$(jqr "$tmp/slow.json" .ops.read.latency_us.mean | cut -d. -f1)" 0 100000
awk '!/^#/ && $5 + 0 > 1000000 { bad++ } END { exit bad > 0 }' "$tmp/slow.trace" ||
  fail "slowdown=7: trace latencies wrapped: $(awk '$5 > 1000000' "$tmp/slow.trace" | head -3)"
echo "ok: slowdown=7: $(grep -vc '^#' "$tmp/slow.trace") traced reads, none wrapped"

# error-offset + error-length past the top of the 64-bit range means "to
# the end of the disk"; it once wrapped and the rule never fired.
nbdkit -U - "$PLUGIN" size=16M error-mode=always error-op=read \
    error-offset=1M error-length=18446744073709551104 --run '
  set -e
  [ "$("$NBD_IO" "$uri" read 2097152 4096)" = EIO ]
  [ "$("$NBD_IO" "$uri" read 0 4096)" = ok ]' ||
  fail "an error rule with a huge error-length did not fire"
echo "ok: error-length past the top of the range fires to the end of the disk"
