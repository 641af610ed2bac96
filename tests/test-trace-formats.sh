#!/usr/bin/env bash
# trace-format=blktrace and iolog, and blkemu-trace-convert, read by the
# real tools: blkparse's per-op counts and bytes equal blkemu's stats, btt
# runs on the events, fio replays an iolog (and a blktrace) against a fresh
# disk of the same spec with the same request sizes and byte totals.  The
# capture half of the replay recipe (blktrace on a loop device) runs where
# the kernel lets blktrace trace.
source "$(dirname "$0")/functions.sh"
requires blkparse -V
requires fio --version
requires jq --version
: "${CONVERT:=$BLKEMU_BUILD/tools/blkemu-trace-convert}"
spec=(size=64M max-transfer=64K oversize=split latency-read=100us latency-write=200us
      latency-trim=100us)
export tmp

# A workload with every kind of request: mixed sizes split at 64K, FUA,
# write-zeroes, trim, flush.
workload='
  fio --name=w --ioengine=nbd --uri="$uri" --rw=randrw --bsrange=4k-256k \
      --blockalign=4k --iodepth=4 --number_ios=400 --size=64M --randseed=7 \
      --output=/dev/null
  "$NBD_IO" "$uri" write-fua 0 8192 3 > /dev/null
  "$NBD_IO" "$uri" zero 1048576 65536 > /dev/null
  "$NBD_IO" "$uri" trim 2097152 1048576 > /dev/null
  "$NBD_IO" "$uri" flush > /dev/null'

# blkparse_ops FILE: "RWBS count bytes" of the completions in a blktrace.
blkparse_ops () {
  blkparse -i - -f "%a %3d %n\n" < "$1" 2>/dev/null |
    awk '$1 == "C" { n[$2]++; b[$2] += $3 * 512 }
         END { for (k in n) printf "%s %d %d\n", k, n[k], b[k] }' | sort
}

# stats_ops JSON: the same from blkemu's stats (write-zeroes and FUA
# writes are W and WF, trims D, a flush FN).
stats_ops () {
  jq -r '.ops as $o |
    "D \($o.trim.requests) \($o.trim.bytes)",
    "FN \($o.flush.requests) 0",
    "R \($o.read.requests) \($o.read.bytes)"' "$1"
  # writes: the FUA ones are counted apart by blkparse
  local fua; fua=$(grep -c ' W .* fua' "$2" || true)
  jq -r --argjson fua "$fua" '.ops as $o |
    "W \($o.write.requests + $o.zero.requests - $fua) \($o.write.bytes + $o.zero.bytes - 8192 * $fua)",
    "WF \($fua) \(8192 * $fua)"' "$1"
}

# --- live blktrace, and the same run's text trace converted -----------
nbdkit -U - "$PLUGIN" "${spec[@]}" trace="$tmp/live.blktrace" \
  trace-format=blktrace stats="$tmp/bt.json" --run "$workload"
nbdkit -U - "$PLUGIN" "${spec[@]}" trace="$tmp/text.trace" \
  stats="$tmp/text.json" --run "$workload"
stats_ops "$tmp/bt.json" "$tmp/text.trace" | grep -v ' 0 0$' | sort > "$tmp/want"
blkparse_ops "$tmp/live.blktrace" > "$tmp/got"
diff "$tmp/want" "$tmp/got" || fail "blkparse on the live blktrace disagrees with stats"
echo "ok: blkparse on trace-format=blktrace: $(tr '\n' ';' < "$tmp/got")"
blkparse -i - < "$tmp/live.blktrace" > "$tmp/parsed" 2>&1
grep -q ' D  *W .* \[blkemu\]' "$tmp/parsed" ||
  fail "blkparse does not name the process"
blkparse -q -i - -d "$tmp/bt.dump" -O < "$tmp/live.blktrace"
# (btt drops its per-device .dat files in the working directory)
(cd "$tmp" && btt -i bt.dump > btt.out 2>&1) || fail "btt: $(tail -3 "$tmp/btt.out")"
n=$(awk '$1 == "D2C" { print $NF; exit }' "$tmp/btt.out")
# btt follows I/Os with data: every request but the flush
expect_eq "btt D2C samples = requests with data" "$n" \
  "$(jq '([.ops[].requests] | add) - .ops.flush.requests' "$tmp/bt.json")"
d2c_min=$(awk '$1 == "D2C" { print $2; exit }' "$tmp/btt.out")
between "btt D2C minimum (s): every latency >= 100us" "$d2c_min" 0.000099 0.01

"$CONVERT" --to blktrace -o "$tmp/conv.blktrace" "$tmp/text.trace"
stats_ops "$tmp/text.json" "$tmp/text.trace" | grep -v ' 0 0$' | sort > "$tmp/want2"
blkparse_ops "$tmp/conv.blktrace" > "$tmp/got2"
diff "$tmp/want2" "$tmp/got2" || fail "blkparse on a converted trace disagrees with stats"
echo "ok: blkparse on blkemu-trace-convert --to blktrace agrees with stats"

# --- iolog: record, replay on a fresh disk, same sizes and bytes -----
# (reads and writes: fio's nbd engine replays those; write-zeroes would
# come back as writes, so this workload has none)
nbdkit -U - "$PLUGIN" "${spec[@]}" trace="$tmp/w.iolog" trace-format=iolog \
  stats="$tmp/rec.json" --run '
  fio --name=w --ioengine=nbd --uri="$uri" --rw=randrw --bsrange=4k-256k \
      --blockalign=4k --iodepth=4 --number_ios=400 --size=64M --randseed=9 \
      --output=/dev/null'
head -1 "$tmp/w.iolog" | grep -qx "fio version 3 iolog" || fail "iolog header"
# At queue depth 1: fio 3.33's nbd engine leaves a replay with requests in
# flight, and nbdkit 1.32 can abort replying on the closed socket.
nbdkit -U - "$PLUGIN" "${spec[@]}" stats="$tmp/replay.json" --run '
  fio --name=replay --ioengine=nbd --uri="$uri" --read_iolog="$tmp/w.iolog" \
      --iodepth=1 --output="$tmp/replay.out"' ||
  { cat "$tmp/replay.out"; fail "fio --read_iolog failed"; }
for f in read.requests read.bytes read.sizes write.requests write.bytes write.sizes; do
  expect_eq "iolog replay: $f" "$(jq -c ".ops.$f" "$tmp/replay.json")" \
    "$(jq -c ".ops.$f" "$tmp/rec.json")"
done

# The converter lists every served request, in order, as the trace has it.
"$CONVERT" --to iolog -n d0 -o "$tmp/conv.iolog" "$tmp/text.trace"
awk 'NR > 3 && $3 != "close" { print $3, $4, $5 }' "$tmp/conv.iolog" > "$tmp/got.actions"
awk '!/^#/ && $7 == "ok" {
       a = $2 == "R" ? "read" : $2 == "T" ? "trim" : $2 == "F" ? "sync" : "write"
       print a, ($2 == "F" ? 0 : $3), ($2 == "F" ? 0 : $4) }' "$tmp/text.trace" > "$tmp/want.actions"
diff -q "$tmp/want.actions" "$tmp/got.actions" > /dev/null ||
  fail "blkemu-trace-convert --to iolog: $(diff "$tmp/want.actions" "$tmp/got.actions" | head -3)"
grep -q "^0 d0 add$" "$tmp/conv.iolog" || fail "--name not used"
echo "ok: blkemu-trace-convert --to iolog lists the $(wc -l < "$tmp/got.actions") served requests"

# fio also replays a blktrace: the converted one against a fresh disk.
nbdkit -U - "$PLUGIN" "${spec[@]}" stats="$tmp/btreplay.json" --run '
  fio --name=replay --ioengine=nbd --uri="$uri" --read_iolog="$tmp/conv.blktrace" \
      --replay_redirect=disk0 --output="$tmp/btreplay.out"' ||
  { cat "$tmp/btreplay.out"; fail "fio could not replay the blktrace"; }
expect_eq "blktrace replay: read sizes" "$(jq -c .ops.read.sizes "$tmp/btreplay.json")" \
  "$(jq -c .ops.read.sizes "$tmp/text.json")"

# --- bad input ------------------------------------------------------
printf '# blkemu trace v1\n0.1 R 0 4096 1.000 1 ok -\ngarbage\n' > "$tmp/bad.trace"
if "$CONVERT" --to iolog "$tmp/bad.trace" > /dev/null 2> "$tmp/err"; then
  fail "a bad trace line was converted"
fi
grep -q "bad.trace:3: not a blkemu trace line (fewer than 7 fields; .*): garbage" "$tmp/err" || fail "message: $(cat "$tmp/err")"
if "$CONVERT" --to pcap "$tmp/text.trace" > /dev/null 2> "$tmp/err"; then fail "--to pcap accepted"; fi
grep -q "trace-format=pcap: must be one of blkemu|blktrace|iolog" "$tmp/err" || fail "message: $(cat "$tmp/err")"
if [ -w /dev/full ]; then
  if "$CONVERT" --to blktrace -o /dev/full "$tmp/text.trace" 2> "$tmp/err"; then
    fail "a conversion onto a full disk reported success"
  fi
  grep -q "No space left on device" "$tmp/err" || fail "message: $(cat "$tmp/err")"
fi
echo "ok: bad lines and formats are refused with file:line, a full output disk with exit 1"

# --- the recipe's capture half: blktrace on a loop device ------------
if [ "$(id -u)" -eq 0 ] && command -v blktrace > /dev/null && losetup -f > /dev/null 2>&1; then
  mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2> /dev/null || true
  truncate -s 64M "$tmp/lo.img"
  dev=$(loop_attach "$tmp/lo.img")
  mkdir "$tmp/cap"
  blktrace -d "$dev" -D "$tmp/cap" -o cap > "$tmp/blktrace.log" 2>&1 &
  bt=$!
  sleep 1
  if kill -0 $bt 2> /dev/null; then
    fio --name=real --filename="$dev" --direct=1 --rw=randwrite --bsrange=4k-64k \
        --blockalign=4k --number_ios=200 --size=64M --output=/dev/null
    kill -INT $bt; wait $bt || true
    blkparse -q -i "$tmp/cap/cap" -d "$tmp/cap.bin" -O
    nbdkit -U - "$PLUGIN" size=64M stats="$tmp/cap.json" --run '
      fio --name=replay --ioengine=nbd --uri="$uri" --read_iolog="$tmp/cap.bin" \
          --replay_redirect=disk0 --output=/dev/null'
    between "writes replayed from a real blktrace" "$(jq .ops.write.requests "$tmp/cap.json")" 200 400
  else
    echo "skipped: the recipe's capture (blktrace on $dev): $(tail -1 "$tmp/blktrace.log")"
  fi
fi
