#!/usr/bin/env bash
# The key tables in the README and in nbdkit-blkemu-plugin(1) name every
# key the plugin knows, and no key it does not: they cannot drift from
# the key table in core/spec.c.  Shorthand in the tables expands as
# written: `latency-read/-write` is latency-read and latency-write.
source "$(dirname "$0")/functions.sh"
nbdkit "$PLUGIN" --dump-plugin | sed -n 's/^blkemu_keys=//p' | tr ',' '\n' |
  sort > "$tmp/keys"
[ -s "$tmp/keys" ] || fail "the plugin listed no keys"
# Ignored here: name=, which only the --disk syntax of blkemu-fuse and
# blkemu-ublk takes (their own man pages document it).
grep -vx name "$tmp/keys" > "$tmp/want"

# table_keys FILE: the first column of the table whose header starts
# "| key |", every `backticked` name, shorthand expanded.
table_keys () {
  awk '/^\| key \|/ { on = 1; next } on && !/^\|/ { exit } on' "$1" |
    cut -d'|' -f2 | grep -o '`[^`]*`' | tr -d '`' |
    awk -F/ '{ print $1; n = split($1, p, "-"); base = ""
               for (i = 1; i < n; i++) base = base p[i] "-"
               for (i = 2; i <= NF; i++) print base substr($i, 2) }' | sort -u
}

for doc in README.md docs/nbdkit-blkemu-plugin.1.md; do
  table_keys "$top/$doc" > "$tmp/doc"
  [ -s "$tmp/doc" ] || fail "$doc: no key table found"
  missing=$(comm -23 "$tmp/want" "$tmp/doc" | tr '\n' ' ')
  extra=$(comm -13 "$tmp/keys" "$tmp/doc" | tr '\n' ' ')
  [ -z "$missing" ] || fail "$doc: keys missing from its table: $missing"
  [ -z "$extra" ] || fail "$doc: its table names keys the plugin does not know: $extra"
  echo "ok: $doc: all $(wc -l < "$tmp/want") keys, nothing else"
done

# Each frontend's man page has the carriage table of `blkemu-ctl
# carriage` (the table in core/carriage.c), row for row.
"$BLKEMU_CTL" carriage | tail -n +2 > "$tmp/carriage"
[ -s "$tmp/carriage" ] || fail "blkemu-ctl carriage printed nothing"
# The frontends are the folders with a descriptor.c (a new one cannot
# escape this check), each descriptor there naming its program (.prog)
# and its column in the carriage table (.id); its man page is
# docs/PROG.N.md, whose limit table has the column "through X" (one
# frontend) or a column headed by the id (a page for several, like
# blkemu-vm(1) for qemu's controllers).
header=$("$BLKEMU_CTL" carriage | head -1)
"$BLKEMU_CTL" frontends | tail -n +2 > "$tmp/frontends"
fronts=0
for desc in "$top"/*/descriptor.c; do
  paste <(sed -n 's/^ *\.prog = "\(.*\)",/\1/p' "$desc") \
        <(sed -n 's/^ *\.id = "\(.*\)",/\1/p' "$desc") > "$tmp/descs"
  [ -s "$tmp/descs" ] || fail "$desc: no .prog or .id"
  while read -r prog id; do
    [ -n "$prog" ] && [ -n "$id" ] || fail "$desc: a descriptor without .prog or .id"
    col=$(awk -v id="$id" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == id) print i }' <<< "$header")
    [ -n "$col" ] || fail "blkemu-ctl carriage has no column for $id ($desc)"
    awk -v id="$id" -v p="$prog" '$1 == id && $2 == p { f = 1 } END { exit !f }' "$tmp/frontends" ||
      fail "blkemu-ctl frontends has no line for $id served by $prog ($desc: is it in common/frontends.h?)"
    doc=$(cd "$top" && ls docs/"$prog".[0-9].md 2>/dev/null | head -1)
    [ -n "$doc" ] || fail "$desc: no man page docs/$prog.N.md"
    fronts=$((fronts + 1))
    awk -v id="$id" -F'|' '
      /^\| limit key \|/ { on = 1; c = 3
        for (i = 3; i < NF; i++) { h = $i; gsub(/[` ]/, "", h); if (h == id) c = i }
        next }
      on && !/^\|/ { exit }
      on && !/^\|---/ { k = $2; v = $c; gsub(/[` ]/, "", k); gsub(/ /, "", v); print k, v }' \
      "$top/$doc" > "$tmp/doc-carriage"
    awk -v c="$col" '{ print $1, $c }' "$tmp/carriage" > "$tmp/want-carriage"
    diff -u "$tmp/want-carriage" "$tmp/doc-carriage" >&2 ||
      fail "$doc: its limit table for $id differs from blkemu-ctl carriage"
    echo "ok: $doc: carriage of $(wc -l < "$tmp/want-carriage") limit keys for $id as the core says"
  done < "$tmp/descs"
done
[ "$fronts" -ge 7 ] || fail "only $fronts frontends found (descriptors in folders with a descriptor.c)"
expect_eq "blkemu-ctl frontends: one line a descriptor" "$(wc -l < "$tmp/frontends")" "$fronts"
