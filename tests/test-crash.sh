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
  # B, D, E, G, H and Z were in the cache.
  expect_eq "$backend: writes lost" "$(jqr "$s" .faults.lost_writes)" 6
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
