#!/usr/bin/env bash
# The NBD block-size constraints nbdinfo sees follow the spec:
# minimum = logical block, preferred = max(physical, opt-io) clamped to a
# power of two <= maximum, maximum = max-transfer.
source "$(dirname "$0")/functions.sh"
requires nbdinfo --version
requires jq --version

check () {
  local want_min=$1 want_pref=$2 want_max=$3 want_size=$4; shift 4
  nbdkit -U - "$PLUGIN" "$@" --run 'nbdinfo --json "$uri"' > "$tmp/info.json"
  local got
  got=$(jqr "$tmp/info.json" '.exports[0] | "\(.block_size_minimum) \(.block_size_preferred) \(.block_size_maximum) \(.["export-size"])"')
  expect_eq "block sizes for [$*]" "$got" "$want_min $want_pref $want_max $want_size"
}

check 512 512 33554432 1073741824 size=1G
check 512 65536 130048 67108864 size=64M max-transfer=127K opt-io=512K
check 4096 4096 126976 67108864 size=64M logical-block-size=4096 max-transfer=124K
check 512 4096 1048576 8388608 size=8M physical-block-size=4K max-transfer=1M
check 4096 262144 4194304 16777216 size=16M logical-block-size=4K opt-io=256K max-transfer=4M

# The other capabilities are answered truthfully.
nbdkit -U - "$PLUGIN" size=1M rotational=yes --run 'nbdinfo --json "$uri"' > "$tmp/info.json"
expect_eq "rotational" "$(jqr "$tmp/info.json" '.exports[0].is_rotational')" true
for cap in can_flush can_fua can_trim can_zero can_multi_conn; do
  expect_eq "$cap" "$(jqr "$tmp/info.json" ".exports[0].$cap")" true
done
