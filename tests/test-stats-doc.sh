#!/usr/bin/env bash
# blkemu-stats(5) and the stats JSON name the same members: every member
# the JSON has (of a zoned, throttled SSD with a flash translation layer and a trace, so that the optional
# objects are there) is in the page's schema, every member the schema
# names is in the JSON, and every counter of core/counters.h is in both.
# Members under maps (exact sizes, histograms, config, transport) are
# data, not names, and are left out.
source "$(dirname "$0")/functions.sh"
requires jq --version
doc=$top/docs/blkemu-stats.5.md

# The schema: the page's first indented block (from its "{" to "}").
awk '/^    \{$/ { on = 1 } on { print } on && /^    \}$/ { exit }' "$doc" > "$tmp/schema"
[ -s "$tmp/schema" ] || fail "$doc: no schema block"
# What a map holds on its line is an example of data, not a name.
sed -E 's/("(config|sizes|size_log2|alignment_log2|histogram|transport)": *\{).*/\1/' \
  "$tmp/schema" | grep -o '"[a-z_0-9]*":' | tr -d '":' | sort -u > "$tmp/doc"

# Through the public API (NBD carries no zones), written and read.
"$BLKEMU_BUILD/tests/stats-json" \
    "size=16M,zoned=host-managed,zone-size=1M,volume-iops=1000000,model=ssd,over-provisioning=7%,slc-cache=1M,trace=$tmp/t.trace" \
    > "$tmp/stats.json" || fail "a zoned, throttled disk with a trace did not open"
jq -e .zones.count "$tmp/stats.json" > /dev/null || fail "no zones object in the JSON"
jq -e .trace.records "$tmp/stats.json" > /dev/null || fail "no trace object in the JSON"
jq -e .volume.ios "$tmp/stats.json" > /dev/null || fail "no volume object in the JSON"
jq -e .faults.last_crash.mode "$tmp/stats.json" > /dev/null || fail "no last_crash object in the JSON"
jq -e .ftl.waf "$tmp/stats.json" > /dev/null || fail "no ftl object in the JSON"
jq -e .slc.capacity "$tmp/stats.json" > /dev/null || fail "no slc object in the JSON"

# Every object key on a path that does not pass through a map.
jq -r '[paths | select(all(.[]; . != "sizes" and . != "size_log2" and
          . != "alignment_log2" and . != "histogram" and . != "config" and
          . != "transport")) | .[-1] | strings] | unique | .[]' \
  "$tmp/stats.json" | grep -vxE 'read|write|flush|trim|zero' | sort -u > "$tmp/json"
# The maps themselves are members, and the ops are named once as "read".
for m in sizes size_log2 alignment_log2 histogram config transport read; do echo $m; done >> "$tmp/json"
sort -u -o "$tmp/json" "$tmp/json"
grep -vxE 'write|flush|trim|zero' "$tmp/doc" > "$tmp/doc-names"

missing=$(comm -23 "$tmp/json" "$tmp/doc-names" | tr '\n' ' ')
extra=$(comm -13 "$tmp/json" "$tmp/doc-names" | tr '\n' ' ')
[ -z "$missing" ] || fail "$doc: members of the JSON its schema does not name: $missing"
[ -z "$extra" ] || fail "$doc: its schema names members the JSON does not have: $extra"
echo "ok: blkemu-stats(5) and the JSON: the same $(wc -l < "$tmp/json") member names"

# Each counter of counters.h: its JSON name under its group.
n=0
while read -r group name; do
  path=.$name
  case $group in NULL) ;; *) path=.$group.$name ;; esac
  jq -e "$path | numbers" "$tmp/stats.json" > /dev/null ||
    fail "counters.h: $group $name is not $path in the JSON"
  grep -q "\"$name\":" "$tmp/schema" || fail "counters.h: $name is not in $doc"
  n=$((n + 1))
done < <(sed -n 's/^ *X ([a-z_]*, \(NULL\|"[a-z_]*"\), "\([a-z_]*\)".*/\1 \2/p' \
           "$top/core/counters.h" | tr -d '"')
[ $n -ge 30 ] || fail "only $n counters read from core/counters.h"
echo "ok: all $n counters of core/counters.h in the JSON and the page"
