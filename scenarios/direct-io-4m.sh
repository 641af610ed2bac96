#!/usr/bin/env bash
# Seed 004: `dd bs=4M iflag=direct` from a disk that takes 4 MiB requests,
# with max_sectors_kb at 4096, 1280 (6.12's default) and 128 (6.1's):
# the sizes and merges the device saw, iostat-style -- through every
# frontend this kernel has (nbd, ublk, SCSI), the seed written once.
#   blkemu-vm scenarios/direct-io-4m.sh
# budget: 90 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
MB=$((1 << 20))
# MiB read at each max_sectors_kb: 128, or 32 at quick scale (the suite's:
# under TCG the nbd leg moves ~18 MB/s, and 3 x 128 MiB through three
# frontends took the scenario from 47 s to past twice its budget on a
# slower run).  32 MiB is still 8 requests of 4M and 256 of 128K.
mib=128
[ "${BLKEMU_SCENARIO_SCALE:-full}" = quick ] && mib=32

# seed004 FRONTEND: the seed's reads through one frontend.
seed004 () {
  local f=$1 b=big-$1 q kb
  frontend_disk "$f" "$b" size=512M max-transfer=4M oversize=error latency-read=500us bandwidth=800M
  q=/sys/block/${dev#/dev/}/queue
  # Fill the disk so reads move real data.
  dd if=/dev/urandom of="$dev" bs=4M count=$((mib / 4)) oflag=direct status=none
  # What bounds a request besides max_sectors_kb: 4M (dd's size), the
  # queue's hardware limit, or its segments of a page -- what the seed's
  # SRP initiator did (tcm_loop's 256 segments of a page: 1 MiB).
  local cap=$((4 * MB)) hw seg
  hw=$(( $(cat "$q/max_hw_sectors_kb") * 1024 ))
  seg=$(( $(cat "$q/max_segments") * 4096 ))
  [ "$hw" -lt "$cap" ] && cap=$hw
  [ "$seg" -lt "$cap" ] && cap=$seg
  printf '\n  %-14s %8s %9s %8s %10s %9s %12s %9s\n' max_sectors_kb "r/s" "rkB/s" "rrqm/s" "avg-KiB" "largest" "dev reqs" "dd MB/s"
  for kb in 4096 1280 128; do
    echo "$kb" > "$q/max_sectors_kb"
    echo 3 > /proc/sys/vm/drop_caches
    ctl "$b" reset
    read -r r0 m0 s0 _ < <(diskstats "$dev")
    t0=$(date +%s.%N)
    rate=$(dd if="$dev" of=/dev/null bs=4M count=$((mib / 4)) iflag=direct 2>&1 | awk -F, 'END { print $NF }')
    t1=$(date +%s.%N)
    read -r r1 m1 s1 _ < <(diskstats "$dev")
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
    reqs=$(disk_stat "$b" .ops.read.requests)
    bytes=$(disk_stat "$b" .ops.read.bytes)
    largest=$(max_size "$b" read)
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
    l=largest_$kb b_=bytes_$kb
    check "$f: max_sectors_kb=$kb: no read above the limit (${!l})" "${!l}" -le $((kb * 1024))
    check "$f: max_sectors_kb=$kb: $mib MiB read in all" "${!b_}" -eq $((mib * MB))
  done
  # A smaller limit means more requests where it is the one that binds:
  # at least bytes / limit at each setting, and strictly more than the
  # next larger setting when its effective limit is smaller.  Where the
  # transport caps both (SCSI: 1 MiB at 4096 and at 1280) the counts
  # differ only by how the pages happened to fall into segments (32 and
  # 40 for 32 MiB), and no order is claimed.
  local prev_kb='' prev_eff eff
  for kb in 4096 1280 128; do
    eff=$((kb * 1024)); [ "$cap" -lt "$eff" ] && eff=$cap
    local r_=reqs_$kb
    check "$f: max_sectors_kb=$kb: at least $mib MiB / $((eff / 1024))K requests (${!r_})" \
      "${!r_}" -ge $(( (mib * MB + eff - 1) / eff ))
    if [ -n "$prev_kb" ] && [ "$eff" -lt "$prev_eff" ]; then
      local p_=reqs_$prev_kb
      check "$f: max_sectors_kb $prev_kb -> $kb: more device requests (${!p_} < ${!r_})" \
        "${!p_}" -lt "${!r_}"
    fi
    prev_kb=$kb prev_eff=$eff
  done
  # At 4096 the requests are as large as the queue lets them be.
  check "$f: 4096: requests as large as the queue allows ($largest_4096 = $((cap / 1024))K: max_hw_sectors_kb $((hw / 1024)), $(cat "$q/max_segments") segments)" \
    "$largest_4096" -eq "$cap"
  check "$f: none refused as oversize ($(disk_stat "$b" .oversize.rejected))" "$(disk_stat "$b" .oversize.rejected)" -eq 0
  seen "$b"
  frontend_disk_stop "$f" "$b"
}
for_each_frontend seed004
finish
