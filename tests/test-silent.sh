#!/usr/bin/env bash
# Silent corruption: with bit-flip-probability a read returns exactly one
# bit flipped and the medium keeps the right data; with
# lost-write-probability a write is acknowledged and never written; with
# misdirected-write-probability its data lands at another block-aligned
# offset and its own sectors keep their old data; a stuck bit reads one
# value whatever is written.  Each is counted in
# stats and marked `corrupt` in the trace; with the keys at 0 nothing
# changes.  Through nbdkit, read back with nbdcopy and nbd-io.
source "$(dirname "$0")/functions.sh"
requires jq --version
requires nbdcopy --version
sock="$tmp/ctl.sock"
export sock tmp
head -c 1M /dev/urandom > "$tmp/orig"

nbdkit -U - "$PLUGIN" size=1M seed=7 control="$sock" \
    stats="$tmp/silent.json" trace="$tmp/silent.trace" --run '
  set -e
  io () { "$NBD_IO" "$uri" "$@"; }
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  bits () { python3 - "$1" "$2" <<PY
import sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
assert len(a) == len(b)
print(sum(bin(x ^ y).count("1") for x, y in zip(a, b)))
PY
  }
  nbdcopy -- "$tmp/orig" "$uri"
  nbdcopy -- "$uri" "$tmp/clean"
  cmp "$tmp/orig" "$tmp/clean"

  # One flipped bit per read request, never on the medium.
  ctl set bit-flip-probability=1 > /dev/null
  nbdcopy --requests=1 --request-size=65536 -- "$uri" "$tmp/flipped"
  ctl set bit-flip-probability=0 > /dev/null
  flips=$(bits "$tmp/orig" "$tmp/flipped")
  echo "flipped bits over 16 reads of 64K: $flips"
  [ "$flips" = 16 ]
  nbdcopy -- "$uri" "$tmp/after-flips"
  cmp "$tmp/orig" "$tmp/after-flips"
  echo "$flips" > "$tmp/flips"

  # A lost write: acknowledged, the old data stays.
  ctl set lost-write-probability=1 > /dev/null
  [ "$(io write 65536 4096 9)" = ok ]
  ctl set lost-write-probability=0 > /dev/null
  nbdcopy -- "$uri" "$tmp/after-lost"
  cmp "$tmp/orig" "$tmp/after-lost"

  # A misdirected write: acknowledged, its place unchanged, its data
  # (whose words name offset 128K) somewhere else.
  ctl set misdirected-write-probability=1 > /dev/null
  [ "$(io write 131072 4096 11)" = ok ]
  ctl set misdirected-write-probability=0 > /dev/null
  nbdcopy -- "$uri" "$tmp/after-mis"
  cmp -l "$tmp/orig" "$tmp/after-mis" | awk "{ print int((\$1 - 1) / 512) }" |
    sort -un > "$tmp/changed-sectors"
  ! grep -qx 256 "$tmp/changed-sectors"      # 128K / 512: not there
  first=$(head -1 "$tmp/changed-sectors")
  echo "misdirected: landed at sector $first ($(wc -l < "$tmp/changed-sectors") sectors changed)"
  [ "$(wc -l < "$tmp/changed-sectors")" -le 8 ]
  # What landed there is the write meant for 128K.
  python3 - "$tmp/after-mis" "$first" <<PY
import struct, sys
d = open(sys.argv[1], "rb").read(); at = int(sys.argv[2]) * 512
seed = 11 * 0x9E3779B97F4A7C15 % 2**64
words = [struct.unpack_from("<Q", d, at + i)[0] ^ seed for i in range(0, 4096, 8)]
assert words == list(range(131072, 131072 + 4096, 8)), words[:4]
PY
  # The write itself goes through the plain path again.
  io write 131072 4096 11 > /dev/null
  io read 131072 4096 11 > /dev/null
' || fail "silent corruption"
echo "ok: a read flips one bit per request, the medium keeps its data"
echo "ok: a lost write is acknowledged and leaves the old data"
echo "ok: a misdirected write lands elsewhere, whole, its own place unchanged"

expect_eq "stats: bit_flips" "$(jq .faults.bit_flips "$tmp/silent.json")" \
  "$(cat "$tmp/flips")"
expect_eq "stats: silently_lost_writes" \
  "$(jq .faults.silently_lost_writes "$tmp/silent.json")" 1
expect_eq "stats: misdirected_writes" \
  "$(jq .faults.misdirected_writes "$tmp/silent.json")" 1
expect_eq "trace: requests marked corrupt" \
  "$(grep -c 'corrupt' "$tmp/silent.trace")" 18
expect_eq "trace: the lost write at the offset asked for" \
  "$(awk '$2 == "W" && $3 == 65536 && /corrupt/' "$tmp/silent.trace" | wc -l)" 1

# Stuck bits: the same bit wrong on every read, whatever is written;
# the medium holds what was written (a clear shows it).
head -c 8192 /dev/zero > "$tmp/zeros"
head -c 8192 /dev/zero | tr '\0' '\377' > "$tmp/ones"
nbdkit -U - "$PLUGIN" size=1M control="$sock" stats="$tmp/stuck.json" \
    trace="$tmp/stuck.trace" --run '
  set -e
  ctl () { "$BLKEMU_CTL" "$sock" "$@"; }
  byte () { nbdcopy -- "$uri" - | od -An -tx1 -j "$1" -N1 | tr -d " "; }
  nbdcopy -- "$tmp/zeros" "$uri"
  ctl stuck add 4100 3 1
  ctl stuck add 4101 0 0
  [ "$(ctl stuck)" = "2 4100:3=1 4101:0=0" ]
  [ "$(byte 4100)" = 08 ]                 # reads 1 over a written 0
  [ "$(byte 4100)" = 08 ]                 # every read
  [ "$(byte 4101)" = 00 ]                 # stuck at what was written: no change
  nbdcopy -- "$tmp/ones" "$uri"           # a rewrite does not repair it
  [ "$(byte 4100)" = ff ]
  [ "$(byte 4101)" = fe ]
  [ "$(byte 4102)" = ff ]
  ctl stuck add 1M 0 1 2>&1 | grep -q "beyond the end of the disk"
  ctl stuck add 0 8 1 2>&1 | grep -q "BIT is 0 (the least significant) to 7, VALUE 0 or 1"
  ctl stuck add 0 1 2 2>&1 | grep -q "VALUE 0 or 1"
  ctl stuck wipe 2>&1 | grep -q "usage: stuck \[add OFFSET BIT 0|1 | clear\]"
  ctl stuck clear
  [ "$(ctl stuck)" = 0 ]
  [ "$(byte 4101)" = ff ]                 # the medium held it all along
' || fail "stuck bits"
echo "ok: stuck bits read wrong on every read, a rewrite does not repair them, the medium keeps the data"
# Each byte check reads the whole disk: three over zeros (4100 stuck at
# 1 changes them), three over ones (4101 stuck at 0 does), none after
# the clear.
expect_eq "stats: stuck_reads" "$(jq .faults.stuck_reads "$tmp/stuck.json")" 6
expect_eq "trace: stuck reads marked corrupt" \
  "$(grep -c ' R .*corrupt' "$tmp/stuck.trace")" 6

# A bad value names the key and the rule.
out=$(nbdkit -U - "$PLUGIN" size=1M bit-flip-probability=2 --run true 2>&1) &&
  fail "bit-flip-probability=2 accepted"
grep -q "bit-flip-probability=2" <<<"$out" || fail "no key in: $out"
echo "ok: bit-flip-probability=2 refused: $out"
