#!/usr/bin/env bash
# Crash states explored on a real block device: ext4 on a blkemu-ublk disk
# with a volatile write cache, checked by blkemu-crashcheck.
#   1. A metadata-heavy epoch (create, write, rename, fsync, unlink,
#      unflushed direct writes) ends in a power-off with its unflushed
#      writes kept; STATES (default 200) torn crash states of it each
#      mount (journal replay into the view) and pass fsck.ext4 -fn.
#   2. The same epoch with barrier=0 (ext4 sends no flushes): the explorer
#      finds a corrupt state, and --replay of its seed fails again.
#   3. An application committing records (tests/crash-records.c): with
#      fdatasync after each record every acknowledged record is in every
#      crash state; without it the explorer finds states that lost
#      acknowledged records.
# The disk itself is never changed by the views.
#   blkemu-vm scenarios/crashcheck-ublk.sh
# blkemu-vm: needs ublk_drv
# budget: 200 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe ext4 2>/dev/null || true
states=${STATES:-200}
# The fdatasync section's states: 40, or 12 at quick scale (CI's suite);
# without fdatasync 20, or 5 (every one of 20 lost records when measured:
# the file's directory entry was never committed).
fsync_states=40 nofsync_states=20
[ "${BLKEMU_SCENARIO_SCALE:-full}" = quick ] && fsync_states=12 nofsync_states=5
crashcheck=$CRASHCHECK records=${top:+$top/build/tests/}crash-records
command -v "$records" > /dev/null ||
  { echo "SKIP: crash-records is built in the source tree only (build/tests)"; exit 77; }
source "$top/tests/metadata-epoch.sh"
mnt=$work/fs chk=$work/check
mkdir -p "$mnt" "$chk"
dev=$(ublk_disk_start fs size=128M write-cache=yes cache-size=64M \
  physical-block-size=4096 "trace=$work/fs.trace") || exit 1
echo "  $dev: write cache on, 4K physical blocks (a torn write is cut at 4K)"
stats () { disk_stat fs "$1"; }

mkfs_mount () { fresh_ext4 fs "$dev" "$mnt" "$1"; }
power_cut () { cut_power fs "$dev" "$mnt"; }
# epoch OPTIONS: the metadata-heavy workload of tests/test-crashcheck.sh.
epoch () {
  mkfs_mount "$1"
  metadata_workload "$mnt"
  power_cut
}
fsck_check="mount -t ext4 {dev} $chk && umount $chk && fsck.ext4 -fn {dev}"

section "ext4 with barriers: $states torn crash states, each mounted and fsck'd"
epoch defaults
cached=$(stats .write_cache.entries)
echo "  the epoch left $cached writes unflushed in the disk's cache"
check "the epoch left writes unflushed ($cached)" "$cached" -gt 0
views=$(stats .faults.views)
t0=$SECONDS
"$crashcheck" --control "$work/fs.ctl" --dev "$dev" --states "$states" --seed 1000 \
  --mode torn -q --check "$fsck_check" > "$work/barrier.out" 2>&1
rc=$?
tail -3 "$work/barrier.out" | sed 's/^/  /'
echo "  $states states in $((SECONDS - t0)) s"
check "every torn state mounts and fscks clean (exit $rc)" "$rc" = 0
check "the summary counts $states passed" \
  "$(grep -c "$states states of mode torn (seeds 1000..$((1000 + states - 1))): $states passed, 0 failed" "$work/barrier.out")" = 1
check "one view per state ($(( $(stats .faults.views) - views )))" "$(( $(stats .faults.views) - views ))" = "$states"
check "the views left the cache as it was ($(stats .write_cache.entries))" "$(stats .write_cache.entries)" = "$cached"

section "ext4 with barrier=0: the explorer finds a corrupt state"
epoch barrier=0
echo "  $(stats .write_cache.entries) writes unflushed"
"$crashcheck" --control "$work/fs.ctl" --dev "$dev" --states 50 --seed 2000 \
  --mode torn --check "$fsck_check" > "$work/nobarrier.out" 2>&1
rc=$?
grep -m1 "FAILED" "$work/nobarrier.out" | sed 's/^/  /'
grep -m3 "^ *write [0-9]*:" "$work/nobarrier.out" | sed 's/^/  /'
check "a state failed its check (exit $rc)" "$rc" = 1
seed=$(grep -m1 -o "seed [0-9]*: .*FAILED" "$work/nobarrier.out" | awk '{ print $2 }' | tr -d :)
check "its writes are listed with their fate" \
  "$(grep -c "write [0-9]*: offset [0-9]* length [0-9]* \(persisted\|lost\|torn\)" "$work/nobarrier.out")" -ge 1
"$crashcheck" --control "$work/fs.ctl" --dev "$dev" --replay "${seed:-0}" --mode torn \
  --check "$fsck_check" > "$work/replay.out" 2>&1
check "--replay $seed fails again" "$(grep -c "seed $seed: .*FAILED" "$work/replay.out")" = 1

# records_epoch N [--fsync]: the application commits N records; prints
# how many it acknowledged.
records_epoch () {
  # commit=60: ext4 commits its journal (and flushes) only when asked.
  mkfs_mount commit=60
  sync -f "$mnt"
  "$records" write "$mnt/log" "$1" ${2:+"$2"} > "$work/acked"
  # Writeback puts what was not synced on the disk, unflushed.
  echo 100 > /proc/sys/vm/dirty_expire_centisecs
  echo 50 > /proc/sys/vm/dirty_writeback_centisecs
  sleep 3
  wc -l < "$work/acked"
  power_cut
}
records_check () {
  echo "mount -t ext4 {dev} $chk && { $records check $chk/log $1; r=\$?; umount $chk; exit \$r; }"
}

section "an application's records: fdatasync after each one"
n=$(records_epoch 64 --fsync)
echo "  64 records written, $n acknowledged after fdatasync; $(stats .write_cache.entries) writes unflushed"
"$crashcheck" --control "$work/fs.ctl" --dev "$dev" --states "$fsync_states" --seed 3000 \
  --mode torn -q --check "$(records_check "$n")" > "$work/fsync.out" 2>&1
rc=$?
tail -1 "$work/fsync.out" | sed 's/^/  /'
check "every acknowledged record in every state (exit $rc)" "$rc" = 0

section "the same records without fdatasync"
n=$(records_epoch 64)
echo "  64 records written, $n acknowledged without fdatasync; $(stats .write_cache.entries) writes unflushed"
"$crashcheck" --control "$work/fs.ctl" --dev "$dev" --states "$nofsync_states" --seed 4000 \
  --mode torn --keep-going --check "$(records_check "$n")" > "$work/nofsync.out" 2>&1
rc=$?
grep -m2 "acknowledged records" "$work/nofsync.out" | sed 's/^/  /'
tail -1 "$work/nofsync.out" | sed 's/^/  /'
failed=$(grep -c "FAILED" "$work/nofsync.out")
check "the explorer finds states that lost acknowledged records ($failed of $nofsync_states)" "$failed" -ge 1
check "and says which records ($(grep -c 'acknowledged records.*lost' "$work/nofsync.out") reports)" \
  "$(grep -c 'acknowledged records.*lost' "$work/nofsync.out")" -ge 1

ctl fs power-on > /dev/null
ublk_disk_stop fs
finish
