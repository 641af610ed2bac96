#!/usr/bin/env bash
# The control socket: get, set (all or nothing, validated), stats, reset,
# dump; bad commands get an error and the disk keeps serving.
source "$(dirname "$0")/functions.sh"
requires jq --version
sock="$tmp/ctl.sock"
export sock

nbdkit -U - "$PLUGIN" size=64M control="$sock" stats="$tmp/s.json" \
    max-transfer=127K "product=WDC WD5001FXYZ-0" --run '
  set -e
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  [ "$(ctl get max-transfer)" = 127K ]
  # get, all keys: pairs split at spaces, a value with one quoted
  ctl get | grep -q " max-transfer=127K .* product=\"WDC WD5001FXYZ-0\" "
  [ "$(ctl get product)" = "WDC WD5001FXYZ-0" ]
  [ "$(ctl get latency-write)" = 0 ]
  ctl set latency-write=2ms oversize=split
  [ "$(ctl get latency-write)" = 2ms ]
  [ "$(ctl get oversize)" = split ]
  # Rejected changes leave everything as it was, and say why.
  if ctl set latency-write=5ms max-transfer=1000 2> '"$tmp"'/err; then exit 1; fi
  grep -q "max-transfer=1000: must be a multiple of logical-block-size" '"$tmp"'/err
  [ "$(ctl get latency-write)" = 2ms ]
  if ctl set size=1G 2> '"$tmp"'/err2; then exit 1; fi
  grep -q "size=1G: cannot be changed at runtime" '"$tmp"'/err2
  if ctl set latency-write 2> '"$tmp"'/err3; then exit 1; fi
  grep -q "'"'"'latency-write'"'"': expected KEY=VALUE" '"$tmp"'/err3
  # 65 pairs: refused whole, not cut silently at 64
  if ctl set $(for i in $(seq 65); do printf "latency-read=%dus " $i; done) 2> '"$tmp"'/err4; then exit 1; fi
  grep -q "at most 64 KEY=VALUE pairs" '"$tmp"'/err4
  [ "$(ctl get latency-read)" = 0 ]
  ctl set $(for i in $(seq 64); do printf "latency-read=%dus " $i; done)
  [ "$(ctl get latency-read)" = 64us ]
  ctl set latency-read=0
  if ctl frobnicate 2>/dev/null; then exit 1; fi
  ctl keys | grep -qw latency-read
  # The new latency and the split policy apply to the next request.
  "$NBD_IO" "$uri" write 0 1048576 4
  ctl stats > '"$tmp"'/live.json
  # stats PATH...: what jq -r selects, from the same request (a second
  # stats call would see more elapsed time; these values hold still)
  ctl stats .oversize.split .ops.write.requests ".ops.write.sizes[\"130048\"]" \
    .ops.write.latency_us.p50 .config.product ".config[\"max-transfer\"]" .no.such \
    .ops.write.sizes > '"$tmp"'/paths.txt
  if ctl stats .ops..write 2> '"$tmp"'/err5; then exit 1; fi
  grep -q "stats .ops..write: a path is" '"$tmp"'/err5
  ctl summary > '"$tmp"'/summary.txt
  ctl dump
  ctl reset
  ctl stats > '"$tmp"'/after-reset.json
  "$NBD_IO" "$uri" read 0 1048576 4
'
live="$tmp/live.json"
expect_eq "split after set" "$(jqr "$live" .oversize.split)" 1
expect_eq "pieces" "$(jqr "$live" .ops.write.requests)" 9
awk -v v="$(jqr "$live" .ops.write.latency_us.p50)" 'BEGIN { exit !(v >= 2000) }' ||
  fail "latency-write=2ms not applied: p50 $(jqr "$live" .ops.write.latency_us.p50)"
echo "ok: write p50 $(jqr "$live" .ops.write.latency_us.p50) us after set latency-write=2ms"
# blkemu-ctl stats PATH... against jq -r on the JSON fetched just before
# (a latency percentile, a string, a missing member, an object).
jq -r '.oversize.split, .ops.write.requests, .ops.write.sizes["130048"],
  .ops.write.latency_us.p50, .config.product, .config["max-transfer"],
  .no.such' "$live" > "$tmp/paths.jq"
jq -c .ops.write.sizes "$live" >> "$tmp/paths.jq"
diff "$tmp/paths.jq" "$tmp/paths.txt" || fail "blkemu-ctl stats PATH... differs from jq -r"
echo "ok: blkemu-ctl stats PATH... prints what jq -r does ($(paste -sd' ' "$tmp/paths.txt"))"
grep -q "write request sizes" "$tmp/summary.txt" || fail "summary: $(cat "$tmp/summary.txt")"
expect_eq "requests after reset" "$(jqr "$tmp/after-reset.json" .ops.write.requests)" 0
# The exit stats (after reset) hold only the read that followed.
expect_eq "final reads" "$(jqr "$tmp/s.json" .ops.read.requests)" 9
expect_eq "final writes" "$(jqr "$tmp/s.json" .ops.write.requests)" 0
expect_eq "socket removed at exit" "$(test -e "$sock" && echo yes || echo no)" no

# nbdkit failing after the plugin bound its control socket (here: its own
# -U path is in use) exits without unloading the plugin; the control
# socket was left behind.  It must go, and a daemonized nbdkit's must
# stay (its parent exits as soon as it has forked).
if nbdkit_wrapped; then
  echo "skip: nbdkit failing on -U, and a daemonized nbdkit (a sanitizer run's wrapped nbdkit may hang at exit)"
  exit 0
fi
busy=$tmp/busy.sock
nbdkit -f -U "$busy" "$PLUGIN" size=1M 2> /dev/null &
busy_pid=$!
cleanup_hooks+=("kill $busy_pid 2>/dev/null")
for i in $(seq 100); do [ -S "$busy" ] && break; sleep 0.05; done
status=0
timeout -k 5 60 nbdkit -f -U "$busy" "$PLUGIN" size=1M control="$tmp/left.sock" \
  2> "$tmp/busy.err" || status=$?
[ $status -ne 0 ] || fail "nbdkit served on a socket in use"
[ $status != 124 ] && [ $status != 137 ] || fail "nbdkit hung failing on -U"
[ -e "$tmp/left.sock" ] && fail "nbdkit failed on -U ($(head -1 "$tmp/busy.err")) and left control= behind"
echo "ok: nbdkit failing after the open removes the control socket"
kill $busy_pid
timeout -k 5 30 nbdkit -U "$tmp/daemon.sock" -P "$tmp/daemon.pid" "$PLUGIN" \
  size=1M control="$tmp/daemon.ctl" || fail "nbdkit did not start as a daemon"
# nbdkit's parent returns once it has forked; the child writes the pid
# file after that (seen missing once, on a loaded host).
for _ in $(seq 100); do [ -s "$tmp/daemon.pid" ] && break; sleep 0.1; done
daemon=$(cat "$tmp/daemon.pid")
cleanup_hooks+=("kill $daemon 2>/dev/null")
expect_eq "daemonized nbdkit: control socket serves" \
  "$(timeout 10 "$BLKEMU_CTL" "$tmp/daemon.ctl" get size)" 1M
kill $daemon
for i in $(seq 100); do kill -0 $daemon 2>/dev/null || break; sleep 0.05; done
[ -e "$tmp/daemon.ctl" ] && fail "daemon's control socket left after SIGTERM"
echo "ok: daemon's control socket removed at its exit"
