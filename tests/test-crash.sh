#!/usr/bin/env bash
# Power loss with write-cache=yes: `crash` discards every write not yet
# flushed or FUA'd and takes the disk offline; after power-on the disk
# holds exactly the flushed, FUA'd (and destaged) data.
source "$(dirname "$0")/functions.sh"
requires jq --version
sock="$tmp/ctl.sock"
export sock tmp

for backend in memory file; do
  spec=(size=16M)
  [ $backend = file ] && spec=(file="$tmp/disk.img" size=16M)
  nbdkit -U - "$PLUGIN" "${spec[@]}" write-cache=yes control="$sock" \
      stats="$tmp/$backend.json" trace="$tmp/$backend.trace" --run '
    set -e
    io () { "$NBD_IO" "$uri" "$@" > /dev/null; }
    ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
    io write 0 1048576 1                # A: flushed below
    io flush
    io write 0 1048576 2                # B over A: not flushed -> lost
    io write-fua 1048576 1048576 3      # C: FUA -> kept
    io write 2097152 1048576 4          # D on a hole: lost -> zeros
    io write 4194304 65536 5            # E, then FUA F over it: F kept
    io write-fua 4194304 65536 6
    io write 4259840 65536 7            # G, then H over half of it
    io write 4292608 32768 8
    io zero 8388608 1048576             # Z: write-zeroes, lost
    ctl crash
    # Offline until power-on: every request fails.
    [ "$("$NBD_IO" "$uri" read 0 4096)" = EIO ]
    ctl power-on
    io read 0 1048576 1                 # A is back
    io read 1048576 1048576 3           # C kept
    io read-zeros 2097152 1048576       # D gone
    io read 4194304 65536 6             # F kept, E not resurrected
    io read-zeros 4259840 65536         # G and H gone
    # The disk serves on, and a flush makes the next writes durable.
    io write 0 4096 9
    io flush
    ctl crash
    ctl power-on
    io read 0 4096 9
  ' || fail "$backend: data after crash"
  s="$tmp/$backend.json"
  expect_eq "$backend: crashes" "$(jqr "$s" .faults.crashes)" 2
  # B, D, G, H and Z were in the cache.  E was overwritten by the FUA'd F
  # before the crash: nothing of E's was left to discard.
  expect_eq "$backend: writes lost" "$(jqr "$s" .faults.lost_writes)" 5
  expect_eq "$backend: write cache empty after the crash" \
    "$(jqr "$s" .write_cache.entries)" 0
  expect_eq "$backend: refused offline" "$(jqr "$s" .faults.offline)" 1
  expect_eq "$backend: trace offline mark" \
    "$(grep -c ' EIO offline$' "$tmp/$backend.trace")" 1
  grep -q ' W 0 1048576 .* cached$' "$tmp/$backend.trace" ||
    fail "$backend: trace lacks the cached mark"
done

# The cache holds cache-size bytes: older writes count as destaged and
# survive, the newest are lost.
nbdkit -U - "$PLUGIN" size=16M write-cache=yes cache-size=256K \
    control="$sock" stats="$tmp/small.json" --run '
  set -e
  io () { "$NBD_IO" "$uri" "$@" > /dev/null; }
  for i in 0 1 2 3 4 5 6 7; do io write $((i * 65536)) 65536 $((i + 1)); done
  "$BLKEMU_CTL" "$sock" crash
  "$BLKEMU_CTL" "$sock" power-on
  for i in 0 1 2 3; do io read $((i * 65536)) 65536 $((i + 1)); done
  for i in 4 5 6 7; do io read-zeros $((i * 65536)) 65536; done
' || fail "cache-size bound"
expect_eq "lost with a 256K cache" "$(jqr "$tmp/small.json" .faults.lost_writes)" 4

# Without write-cache nothing is volatile: a crash loses nothing.
nbdkit -U - "$PLUGIN" size=16M control="$sock" --run '
  set -e
  "$NBD_IO" "$uri" write 0 65536 1 > /dev/null
  "$BLKEMU_CTL" "$sock" crash
  "$BLKEMU_CTL" "$sock" power-on
  "$NBD_IO" "$uri" read 0 65536 1
' || fail "write-cache=no lost data"
echo "ok: write-cache=no keeps everything"

# A flush that reports success has made its data durable, whatever crash
# comes while it runs (file backend: the fsync of 32 MiB takes a while; a
# crash during it once rolled the data back after the flush said ok).
for delay in 0.005 0.01 0.02 0.03 0.05; do
  nbdkit -U - "$PLUGIN" file="$tmp/race.img" size=64M write-cache=yes \
      cache-size=64M control="$sock" --run '
    set -e
    "$NBD_IO" "$uri" write 0 33554432 7 > /dev/null
    "$NBD_IO" "$uri" flush > "$tmp/flush.out" 2>&1 &
    flush=$!
    sleep '"$delay"'
    "$BLKEMU_CTL" "$sock" crash
    wait $flush || true
    "$BLKEMU_CTL" "$sock" power-on
    if [ "$(head -1 "$tmp/flush.out")" = ok ]; then
      "$NBD_IO" "$uri" read 0 33554432 7 > /dev/null ||
        { echo "flush said ok, data gone"; exit 1; }
      echo ok > "$tmp/verdict"
    else
      echo "failed: $(head -1 "$tmp/flush.out")" > "$tmp/verdict"
    fi' || fail "crash ${delay}s into a flush: a flush reported success for lost data"
  echo "ok: crash ${delay}s into a flush: flush $(cat "$tmp/verdict"), no flushed data lost"
  rm -f "$tmp/race.img"
done

# FUA writes without flushes keep nothing in the log: memory and a crash's
# work stay bounded (20000 FUA writes once left 20000 markers, and a crash
# then compared every marker with every block of a 32 MiB write).
nbdkit -U - "$PLUGIN" size=64M write-cache=yes cache-size=64M \
    control="$sock" stats="$tmp/fua.json" --run '
  set -e
  "$NBD_IO" "$uri" write 0 33554432 3 > /dev/null     # cached: undo kept
  "$NBD_IO" "$uri" write-fua-many 33554432 4096 20000 > /dev/null
  "$NBD_IO" "$uri" write-fua 0 4096 4 > /dev/null     # cuts the cached one
  "$BLKEMU_CTL" "$sock" stats > "$tmp/fua-live.json"
  start=$(date +%s%N)
  "$BLKEMU_CTL" "$sock" crash
  echo $(( ($(date +%s%N) - start) / 1000000 )) > "$tmp/crash_ms"
  "$BLKEMU_CTL" "$sock" power-on
  "$NBD_IO" "$uri" read 0 4096 4 > /dev/null           # FUA kept
  "$NBD_IO" "$uri" read-zeros 4096 33550336 > /dev/null # the rest undone
' || fail "FUA after a cached write"
expect_eq "undo entries after 20001 FUA writes" \
  "$(jqr "$tmp/fua-live.json" .write_cache.entries)" 1
expect_eq "undo bytes held" "$(jqr "$tmp/fua-live.json" .write_cache.bytes)" \
  $(( 33554432 - 4096 ))
between "crash after 20001 FUA writes (ms)" "$(cat "$tmp/crash_ms")" 0 3000

# Small FUA writes inside one cached write, each cutting the piece left
# of it in two: the pieces hold what they cover, not their parent's
# allocation (100 of them grew the server by ~160 MB while the log's own
# count said < 2M).  The server's RSS is measured, not the counter: 400
# cuts of a 1 MiB write must leave it within what malloc's per-thread
# arenas keep (nbdkit serves each connection on its own thread; at most
# 8 arenas a core, each holding up to one 1 MiB piece), where the old
# code grew by 1 MiB a cut.
# Under a sanitizer RSS is not held (below) and each connection is slow:
# 40 cuts there, the pieces still counted.
cuts=400
[ -n "${BLKEMU_PRELOADED_ASAN:-}${TSAN_OPTIONS:-}" ] && cuts=40
export cuts
nbdkit -U - -P "$tmp/split.pid" "$PLUGIN" size=64M write-cache=yes cache-size=2M \
    control="$sock" stats="$tmp/split.json" --run '
  set -e
  rss () { awk "/^VmRSS/ { print \$2 }" /proc/$(cat "'"$tmp"'/split.pid")/status; }
  "$NBD_IO" "$uri" write-fua 0 1048576 4 > /dev/null  # durable, not zeroes
  "$NBD_IO" "$uri" write 0 1048576 5 > /dev/null      # cached: 1M of undo data
  rss > "'"$tmp"'/rss0"
  for i in $(seq $cuts); do "$NBD_IO" "$uri" write-fua $((i * 2048)) 512 6 > /dev/null; done
  rss > "'"$tmp"'/rss1"
  "$BLKEMU_CTL" "$sock" stats > "'"$tmp"'/split-live.json"
  "$BLKEMU_CTL" "$sock" crash > /dev/null
  "$BLKEMU_CTL" "$sock" power-on > /dev/null
  "$NBD_IO" "$uri" read 2048 512 6 > /dev/null          # FUA kept
  "$NBD_IO" "$uri" read 0 2048 4 > /dev/null            # the cached write undone
' || fail "FUA writes inside a cached write"
grown=$(( $(cat "$tmp/rss1") - $(cat "$tmp/rss0") ))
arenas=$(( 8 * $(nproc) ))
echo "$cuts FUA writes inside a cached 1M write: the server grew by $grown KiB (bound: $arenas arenas x 1 MiB + 16 MiB); the log holds $(jqr "$tmp/split-live.json" .write_cache.bytes) bytes in $(jqr "$tmp/split-live.json" .write_cache.entries) entries"
if [ -n "${BLKEMU_PRELOADED_ASAN:-}${TSAN_OPTIONS:-}" ]; then
  # A sanitizer's allocator keeps freed memory in quarantine: RSS says
  # nothing of the pieces' sizes there (the plain build holds it).
  echo "not held under a sanitizer's allocator: growth $grown KiB"
else
  between "server growth after 400 cuts (KiB)" "$grown" -65536 $(( (arenas + 16) * 1024 ))
fi
expect_eq "pieces of the cut write" "$(jqr "$tmp/split-live.json" .write_cache.entries)" $((cuts + 1))

# A write a FUA write cut in two is destaged whole: when the log makes
# room, both pieces reach the medium together (the older piece alone
# left the write half there after a crash that called it lost).
nbdkit -U - "$PLUGIN" size=64M write-cache=yes cache-size=128K control="$sock" --run '
  set -e
  "$NBD_IO" "$uri" write-fua 0 65536 4 > /dev/null     # durable old data
  "$NBD_IO" "$uri" write 0 65536 5 > /dev/null         # W, cached
  "$NBD_IO" "$uri" write-fua 32768 512 6 > /dev/null   # cuts W in two
  "$NBD_IO" "$uri" write 1048576 98304 7 > /dev/null   # the log makes room
  "$BLKEMU_CTL" "$sock" crash > /dev/null
  "$BLKEMU_CTL" "$sock" power-on > /dev/null
  "$NBD_IO" "$uri" read 0 32768 5 > /dev/null          # W destaged: both
  "$NBD_IO" "$uri" read 33280 32256 5 > /dev/null      # pieces of it
' || fail "a cut write destaged in part"
echo "ok: a write cut by a FUA write is destaged whole"

# A request in flight when the power goes does not complete as if nothing
# happened: it fails with EIO, whatever it is.  (A 1 MiB write replied ok
# at 2 s, after a crash at 0.4 s had rolled it back, and the next flush
# replied ok too: acknowledged, then never on the medium.)  Whatever such
# a request left on the medium is unflushed: a later crash may take it.
for op in write zero trim write-fua read; do
  nbdkit -U - "$PLUGIN" size=16M write-cache=yes latency-write=2s \
      latency-trim=2s latency-read=2s control="$sock" \
      stats="$tmp/inflight-$op.json" --run '
    set -e
    "$NBD_IO" "$uri" write-fua 0 1048576 1 > /dev/null    # durable old data
    "$NBD_IO" "$uri" '"$op"' 0 1048576 2 > "$tmp/op.out" 2>/dev/null &
    pid=$!
    sleep 0.4
    "$BLKEMU_CTL" "$sock" crash
    sleep 0.2
    "$BLKEMU_CTL" "$sock" power-on
    wait $pid || true
    echo "$(head -1 "$tmp/op.out")" > "$tmp/verdict"
    "$NBD_IO" "$uri" flush > /dev/null
    # Failed: the data may be either version, never a mix that a reply
    # promised; what is checked is that nothing was acknowledged.
    "$NBD_IO" "$uri" read 0 1048576 1 > /dev/null ||
      "$NBD_IO" "$uri" read 0 1048576 2 > /dev/null ||
      "$NBD_IO" "$uri" read-zeros 0 1048576 > /dev/null
  ' || fail "$op in flight across a crash: data neither old nor new"
  expect_eq "$op in flight across a crash" "$(cat "$tmp/verdict")" EIO
  expect_eq "$op: counted as aborted by the crash" \
    "$(jqr "$tmp/inflight-$op.json" .faults.crash_aborted)" 1
done

# A split write larger than cache-size is judged as the host sent it: one
# write bigger than the cache, durable once it completes (its last 1 MiB
# of 256K pieces was lost by a crash, each piece judged on its own).
nbdkit -U - "$PLUGIN" size=16M write-cache=yes cache-size=1M \
    max-transfer=256K oversize=split control="$sock" --run '
  set -e
  "$NBD_IO" "$uri" write 0 8388608 5 > /dev/null
  "$BLKEMU_CTL" "$sock" crash
  "$BLKEMU_CTL" "$sock" power-on
  "$NBD_IO" "$uri" read 0 8388608 5 > /dev/null
' || fail "a split write larger than cache-size lost data in a crash"
echo "ok: a split write larger than cache-size survives a crash whole"

# cache-size has no upper bound of its own, but the undo log never holds
# more than the disk's size, however often the same blocks are rewritten
# (cache-size=1T on a 16M disk would have let it grow to 1T).
nbdkit -U - "$PLUGIN" size=16M write-cache=yes cache-size=1T \
    control="$sock" --run '
  set -e
  for pass in 1 2 3; do
    for i in 0 1; do "$NBD_IO" "$uri" write $((i * 8388608)) 8388608 $pass > /dev/null; done
  done
  "$BLKEMU_CTL" "$sock" stats > "$tmp/big-cache.json"
' || fail "cache-size=1T run"
between "undo bytes after 48M of writes on a 16M disk" \
  "$(jqr "$tmp/big-cache.json" .write_cache.bytes)" 8388608 16777216

# write-cache changes at runtime.  Turned on, the next writes are
# volatile; turned off, what the cache holds is written back first (a
# drive's WCE=0), so a crash after it loses nothing acknowledged before.
# Without power the change is refused: the cache belongs to the crash.
nbdkit -U - "$PLUGIN" size=16M control="$sock" stats="$tmp/live.json" --run '
  set -e
  io () { "$NBD_IO" "$uri" "$@" > /dev/null; }
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  ctl set write-cache=yes
  io write 0 65536 1                  # cached, never flushed: lost
  ctl crash
  out=$(ctl set write-cache=no 2>&1) && { echo "set while crashed: $out"; exit 1; }
  case $out in *"write-cache=no: the disk is powered off"*) ;;
    *) echo "unexpected refusal: $out"; exit 1 ;; esac
  ctl power-on
  io read-zeros 0 65536
  io write 65536 65536 2              # cached...
  ctl set write-cache=no              # ...then written back
  [ "$(ctl get write-cache)" = no ]
  io write 131072 65536 3             # written through
  ctl crash
  ctl power-on
  io read 65536 65536 2
  io read 131072 65536 3
' || fail "write-cache at runtime"
expect_eq "runtime write-cache: the one cached write lost" \
  "$(jqr "$tmp/live.json" .faults.lost_writes)" 1
echo "ok: write-cache at runtime"
