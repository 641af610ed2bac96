#!/usr/bin/env bash
# Silent corruption as a checksumming file system sees it: btrfs with
# raid1 data and metadata over two blkemu-fuse disks (loop devices, direct
# I/O).  Disk a first loses every write of a stretch of the workload
# (lost-write-probability=1: acknowledged, never written), then flips a
# bit in every read (bit-flip-probability=1).  btrfs scrub must find the
# damage on a, repair it from b, and leave every file as written; a
# second scrub with the faults off finds nothing left, and btrfs's
# per-device counters put every error on a.
source "$(dirname "$0")/functions.sh"
requires_fuse_loop
requires mkfs.btrfs --version
requires btrfs --version
requires jq --version
grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null ||
  { echo "SKIP: no btrfs in this kernel"; exit 77; }
mnt=$tmp/mnt
fuse_mount "$mnt" --disk "name=a,size=256M,seed=3" --disk "name=b,size=256M"
da=$(loop_attach "$mnt/a" --direct-io=on)
db=$(loop_attach "$mnt/b" --direct-io=on)
attr () { printf '%s\n' "$3" > "$mnt/.blkemu/$1/$2"; }
fault () { jq -r ".faults.$2" "$mnt/.blkemu/$1/stats"; }
mkdir -p "$tmp/fs"
mkfs.btrfs -q -f -d raid1 -m raid1 "$da" "$db" > "$tmp/mkfs.out" 2>&1 ||
  { cat "$tmp/mkfs.out"; fail "mkfs.btrfs failed"; }
mount -t btrfs -o "device=$da,device=$db" "$da" "$tmp/fs"
cleanup_hooks=("fs_umount '$tmp/fs'" "${cleanup_hooks[@]}")

for i in $(seq 8); do head -c 1M /dev/urandom > "$tmp/fs/before$i"; done
sync -f "$tmp/fs"
# A stretch of writes that never reach a.
attr a lost-write-probability 1
for i in $(seq 8); do head -c 1M /dev/urandom > "$tmp/fs/during$i"; done
sync -f "$tmp/fs"
attr a lost-write-probability 0
(cd "$tmp/fs" && sha256sum before* during*) > "$tmp/sums"
lost=$(fault a silently_lost_writes)
[ "$lost" -gt 0 ] || fail "no write was lost on a"
echo "ok: a lost $lost writes, all acknowledged"

# Every read of a now comes back with a bit flipped.
attr a bit-flip-probability 1
btrfs scrub start -B "$tmp/fs" > "$tmp/scrub1" 2>&1 || true
attr a bit-flip-probability 0
sed 's/^/  /' "$tmp/scrub1"
flips=$(fault a bit_flips)
errors=$(awk '/Error summary/ { for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "super") s += kv[2] } } END { print s + 0 }' "$tmp/scrub1")
corrected=$(awk '/Corrected:/ { print $2 }' "$tmp/scrub1")
uncorrectable=$(awk '/Uncorrectable:/ { print $2 }' "$tmp/scrub1")
[ "$errors" -gt 0 ] || fail "scrub found no error after $lost lost writes and $flips flipped reads"
expect_eq "scrub: uncorrectable errors" "${uncorrectable:-missing}" 0
expect_eq "scrub: corrected = found (csum and verify)" "${corrected:-missing}" "$errors"
# Where btrfs found them: on a only, b never had a fault.
btrfs device stats "$tmp/fs" > "$tmp/devstats"
sed 's/^/  /' "$tmp/devstats"
bad_b=$(awk -v d="[$db]." 'index($1, d) == 1 { s += $2 } END { print s + 0 }' "$tmp/devstats")
bad_a=$(awk -v d="[$da]." 'index($1, d) == 1 { s += $2 } END { print s + 0 }' "$tmp/devstats")
expect_eq "btrfs device stats: errors on b" "$bad_b" 0
[ "$bad_a" -gt 0 ] || fail "btrfs device stats show no error on a"
echo "ok: scrub found and corrected $errors errors, all on a (blkemu: $lost lost writes, $flips flipped reads)"

# Nothing is left, and every file reads as written.
btrfs scrub start -B "$tmp/fs" > "$tmp/scrub2" 2>&1 ||
  { cat "$tmp/scrub2"; fail "the second scrub failed"; }
grep -q "no errors found" "$tmp/scrub2" ||
  { cat "$tmp/scrub2"; fail "the second scrub still found errors"; }
umount "$tmp/fs"
mount -t btrfs -o "device=$da,device=$db" "$da" "$tmp/fs"
(cd "$tmp/fs" && sha256sum --quiet -c "$tmp/sums") || fail "files differ after the repair"
echo "ok: a second scrub finds nothing; all 16 files read back as written"
