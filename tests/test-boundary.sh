#!/usr/bin/env bash
# boundary= (the kernel's chunk_sectors): no request may cross a multiple
# of it.  Over NBD nothing tells the client, so the device applies
# oversize= to crossing requests: error refuses them, split cuts them at
# every boundary (and at max-transfer), allow serves them whole; all are
# counted in stats "boundary" and marked in the trace.
source "$(dirname "$0")/functions.sh"
requires jq --version

# serve POLICY ARGS... -- NBD-IO COMMANDS (one per line, "op offset length [seed]")
serve () {
  local name=$1; shift
  nbdkit -U - "$PLUGIN" size=16M boundary=128K stats="$tmp/$name.json" \
      trace="$tmp/$name.trace" "$@" --run "
    while read -r op off len seed; do
      [ -n \"\$op\" ] || continue
      echo \"\$op \$off \$len: \$(\"$NBD_IO\" \"\$uri\" \$op \$off \$len \$seed)\"
    done < '$tmp/$name.cmds'" > "$tmp/$name.out"
}

# error: a read across 128K is refused; one ending at 128K is not.
cat > "$tmp/err.cmds" <<'C'
read 98304 65536
read 65536 65536
C
serve err oversize=error
cat "$tmp/err.out"
expect_eq "read across 128K with oversize=error" "$(sed -n 1p "$tmp/err.out" | cut -d: -f2)" " EINVAL"
expect_eq "read ending at 128K" "$(sed -n 2p "$tmp/err.out" | cut -d: -f2)" " ok"
expect_eq "boundary.crossed" "$(jqr "$tmp/err.json" .boundary.crossed)" 1
expect_eq "boundary.rejected" "$(jqr "$tmp/err.json" .boundary.rejected)" 1
grep -q "boundary" "$tmp/err.trace" || fail "no boundary mark in the trace"

# split: 256K written at 64K reaches the backend as 64K + 128K + 64K and
# reads back whole; with max-transfer=64K as well, 256K at 96K becomes
# 32K + 64K + 64K + 64K + 32K (cut at 128K, 192K by the limit, 256K, 320K).
cat > "$tmp/split.cmds" <<'C'
write 65536 262144 7
read 65536 262144 7
C
serve split oversize=split
cat "$tmp/split.out"
expect_eq "split write" "$(sed -n 1p "$tmp/split.out" | cut -d: -f2)" " ok"
expect_eq "split read verifies" "$(sed -n 2p "$tmp/split.out" | cut -d: -f2)" " ok"
expect_eq "boundary.split" "$(jqr "$tmp/split.json" .boundary.split)" 2
expect_eq "write pieces by size" "$(jqr "$tmp/split.json" '.ops.write.sizes | to_entries | sort_by(.key | tonumber) | map("\(.key)x\(.value)") | join(" ")')" "65536x2 131072x1"
expect_eq "oversize untouched" "$(jqr "$tmp/split.json" .oversize.split)" 0

cat > "$tmp/both.cmds" <<'C'
write 98304 262144 9
read 98304 262144 9
C
serve both oversize=split max-transfer=64K
cat "$tmp/both.out"
expect_eq "read of the 5-piece write verifies" "$(sed -n 2p "$tmp/both.out" | cut -d: -f2)" " ok"
expect_eq "write pieces by size (limit and boundary)" \
  "$(jqr "$tmp/both.json" '.ops.write.sizes | to_entries | sort_by(.key | tonumber) | map("\(.key)x\(.value)") | join(" ")')" "32768x2 65536x3"
expect_eq "no piece crosses 128K" "$(awk '$2 == "W" { s = $3; e = $3 + $4 - 1; if (int(s / 131072) != int(e / 131072)) n++ } END { print n + 0 }' "$tmp/both.trace")" 0

# allow: served whole, counted.
cat > "$tmp/allow.cmds" <<'C'
read 98304 65536
C
serve allow oversize=allow
expect_eq "read across 128K with oversize=allow" "$(cut -d: -f2 "$tmp/allow.out")" " ok"
expect_eq "allowed: crossed" "$(jqr "$tmp/allow.json" .boundary.crossed)" 1
expect_eq "allowed: not split" "$(jqr "$tmp/allow.json" .boundary.split)" 0

# Values: a multiple of the logical block size.
if nbdkit -U - "$PLUGIN" size=16M boundary=1000 --run true 2> "$tmp/bad.err"; then
  fail "boundary=1000 accepted"
fi
grep -q "boundary=1000: must be a multiple of logical-block-size" "$tmp/bad.err" ||
  fail "message: $(cat "$tmp/bad.err")"
echo "ok: $(grep -o 'boundary=1000.*' "$tmp/bad.err")"
