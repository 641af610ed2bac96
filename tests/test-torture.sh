#!/usr/bin/env bash
# A seeded, randomized torture run (TORTURE_SECONDS, default 120; the
# seed is printed, TORTURE_SEED repeats a run): nbd-torture's clients,
# runtime changes, faults, drops and crash/power-on cycles (some striking
# requests in flight under long latencies) on write-cached memory and file
# disks, checking that flushed and FUA'd data survives
# every crash and reads return what was written; beside it, fio verify
# with several jobs on another disk whose timing and limits change under
# it.  The servers must neither die nor hang, their memory stays bounded,
# and they stop on SIGTERM.
source "$(dirname "$0")/functions.sh"
requires fio --version
seconds=${TORTURE_SECONDS:-120}
seed=${TORTURE_SEED:-$(( $(date +%s) % 100000 ))}
echo "torture: seed $seed, ${seconds}s (TORTURE_SEED=$seed TORTURE_SECONDS=$seconds repeats it)"
: "${NBD_TORTURE:=$BLKEMU_BUILD/tests/nbd-torture}"
RANDOM=$seed

# start_server NAME SPEC...: nbdkit in the foreground on $tmp/NAME.sock.
start_server () {
  local name=$1; shift
  nbdkit -f -U "$tmp/$name.sock" -P "$tmp/$name.pid" "$PLUGIN" "$@" \
    2> "$tmp/$name.log" &
  cleanup_hooks+=("kill $! 2>/dev/null")
  local i
  # nbdkit binds the socket before it writes the pid file (-P is written
  # once it serves): wait for both, the stop and the RSS watch read it.
  for i in $(seq 200); do
    [ -S "$tmp/$name.sock" ] && [ -s "$tmp/$name.pid" ] && return 0
    sleep 0.05
  done
  cat "$tmp/$name.log" >&2
  fail "$name: nbdkit did not start"
}

rss_kib () { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# stop_server NAME: SIGTERM, exit within 10 s.
stop_server () {
  local pid; pid=$(cat "$tmp/$1.pid")
  kill -0 "$pid" 2>/dev/null || fail "$1: the server died during the run: $(tail -5 "$tmp/$1.log")"
  kill -TERM "$pid"
  wait_exit "$1: nbdkit after SIGTERM" "$pid" 10
  echo "ok: $1 stopped on SIGTERM"
}

# fio verify beside everything, on its own disk, under changing timing.
start_server verify size=256M max-transfer=64K oversize=split queue-depth=32 \
  control="$tmp/verify.ctl"
fio --name=verify --ioengine=nbd --uri="nbd+unix://?socket=$tmp/verify.sock" \
    --rw=randwrite --bsrange=4k-256k --blockalign=4k --iodepth=8 --numjobs=3 \
    --size=64M --offset_increment=64M --verify=crc32c --verify_fatal=1 \
    --do_verify=1 --verify_state_save=0 --time_based --runtime="$seconds" \
    --verify_backlog=256 --group_reporting --output="$tmp/fio.out" &
fio_pid=$!
(
  sets=("latency-write=100us" "latency-write=0" "max-transfer=16K"
        "max-transfer=64K" "slowdown=2" "slowdown=1" "queue-depth=4"
        "queue-depth=32" "latency-read=50us latency-dist=normal latency-jitter=20us"
        "latency-read=0")
  while kill -0 $fio_pid 2>/dev/null; do
    "$BLKEMU_CTL" "$tmp/verify.ctl" set ${sets[RANDOM % ${#sets[@]}]} > /dev/null ||
      { echo "set refused" > "$tmp/verify-sets.err"; }
    sleep 0.$((RANDOM % 5 + 1))
  done
) &

half=$(( seconds / 2 ))
for backend in memory file; do
  spec=(size=64M write-cache=yes cache-size=16M control="$tmp/$backend.ctl"
        stats="$tmp/$backend.json" seed=$seed)
  [ $backend = file ] && spec+=(file="$tmp/disk.img")
  start_server $backend "${spec[@]}"
  pid=$(cat "$tmp/$backend.pid")
  ( max=0; while kill -0 "$pid" 2>/dev/null; do
      r=$(rss_kib "$pid"); [ "${r:-0}" -gt $max ] && max=$r
      echo $max > "$tmp/$backend.rss"; sleep 1; done ) &
  "$NBD_TORTURE" "nbd+unix://?socket=$tmp/$backend.sock" "$tmp/$backend.ctl" \
      "$half" $((seed + ${#backend})) | tee "$tmp/$backend.out" ||
    fail "$backend: nbd-torture found a violation (seed $seed)"
  grep -q "nbd-torture: ok" "$tmp/$backend.out" || fail "$backend: no verdict"
  crashes=$(sed -n 's/.*ok: .* \([0-9]*\) crashes.*/\1/p' "$tmp/$backend.out")
  between "$backend: crash cycles" "$crashes" 1 1000000
  inflight=$(sed -n 's/.*ok: .* crashes (\([0-9]*\) in flight).*/\1/p' "$tmp/$backend.out")
  between "$backend: crashes with requests in flight" "$inflight" 1 1000000
  # 64M of data and 16M of undo log, with room for nbdkit and threads
  # (the sanitizer runs raise the bound for their shadow and quarantine).
  between "$backend: peak server RSS (KiB)" "$(cat "$tmp/$backend.rss")" 1 \
    "${TORTURE_RSS_MAX_KIB:-307200}"
  stop_server $backend
  jq -e '.faults.crashes >= 1' "$tmp/$backend.json" > /dev/null ||
    fail "$backend: stats at exit lack the crashes"
done

wait $fio_pid || { cat "$tmp/fio.out"; fail "fio verify failed under runtime changes"; }
grep -q "err= 0" "$tmp/fio.out" || { cat "$tmp/fio.out"; fail "fio reported errors"; }
[ ! -e "$tmp/verify-sets.err" ] || fail "a valid runtime set was refused"
echo "ok: fio verify (3 jobs) passed for ${seconds}s under runtime changes"
stop_server verify
