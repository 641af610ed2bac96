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
for pair in nbdkit-blkemu-plugin.1:2 blkemu-fuse.1:3 blkemu-ublk.8:4; do
  doc=docs/${pair%:*}.md col=${pair#*:}
  awk '/^\| limit key \|/ { on = 1; next } on && !/^\|/ { exit } on && !/^\|---/' \
      "$top/$doc" | awk -F'|' '{ gsub(/[` ]/, "", $2); gsub(/ /, "", $3); print $2, $3 }' \
      > "$tmp/doc-carriage"
  awk -v c="$col" '{ print $1, $c }' "$tmp/carriage" > "$tmp/want-carriage"
  diff -u "$tmp/want-carriage" "$tmp/doc-carriage" >&2 ||
    fail "$doc: its limit table differs from blkemu-ctl carriage"
  echo "ok: $doc: carriage of $(wc -l < "$tmp/want-carriage") limit keys as the core says"
done
