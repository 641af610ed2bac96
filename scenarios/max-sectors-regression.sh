#!/usr/bin/env bash
# Seed 000: the max_hw_sectors cap revert.  The seed's fio job (sync,
# direct, sequential write at 1M, 2M, 4M) on array and nearline-disk
# profiles with max_sectors_kb 1024 and 32767, RUNS runs each, and a %diff
# table like the seed's (negative: 32767 is slower).
#   blkemu-vm scenarios/max-sectors-regression.sh
# Environment: RUNS (default 3), SIZE_MB per job (default 16),
# PROFILES (default "san-hsv400 san-xiv wd-re-500g"), SLOWDOWN (default 25),
# HDD_CACHE and HDD_SIZE_MB (the WD RE's cache and job size, 4M and 64),
# HDD_SLOWDOWN (the WD RE's, default 10),
# TRANSPORT (ublk or nbd; default ublk where the kernel has it),
# BLKEMU_SCENARIO_SCALE (full, the default: the seed's table over three
# profiles and RUNS runs, its %diffs asserted; quick, as the suite runs
# it: one run of san-hsv400 whose request sizes are asserted and whose
# figures are printed only, the timing left to make check-long).
#
# Under TCG the guest spends ~15 ms of CPU per MiB moved through nbd, more
# than the emulated devices take; slowdown=N stretches every request's
# modelled time N-fold (exact for this queue-depth-1 job) so the device,
# not the emulator's host, dominates what fio measures.  What remains of
# the host is larger for one 4M request than for four 1M ones (nbdkit reads
# the whole payload before the request reaches the device, while 1M pieces
# overlap their reception); san-xiv, an array whose cost does not depend
# on request size, is the control that measures it.  Runs of the two
# settings alternate, after a warm-up pass that allocates the disk's
# memory, so drift and first-touch costs hit both alike; which setting
# goes first flips every run, and every job starts from the same device
# state (setting slowdown again resets the model: an empty write-back
# cache, the head at the start), so no job inherits the last one's cache
# fill.
#
# The seed wrote 1 GiB per job: its figures are the drives' steady state,
# the write-back cache long full.  A 16 MiB job into the WD RE's 64 MB
# cache would measure only the host pipe, so here its cache is shrunk to
# HDD_CACHE (default 4M, the largest command, printed in the table) and
# its jobs are HDD_SIZE_MB (default 64): past the first few megabytes
# every job runs at the media's pace, as the seed's did.  (With 16 MiB
# jobs the cache's head start is a quarter of each job and hides a third
# of the 4M regression; with a 1M cache a 2M command gains on two 1M
# ones: +8%, measured.)
#
# Transport (TRANSPORT=ublk|nbd; default ublk where the kernel has
# ublk_drv, else nbd): nbd makes the guest push each write's payload
# through a socket into nbdkit before the device sees the request, and
# under TCG that copy is real time against the dilated device — the
# control drifts (-4..-7% at 2M, -12% at 4M measured over nbd).  Through
# blkemu-ublk the kernel hands the server a request whose data is already
# in its buffer: the emulator's own cost is small against the device's.
# budget: 150 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
scale=${BLKEMU_SCENARIO_SCALE:-full}
if [ "$scale" = quick ]; then
  : "${RUNS:=1}" "${PROFILES:=san-hsv400}" "${SIZE_MB:=8}"
fi
transport=${TRANSPORT:-}
if [ -z "$transport" ]; then
  transport=nbd
  ublk_available && transport=ublk
fi
[ "$transport" = nbd ] && modprobe nbd nbds_max=4
echo "transport: $transport"
# Three runs: two held every %diff to a point here, but on CI's host
# two runs once put the control at -8% at 4M (-3 here).
runs=${RUNS:-3}
size_mb=${SIZE_MB:-16}
slowdown=${SLOWDOWN:-25}
# The WD RE's 64 MiB jobs at 150 MB/s need less stretching than the
# arrays' 16 MiB ones (it runs over ublk only): -32% at 4M at 10, -33%
# at 25, measured, in half the time (139 s against 259 s).
hdd_slowdown=${HDD_SLOWDOWN:-${SLOWDOWN:-10}}
profiles=${PROFILES:-"san-hsv400 san-xiv wd-re-500g"}
if [ "$transport" = nbd ] && [ -z "${PROFILES:-}" ]; then
  # Over nbd the 1M pieces of a 1024 job queue behind each other's
  # payloads on the socket, and the disk's steady state is lost: on 6.1
  # the WD RE measured +20% at 2M and -13% at 4M.  Its row needs ublk.
  profiles="san-hsv400 san-xiv"
  echo "(wd-re-500g runs over ublk only: over nbd the transport distorts its steady state)"
fi
hdd_cache=${HDD_CACHE:-4M}
hdd_size_mb=${HDD_SIZE_MB:-64}

# write_job DEV BS: the seed's job for one block size, $job_mb MiB;
# prints the write bandwidth (KiB/s) and mean completion latency (us).
write_job () {
  fio --name="$2" --filename="$1" --ioengine=sync --direct=1 --rw=write \
      --bs="$2" --size="${job_mb}M" --output-format=json 2>/dev/null |
    jq -r '.jobs[0].write | "\(.bw) \(.clat_ns.mean / 1000)"'
}

for p in $profiles; do
  section "$p"
  extra=() job_mb=$size_mb stretch=$slowdown
  [ "$p" = wd-re-500g ] && extra=(cache-size="$hdd_cache") job_mb=$hdd_size_mb stretch=$hdd_slowdown
  if [ "$transport" = ublk ]; then
    dev=$(ublk_disk_start "$p" profile="$p" size=1G "${extra[@]}") || exit 1
  else
    disk_start "$p" profile="$p" size=1G "${extra[@]}"
    "$ATTACH" nbd "$work/$p.sock" /dev/nbd0 > /dev/null
    dev=/dev/nbd0
  fi
  q=/sys/block/${dev#/dev/}/queue
  write_job "$dev" 4M > /dev/null          # warm-up: allocate the region
  ctl "$p" set slowdown="$stretch" > /dev/null
  ctl "$p" reset
  declare -A bw lat largest
  for r in $(seq "$runs"); do
    order="1024 32767"
    [ $((r % 2)) -eq 0 ] && order="32767 1024"
    for bs in 1M 2M 4M; do
      for kb in $order; do
        echo "$kb" > "$q/max_sectors_kb"
        ctl "$p" set slowdown="$stretch" > /dev/null
        read -r b l < <(write_job "$dev" "$bs")
        bw[$kb,$bs]=$(awk -v a="${bw[$kb,$bs]:-0}" -v b="$b" 'BEGIN { print a + b }')
        lat[$kb,$bs]=$(awk -v a="${lat[$kb,$bs]:-0}" -v b="$l" 'BEGIN { print a + b }')
        m=$(max_size "$p" write)
        [ "$m" != none ] && [ "$m" -gt "${largest[$kb]:-0}" ] && largest[$kb]=$m
        ctl "$p" reset
      done
    done
    echo "  run $r of $runs done"
  done
  for key in "${!bw[@]}"; do
    bw[$key]=$(awk -v s="${bw[$key]}" -v n="$runs" 'BEGIN { printf "%.1f", s / n / 1024 }')
    lat[$key]=$(awk -v s="${lat[$key]}" -v n="$runs" 'BEGIN { printf "%.0f", s / n }')
  done
  # Exactly 1M: the writes were cut there, and they did reach the disk.
  check "max_sectors_kb=1024: 4M writes reached the disk cut to 1M, none larger (${largest[1024]})" \
    "${largest[1024]}" -eq $((1 << 20))
  check "max_sectors_kb=32767: whole 4M writes reached the disk (${largest[32767]})" \
    "${largest[32767]}" -eq $((4 << 20))
  echo
  echo "  over $transport, $job_mb MiB per job, average of $runs runs at slowdown=$stretch${extra:+, ${extra[*]} (steady state)}; %diff = 32767 vs 1024 (negative: slower)"
  printf '  %-4s %11s %11s %7s   %11s %11s %7s\n' job "1024 MiB/s" "32767 MiB/s" "BW%" \
    "1024 msec" "32767 msec" "msec%"
  for bs in 1M 2M 4M; do
    d=$(awk -v a="${bw[1024,$bs]}" -v b="${bw[32767,$bs]}" 'BEGIN { printf "%.0f", (b - a) / a * 100 }')
    dl=$(awk -v a="${lat[1024,$bs]}" -v b="${lat[32767,$bs]}" 'BEGIN { printf "%.0f", (b - a) / a * 100 }')
    printf '  %-4s %11s %11s %7s   %11.2f %11.2f %7s\n' "$bs" "${bw[1024,$bs]}" "${bw[32767,$bs]}" "$d" \
      "$(awk -v v="${lat[1024,$bs]}" 'BEGIN { print v / 1000 }')" \
      "$(awk -v v="${lat[32767,$bs]}" 'BEGIN { print v / 1000 }')" "$dl"
    eval "diff_${p//-/_}_$bs=$d"
  done
  if [ "$transport" = ublk ]; then
    ublk_disk_stop "$p"
  else
    "$ATTACH" detach /dev/nbd0
    disk_stop "$p"
  fi
  unset bw lat largest
done

echo
if [ "$scale" != full ]; then
  echo "  (BLKEMU_SCENARIO_SCALE=$scale: $runs run(s), the figures above are not asserted;"
  echo "   the seed's %diffs are checked at full scale: make check-long)"
  finish
  exit
fi
# At 1M both settings send the same requests: what differs is the
# transport's noise, held to the control's bound (TCG over nbd moved an
# identical 1M job by 7% once).
ctl_max=15
[ "$transport" = ublk ] && ctl_max=8
for p in $profiles; do
  v=diff_${p//-/_}_1M
  check "$p: no change at 1M (${!v}%, within $ctl_max% over $transport)" "${!v#-}" -le $ctl_max
done
if [[ " $profiles " == *" san-hsv400 "* ]]; then
  check "san-hsv400: 2M writes slower with 32767 ($diff_san_hsv400_2M%)" "$diff_san_hsv400_2M" -le -7
  check "san-hsv400: 4M writes slower with 32767 ($diff_san_hsv400_4M%)" "$diff_san_hsv400_4M" -le -10
fi
if [[ " $profiles " == *" san-xiv "* ]]; then
  # The control's own %diff is the emulator host's share: over nbd, TCG
  # moving a 4 MiB payload before the device sees the request (bounded,
  # not zero); over ublk it is 3% here (measured: 0, -3, -3, -4) and was
  # -5/-8 at 2M/4M on CI's slower host, where TCG's copies weigh more:
  # asserted to 8%, well clear of san-hsv400's -12/-21.
  check "san-xiv (control): 2M within $ctl_max% over $transport (${diff_san_xiv_2M}%)" "${diff_san_xiv_2M#-}" -le $ctl_max
  check "san-xiv (control): 4M within $ctl_max% over $transport (${diff_san_xiv_4M}%)" "${diff_san_xiv_4M#-}" -le $ctl_max
  if [[ " $profiles " == *" san-hsv400 "* ]]; then
    check "san-hsv400 regresses beyond the control at 2M ($diff_san_hsv400_2M% vs $diff_san_xiv_2M%)" \
      "$diff_san_hsv400_2M" -le $((diff_san_xiv_2M - 3))
    check "san-hsv400 regresses beyond the control at 4M ($diff_san_hsv400_4M% vs $diff_san_xiv_4M%)" \
      "$diff_san_hsv400_4M" -le $((diff_san_xiv_4M - 4))
  fi
fi
if [[ " $profiles " == *" wd-re-500g "* ]]; then
  # Seed 000's nearline disk: 0% at 1M and 2M, -30% at 4M (its 2M command
  # buffer, blkemu-models(7)); beyond the control's own drift.
  check "wd-re-500g: no change at 2M ($diff_wd_re_500g_2M%)" "${diff_wd_re_500g_2M#-}" -le 5
  # Over nbd the emulator's own drift (the control's) adds to it.
  lo=-40
  [ "$transport" = nbd ] && lo=-55
  check "wd-re-500g: 4M writes 20..${lo#-}% slower with 32767 over $transport ($diff_wd_re_500g_4M%; the seed: -30%)" \
    "$diff_wd_re_500g_4M" -le -20 -a "$diff_wd_re_500g_4M" -ge $lo
  if [[ " $profiles " == *" san-xiv "* ]]; then
    check "wd-re-500g regresses beyond the control at 4M ($diff_wd_re_500g_4M% vs $diff_san_xiv_4M%)" \
      "$diff_wd_re_500g_4M" -le $((diff_san_xiv_4M - 10))
  fi
fi
finish
