#!/usr/bin/env bash
# max-transfer with each oversize policy, driven by a raw libnbd client
# that ignores the advertised maximum (as the kernel's nbd driver does).
source "$(dirname "$0")/functions.sh"
requires jq --version
M4=4194304
PIECE=130048   # 127K

# error: EINVAL, counted, and the server keeps serving.
nbdkit -U - "$PLUGIN" size=64M max-transfer=127K oversize=error \
    stats="$tmp/err.json" --run '
  set -e
  r=$("$NBD_IO" "$uri" write 0 '$M4' || true)
  [ "$r" = EINVAL ] || { echo "4M write gave $r, want EINVAL"; exit 1; }
  "$NBD_IO" "$uri" write 0 '$PIECE' 7
  "$NBD_IO" "$uri" read 0 '$PIECE' 7
  r=$("$NBD_IO" "$uri" read 0 '$M4' || true)
  [ "$r" = EINVAL ] || { echo "4M read gave $r, want EINVAL"; exit 1; }
'
expect_eq "rejected" "$(jqr "$tmp/err.json" .oversize.rejected)" 2
expect_eq "write errors" "$(jqr "$tmp/err.json" .ops.write.errors)" 1
expect_eq "write bytes" "$(jqr "$tmp/err.json" .ops.write.bytes)" $PIECE
expect_eq "read bytes" "$(jqr "$tmp/err.json" .ops.read.bytes)" $PIECE

# Misaligned requests are EINVAL too, counted apart.
nbdkit -U - "$PLUGIN" size=64M logical-block-size=4096 stats="$tmp/mis.json" \
  --run '
  r=$("$NBD_IO" "$uri" write 512 4096 || true); [ "$r" = EINVAL ] || exit 1
  r=$("$NBD_IO" "$uri" write 0 1024 || true); [ "$r" = EINVAL ] || exit 1
  "$NBD_IO" "$uri" write 0 4096'
expect_eq "misaligned" "$(jqr "$tmp/mis.json" .misaligned)" 2

# split: the device serves 127K pieces and the tail; data is intact.
nbdkit -U - "$PLUGIN" size=64M max-transfer=127K oversize=split \
    stats="$tmp/split.json" --run '
  set -e
  "$NBD_IO" "$uri" write 1048576 '$M4' 3
  "$NBD_IO" "$uri" read 1048576 '$M4' 3
'
pieces=$(( M4 / PIECE ))
tail=$(( M4 - pieces * PIECE ))
expect_eq "split requests" "$(jqr "$tmp/split.json" .oversize.split)" 2
expect_eq "split pieces" "$(jqr "$tmp/split.json" .oversize.pieces)" $(( 2 * (pieces + 1) ))
expect_eq "127K writes" "$(jqr "$tmp/split.json" ".ops.write.sizes[\"$PIECE\"]")" $pieces
expect_eq "tail write" "$(jqr "$tmp/split.json" ".ops.write.sizes[\"$tail\"]")" 1
expect_eq "no 4M write" "$(jqr "$tmp/split.json" '.ops.write.sizes["4194304"] // 0')" 0
expect_eq "write bytes" "$(jqr "$tmp/split.json" .ops.write.bytes)" $M4
expect_eq "write requests" "$(jqr "$tmp/split.json" .ops.write.requests)" $(( pieces + 1 ))

# split on a 4K-sector disk: each piece a write of its own in a crash
# state, so the device cuts at multiples of the atomic unit (4K here)
# where 127K is not one.  1 MiB from 2K: 126K to the first 4K multiple,
# seven of 124K, a 30K tail (before, 127K pieces tore a unit at each cut).
nbdkit -U - "$PLUGIN" size=64M physical-block-size=4096 max-transfer=127K \
    oversize=split stats="$tmp/split4k.json" --run '
  "$NBD_IO" "$uri" write 2048 1048576 5'
for size_count in 129024:1 126976:7 30720:1; do
  expect_eq "4K sectors: ${size_count%:*}-byte pieces" \
    "$(jqr "$tmp/split4k.json" ".ops.write.sizes[\"${size_count%:*}\"] // 0")" "${size_count#*:}"
done
expect_eq "4K sectors: no 127K piece" \
  "$(jqr "$tmp/split4k.json" ".ops.write.sizes[\"$PIECE\"] // 0")" 0

# allow: served whole, counted.
nbdkit -U - "$PLUGIN" size=64M max-transfer=127K oversize=allow \
    stats="$tmp/allow.json" --run '"$NBD_IO" "$uri" write 0 '$M4
expect_eq "allowed" "$(jqr "$tmp/allow.json" .oversize.allowed)" 1
expect_eq "4M write seen" "$(jqr "$tmp/allow.json" '.ops.write.sizes["4194304"]')" 1

# Trim and write-zeroes are limited by their own keys, not max-transfer.
nbdkit -U - "$PLUGIN" size=64M max-transfer=127K max-discard=1M \
    stats="$tmp/trim.json" --run '
  set -e
  "$NBD_IO" "$uri" zero 0 '$M4'
  "$NBD_IO" "$uri" trim 0 1048576
  r=$("$NBD_IO" "$uri" trim 0 '$M4' || true); [ "$r" = EINVAL ]'
expect_eq "zero 4M ok" "$(jqr "$tmp/trim.json" .ops.zero.errors)" 0
expect_eq "trim over max-discard" "$(jqr "$tmp/trim.json" .ops.trim.errors)" 1
