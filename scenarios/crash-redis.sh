#!/usr/bin/env bash
# A real durability bug found with crash states: Redis 7.0's append-only
# file with appendfsync everysec, on ext4's defaults (data=ordered), can
# come back after a power cut with a tail of zeroes that Redis refuses
# to load (redis#5177, valkey#1148): an append inside an allocated block
# journals the file's new size before its data reaches the disk.
#   A. appendfsync everysec; writes load the AOF; the server is frozen
#      (SIGSTOP: its next fsync never comes), the journal commits (ext4:
#      every 5 s), the power goes.  A fresh redis-server on each crash
#      state fails: "Bad file format reading the append only file".
#   B. the same with appendfsync always: every state loads, with every
#      SET the server acknowledged.
# The oracle is Redis's own (a server started on the crash view).
#   blkemu-vm scenarios/crash-redis.sh
# blkemu-vm: needs ublk_drv
# budget: 80 s
# quiet: the last writes must land within one wall-clock second of the
# fsync before them; beside the sanitizer suites a TCG guest missed it
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe ext4 2>/dev/null || true
for p in redis-server redis-cli; do
  command -v $p > /dev/null || { echo "SKIP: $p is not installed (tools/install-deps vm)"; exit 77; }
done
# States of each mode: 6, or 2 at quick scale (CI's suite).
states=6
[ "${BLKEMU_SCENARIO_SCALE:-full}" = quick ] && states=2
crash_disk r 128M
stats () { disk_stat r "$1"; }

# The oracle, run on each crash view mounted at DIR: a fresh server
# loads the AOF there; 0 once it is ready holding KEYS keys (the SETs
# acknowledged), 1 (its log shown) if it quits or lost some.
cat > "$work/load-check" <<'CHECK'
#!/usr/bin/env bash
dir=$1 sock=$2 log=$3 keys=$4
rm -f "$sock"
redis-server --port 0 --unixsocket "$sock" --dir "$dir" --appendonly yes \
  --save '' --daemonize no > "$log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  if grep -qi "ready to accept connections" "$log"; then
    n=$(redis-cli -s "$sock" dbsize)
    kill $pid; wait $pid
    [ "$n" -ge "$keys" ] && exit 0
    echo "the AOF loads, with $n of the $keys keys acknowledged"
    exit 1
  fi
  kill -0 $pid 2> /dev/null || break
  sleep 0.1
done
kill $pid 2> /dev/null; wait $pid
grep -m3 -i "bad file format\|error\|truncated" "$log"
exit 1
CHECK
chmod +x "$work/load-check"
load_check="mount -t ext4 {dev} $chk && { $work/load-check $chk/data $work/check.sock $work/check.log 1020; r=\$?; umount $chk; exit \$r; }"

# load_then_cut FSYNC: a fresh ext4, a server with appendfsync FSYNC
# loading 1,020 writes into its AOF, frozen; past one journal commit the
# power goes with the unflushed writes kept.
load_then_cut () {
  # ext4's defaults: its journal commits every 5 s, which the cut waits
  # past (with commit=1 and a shorter wait the tail survived, measured).
  fresh_ext4 r "$dev" "$mnt"
  mkdir "$mnt/data"
  rm -f "$work/r.sock"
  redis-server --port 6390 --bind 127.0.0.1 --unixsocket "$work/r.sock" --dir "$mnt/data" --appendonly yes \
    --appendfsync "$1" --save '' --daemonize no > "$work/server.log" 2>&1 &
  local pid=$! i
  wait_for "redis on $work/r.sock" 30 redis_up || { cat "$work/server.log"; exit 1; }
  sets 1 1000
  # everysec fsyncs at the first write of each wall-clock second: past
  # it, all is synced.  The last writes come early in a new second, just
  # after the one that fsyncs: SET 1001, then 1002-1020 with no fsync
  # until the next second, which the freeze (SIGSTOP) never lets come.
  # They go over one TCP connection held open (bash's /dev/tcp), not a
  # redis-cli each: a busy guest starts a process in a good part of a
  # second, so nothing between the second's start and the freeze starts
  # one (the clock is bash's EPOCHREALTIME, the flush count the kernel's
  # diskstats).  A freeze delayed into the next second, or one after a
  # flush, is tried again (the key names repeat: the AOF only grows).
  local s0 s1 try f0 why stat=/sys/block/${dev#/dev/}/stat
  ip link set lo up 2> /dev/null
  exec 3<> /dev/tcp/127.0.0.1/6390 || { echo "cannot connect to redis on 6390"; exit 1; }
  for try in 1 2 3 4 5; do
    # SET 1001 0.15 s into a new second, once Redis's cached clock (its
    # cron refreshes it ten times a second) has seen it: a SET in the
    # stale tenth fsyncs under the old second's name, and the next
    # write, seeing the new one, fsyncs again and takes 1002-1020 along
    # (ci22, ci24: every state loaded).  The second before it fsyncs
    # what came before.
    sleep "$(usec_to_s $((2150000 - 10#${EPOCHREALTIME#*.})))"
    s0=${EPOCHREALTIME%.*}
    tcp_sets 1001 1001
    tcp_fsync_done || { echo "the fsync after SET key:1001 did not end"; exit 1; }
    f0=$(flushes "$stat")
    tcp_sets 1002 1020
    kill -STOP $pid
    s1=$EPOCHREALTIME
    # A flush under way at the freeze ends: wait for it, then ask
    # whether any came after 1002-1020's writes (ext4's journal timer may
    # bring one too: a retry costs two seconds).
    sleep 0.3
    if [ "${s1%.*}" != "$s0" ]; then
      why="the freeze came in the next second"
    elif [ "$1" = everysec ] && [ "$(flushes "$stat")" != "$f0" ]; then
      why="a flush followed SET 1002-1020"
    else
      break
    fi
    kill -CONT $pid
    echo "  ($why: again)"
    [ $try -lt 5 ] || { echo "5 tries, and never 1002-1020 unflushed at a freeze within their second"; exit 1; }
  done
  exec 3>&-
  s1=${s1#*.}
  echo "  1,020 SETs acknowledged, the server frozen 0.${s1:0:2} s into their second (try $try); AOF $(du -b "$mnt"/data/appendonlydir/*.incr.aof | cut -f1) bytes"
  sleep 7
  cut_power r "$dev" "$mnt"
  kill -KILL $pid; wait $pid 2> /dev/null
}

# usec_to_s N: N microseconds (N >= 0) as sleep(1) takes them.
usec_to_s () { printf '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000)); }
# flushes STATFILE: the flush requests the block device has completed
# (diskstats' 16th field), read without starting a process.
flushes () { local st; read -r -a st < "$1"; echo "${st[14]}"; }
redis_up () { [ "$(redis-cli -s "$work/r.sock" ping 2> /dev/null)" = PONG ]; }
# resp_sets FIRST LAST: SET key:FIRST..key:LAST in the protocol's own
# form.  sets sends them through redis-cli --pipe, every reply awaited
# (acknowledged); tcp_sets on the connection open as fd 3, every reply
# read.
resp_sets () {
  local i v
  for ((i = $1; i <= $2; i++)); do
    v=value-$i-$RANDOM$RANDOM
    printf '*3\r\n$3\r\nSET\r\n$%d\r\nkey:%d\r\n$%d\r\n%s\r\n' $((4 + ${#i})) "$i" ${#v} "$v"
  done
}
sets () {
  resp_sets "$1" "$2" | redis-cli -s "$work/r.sock" --pipe > "$work/pipe.log" 2>&1 ||
    { cat "$work/pipe.log"; exit 1; }
}
# tcp_fsync_done: INFO persistence on fd 3 until no background fsync is
# pending (aof_pending_bio_fsync:0, counted until the job ends); 1 after
# a second without.
tcp_fsync_done () {
  local hdr body i
  for ((i = 0; i < 50; i++)); do
    printf '*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n' >&3
    read -r -t 5 -u 3 hdr || return 1
    hdr=${hdr%$'\r'}
    read -r -t 5 -N $((${hdr#\$} + 2)) -u 3 body || return 1
    [[ $body == *aof_pending_bio_fsync:0* ]] && return 0
    sleep 0.02
  done
  return 1
}
tcp_sets () {
  local i reply
  resp_sets "$1" "$2" >&3
  for ((i = $1; i <= $2; i++)); do
    read -r -t 30 -u 3 reply || { echo "no reply to SET key:$i"; exit 1; }
    [ "${reply%$'\r'}" = +OK ] || { echo "SET key:$i: $reply"; exit 1; }
  done
}

# explore NAME MODE N: N states of MODE, each a fresh server on the view.
explore () { crash_states "$1" r "$2" "$3" 300 "$load_check"; }

section "A. appendfsync everysec, the server frozen, the journal committed, the power cut"
load_then_cut everysec
echo "  $(stats .write_cache.entries) writes unflushed at the cut"
explore a-lose lose-all 1
explore a-subset subset "$states"
cat "$work"/a-lose.logs/* 2> /dev/null | grep -m1 -i "bad file format" | sed 's/^/  redis: /'
tail -1 "$work/a-subset.out" | sed 's/^/  /'
check "lose-all: Redis refuses the AOF (Bad file format)" \
  "$(cat "$work"/a-lose.logs/* 2> /dev/null | grep -ci "bad file format reading the append only file")" -ge 1
check "subset: $((states - $(states_passed a-subset))) of $states states fail to load" "$(states_passed a-subset)" -lt "$states"

section "B. appendfsync always"
load_then_cut always
explore b-lose lose-all 1
explore b-subset subset "$states"
tail -1 "$work/b-subset.out" | sed 's/^/  /'
cat "$work"/b-*.logs/* 2> /dev/null | head -5 | sed 's/^/  redis: /'
check "lose-all: the AOF loads, all 1,020 acknowledged SETs in it" "$(states_passed b-lose)" -eq 1
check "subset: all $states states load them" "$(states_passed b-subset)" -eq "$states"

ctl r power-on > /dev/null
ublk_disk_stop r
finish
