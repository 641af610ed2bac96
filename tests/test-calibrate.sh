#!/usr/bin/env bash
# blkemu-calibrate on blkemu disks whose timing is known (blkemu-fuse under
# loop devices with direct I/O): the profile it writes names the right
# model and parameters, a disk made from that profile answers the same
# probes within tolerance (the round trip), limits come from the loop
# device's queue, a blktrace capture fits too, and bad options are refused.
source "$(dirname "$0")/functions.sh"
requires_fuse_loop
requires fio --version
requires jq --version
cal=$top/tools/blkemu-calibrate
key () { profile_key "$@"; }
us () { echo "${1%us}"; }

section () { echo; echo "== $*"; }

section "bad options"
refuses "DEVICE is required" "$cal" -o "$tmp/x.conf"
truncate -s 1M "$tmp/f"
refuses "-o FILE is required" "$cal" "$tmp/f"
refuses "--runtime 0: must be a number of seconds from 0.2 to 600" "$cal" /dev/null -o x --runtime 0
refuses "--model ssdd: must be fixed, ssd, array or hdd" "$cal" /dev/null -o x --model ssdd
refuses "--rpm 99: must be a whole number from 1000 to 30000" "$cal" /dev/null -o x --rpm 99
refuses "DEVICE /nonexistent: no such file or device" "$cal" /nonexistent -o x
refuses "unknown option '--frob'" "$cal" --frob
refuses "--tolerance ten: must be a percentage" "$cal" "$tmp/f" --compare "$tmp/f" --tolerance ten
refuses "--baseline /nonexistent: not a block device or a regular file" "$cal" "$tmp/f" -o x --baseline /nonexistent
refuses "--baseline goes with a fit" "$cal" "$tmp/f" --compare "$tmp/f" --baseline "$tmp/f"
refuses "--name a/b: letters, digits" "$cal" "$tmp/f" -o x --name a/b
refuses "--limits-only and --compare do not go together" "$cal" "$tmp/f" --compare "$tmp/f" --limits-only
refuses "--size goes with --from-blktrace" "$cal" "$tmp/f" -o x --size 1G
refuses "--size 4Q: must be a size of at least 1M" "$cal" --from-blktrace "$tmp/f" -o x --size 4Q
"$cal" --help > "$tmp/help"
for o in --output --quick --thorough --runtime --limits-only --segment-keys --model --rpm \
         --destructive --flash --flash-idle --flash-seconds --range --yes --baseline --probes --compare --tolerance --json \
         --from-blktrace --size --name --quiet; do
  grep -q -- "$o" "$tmp/help" || fail "--help lacks $o"
done
echo "ok: --help lists every option"

section "limits only, with and without --segment-keys (a plain loop device)"
truncate -s 64M "$tmp/plain"
pl=$(loop_attach "$tmp/plain")
"$cal" "$pl" -o "$tmp/plain.conf" --limits-only -q
"$cal" "$pl" -o "$tmp/seg.conf" --limits-only --segment-keys -q
expect_eq "no timing keys with --limits-only" "$(grep -cE '^(model|latency-read) ' "$tmp/plain.conf")" 0
expect_eq "segment keys commented out by default" "$(grep -cE '^# (max-segments|dma-alignment) = ' "$tmp/plain.conf")" 2
expect_eq "--segment-keys writes them as keys" "$(grep -cE '^(max-segments|dma-alignment) = ' "$tmp/seg.conf")" 2
expect_eq "max-segments from queue/max_segments" "$(key max-segments "$tmp/seg.conf")" \
  "$(cat "/sys/block/${pl#/dev/}/queue/max_segments")"

mnt=$tmp/mnt
fuse_mount "$mnt" \
  --disk name=ref,size=1G,latency-read=2ms,bandwidth=100M,channels=4,latency-write=1ms,latency-flush=3ms \
  --disk name=hdd,size=4G,model=hdd,rpm=7200 \
  --disk name=small,size=8M \
  --disk name=instant,size=1G
refuses "at least 16M needed to probe" "$cal" "$mnt/small" -o x
refuses "--range 0:4M: LENGTH must be at least 16M" "$cal" "$mnt/ref" -o x --range 0:4M
refuses "confirm with --yes" "$cal" "$mnt/ref" -o x --destructive < /dev/null

section "a fixed-latency disk, with write probes (a 4K logical block)"
ref=$(loop_attach "$mnt/ref" --direct-io=on --sector-size 4096)
# The instant disk on the same transport is what FUSE and the loop device
# add; without it the copy pays that time twice (+9.6% on 4K reads, +14%
# on 1 ms writes where idle CPUs wake slowly, as on CI's host).
instant=$(loop_attach "$mnt/instant" --direct-io=on --sector-size 4096)
# What this host adds to a request that waits (waking the thread that
# completes it), measured apart from blkemu-calibrate: fio's QD1 reads
# of the 2 ms disk less the instant disk's, less 2 ms.  No baseline
# takes it out and a copy pays it twice; every check below is of
# measured time, with margins that hold where it is small.  Some
# virtual machines' idle CPUs wake in 100-450 us and vary by that from
# one probe to the next (fio 108 us, blkemu-calibrate's own 4K probe
# +479 us in one run; the blktrace fit's D-to-C times 7% long): there
# the timed checks print what was measured and hold nothing (timed,
# timed_eq), the round trips only that every probe was answered; what
# does not depend on the host's timing (limits, sizes, which model,
# which probes, refusals) is held everywhere.
qd1_read_us () {
  fio --name=qd1 --filename="$1" --rw=randread --bs=4k --direct=1 \
    --ioengine=psync --runtime=2 --time_based --output-format=json |
    jq '.jobs[0].read.clat_ns.mean / 1000 | floor'
}
wake=$(( $(qd1_read_us "$ref") - $(qd1_read_us "$instant") - 2000 ))
# Whether this host is too noisy to hold timing is judged without
# blkemu (a blkemu lateness regression must fail the timed checks, not
# turn them off): tests/wake-ref's threads sleep 2 ms to absolute
# deadlines and each wakes a partner, the hand-offs a request that
# waits makes on its way back through FUSE and the loop device.
WAKE_REF=${WAKE_REF:-$BLKEMU_BUILD/tests/wake-ref}
"$WAKE_REF" --pairs 1 --period-us 2000 --seconds 2 > "$tmp/wake-ref.json" || fail "wake-ref failed"
host_wake=$(jq '.handoff_late_us.mean | floor' "$tmp/wake-ref.json")
noisy= tolerance=()
if [ "$host_wake" -ge 40 ]; then
  noisy=$host_wake tolerance=(--tolerance 1000)
  echo "note: this host wakes a waiting thread $host_wake us late (40 or more; measured"
  echo "      without blkemu): timing is printed, not held; limits, models and"
  echo "      probes are (a request that waits costs $wake us more through blkemu here)"
else
  echo "ok: this host wakes a waiting thread $host_wake us late (without blkemu);"
  echo "    a request that waits costs $wake us more through FUSE and the loop device"
fi
# timed WHAT ACTUAL EXPECTED PERCENT: within, where the host allows it.
timed () {
  if [ -n "$noisy" ]; then
    echo "not held (host wake-ups of $noisy us): $1 = $2 (expected $3 +-$4%)"
  else
    within "$@"
  fi
}
timed_eq () {
  if [ -n "$noisy" ]; then
    echo "not held (host wake-ups of $noisy us): $1 = $2 (expected $3)"
  else
    expect_eq "$@"
  fi
}
"$cal" "$ref" -o "$tmp/ref.conf" --runtime 1 --destructive --yes \
  --baseline "$instant" --probes "$tmp/ref.probes" --json "$tmp/ref.json"
expect_eq "model" "$(key model "$tmp/ref.conf")" fixed
# What the instant baseline cannot take out: a request that waits is
# woken, and that costs what the instant disk's never pay (latency-read
# measured +5.8, +7 and +10.2% over six runs here, latency-write +6.6
# and +10.5%, latency-flush +4.6 and +5.5%): 15% on each.
timed "latency-read (us)" "$(us "$(key latency-read "$tmp/ref.conf")")" 2000 15
timed "bandwidth" "$(key bandwidth "$tmp/ref.conf")" 104857600 10
timed_eq "channels" "$(key channels "$tmp/ref.conf")" 4
timed "latency-write (us)" "$(us "$(key latency-write "$tmp/ref.conf")")" 1000 15
timed "latency-flush (us)" "$(us "$(key latency-flush "$tmp/ref.conf")")" 3000 15
expect_eq "logical-block-size from queue/logical_block_size" \
  "$(key logical-block-size "$tmp/ref.conf")" 4096
expect_eq "max-transfer from queue/max_hw_sectors_kb" \
  "$(key max-transfer "$tmp/ref.conf")" "$(cat "/sys/block/${ref#/dev/}/queue/max_hw_sectors_kb")K"
expect_eq "size" "$(key size "$tmp/ref.conf")" 1073741824
grep -q "^# queue/logical_block_size$" "$tmp/ref.conf" || fail "keys do not say where they came from"
expect_eq "JSON: model and probes" "$(jq -r '"\(.model) \(.probes | length)"' "$tmp/ref.json")" "fixed 11"

fuse_mount "$tmp/mnt2" --disk "name=copy,profile=$tmp/ref.conf"
copy=$(loop_attach "$tmp/mnt2/copy" --direct-io=on --sector-size 4096)
# A 4M read reaches blkemu-fuse as pieces on several threads, which the
# disk's 4 channels serve in whatever order they come: two clean-clone CI
# runs measured the copy's 4M reads +11% and +12% where earlier runs gave
# +1.5..+1.9%.  The transport, not the profile: it is left out here.
grep -v '^rand-4m ' "$tmp/ref.probes" > "$tmp/ref.held"
# The probes file holds write probes: running them is overwriting the
# device, which --compare does only with the same consent as a fit.
w=$(awk '$2 ~ /write/ || $7 == "sync"' "$tmp/ref.held" | wc -l)
refuses "--compare $tmp/ref.held: $w of its probes write to $copy: give --destructive" \
  "$cal" "$copy" --compare "$tmp/ref.held" --runtime 1 -q
refuses "write probes outside --range 0:16M" \
  "$cal" "$copy" --compare "$tmp/ref.held" --runtime 1 -q --range 0:16M
echo "round trip: every probe but the 4M read within 10%"
"$cal" "$copy" --compare "$tmp/ref.held" --runtime 1 -q --destructive --yes "${tolerance[@]}" ||
  fail "the disk made from the calibrated profile differs by more than 10%"
"$cal" "$copy" -o "$tmp/copy.conf" --limits-only -q
diff <(sed -n '/^$/,/^$/p' "$tmp/ref.conf" | grep -v '^#' | grep .) \
     <(grep -v '^#' "$tmp/copy.conf" | grep .) ||
  fail "limits differ between the disk and its copy"
echo "ok: limits identical"

section "a rotational disk (queue/rotational is 0 on loop: found by its seeks)"
hdd=$(loop_attach "$mnt/hdd" --direct-io=on)
"$cal" "$hdd" -o "$tmp/hdd.conf" --runtime 2 --probes "$tmp/hdd.probes"
expect_eq "model" "$(key model "$tmp/hdd.conf")" hdd
timed "rpm" "$(key rpm "$tmp/hdd.conf")" 7200 10
timed "seek-avg (us)" "$(us "$(key seek-avg "$tmp/hdd.conf")")" 8500 25
timed "zone-rate-inner" "$(key zone-rate-inner "$tmp/hdd.conf")" 78643200 20
fuse_mount "$tmp/mnt3" --disk "name=copy,profile=$tmp/hdd.conf"
hcopy=$(loop_attach "$tmp/mnt3/copy" --direct-io=on)
# Reads of 1M and more are not compared: the loop device's 128 segments
# cut them into pieces that blkemu-fuse receives on several threads, out
# of order, and the hdd model charges a rotation to each piece that does
# not follow the one before.  From one run to the next the same disk
# measured 109 to 146 MiB/s at 1M QD8 and 53 to 87 ms for a random 4M
# read.  The edge probes that give the zone rates are sized to arrive
# whole (512K here) and are compared.  Nor is the sequential 4K stream:
# the disk's part of it is 27 us, FUSE and the loop device add 30 to 50
# us more, which a busy host moves by a third (56 vs 76 us seen).
expect_eq "edge probes sized to reach the disk whole (128 segments of 4K)" \
  "$(awk '$1 ~ /^(outer|inner)-/ { print $1 }' "$tmp/hdd.probes" | tr '\n' ' ')" \
  "outer-4k outer-512k inner-4k inner-512k "
grep -vE '^(seqbw-qd8|rand-1m|rand-4m|seq-4k) ' "$tmp/hdd.probes" > "$tmp/hdd.random"
[ "$(wc -l < "$tmp/hdd.random")" -eq 10 ] || fail "expected 10 hdd probes of random reads under 1M, got $(wc -l < "$tmp/hdd.random")"
echo "round trip: the 10 probes of random reads under 1M within 15% (~150 reads each, 1 to 30 ms apiece)"
"$cal" "$hcopy" --compare "$tmp/hdd.random" --tolerance 15 --runtime 2 -q "${tolerance[@]}" ||
  fail "the hdd made from the calibrated profile differs by more than 15%"

section "the host's own loop device over a RAM-backed file (a sanity case, --thorough)"
ram=/dev/shm/blkemu-calibrate.$$
truncate -s 64M "$ram"
cleanup_hooks+=("rm -f '$ram'")
rl=$(loop_attach "$ram")
cleanup_hooks+=("losetup -d '$rl' 2>/dev/null")
"$cal" "$rl" -o "$tmp/ram.conf" --thorough --runtime 0.3 -q
grep -E '^(model|latency-read|channels) ' "$tmp/ram.conf"
expect_eq "thorough: every probe fitted" "$(grep -c '^#   ' "$tmp/ram.conf")" 15
expect_eq "a RAM-backed disk is not an hdd" "$(key model "$tmp/ram.conf" | grep -vc hdd)" 1
lat=$(us "$(key latency-read "$tmp/ram.conf")")
[ "$lat" -lt 1000 ] || fail "a RAM-backed loop device with a 4K read above 1 ms ($lat us)"
echo "ok: latency-read ${lat}us (under 1 ms)"

section "from a blktrace capture"
fuse_mount "$tmp/mnt4" --disk \
  name=traced,size=1G,latency-read=1500us,bandwidth=200M,channels=2,latency-write=800us,write-bandwidth=100M,trace=$tmp/traced.blktrace,trace-format=blktrace
traced=$(loop_attach "$tmp/mnt4/traced" --direct-io=on)
# sizes the loop device passes whole (a 1M read reaches the disk as
# two overlapping pieces)
for bs in 4k 64k 256k; do
  fio --name=t --filename="$traced" --direct=1 --rw=randread --bs=$bs \
    --runtime=1 --time_based --readonly --output=/dev/null
done
fio --name=t --filename="$traced" --direct=1 --ioengine=libaio --iodepth=8 \
  --rw=randread --bs=4k --runtime=1 --time_based --readonly --output=/dev/null
# writes one at a time (their D-to-C times are the write latencies),
# then eight at once, which queue in the disk and must not count
for bs in 4k 256k; do
  fio --name=t --filename="$traced" --direct=1 --rw=randwrite --bs=$bs \
    --runtime=1 --time_based --output=/dev/null
done
fio --name=t --filename="$traced" --direct=1 --ioengine=libaio --iodepth=8 \
  --rw=randwrite --bs=4k --runtime=1 --time_based --output=/dev/null
fuse_umount "$tmp/mnt4" "$fuse_pid"   # the trace is complete at exit
"$cal" --from-blktrace "$tmp/traced.blktrace" -o "$tmp/traced.conf" -q
sed -n '1,/^$/p' "$tmp/traced.conf"
expect_eq "a capture of a disk without seeks is not an hdd" "$(key model "$tmp/traced.conf")" fixed
timed "latency-read from D-to-C times (us)" "$(us "$(key latency-read "$tmp/traced.conf")")" 1500 5
timed "bandwidth" "$(key bandwidth "$tmp/traced.conf")" 209715200 10
timed_eq "channels: completions while reads overlap x service time" "$(key channels "$tmp/traced.conf")" 2
timed "latency-write from the writes' D-to-C times (us)" "$(us "$(key latency-write "$tmp/traced.conf")")" 800 10
timed "write-bandwidth from 4K against 256K writes" "$(key write-bandwidth "$tmp/traced.conf")" 104857600 10

section "a rotational disk from a blktrace capture (seek distances)"
fuse_mount "$tmp/mnt5" --disk \
  name=spun,size=4G,model=hdd,rpm=7200,trace=$tmp/spun.blktrace,trace-format=blktrace
spun=$(loop_attach "$tmp/mnt5/spun" --direct-io=on)
# QD1 reads over the whole disk and over spans of it, a sequential
# stream and larger random reads: the spread of distances a capture of
# a busy real disk holds.  (No reads above 64K: blkemu-fuse receives
# those in pieces at once, which the capture shows as parallel service,
# not as reads alone on the device.)
for job in "randread 4k 0 4G 3" "randread 4k 1G 256M 2" "randread 4k 2G 16M 2" \
           "randread 4k 3G 1M 2" "read 4k 0 4G 1" "randread 64k 0 4G 4"; do
  set -- $job
  fio --name=t --filename="$spun" --direct=1 --rw=$1 --bs=$2 --offset=$3 --size=$4 \
    --runtime=$5 --time_based --norandommap --readonly --output=/dev/null
done
fuse_umount "$tmp/mnt5" "$fuse_pid"
"$cal" --from-blktrace "$tmp/spun.blktrace" --size 4G -o "$tmp/spun.conf" --probes "$tmp/spun.probes" -q
sed -n '1,/^$/p' "$tmp/spun.conf"
grep -E '^(dist|rand|seq)-' "$tmp/spun.probes"
expect_eq "model: near reads faster than far ones" "$(key model "$tmp/spun.conf")" hdd
timed "rpm from the near reads' spread" "$(key rpm "$tmp/spun.conf")" 7200 10
timed "seek-avg (us) from the distance classes" "$(us "$(key seek-avg "$tmp/spun.conf")")" 8500 15
# The disk's media rate runs from 150 MiB/s outside to 75 inside: random
# 64K reads over all of it see about 112.  A coarse check: their
# transfer (0.5 ms) is measured under a rotational wait of 0 to 8.3 ms,
# and 280 reads pin its mean to about +-0.15 ms (a bad fit was 10x off).
timed "zone rate from 64K reads less their seeks" "$(key zone-rate-outer "$tmp/spun.conf")" 117440512 40
expect_eq "the seek curve from the capture's distance classes" \
  "$(grep -c '^#   dist-' "$tmp/spun.conf")" "$(grep -c '^dist-' "$tmp/spun.probes")"
echo "PASS"
