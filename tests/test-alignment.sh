#!/usr/bin/env bash
# Where requests start, as nbdkit's stats filter counts it: each op's
# alignment_log2 holds, for each power of two, the requests whose offset
# is a multiple of it and of no larger one ("0": offset 0), beside the
# size histograms; the summary gives the shares in one line.
source "$(dirname "$0")/functions.sh"
requires qemu-io --version
requires jq --version
nbdkit -U - "$PLUGIN" size=64M stats="$tmp/s.json" summary=yes --run '
  qemu-io -f raw -c "write 0 4k" -c "write 4k 4k" -c "write 64k 8k" \
      -c "write 1536 512" -c "write 1M 64k" -c "write 3M 4k" -c "read 12k 4k" "$uri"
' > /dev/null 2> "$tmp/summary"
# 0 -> "0"; 4K; 64K; 1536 = 3 x 512 -> 512; 1M; 3M = 3 x 1M -> 1M
expect_eq "write alignments" "$(jq -c .ops.write.alignment_log2 "$tmp/s.json")" \
  '{"512":1,"4K":1,"64K":1,"1M":2,"0":1}'
expect_eq "read alignments (12K = 3 x 4K)" "$(jq -c .ops.read.alignment_log2 "$tmp/s.json")" '{"4K":1}'
expect_eq "a flush has no offset to count" "$(jq -c .ops.flush.alignment_log2 "$tmp/s.json")" '{}'
line=$(grep "aligned to:" "$tmp/summary" | tail -1) # read first, then write
expect_eq "the summary's line for writes" "$line" \
  "  aligned to: 512 16.7% 4K 16.7% 64K 16.7% 1M 33.3% 0 (offset) 16.7%"
