#!/usr/bin/env bash
# Seed 004: `dd bs=4M iflag=direct` from a disk that takes 4 MiB requests,
# with max_sectors_kb at 4096, 1280 (6.12's default) and 128 (6.1's):
# the sizes and merges the device saw, iostat-style.
#   blkemu-vm scenarios/direct-io-4m.sh
# budget: 40 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
modprobe nbd nbds_max=4
MB=$((1 << 20))

disk_start big size=512M max-transfer=4M oversize=error latency-read=500us bandwidth=800M
"$ATTACH" nbd "$work/big.sock" /dev/nbd0
# Fill the disk so reads move real data.
dd if=/dev/urandom of=/dev/nbd0 bs=4M count=32 oflag=direct status=none

printf '\n  %-14s %8s %9s %8s %10s %9s %12s %9s\n' max_sectors_kb "r/s" "rkB/s" "rrqm/s" "avg-KiB" "largest" "dev reqs" "dd MB/s"
for kb in 4096 1280 128; do
  echo "$kb" > /sys/block/nbd0/queue/max_sectors_kb
  echo 3 > /proc/sys/vm/drop_caches
  ctl big reset
  read -r r0 m0 s0 _ < <(diskstats nbd0)
  t0=$(date +%s.%N)
  rate=$(dd if=/dev/nbd0 of=/dev/null bs=4M count=32 iflag=direct 2>&1 | awk -F, 'END { print $NF }')
  t1=$(date +%s.%N)
  read -r r1 m1 s1 _ < <(diskstats nbd0)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
  reqs=$(disk_stat big .ops.read.requests)
  bytes=$(disk_stat big .ops.read.bytes)
  largest=$(max_size big read)
  printf '  %-14s %8.1f %9.0f %8.1f %10.1f %8sK %12s %9s\n' "$kb" \
    "$(awk -v n=$((r1 - r0)) -v t="$secs" 'BEGIN { print n / t }')" \
    "$(awk -v s=$((s1 - s0)) -v t="$secs" 'BEGIN { print s / 2 / t }')" \
    "$(awk -v n=$((m1 - m0)) -v t="$secs" 'BEGIN { print n / t }')" \
    "$(awk -v b="$bytes" -v n="$reqs" 'BEGIN { print n ? b / n / 1024 : 0 }')" \
    "$(kib "$largest")" "$reqs" "$rate"
  eval "largest_$kb=$largest reqs_$kb=$reqs bytes_$kb=$bytes"
done
echo
for kb in 4096 1280 128; do
  l=largest_$kb b=bytes_$kb
  check "max_sectors_kb=$kb: no read above the limit (${!l})" "${!l}" -le $((kb * 1024))
  check "max_sectors_kb=$kb: 128 MiB read in all" "${!b}" -eq $((128 * MB))
done
check "smaller max_sectors_kb -> more device requests ($reqs_4096 <= $reqs_1280 <= $reqs_128)" \
  "$reqs_4096" -le "$reqs_1280" -a "$reqs_1280" -le "$reqs_128"
check "4096: the device saw requests above 1 MiB ($largest_4096)" "$largest_4096" -gt "$MB"
seen big
"$ATTACH" detach /dev/nbd0
disk_stop big
finish
