#!/usr/bin/env bash
# Seeds 001/003: md raid0 over four disks with a 512K chunk and different
# limits.  md0 takes the smallest limit; raised by hand, requests split at
# chunk boundaries and at each member's own limit, both visible in what
# each disk saw.
#   blkemu-vm scenarios/raid0-limits.sh
# budget: 90 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
modprobe nbd nbds_max=8
modprobe raid0
limits=(64K 127K 256K 1M)
chunk_kb=512

for i in 0 1 2 3; do
  disk_start m$i size=256M max-transfer=${limits[$i]} oversize=error latency-write=100us \
    bandwidth=400M trace="$results/m$i.trace"
  "$ATTACH" nbd "$work/m$i.sock" /dev/nbd$i
done
md_create /dev/md0 0 /dev/nbd0 /dev/nbd1 /dev/nbd2 /dev/nbd3 -- --chunk=$chunk_kb
section "queue limits"
queue_limits nbd0 nbd1 nbd2 nbd3 md0
check "md0 max_sectors_kb = smallest member (64)" "$(cat /sys/block/md0/queue/max_sectors_kb)" -eq 64
check "md0 io_opt = 4 x chunk" "$(cat /sys/block/md0/queue/optimal_io_size)" -eq $((4 * chunk_kb * 1024))

# phase NAME: 4 MiB direct writes, then what every member saw.
phase () {
  section "$1: md0 max_sectors_kb=$(cat /sys/block/md0/queue/max_sectors_kb)"
  for i in 0 1 2 3; do ctl m$i reset; done
  dd if=/dev/zero of=/dev/md0 bs=4M count=16 oflag=direct 2>&1 | tail -1 | sed 's/^/  dd: /'
  sync
  printf '  %-6s %8s %10s %10s %12s\n' member limit requests largest "MiB written"
  for i in 0 1 2 3; do
    printf '  %-6s %8s %10s %9sK %12s\n' "m$i" "${limits[$i]}" "$(disk_stat m$i .ops.write.requests)" \
      "$(kib "$(max_size m$i write)")" "$(( $(disk_stat m$i .ops.write.bytes) >> 20 ))"
  done
}

lim_bytes=(65536 130048 262144 1048576)
# Members merge the per-chunk bios md sends them: consecutive chunks on a
# member are contiguous there, so a member may see requests above md0's
# own limit, never above its own.
own_limits () {
  for i in 0 1 2 3; do
    check "m$i: no write above its own limit ${limits[$i]} ($(max_size m$i write))" \
      "$(max_size m$i write)" -le "${lim_bytes[$i]}"
    check "m$i: a quarter of the 64 MiB ($(( $(disk_stat m$i .ops.write.bytes) >> 20 )) MiB)" \
      "$(disk_stat m$i .ops.write.bytes)" -ge $((16 << 20)) -a "$(disk_stat m$i .ops.write.bytes)" -lt $(((16 << 20) + 65536))
  done
}

phase "stacked limit"
own_limits

echo 4096 > /sys/block/md0/queue/max_sectors_kb
phase "md0 limit raised by hand"
own_limits
check "md0 kept its chunk as max_hw_sectors_kb ($(cat /sys/block/md0/queue/max_hw_sectors_kb))" \
  "$(cat /sys/block/md0/queue/max_hw_sectors_kb)" -eq "$chunk_kb"
section "request sizes per member (a chunk is 512K: 4 x 127K + a 4K tail on m1)"
for i in 0 1 2 3; do
  echo "  m$i (${limits[$i]}): $(disk_stat m$i '.ops.write.sizes | to_entries | map("\(.key | tonumber / 1024)K x\(.value)") | join(", ")')"
done
seen m1
mdadm --stop /dev/md0 >/dev/null 2>&1
for i in 0 1 2 3; do "$ATTACH" detach /dev/nbd$i; disk_stop m$i; done
finish
