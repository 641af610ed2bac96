#!/usr/bin/env bash
# The kernel's other queue limits over NBD.  discard-granularity and
# discard-alignment are the device's: a trim frees only the whole discard
# units inside it, the rest keeps its data (as a real device may) and is
# counted in stats "discard".  The limits only a kernel above the device
# applies (virt-boundary, the segment limits, dma-alignment) are accepted
# but not carried by NBD: the plugin says so at start and in stats.
source "$(dirname "$0")/functions.sh"
requires jq --version

# run NAME SPEC... : the commands in $tmp/NAME.cmds ("op offset length
# [seed]") through nbd-io, one line of output each, stats in NAME.json.
run () {
  local name=$1; shift
  nbdkit -U - "$PLUGIN" size=1M stats="$tmp/$name.json" "$@" --run "
    while read -r op off len seed; do
      [ -n \"\$op\" ] || continue
      echo \"\$op \$off \$len: \$(\"$NBD_IO\" \"\$uri\" \$op \$off \$len \$seed)\"
    done < '$tmp/$name.cmds'" > "$tmp/$name.out" 2> "$tmp/$name.err"
  cat "$tmp/$name.out"
}
result () { sed -n "$2p" "$tmp/$1.out" | cut -d: -f2 | tr -d ' '; }

# 64K units from 0: a trim of [4K, 200K) frees [64K, 192K) only.
cat > "$tmp/gran.cmds" <<'C'
write 0 262144 3
trim 4096 200704
read 4096 61440 3
read-zeros 65536 131072
read 196608 8192 3
trim 262144 131072
read-zeros 262144 131072
C
run gran discard-granularity=64K
expect_eq "the write" "$(result gran 1)" ok
expect_eq "the trim" "$(result gran 2)" ok
expect_eq "head before the first unit keeps its data" "$(result gran 3)" ok
expect_eq "the whole units read zeroes" "$(result gran 4)" ok
expect_eq "tail after the last unit keeps its data" "$(result gran 5)" ok
expect_eq "an aligned trim" "$(result gran 6)" ok
expect_eq "it frees everything" "$(result gran 7)" ok
expect_eq "discard.unaligned" "$(jqr "$tmp/gran.json" .discard.unaligned)" 1
expect_eq "discard.kept_bytes (60K + 8K)" "$(jqr "$tmp/gran.json" .discard.kept_bytes)" 69632

# The units start at discard-alignment: with 4K, [0, 256K) frees
# [4K, 196K); 4K before and 60K after keep their data.
cat > "$tmp/align.cmds" <<'C'
write 0 262144 5
trim 0 262144
read 0 4096 5
read-zeros 4096 196608
read 200704 61440 5
C
run align discard-granularity=64K discard-alignment=4K
for i in 1 2 3 4 5; do
  expect_eq "aligned units, step $i" "$(result align $i)" ok
done
expect_eq "discard.kept_bytes (4K + 60K)" "$(jqr "$tmp/align.json" .discard.kept_bytes)" 65536

# Without discard-granularity the device frees exactly what it is asked.
cat > "$tmp/plain.cmds" <<'C'
write 0 8192 7
trim 512 1024
read-zeros 512 1024
read 0 512 7
C
run plain
expect_eq "a 1K trim with no granularity frees 1K" "$(result plain 3)" ok
expect_eq "and nothing around it" "$(result plain 4)" ok
expect_eq "nothing counted" "$(jqr "$tmp/plain.json" .discard.unaligned)" 0

# Not carried by NBD: named at start and in stats; the disk still serves.
cat > "$tmp/unc.cmds" <<'C'
write 0 4096 1
C
run unc virt-boundary=4K max-segments=16 dma-alignment=4K \
    discard-granularity=4K
expect_eq "the disk serves" "$(result unc 1)" ok
grep -qF "not carried by NBD, no effect there: virt-boundary=4K max-segments=16 dma-alignment=4K" "$tmp/unc.err" ||
  fail "no warning naming the keys NBD does not carry: $(cat "$tmp/unc.err")"
echo "ok: warning: $(grep -F "not carried" "$tmp/unc.err")"
expect_eq "transport.not_carried" "$(jqr "$tmp/unc.json" .transport.not_carried)" \
  "virt-boundary=4K max-segments=16 dma-alignment=4K"
run plain
[ ! -s "$tmp/plain.err" ] || fail "a plain disk warned: $(cat "$tmp/plain.err")"
echo "ok: a disk with no such key starts without a warning"
