#!/usr/bin/env bash
# The control socket under hostile clients and bad paths: clients that
# never read, idle connections and a byte-at-a-time sender delay neither
# other clients, nor SIGUSR1 stats, nor shutdown; an idle interactive
# session still works; PATH is never clobbered or stolen; the socket is
# owner-only whatever the umask; a bad path fails the start, before nbdkit
# forks, with a non-zero exit.
source "$(dirname "$0")/functions.sh"
requires python3 --version
requires jq --version
clients="$top/tests/control-clients.py"
sock="$tmp/ctl.sock"
export sock clients tmp

# --- hostile clients ------------------------------------------------
nbdkit -f -U "$tmp/nbd.sock" -P "$tmp/nbdkit.pid" "$PLUGIN" size=64M \
    control="$sock" stats="$tmp/s.json" &
nbdkit_job=$!
cleanup_hooks+=("kill $nbdkit_job 2>/dev/null")
for i in $(seq 100); do [ -S "$sock" ] && [ -s "$tmp/nbdkit.pid" ] && break; sleep 0.05; done
python3 "$clients" "$sock" hostile 60 > "$tmp/hostile.out" &
hostile=$!
cleanup_hooks+=("kill $hostile 2>/dev/null")
sleep 1
start=$(date +%s%N)
got=$(timeout 5 "$BLKEMU_CTL" "$sock" get size) ||
  fail "a well-behaved client was starved by hostile ones"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_eq "get size beside 12 hostile connections" "$got" 64M
between "its reply took (ms)" "$ms" 0 2000
rm -f "$tmp/s.json"
kill -USR1 "$(cat "$tmp/nbdkit.pid")"
for i in $(seq 40); do [ -s "$tmp/s.json" ] && break; sleep 0.05; done
[ -s "$tmp/s.json" ] || fail "SIGUSR1 wrote no stats while hostile clients were connected"
echo "ok: SIGUSR1 stats written beside hostile clients"
# The idle session: 6.5 s of silence, then a command, answered.
expect_eq "an interactive session idle 6.5 s" \
  "$(timeout 15 python3 "$clients" "$sock" idle 6.5)" "ok 64M"
# Stop the server while the hostile clients still hold their connections.
kill -0 $hostile 2>/dev/null || fail "the hostile clients ended early"
start=$(date +%s%N)
kill -TERM "$(cat "$tmp/nbdkit.pid")"
wait_exit "nbdkit after SIGTERM with hostile control clients" \
  "$(cat "$tmp/nbdkit.pid")" 10
ms=$(( ($(date +%s%N) - start) / 1000000 ))
between "SIGTERM to exit with hostile clients (ms)" "$ms" 0 3000
kill $hostile 2>/dev/null || true
wait $hostile || true
[ -e "$sock" ] && fail "the socket was left behind"
echo "ok: socket removed at exit"

# --- what is at PATH -------------------------------------------------
echo "precious" > "$tmp/file"
if nbdkit -U - "$PLUGIN" size=1M control="$tmp/file" --run true 2> "$tmp/err"; then
  fail "control= over a regular file was accepted"
fi
grep -q "control=$tmp/file: exists and is not a socket" "$tmp/err" ||
  fail "message: $(cat "$tmp/err")"
expect_eq "the regular file is intact" "$(cat "$tmp/file")" precious

nbdkit -U - "$PLUGIN" size=1M control="$sock" --run '
  set -e
  if nbdkit -U - "$PLUGIN" size=1M control="$sock" --run true 2> "$tmp/err2"; then
    echo "a second server took the socket"; exit 1
  fi
  grep -q "another server is listening on it" "$tmp/err2"
  # The first server still answers on its socket.
  [ "$("$BLKEMU_CTL" "$sock" get size)" = 1M ]
' || fail "second server on the same control path: $(cat "$tmp/err2" 2>/dev/null)"
echo "ok: a second server is refused, the first keeps its socket"

python3 "$clients" "$sock" stale
[ -S "$sock" ] || fail "could not make a stale socket"
nbdkit -U - "$PLUGIN" size=1M control="$sock" --run '
  [ "$("$BLKEMU_CTL" "$sock" get size)" = 1M ]' ||
  fail "a stale socket was not taken over"
echo "ok: a stale socket is replaced"

# --- permissions -----------------------------------------------------
(umask 000; nbdkit -U - "$PLUGIN" size=1M control="$sock" --run '
  stat -c %a "$sock" > "$tmp/mode"')
expect_eq "socket mode under umask 000" "$(cat "$tmp/mode")" 600
nbdkit -U - "$PLUGIN" size=1M control="$sock" control-mode=0660 --run '
  stat -c %a "$sock" > "$tmp/mode"'
expect_eq "socket mode with control-mode=0660" "$(cat "$tmp/mode")" 660
if nbdkit -U - "$PLUGIN" size=1M control="$sock" control-mode=0755 --run true 2> "$tmp/err"; then
  fail "control-mode=0755 accepted"
fi
grep -q "control-mode=0755: must be an octal mode with read/write bits only" "$tmp/err" ||
  fail "message: $(cat "$tmp/err")"
echo "ok: control-mode=0755 refused"

# --- start-up errors come before the fork ---------------------------
for bad in control=/nonexistent/x stats=/nonexistent/s.json trace=/nonexistent/t; do
  status=0
  timeout 10 nbdkit -U "$tmp/bg.sock" -P "$tmp/bg.pid" "$PLUGIN" size=1M "$bad" \
    2> "$tmp/err" || status=$?
  [ $status -ne 0 ] || { kill "$(cat "$tmp/bg.pid")" 2>/dev/null; fail "[$bad]: nbdkit exited 0"; }
  [ $status -ne 124 ] || fail "[$bad]: nbdkit hung"
  grep -q "${bad%%=*}=/nonexistent" "$tmp/err" || fail "[$bad]: message: $(cat "$tmp/err")"
  echo "ok: [$bad] fails the start with exit $status: $(grep -o "${bad%%=*}=/nonexistent.*" "$tmp/err" | head -1)"
done
if [ -c /dev/fuse ] && command -v fusermount3 > /dev/null; then
  : "${BLKEMU_FUSE:=$BLKEMU_BUILD/fuse/blkemu-fuse}"
  mkdir -p "$tmp/mnt"
  status=0
  timeout 10 "$BLKEMU_FUSE" "$tmp/mnt" --disk size=1M,control=/nonexistent/x \
    2> "$tmp/err" || status=$?
  mountpoint -q "$tmp/mnt" && { fusermount3 -u "$tmp/mnt"; fail "blkemu-fuse mounted"; }
  [ $status -ne 0 ] || fail "blkemu-fuse with a bad control path exited 0"
  echo "ok: blkemu-fuse with control=/nonexistent/x exits $status, nothing mounted"
fi

# --- the socket exists before the server is ready -------------------
for i in $(seq 30); do
  nbdkit -U - "$PLUGIN" size=1M control="$sock" --run '
    "$BLKEMU_CTL" "$sock" get size > /dev/null' ||
    fail "run $i: blkemu-ctl found no socket when --run started"
done
echo "ok: 30 of 30 --run commands found the control socket"

# --- the protocol's edges ------------------------------------------
# A last command without its newline is a command (it got no reply), and
# arguments a command does not take are refused with its usage ('crash
# now' crashed the disk, 'stats x' ran as 'stats').
nbdkit -U - "$PLUGIN" size=16M control="$sock" --run '
  set -e
  python3 - "$sock" > "$tmp/proto.out" <<PY
import socket, sys
def ask(line):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(line.encode())
    s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    print(repr(line), "->", out.decode().splitlines()[0] if out else "NO REPLY")
for line in ["get size", "get size\n", "crash now\n", "stats x\n",
             "get size extra\n", "zones 0 1 2\n", "zone reset-all 0\n",
             "power-on again\n", "help me\n", "keys\n", "help\n",
             "crash subset 1 now\n"]:
    ask(line)
PY
  [ "$("$BLKEMU_CTL" "$sock" get size)" = 16M ]
  "$NBD_IO" "$uri" read 0 4096 > /dev/null'
cat "$tmp/proto.out"
expect_eq "last command without a newline" "$(sed -n 1p "$tmp/proto.out")" "'get size' -> ok 16M"
expect_eq "with its newline" "$(sed -n 2p "$tmp/proto.out")" "'get size\n' -> ok 16M"
expect_eq "crash now" "$(sed -n 3p "$tmp/proto.out")" \
  "'crash now\n' -> error: crash now: MODE must be lose-all, subset, torn, interrupted or pick"
expect_eq "stats x" "$(sed -n 4p "$tmp/proto.out")" \
  "'stats x\n' -> error: stats: takes 0 arguments, got 1 (usage: stats)"
expect_eq "get size extra" "$(sed -n 5p "$tmp/proto.out")" \
  "'get size extra\n' -> error: get: takes at most 1 argument, got 2 (usage: get [KEY])"
expect_eq "zones 0 1 2" "$(sed -n 6p "$tmp/proto.out")" \
  "'zones 0 1 2\n' -> error: zones: takes at most 2 arguments, got 3 (usage: zones [FROM [COUNT]])"
grep -q "^'zone reset-all 0\\\\n' -> error: zone needs" "$tmp/proto.out" || fail "zone reset-all 0 accepted"
grep -q "^'power-on again\\\\n' -> error: power-on: takes 0 arguments" "$tmp/proto.out" || fail "power-on again accepted"
grep -q "^'keys\\\\n' -> ok " "$tmp/proto.out" || fail "keys refused"
# help lists the table's usages, every command once.
grep -qF "'help\\n' -> ok get [KEY] | set KEY=VALUE... | stats | summary | reset | dump | crash [lose-all|subset|torn|interrupted|pick [SEED]] | power-on | power-off | view lose-all|subset|torn|pick [SEED] | view end | drop | bad [add|clear OFFSET LENGTH] | stuck [add OFFSET BIT 0|1 | clear] | precondition sequential|random [SEED] | zones [FROM [COUNT]] | zone open|close|finish|reset|read-only|offline|online OFFSET | zone reset-all | keys | help" "$tmp/proto.out" ||
  fail "help: $(grep "^'help" "$tmp/proto.out")"
grep -qF "'crash subset 1 now\n' -> error: crash: takes at most 2 arguments, got 3 (usage: crash [lose-all|subset|torn|interrupted|pick [SEED]])" "$tmp/proto.out" ||
  fail "crash subset 1 now: $(grep "^'crash subset" "$tmp/proto.out")"
echo "ok: the disk never crashed: it served after 'crash now'"
