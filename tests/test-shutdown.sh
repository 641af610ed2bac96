#!/usr/bin/env bash
# Stopping a disk under stall=3600s with requests queued: every pending
# request completes at once with an error, the server exits within 1 s,
# and stats= is written with the requests counted as cancelled.  nbdkit
# (64 requests from fio's nbd engine) and blkemu-fuse (64 O_DIRECT
# readers); the ublk case runs in the VM (vm-shutdown).
source "$(dirname "$0")/functions.sh"
requires jq --version
requires fio --version

ms_now () { date +%s%3N; }

# wait_in_flight WHAT N: until the disk holds N requests (stats in_flight,
# read by WHAT: a command printing the stats JSON), at most 30 s.
wait_in_flight () {
  local i n=
  for i in $(seq 300); do
    n=$($1 2>/dev/null | jq -r .in_flight 2>/dev/null || true)
    [ "$n" = "$2" ] && return 0
    sleep 0.1
  done
  fail "the disk never held $2 requests (in_flight: ${n:-none})"
}

# wait_gone PID SECONDS: fail unless PID has exited within SECONDS.
wait_gone () {
  local i
  for i in $(seq $(( $2 * 20 ))); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.05
  done
  kill -9 "$1" 2>/dev/null || true
  fail "pid $1 still running after $2 s"
}

# ---- nbdkit -----------------------------------------------------------
sock=$tmp/nbd.sock
nbdkit -f --threads=64 -U "$sock" "$PLUGIN" size=64M stall=3600s stats="$tmp/nbd.json" \
    control="$tmp/nbd.ctl" \
    2> "$tmp/nbdkit.log" &
nbdkit_pid=$!
cleanup_hooks+=("kill -9 $nbdkit_pid 2>/dev/null")
for i in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
fio --name=stalled --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
    --rw=randread --bs=4k --iodepth=64 --size=64M --time_based \
    --runtime=3600 --output="$tmp/fio-nbd.out" > /dev/null 2>&1 &
fio_pid=$!
wait_in_flight "$BLKEMU_CTL $tmp/nbd.ctl stats" 64
kill -0 $fio_pid || fail "fio ended before the shutdown: $(cat "$tmp/fio-nbd.out")"
t0=$(ms_now)
kill -TERM $nbdkit_pid
wait_gone $nbdkit_pid 10
took=$(( $(ms_now) - t0 ))
between "nbdkit exit after SIGTERM, 64 requests stalled (ms)" "$took" 0 1000
wait_gone $fio_pid 10
if wait $fio_pid; then fail "fio saw no error"; fi
echo "ok: fio got errors"
[ -s "$tmp/nbd.json" ] || fail "stats not written: $(cat "$tmp/nbdkit.log")"
expect_eq "nbdkit: requests cancelled" "$(jqr "$tmp/nbd.json" .cancelled)" 64
expect_eq "nbdkit: reads that failed" \
  "$(jqr "$tmp/nbd.json" .ops.read.errors)" "$(jqr "$tmp/nbd.json" .ops.read.requests)"

# ---- blkemu-fuse ------------------------------------------------------
if [ -c /dev/fuse ] && command -v fusermount3 > /dev/null; then
  mnt=$tmp/mnt
  fuse_mount "$mnt" --disk name=d0,size=64M,stall=3600s,stats="$tmp/fuse.json"
  pids=()
  for i in $(seq 0 63); do
    dd if="$mnt/d0" of=/dev/null bs=4k count=1 skip=$((i * 2)) iflag=direct \
       status=none 2> "$tmp/dd.$i" &
    pids+=($!)
  done
  wait_in_flight "cat $mnt/.blkemu/d0/stats" 64
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
  expect_eq "readers waiting on the stalled disk" "$alive" 64
  t0=$(ms_now)
  kill -TERM "$fuse_pid"
  wait_gone "$fuse_pid" 10
  took=$(( $(ms_now) - t0 ))
  between "blkemu-fuse exit after SIGTERM, 64 reads stalled (ms)" "$took" 0 1000
  failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
  expect_eq "readers that got an error" "$failed" 64
  [ -s "$tmp/fuse.json" ] || fail "stats not written: $(cat "$mnt.log")"
  expect_eq "fuse: requests cancelled" "$(jqr "$tmp/fuse.json" .cancelled)" 64
  mountpoint -q "$mnt" && fail "still mounted"
  echo "ok: unmounted"
else
  echo "skip: FUSE part (no /dev/fuse or fusermount3)"
fi
