#!/usr/bin/env bash
# The memory backend is sparse: extents show written chunks as data and
# the rest as holes; write-zeroes and trim release chunks.
source "$(dirname "$0")/functions.sh"
requires nbdinfo --version
nbdkit -U - "$PLUGIN" size=16M --run '
  set -e
  "$NBD_IO" "$uri" write 1048576 131072 5
  "$NBD_IO" "$uri" write 4194304 65536 6
  nbdinfo --map "$uri" > '"$tmp"'/map1
  "$NBD_IO" "$uri" zero 4194304 65536
  "$NBD_IO" "$uri" read 1048576 131072 5
  nbdinfo --map "$uri" > '"$tmp"'/map2'
grep -E '^ +1048576 +131072 +0 +data' "$tmp/map1" >/dev/null || fail "map1: $(cat "$tmp/map1")"
grep -E '^ +4194304 +65536 +0 +data' "$tmp/map1" >/dev/null || fail "map1: $(cat "$tmp/map1")"
grep -E '^ +1179648 +15597568 +3 +hole,zero' "$tmp/map2" >/dev/null || fail "map2: $(cat "$tmp/map2")"
echo "ok: $(tr '\n' ';' < "$tmp/map2")"
