#!/usr/bin/env bash
# The file backend: flushed data survives a restart; trim punches holes
# that extents report; a size larger than the file extends it.
source "$(dirname "$0")/functions.sh"
requires nbdinfo --version
img="$tmp/disk.img"

nbdkit -U - "$PLUGIN" file="$img" size=32M --run '
  set -e
  "$NBD_IO" "$uri" write 0 1048576 11
  "$NBD_IO" "$uri" write 8388608 65536 12
  "$NBD_IO" "$uri" flush'
expect_eq "file size" "$(stat -c %s "$img")" 33554432

# A new server on the same file (size taken from the file) sees the data.
nbdkit -U - "$PLUGIN" file="$img" --run '
  set -e
  "$NBD_IO" "$uri" read 0 1048576 11
  "$NBD_IO" "$uri" read 8388608 65536 12
  nbdinfo --size "$uri" > '"$tmp"'/size
  "$NBD_IO" "$uri" trim 0 1048576
  nbdinfo --map "$uri" > '"$tmp"'/map'
expect_eq "size from file" "$(cat "$tmp/size")" 33554432
awk '$1 == 0 && $2 >= 1048576 && $4 ~ /hole/ { found = 1 } END { exit !found }' "$tmp/map" ||
  fail "trimmed range not a hole: $(cat "$tmp/map")"
grep -E '^ +8388608 +65536 +0 +data' "$tmp/map" >/dev/null ||
  fail "written range not data: $(cat "$tmp/map")"
echo "ok: extents after trim: $(tr '\n' ';' < "$tmp/map")"
