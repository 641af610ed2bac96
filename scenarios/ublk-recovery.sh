#!/usr/bin/env bash
# A ublk server that dies and comes back.  blkemu-ublk --recoverable asks
# ublk_drv for user recovery with reissue: when the server is killed
# (SIGKILL, a crash) /dev/ublkbN stays, its I/O queued, and what the dead
# server held goes back to the queue; `blkemu-ublk --recover N` with the
# same spec takes the device over and the queued I/O flows again.  The
# disk's data must outlive the server: backend=file.
#   1. md raid1 over two recoverable disks, fio writing with verify
#      through a kill -9 of one leg's server and its recovery: no verify
#      error, the member never failed, the legs identical (md check).
#   2. One disk killed twice (recovered, killed again, recovered again)
#      under fio verify.
#   3. What --recover refuses: a device still served, a different spec.
#   4. A controlled stop drains: SIGTERM lets a 2 s write finish (it
#      succeeds) instead of failing it.
#   blkemu-vm scenarios/ublk-recovery.sh
# blkemu-vm: needs ublk_drv
# budget: 80 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
if ! "$UBLK" --features 2>/dev/null | grep -q "yes *user-recovery-reissue"; then
  echo "SKIP: this ublk_drv offers no user recovery with reissue"
  exit 77
fi
modprobe raid1 2>/dev/null || true

# rec_start NAME SPEC [OPTION...]: a --recoverable server for one disk;
# prints /dev/ublkbN.
rec_start () {
  local name=$1 spec=$2; shift 2
  UBLK_OPTS="--recoverable $*" ublk_disk_start "$name" "$spec"
}
# rec_recover NAME SPEC DEV: a new server takes DEV over.
rec_recover () { rec_start "$1" "$2" --recover "${3#/dev/ublkb}"; }
# rec_kill NAME: SIGKILL the server and reap it.
rec_kill () {
  local pid
  pid=$(cat "$work/$1.pid")
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
}
writes_done () { awk '{ print $5 }' "/sys/block/${1#/dev/}/stat"; }

section "md raid1 over two recoverable disks; leg a's server killed under fio verify"
spec_a="size=256M,backend=file,file=$work/a.img,latency-write=300us"
spec_b="size=256M,backend=file,file=$work/b.img,latency-write=300us"
a=$(rec_start a "$spec_a") || exit 1
b=$(rec_start b "$spec_b") || exit 1
echo "  leg a $a, leg b $b"
md_create /dev/md0 1 "$a" "$b"
fio --name=verify --filename=/dev/md0 --ioengine=libaio --direct=1 \
  --rw=randwrite --bs=16k --iodepth=16 --size=96M --verify=crc32c \
  --verify_fatal=1 --do_verify=1 --output-format=json \
  --output="$work/fio-md.json" > /dev/null 2>&1 &
fio_pid=$!
# Kill while the writes are in flight.
for _ in $(seq 100); do [ "$(writes_done "$a")" -gt 500 ] && break; sleep 0.1; done
before=$(writes_done "$a")
rec_kill a
sleep 1
held=$(writes_done /dev/md0)
sleep 1
echo "  killed a's server after $before writes on leg a"
check "$a stays while its server is dead" -e "/sys/block/${a#/dev/}"
check "fio waits, not failed ($(kill -0 $fio_pid 2>/dev/null && echo running || echo exited))" \
  "$(kill -0 $fio_pid 2>/dev/null && echo running)" = running
check "no write completed on md0 while leg a was down ($held, then $(writes_done /dev/md0))" \
  "$(writes_done /dev/md0)" = "$held"
t0=$(date +%s%N)
a2=$(rec_recover a "$spec_a" "$a") || exit 1
echo "  recovered in $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -c 'took over' "$work/a.log") takeover in the log"
check "the new server took over the same device ($a2)" "$a2" = "$a"
rc=0
wait $fio_pid || rc=$?
verr=$(jq -r '.jobs[0].error' "$work/fio-md.json" 2>/dev/null || echo none)
vbytes=$(jq -r '.jobs[0].read.io_bytes' "$work/fio-md.json" 2>/dev/null || echo 0)
echo "  fio exit $rc, error $verr, verified $((vbytes >> 20)) MiB"
check "fio verify passed through the kill and recovery (exit $rc, error $verr)" "$rc/$verr" = 0/0
check "fio read back and verified all 96 MiB ($((vbytes >> 20)))" "$vbytes" -eq $((96 << 20))
grep -A1 '^md0' /proc/mdstat | sed 's/^/  /'
md=/sys/block/md0/md
check "md0 not degraded ($(cat $md/degraded))" "$(cat $md/degraded)" = 0
check "leg a still in_sync, 0 errors ($(cat $md/dev-${a#/dev/}/state), $(cat $md/dev-${a#/dev/}/errors))" \
  "$(cat $md/dev-${a#/dev/}/state)/$(cat $md/dev-${a#/dev/}/errors)" = in_sync/0
md_check /dev/md0
check "md check: the legs hold the same data (mismatch_cnt $(cat $md/mismatch_cnt))" \
  "$(cat $md/mismatch_cnt)" = 0
mdadm --stop /dev/md0 > /dev/null 2>&1
disk_stop a
disk_stop b
w=$(jq -r '.ops.write.requests' "$results/a.json" 2>/dev/null || echo 0)
check "the recovered server served writes (stats: $w)" "$w" -gt 0
f=$(jq -r '.transport.ublk_features' "$results/a.json" 2>/dev/null)
check "stats name the features the driver granted ($f)" \
  "$(echo ",$f," | grep ',user-recovery,' | grep -c ',user-recovery-reissue,')" = 1
check "its stats say it took the device over ($(jq -r '.transport.ublk_recovered' "$results/a.json" 2>/dev/null))" \
  "$(jq -r '.transport.ublk_recovered' "$results/a.json" 2>/dev/null)" = yes

section "one disk killed twice under fio verify"
spec_c="size=128M,backend=file,file=$work/c.img,latency-write=200us,latency-read=200us"
c=$(rec_start c "$spec_c") || exit 1
fio --name=verify --filename="$c" --ioengine=libaio --direct=1 \
  --rw=randwrite --bs=8k --iodepth=8 --size=48M --verify=crc32c \
  --verify_fatal=1 --do_verify=1 --output-format=json \
  --output="$work/fio-c.json" > /dev/null 2>&1 &
fio_pid=$!
for round in 1 2; do
  for _ in $(seq 100); do [ "$(writes_done "$c")" -gt $((round * 400)) ] && break; sleep 0.1; done
  rec_kill c
  sleep 0.5
  c2=$(rec_recover c "$spec_c" "$c") || exit 1
  check "kill $round: recovered $c2" "$c2" = "$c"
done
rc=0
wait $fio_pid || rc=$?
verr=$(jq -r '.jobs[0].error' "$work/fio-c.json" 2>/dev/null || echo none)
check "fio verify passed through two kills (exit $rc, error $verr)" "$rc/$verr" = 0/0

section "what --recover refuses"
"$UBLK" --recover "${c#/dev/ublkb}" --disk "name=c,$spec_c" > "$work/refuse1.log" 2>&1
check "a device still served: refused ($(head -1 "$work/refuse1.log"))" \
  "$(grep -c 'still served by process' "$work/refuse1.log")" = 1
rec_kill c
"$UBLK" --recover "${c#/dev/ublkb}" --disk "name=c,${spec_c/size=128M/size=64M}" > "$work/refuse2.log" 2>&1
check "another size: refused ($(head -1 "$work/refuse2.log"))" \
  "$(grep -c 'has size 134217728, the spec 67108864' "$work/refuse2.log")" = 1
c2=$(rec_recover c "$spec_c" "$c") || exit 1
check "the right spec still takes it over after the refusals ($c2)" "$c2" = "$c"
disk_stop c

section "a controlled stop drains: a 2 s write finishes"
# Started here, not in $(...): the server is this shell's child to wait for.
"$UBLK" --ready-file "$work/slow.ready" \
  --disk "name=slow,size=64M,latency-write=2s,control=$work/slow.ctl,stats=$results/slow.json" \
  > "$work/slow.log" 2>&1 &
srv=$!
echo $srv > "$work/slow.pid"
server_ready slow 300 "blkemu-ublk: disk slow"
d=$(awk '{ print $2 }' "$work/slow.ready")
dd if=/dev/urandom of="$d" bs=4k count=1 oflag=direct status=none 2> "$work/dd.err" &
dd_pid=$!
for _ in $(seq 50); do [ "$(disk_stat slow .in_flight)" = 1 ] && break; sleep 0.1; done
t0=$(date +%s%N)
kill -TERM $srv
rc=0
wait $srv || rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
drc=0
wait $dd_pid || drc=$?
echo "  SIGTERM to exit: $took ms (exit $rc); the write: exit $drc $(cat "$work/dd.err")"
check "the write in flight succeeded (dd exit $drc)" "$drc" = 0
check "the server waited for it, not longer than the 5 s drain ($took ms)" "$took" -le 5000
st=$(jq -r '"\(.ops.write.requests)/\(.ops.write.errors)/\(.cancelled)"' "$results/slow.json")
check "stats: 1 write, no error, none cancelled ($st)" "$st" = 1/0/0
finish
