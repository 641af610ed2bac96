#!/usr/bin/env bash
# Crash consistency: ext4 on md raid1 over two blkemu disks with volatile
# write caches.  While a writer streams unflushed data, one leg loses
# power (`crash`: its unflushed writes are gone, then it fails every
# request).  md drops the leg and the filesystem goes on.  Afterwards the
# crashed leg alone is checked as a power-cut disk would be (journal
# replay, fsck), then the array is reassembled; fsck results are reported
# and every file that was flushed before the crash must be intact on both.
#   blkemu-vm scenarios/crash-consistency.sh
# budget: 120 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
modprobe nbd nbds_max=4
modprobe raid1 2>/dev/null || true
modprobe ext4 2>/dev/null || true
mnt=$work/mnt
mkdir -p "$mnt"
spec=(size=384M write-cache=yes cache-size=32M latency-write=200us latency-read=100us latency-flush=2ms)

disk_start a "${spec[@]}"
disk_start b "${spec[@]}"
raid1_on a b
# md marks an idle array clean after safe_mode_delay (200 ms) and dirty
# again on the next write, each time writing its superblock with a
# flush: a pause in the writer would flush the caches before the crash.
echo 0 > /sys/block/md0/md/safe_mode_delay
# ext4's lazy inode-table init would zero the tables from a kernel
# thread after mount, with a flush after each group, at times of its
# own: one landing between "the cache holds data" and the crash left
# the crash nothing to discard (seen once on 6.12).  mkfs does it now.
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/md0
# Write back dirty pages within a second but commit the journal (and so
# flush) only every 60 s: data reaches the disks' caches unflushed.
mount -o commit=60 /dev/md0 "$mnt" || { echo "cannot mount ext4 on md0"; exit 1; }
echo 100 > /proc/sys/vm/dirty_expire_centisecs
echo 50 > /proc/sys/vm/dirty_writeback_centisecs

# flushed_intact TAG: do the synced files under $mnt still match their
# checksums?  (Status for the check that follows; details in sum-TAG.log.)
flushed_intact () {
  (cd "$mnt/flushed" && sha256sum -c --quiet "$work/flushed.sha") > "$work/sum-$1.log" 2>&1
}

section "flushed files, then unflushed writes, then leg a loses power"
mkdir "$mnt/flushed"
for i in $(seq 16); do
  head -c $((256 << 10)) /dev/urandom > "$mnt/flushed/f$i"
done
sync
(cd "$mnt/flushed" && sha256sum f*) > "$work/flushed.sha"
# Unflushed: a stream of new files and rewrites, no sync.
( for i in $(seq 64); do
    head -c $((512 << 10)) /dev/urandom > "$mnt/new$i" 2>/dev/null || break
  done ) &
writer=$!
# Crash once leg a's cache holds unflushed data (a fixed sleep is too
# short on a loaded TCG guest, where writeback may not have started).
for _ in $(seq 240); do
  [ "$(disk_stat a .write_cache.bytes)" -ge $((2 << 20)) ] && break
  sleep 0.25
done
echo "  leg a's cache holds $(disk_stat a .write_cache.bytes) bytes of unflushed writes' undo data"
ctl a crash
echo "  leg a: $(disk_stat a '.faults | "crash: \(.lost_writes) unflushed writes (\(.lost_bytes / 1048576 | floor) MiB) discarded"')"
wait "$writer"
sync
sleep 1
md_state=$(cat /proc/mdstat | grep -A1 '^md0' | tr -s ' \n' ' ')
echo "  /proc/mdstat: $md_state"
check "md failed the crashed leg ((F) in mdstat)" "$(grep -c 'nbd0\[0\](F)' /proc/mdstat)" -eq 1
echo 3 > /proc/sys/vm/drop_caches
flushed_intact live
check "flushed files intact on the degraded array" $? -eq 0
check "leg a refused I/O while off (offline count $(disk_stat a .faults.offline))" \
  "$(disk_stat a .faults.offline)" -gt 0
check "the crash discarded unflushed writes ($(disk_stat a .faults.lost_writes))" \
  "$(disk_stat a .faults.lost_writes)" -gt 0
umount "$mnt"
mdadm --stop /dev/md0 > /dev/null 2>&1

section "leg a after power-on, alone: journal replay and fsck"
ctl a power-on
mdadm --assemble --run /dev/md1 /dev/nbd0 > "$work/md1.log" 2>&1 || cat "$work/md1.log"
e2fsck -p /dev/md1 > "$work/fsck-a-replay.log" 2>&1
rc_replay=$?
e2fsck -f -n /dev/md1 > "$work/fsck-a.log" 2>&1
rc_a=$?
echo "  e2fsck -p (replay): exit $rc_replay; e2fsck -f -n: exit $rc_a"
sed 's/^/    /' "$work/fsck-a.log" | tail -4
check "leg a: the journal brings the filesystem back clean (fsck -f -n exit $rc_a)" "$rc_a" -eq 0
mount -o ro /dev/md1 "$mnt" || { check "leg a mounts after replay" 0 -eq 1; }
flushed_intact a
check "leg a: every flushed file intact" $? -eq 0
echo "  leg a kept $(ls "$mnt" | grep -c '^new') of the unflushed new files (any number is legal)"
umount "$mnt"
mdadm --stop /dev/md1 > /dev/null 2>&1

section "reassemble both legs"
mdadm --assemble /dev/md0 /dev/nbd0 /dev/nbd1 > "$work/md-reassemble.log" 2>&1
sed 's/^/    /' "$work/md-reassemble.log"
devs=$(cat /sys/block/md0/md/raid_disks 2>/dev/null)
active=$(mdadm --detail /dev/md0 2>/dev/null | awk '/Active Devices/ { print $4 }')
echo "  md0: $active of $devs devices active (a stale leg is left out until re-added)"
state=$(cat /sys/block/md0/md/array_state 2>/dev/null)
check "md0 assembled and running ($state, $active of $devs legs)" \
  "${state:-inactive}" != inactive -a "${active:-0}" -ge 1
# Degraded is not done: the leg left out goes back in and is rebuilt
# from the other, as an administrator would do after a power cut.
if [ "${active:-0}" -lt "${devs:-2}" ]; then
  for leg in /dev/nbd0 /dev/nbd1; do
    mdadm --detail /dev/md0 | grep -q "active sync.*$leg\$" ||
      mdadm /dev/md0 --add "$leg" > "$work/md-readd.log" 2>&1 || cat "$work/md-readd.log"
  done
  md_wait /dev/md0 300
fi
active=$(mdadm --detail /dev/md0 2>/dev/null | awk '/Active Devices/ { print $4 }')
check "md0 whole again: $active of $devs legs active after the rebuild" "${active:-0}" -eq "${devs:-2}"
# /dev/md0 is the node the degraded array on leg b had: nothing it
# cached may stand in for what the reassembled array holds now.
blockdev --flushbufs /dev/md0 2> /dev/null
echo 3 > /proc/sys/vm/drop_caches
e2fsck -f -n /dev/md0 > "$work/fsck-md0.log" 2>&1
rc_md=$?
echo "  e2fsck -f -n /dev/md0: exit $rc_md"
sed 's/^/    /' "$work/fsck-md0.log" | grep -v '^ *$' | tail -8
check "md0: fsck clean (exit $rc_md)" "$rc_md" -eq 0
mount -o ro /dev/md0 "$mnt" || { check "md0 mounts" 0 -eq 1; }
flushed_intact md0
check "md0: every flushed file intact" $? -eq 0
umount "$mnt"
mdadm --stop /dev/md0 > /dev/null 2>&1
seen a
"$ATTACH" detach /dev/nbd0 > /dev/null
"$ATTACH" detach /dev/nbd1 > /dev/null
disk_stop a
disk_stop b
finish
