#!/usr/bin/env bash
# blkemu-plot draws what the trace holds: a known workload (eight 1 MiB
# writes split at 127K, reads refused by an error rule) gives a valid SVG
# whose header counts and size bars match the trace; bad input gets a
# message naming the file and line.
source "$(dirname "$0")/functions.sh"
PLOT=${BLKEMU_PLOT:-$BLKEMU_BUILD/tools/blkemu-plot}
requires python3 --version

nbdkit -U - "$PLUGIN" size=64M max-transfer=127K oversize=split latency-write=200us \
  error-mode=always error-op=read error-offset=32M error-length=1M error-errno=EIO \
  trace="$tmp/t" --run '
    for i in 0 1 2 3 4 5 6 7; do "$NBD_IO" "$uri" write $((i << 20)) 1048576 >/dev/null; done
    for i in 0 1 2; do "$NBD_IO" "$uri" read $((32 << 20)) 4096 >/dev/null || true; done
    "$NBD_IO" "$uri" read 0 65536 >/dev/null'
lines=$(grep -vc '^#' "$tmp/t")
expect_eq "trace lines (8 x 9 pieces + 4 reads)" "$lines" 76

"$PLOT" "$tmp/t" 2> "$tmp/err"
svg=$tmp/t.svg
[ -s "$svg" ] || fail "no $svg: $(cat "$tmp/err")"
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$svg" ||
  fail "$svg is not well-formed XML"
echo "ok: well-formed SVG, $(wc -c < "$svg") bytes"
grep -q ">76 requests over" "$svg" || fail "header does not count 76 requests"
grep -q ">write 72</tspan>" "$svg" || fail "header does not count 72 writes"
grep -q ">read 4</tspan>" "$svg" || fail "header does not count 4 reads"
grep -q ">errors 3</tspan>" "$svg" || fail "header does not count 3 errors"
echo "ok: header counts match the trace"
grep -q "<title>write 130048 bytes: 64</title>" "$svg" || fail "no bar of 64 writes of 127K"
grep -q "<title>write 8192 bytes: 8</title>" "$svg" || fail "no bar of 8 writes of 8K (the tails)"
grep -q "<title>read 4096 bytes: 3</title>" "$svg" || fail "no bar of 3 reads of 4K"
grep -q ">127K</text>" "$svg" || fail "no 127K label"
echo "ok: size bars are the exact sizes the device saw"
grep -q "fill='#d62728'><rect" "$svg" || grep -q "<g fill='#d62728'>" "$svg" || fail "no error layer"
[ "$(grep -c '<polyline' "$svg")" -eq 2 ] || fail "want a CDF line for reads and one for writes"
echo "ok: error layer and one CDF per op"

# - reads standard input and writes standard output
"$PLOT" --title same - < "$tmp/t" > "$tmp/stdout.svg"
"$PLOT" --title same -o "$tmp/file.svg" "$tmp/t" 2>/dev/null
cmp -s "$tmp/file.svg" "$tmp/stdout.svg" || fail "stdin/stdout output differs from the file's"
"$PLOT" -o "$tmp/named.svg" --title 'leg <a> & b' "$tmp/t" 2>/dev/null
grep -q "leg &lt;a&gt; &amp; b" "$tmp/named.svg" || fail "--title not escaped"
echo "ok: -, -o and an escaped --title"

# A flush's position means nothing (ublk passes whatever the request had):
# it must not stretch the offset axis or land outside the picture.
{ cat "$tmp/t"; echo "9.0 F 18446744073709550000 0 5.0 1 ok -"; } > "$tmp/flush"
"$PLOT" -o "$tmp/flush.svg" "$tmp/flush" 2>/dev/null || fail "a far flush broke the plot"
grep -q ">32M</text>" "$tmp/flush.svg" && ! grep -q "e+[0-9]*T<" "$tmp/flush.svg" ||
  fail "the far flush stretched the offset axis (want it to end at the last request, 32M)"
echo "ok: a flush at a wild offset leaves the offset axis alone"

bad () {
  local want=$1; shift
  if "$PLOT" "$@" > "$tmp/out" 2>&1; then fail "[$*] accepted"; fi
  grep -qF -- "$want" "$tmp/out" || fail "[$*]: no '$want' in: $(cat "$tmp/out")"
  echo "ok: [$*] -> $(grep -F -- "$want" "$tmp/out" | head -1)"
}
bad "nope: No such file or directory" "$tmp/nope"
{ head -3 "$tmp/t"; echo "0.5 Q 0 4096 1.0 1 ok -"; } > "$tmp/badop"
bad "badop:4: not a blkemu trace line (op is not one of R W F T Z" "$tmp/badop"
echo "hello" > "$tmp/notrace"
bad "notrace:1: not a blkemu trace line" "$tmp/notrace"
: > "$tmp/empty"
bad "not a blkemu trace" "$tmp/empty"
bad "usage: blkemu-plot" 

# Hostile traces (an adversarial review crashed or hung the plotter with
# each): nan/inf are refused with the line, a time of 5e-324 plots in
# bounded output, control characters in a title still give valid XML.
for v in nan inf -inf 1e308; do
  { head -2 "$tmp/t"; echo "$v R 0 4096 10.0 1 ok -"; } > "$tmp/t-$v"
  bad "t-$v:3: not a blkemu trace line (time_s is not a decimal" "$tmp/t-$v"
  { head -2 "$tmp/t"; echo "0.5 R 0 4096 $v 1 ok -"; } > "$tmp/l-$v"
  bad "l-$v:3: not a blkemu trace line (latency_us is not a decimal" "$tmp/l-$v"
done
{ head -2 "$tmp/t"; echo "5e-324 R 0 4096 1.0 1 ok -"; } > "$tmp/t-exp"
bad "t-exp:3: not a blkemu trace line (time_s is not a decimal" "$tmp/t-exp"
{ head -2 "$tmp/t"; echo "0.000000001 R 0 4096 0.001 1 ok -"
  echo "0 W 18446744073709551615 4096 1.0 1 ok -"; } > "$tmp/tiny"
timeout 10 "$PLOT" -o "$tmp/tiny.svg" "$tmp/tiny" 2>/dev/null ||
  fail "a 1 ns time: the plotter failed or hung"
between "SVG of a two-line trace with a 1 ns time (bytes)" \
  "$(stat -c %s "$tmp/tiny.svg")" 1000 200000

# One reader for blkemu-plot and blkemu-trace-convert: the same lines
# mean the same to both.  An over-long line is refused by its own line
# number (a 3000-character line was "line 3" of a 2-line file: read in
# 512-byte pieces), and binary input is quoted escaped, never echoed raw.
{ head -1 "$tmp/t"; printf '0.1 R 0 4096 1.0 1 ok %03000d\n' 0; } > "$tmp/long"
bad "long:2: longer than 1024 characters" "$tmp/long"
"$BLKEMU_BUILD/tools/blkemu-trace-convert" --to iolog "$tmp/long" > /dev/null 2> "$tmp/conv.err" &&
  fail "blkemu-trace-convert took the long line"
grep -q "long:2: longer than 1024 characters" "$tmp/conv.err" ||
  fail "blkemu-trace-convert: $(cat "$tmp/conv.err")"
{ head -1 "$tmp/t"; printf '0.1 R 0 4096 \033[31m\001\377 1 ok -\n'; } > "$tmp/binary"
bad 'binary:2: not text (byte 0x1b at column 14): 0.1 R 0 4096 \x1b[31m\x01\xff 1 ok -' "$tmp/binary"
LC_ALL=C grep -q "$(printf '[\001\033\377]')" "$tmp/out" && fail "binary input reached the terminal"
# A latency without a decimal point: one rule, taken by both.
{ head -1 "$tmp/t"; echo "0.1 R 0 4096 5 1 ok -"; } > "$tmp/nopoint"
"$PLOT" -o "$tmp/nopoint.svg" "$tmp/nopoint" || fail "plot refused a latency of 5"
"$BLKEMU_BUILD/tools/blkemu-trace-convert" --to iolog "$tmp/nopoint" > /dev/null ||
  fail "blkemu-trace-convert refused a latency of 5"
echo "ok: plot and convert read the same lines the same way"
"$PLOT" -o "$tmp/ctl.svg" --title "$(printf 'a\001b\033[31mc\177')" "$tmp/t" 2>/dev/null
if command -v xmllint > /dev/null; then
  xmllint --noout "$tmp/ctl.svg" || fail "control characters in the title made invalid XML"
fi
LC_ALL=C grep -q "$(printf '[\001-\010\013\014\016-\037\177]')" "$tmp/ctl.svg" &&
  fail "control characters reached the SVG"
echo "ok: control characters in a title become '?'"

# A zoned disk's trace (the lines test-zones checks the core writes):
# resets marked on the where-panel, bytes written per zone from the
# "# zone_size" header.
{ echo "# blkemu trace v1"; echo "# zone_size 1048576"
  for i in 0 1 2 3; do echo "0.00$i W $((1048576 + i * 65536)) 65536 10.000 1 ok -"; done
  echo "0.010 W 3145728 65536 10.000 1 ok append"
  echo "0.020 T 1048576 1048576 5.000 1 ok zone-reset"
  echo "0.030 T 1048576 3145728 5.000 1 ok zone-reset"; } > "$tmp/z"
"$PLOT" -o "$tmp/z.svg" "$tmp/z" || fail "zoned trace not plotted"
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$tmp/z.svg" ||
  fail "zoned SVG is not well-formed XML"
grep -q ">zone resets 2</tspan>" "$tmp/z.svg" || fail "header does not count 2 resets"
grep -q "bytes written per zone (4 zones of 1M; dark ticks: resets, 2)" "$tmp/z.svg" ||
  fail "no per-zone panel"
grep -q "<title>zone 1: 262144 bytes, 2 resets</title>" "$tmp/z.svg" || fail "zone 1's bar"
grep -q "<title>zone 3: 65536 bytes, 1 resets</title>" "$tmp/z.svg" || fail "zone 3's bar"
[ "$(sed -n "/<g stroke='#222'/,/<\/g>/p" "$tmp/z.svg" | grep -c '<line ')" -eq 2 ] ||
  fail "want 2 reset strokes on the where panel"
echo "ok: zoned trace: resets marked, bytes per zone"
