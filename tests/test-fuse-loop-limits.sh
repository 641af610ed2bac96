#!/usr/bin/env bash
# Two blkemu-fuse disks under loop devices with direct I/O, capped at 64K
# and 512K through max_sectors_kb: 4 MiB O_DIRECT writes reach the first
# as nothing above 64K and the second as merged requests up to 512K.
source "$(dirname "$0")/functions.sh"
requires_fuse_loop
requires jq --version
mnt=$tmp/mnt
fuse_mount "$mnt" --disk name=a,size=64M --disk name=b,size=64M
la=$(loop_attach "$mnt/a" --direct-io=on)
lb=$(loop_attach "$mnt/b" --direct-io=on)
echo 64 > "/sys/block/${la#/dev/}/queue/max_sectors_kb"
echo 512 > "/sys/block/${lb#/dev/}/queue/max_sectors_kb"
dd if=/dev/urandom of="$tmp/data" bs=4M count=8 status=none
dd if="$tmp/data" of="$la" bs=4M oflag=direct status=none
dd if="$tmp/data" of="$lb" bs=4M oflag=direct status=none

jq . "$mnt/.blkemu/a/stats" > "$tmp/a.json"
jq . "$mnt/.blkemu/b/stats" > "$tmp/b.json"
echo "a saw: $(jq -c .ops.write.sizes "$tmp/a.json")"
echo "b saw: $(jq -c .ops.write.sizes "$tmp/b.json")"
expect_eq "a: largest write <= 64K" "$(jq '[.ops.write.sizes | keys[] | tonumber] | max <= 65536' "$tmp/a.json")" true
expect_eq "a: bytes" "$(jq .ops.write.bytes "$tmp/a.json")" 33554432
expect_eq "b: largest write is 512K" "$(jq '[.ops.write.sizes | keys[] | tonumber] | max' "$tmp/b.json")" 524288
expect_eq "b: merged requests above 64K" "$(jq '[.ops.write.sizes | to_entries[] | select((.key | tonumber) > 65536) | .value] | add > 0' "$tmp/b.json")" true
expect_eq "b: bytes" "$(jq .ops.write.bytes "$tmp/b.json")" 33554432
expect_eq "transport cap reported" "$(jq -r '.transport.fuse_max_request | (type == "number" and . > 0)' "$tmp/b.json")" true
cmp <(dd if="$lb" bs=4M count=8 iflag=direct status=none) "$tmp/data" || fail "b: data differs"
echo "ok: data reads back through loop"
