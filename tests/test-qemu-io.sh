#!/usr/bin/env bash
# qemu's NBD client honours the advertised maximum: a 4 MiB write reaches
# a 127K disk as 127K requests, none refused, and reads back intact.
source "$(dirname "$0")/functions.sh"
requires qemu-io --version
requires jq --version
nbdkit -U - "$PLUGIN" size=64M max-transfer=127K oversize=error \
    stats="$tmp/s.json" --run '
  set -e
  qemu-io -f raw "$uri" -c "write -P 0x5a 1M 4M" -c "read -P 0x5a 1M 4M" \
      > '"$tmp"'/qemu.out'
cat "$tmp/qemu.out"
expect_eq "rejected" "$(jqr "$tmp/s.json" .oversize.rejected)" 0
expect_eq "largest write" "$(jqr "$tmp/s.json" '.ops.write.sizes | keys | map(tonumber) | max')" 130048
expect_eq "write bytes" "$(jqr "$tmp/s.json" .ops.write.bytes)" 4194304
expect_eq "read bytes" "$(jqr "$tmp/s.json" .ops.read.bytes)" 4194304
