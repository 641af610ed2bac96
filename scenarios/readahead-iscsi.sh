#!/usr/bin/env bash
# Seed 002: readahead vs max_sectors_kb over iSCSI on 1 GbE.  Buffered
# sequential reads from the iscsi-1gbe profile (a 112 MiB/s link with a
# 0.3 ms round trip in front of a target that serves one command at a
# time: 1.5 ms plus the data at 150 MiB/s), for
# a grid of client read_ahead_kb x max_sectors_kb.  Throughput plateaus
# near the link rate when requests are large and many, and drops as a
# smaller max_sectors_kb multiplies round trips.
#   blkemu-vm scenarios/readahead-iscsi.sh
# The transport is a real iSCSI session: the disk exported by blkemu-scsi
# through LIO's iSCSI target on the guest's loopback address, open-iscsi
# logged in to it (the link model in front stands for the 1 GbE wire).
# Without LIO's modules or open-iscsi it falls back to NBD, and says so.
# Environment: SLOWDOWN (default 10: the device's clock runs 10x slower so
# the TCG guest's own costs stay small; figures are shown both as measured
# and x SLOWDOWN, the rate the modelled link would give), MB per cell (16),
# TRANSPORT=nbd to take NBD anyway.
# budget: 100 s
# quiet: "the best cell gets past 55% of the link" is a throughput floor
# the TCG guest keeps only with the host's cores to itself (41% beside
# the sanitizer suites in ci20, 55% and more alone)
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
slowdown=${SLOWDOWN:-10}
mb=${MB:-16}
ras="128 512 2048"
msks="64 128 512"
keys="profile=iscsi-1gbe size=1G slowdown=$slowdown"

transport=${TRANSPORT:-iscsi}
if [ "$transport" = iscsi ] &&
  ! { command -v iscsiadm > /dev/null && command -v "$SCSI" > /dev/null &&
      modprobe target_core_user 2>/dev/null && modprobe iscsi_target_mod 2>/dev/null; }; then
  echo "  no LIO iSCSI target or open-iscsi here: over NBD instead"
  transport=nbd
fi
if [ "$transport" = iscsi ]; then
  scsi_start iscsi --iscsi 127.0.0.1:3260 \
    --disk "name=iscsi,${keys// /,},control=$work/iscsi.ctl,stats=$results/iscsi.json"
  read -r iqn portal <<< "${sd[iscsi]}"
  dev=$(iscsi_login "$iqn" "$portal") || { check "log in to $iqn" 1 -eq 0; finish; exit 1; }
  echo "  an iSCSI session to $iqn on $portal: $dev ($(cat /sys/block/${dev#/dev/}/device/vendor | tr -s ' ') $(cat /sys/block/${dev#/dev/}/device/model | tr -s ' '))"
  check "the disk is an iSCSI session's ($(ls /sys/class/iscsi_session | wc -l) session)" \
    "$(readlink -f /sys/block/${dev#/dev/} | grep -c session)" -eq 1
else
  modprobe nbd nbds_max=4
  # shellcheck disable=SC2086
  disk_start iscsi $keys
  "$ATTACH" nbd "$work/iscsi.sock" /dev/nbd0 > /dev/null
  dev=/dev/nbd0
fi
q=/sys/block/${dev#/dev/}/queue
link=$(awk 'BEGIN { print 112 * 1048576 / 1e6 }')   # MB/s

declare -A rate reqsize
offset=0
for ra in $ras; do
  for msk in $msks; do
    echo "$ra" > $q/read_ahead_kb
    echo "$msk" > $q/max_sectors_kb
    echo 3 > /proc/sys/vm/drop_caches
    ctl iscsi reset
    # A fresh region each time: nothing cached, the same distance from 0.
    t0=$(date +%s%N)
    # 64 KiB reads, smaller than any window: readahead decides what the
    # target sees (a read larger than read_ahead_kb sets the window itself).
    dd if="$dev" of=/dev/null bs=64K count=$((mb * 16)) skip=$((offset * 16)) status=none
    t1=$(date +%s%N)
    offset=$((offset + mb))
    rate[$ra,$msk]=$(awk -v b=$((mb << 20)) -v ns=$((t1 - t0)) -v k="$slowdown" \
      'BEGIN { printf "%.1f", b / (ns / 1e9) / 1e6 * k }')
    reqsize[$ra,$msk]=$(disk_stat iscsi '(.ops.read.bytes / ([.ops.read.requests, 1] | max) / 1024) | floor')
    largest=$(max_size iscsi read)
    check "ra=$ra msk=$msk: no request above ${msk}K ($(kib "$largest")K)" "$largest" -le $((msk * 1024))
  done
done

echo
echo "  buffered sequential read, MB/s the modelled link gives (measured x $slowdown);"
echo "  link rate $link MB/s; in brackets the mean request size the target saw (KiB)"
printf '  %-16s' "read_ahead_kb"
for msk in $msks; do printf '%18s' "msk=$msk"; done
echo
for ra in $ras; do
  printf '  %-16s' "$ra"
  for msk in $msks; do printf '%11s [%4s]' "${rate[$ra,$msk]}" "${reqsize[$ra,$msk]}"; done
  echo
done
echo

best=0
for k in "${!rate[@]}"; do
  best=$(awk -v a="$best" -v b="${rate[$k]}" 'BEGIN { print (b > a) ? b : a }')
done
ge () { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
check "the best cell ($best MB/s) does not beat the link ($link)" "$(ge "$link" "$(awk -v b="$best" 'BEGIN { print b / 1.03 }')" && echo 1 || echo 0)" = 1
# 512 KiB requests could fill the link (model: 109 MB/s with the target
# always busy); the kernel's readahead leaves gaps between windows, so
# ask for most of it, not all.
check "the best cell gets past 55% of the link" "$(ge "$best" "$(awk -v l="$link" 'BEGIN { print l * 0.55 }')" && echo 1 || echo 0)" = 1
check "ra=2048: msk=64 slower than msk=512 (${rate[2048,64]} < ${rate[2048,512]})" \
  "$(ge "${rate[2048,512]}" "$(awk -v v="${rate[2048,64]}" 'BEGIN { print v * 1.15 }')" && echo 1 || echo 0)" = 1
check "msk=128 near the seed's ~50 MB/s (${rate[2048,128]} MB/s, model 56)" \
  "$(ge "${rate[2048,128]}" 35 && ge 75 "${rate[2048,128]}" && echo 1 || echo 0)" = 1
check "msk=64 slower still (${rate[2048,64]} MB/s, model 34)" \
  "$(ge "${rate[2048,128]}" "${rate[2048,64]}" && echo 1 || echo 0)" = 1
seen iscsi
if [ "$transport" = iscsi ]; then
  iscsi_logout "$iqn" "$portal"
  scsi_stop iscsi
else
  "$ATTACH" detach /dev/nbd0
  disk_stop iscsi
fi
finish
