#!/usr/bin/env bash
# A host-managed zoned disk through ublk: the kernel sees its zones
# (queue/zoned, nr_zones, the open/active limits), blkzone's report and
# zone commands agree with the disk's own stats, fio's zonemode=zbd writes
# and verifies within max-open-zones, a write off the write pointer fails
# and is counted, a zoned btrfs is made, filled, checked clean with only
# write-pointer writes reaching the disk, its crash states (torn views
# with their own write pointers) all check clean, and a backend=file
# disk keeps its zones across a restart.
#   blkemu-vm --kernel 6.12 scenarios/zoned-ublk.sh
# Skips (77) without ublk_drv.
# blkemu-vm: needs ublk_drv
# budget: 100 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require

# zone_field NAME ZONE JQ: a field of zone ZONE (index) in blkzone's report,
# from the kernel, not the disk.
zone_line () { blkzone report -o $(( $2 * 8192 )) -c 1 "$1"; }
viol () { disk_stat "$1" '.zones.violations | [.[]] | add'; }

z="size=512M,zoned=host-managed,zone-size=4M,conventional-zones=8,max-open-zones=8,max-active-zones=12,latency-zone=200us"

section "a zoned disk: 128 zones of 4M, 8 conventional, max 8 open / 12 active"
dev=$(ublk_disk_start z "$z,trace=$results/z.trace") || { cat "$work/z.log"; exit 1; }
q=/sys/block/${dev#/dev/}/queue
echo "  $dev: zoned=$(cat $q/zoned) chunk_sectors=$(cat $q/chunk_sectors) nr_zones=$(cat $q/nr_zones) max_open_zones=$(cat $q/max_open_zones) max_active_zones=$(cat $q/max_active_zones) zone_append_max_bytes=$(cat $q/zone_append_max_bytes)"
check "the kernel sees a host-managed disk" "$(cat $q/zoned)" = host-managed
check "chunk_sectors is the zone size (8192)" "$(cat $q/chunk_sectors)" -eq 8192
check "nr_zones 128" "$(cat $q/nr_zones)" -eq 128
check "max_open_zones 8, max_active_zones 12" \
  "$(cat $q/max_open_zones)/$(cat $q/max_active_zones)" = 8/12

blkzone report "$dev" > "$work/report.txt"
conv=$(grep -c 'type: 1(CONVENTIONAL)' "$work/report.txt")
empty=$(grep -c 'cond: 1(em)' "$work/report.txt")
check "blkzone reports 128 zones ($(wc -l < "$work/report.txt")), 8 conventional ($conv), 120 empty ($empty)" \
  "$(wc -l < "$work/report.txt")/$conv/$empty" = 128/8/120
check "the disk agrees: 120 empty, 8 not_wp" \
  "$(disk_stat z '.zones.conditions | "\(.empty)/\(.not_wp)"')" = 120/8

section "zone commands: blkzone open/close/finish/reset against the stats"
blkzone open -o $((10 * 8192)) -c 1 "$dev"
check "open: zone 10 explicitly open in the kernel's report" \
  "$(zone_line "$dev" 10 | grep -c 'cond: 3(oe)')" -eq 1
check "open: the disk counts 1 open command, 1 explicitly open zone" \
  "$(disk_stat z '"\(.zones.commands.open)/\(.zones.conditions.explicit_open)"')" = 1/1
dd if=/dev/urandom of="$dev" bs=64K count=4 seek=$((10 * 64)) oflag=direct 2>/dev/null
check "256K written: zone 10's write pointer moved to +512 sectors" \
  "$(zone_line "$dev" 10 | grep -o 'wptr 0x[0-9a-f]*')" = "wptr 0x000200"
check "blkemu-ctl zones agrees: zone 10 at +256K, explicitly open" \
  "$(ctl z zones 40M 1 | tail -1 | awk '{ print $5, $6, $7 }')" = "+256K seq explicit-open"
blkzone close -o $((10 * 8192)) -c 1 "$dev"
check "close: zone 10 closed (kernel and disk)" \
  "$(zone_line "$dev" 10 | grep -c 'cond: 4(cl)')/$(disk_stat z .zones.conditions.closed)" = 1/1
blkzone finish -o $((11 * 8192)) -c 1 "$dev"
check "finish: zone 11 full" "$(zone_line "$dev" 11 | grep -c 'cond:14(fu)')" -eq 1
blkzone reset -o $((10 * 8192)) -c 2 "$dev"
check "reset: zones 10 and 11 empty again" \
  "$(blkzone report -o $((10 * 8192)) -c 2 "$dev" | grep -c 'cond: 1(em)')" -eq 2
check "the disk counted open 1, close 1, finish 1, reset 2" \
  "$(disk_stat z '.zones.commands | "\(.open)/\(.close)/\(.finish)/\(.reset)"')" = 1/1/1/2

section "a write off the write pointer"
before=$(disk_stat z .zones.violations.write_pointer)
if dd if=/dev/zero of="$dev" bs=4K count=1 seek=$((20 * 1024 + 8)) oflag=direct 2> "$work/dd.err"; then
  rc=0; else rc=$?; fi
echo "  dd into the middle of empty zone 20: exit $rc: $(tail -1 "$work/dd.err")"
check "the write failed" "$rc" -ne 0
check "the disk counted a write-pointer violation" \
  "$(disk_stat z .zones.violations.write_pointer)" -gt "$before"

# After a write the device refused, Linux 6.12 (since "block: Prevent
# potential deadlocks in zone write plug error recovery") no longer
# trusts its copy of the zone's write pointer: every write to the zone
# fails in the kernel, before the device sees it, until a report zones
# (blkzone report, or a file system's own error handling) or a reset or
# finish updates it.  null_blk behaves the same in this guest; the device
# must answer that report so that the recovery works, on every disk of
# one server.
section "recovery after a refused write, as a file system does it (two disks of one server, null_blk beside)"
rec="size=64M,zoned=host-managed,zone-size=4M,conventional-zones=1"
rm -f "$work/pair.ready"
"$UBLK" --ready-file "$work/pair.ready" \
  --disk "name=ra,control=$work/ra.ctl,stats=$results/ra.json,$rec" \
  --disk "name=rb,control=$work/rb.ctl,stats=$results/rb.json,$rec" \
  > "$work/pair.log" 2>&1 &
pair_pid=$!
for i in $(seq 300); do [ -e "$work/pair.ready" ] && break; sleep 0.1; done
check "one blkemu-ublk serves two zoned disks" "$(wc -l < "$work/pair.ready" 2>/dev/null || echo 0)" -eq 2
modprobe null_blk nr_devices=1 zoned=1 zone_size=4 zone_nr_conv=1 gb=1 memory_backed=1 2>/dev/null
# recovery DEV: the outcome of each step, "bad wp-before-report report wp readback".
recovery () {
  local dev=$1 z=$((4 << 20)) out=
  head -c 65536 /dev/urandom > "$work/rec.data"
  dd if="$work/rec.data" of="$dev" bs=64K seek=$((z / 65536 + 1)) oflag=direct 2>/dev/null && out=ok || out=fail
  dd if="$work/rec.data" of="$dev" bs=64K seek=$((z / 65536)) oflag=direct 2>/dev/null && out="$out ok" || out="$out fail"
  blkzone report -o $((z / 512)) -c 1 "$dev" > /dev/null && out="$out ok" || out="$out fail"
  dd if="$work/rec.data" of="$dev" bs=64K seek=$((z / 65536)) oflag=direct 2>/dev/null && out="$out ok" || out="$out fail"
  dd if="$dev" of="$work/rec.back" bs=64K skip=$((z / 65536)) count=1 iflag=direct 2>/dev/null
  cmp -s "$work/rec.data" "$work/rec.back" && out="$out ok" || out="$out fail"
  echo "$out"
}
ra=$(awk '$1 == "ra" { print $2 }' "$work/pair.ready")
rb=$(awk '$1 == "rb" { print $2 }' "$work/pair.ready")
ref=none
[ -b /dev/nullb0 ] && ref=$(recovery /dev/nullb0)
got_a=$(recovery "$ra")
got_b=$(recovery "$rb")
echo "  steps: write off the pointer, write at it, report zones, write at it, read back"
echo "  null_blk: $ref;  $ra: $got_a;  $rb: $got_b"
check "the refused write fails and the recovery writes at the pointer ($ra)" \
  "$(awk '{ print $1, $3, $4, $5 }' <<< "$got_a")" = "fail ok ok ok"
check "the second disk of the server recovers the same way ($rb)" "$got_b" = "$got_a"
if [ "$ref" != none ]; then
  check "null_blk in the same guest goes through the same steps" "$got_a" = "$ref"
else
  echo "  (null_blk zoned not available here: no reference run)"
fi
check "each disk refused one write and took the recovered one ($(ctl ra stats | jq -c '[.zones.refused, .zones.writes.sequential]'))" \
  "$(ctl ra stats | jq -c '[.zones.refused, .zones.writes.sequential]')/$(ctl rb stats | jq -c '[.zones.refused, .zones.writes.sequential]')" = "[1,1]/[1,1]"
check "zone 1's write pointer is at +64K on both" \
  "$(blkzone report -o 8192 -c 1 "$ra" | grep -o 'wptr 0x[0-9a-f]*')/$(blkzone report -o 8192 -c 1 "$rb" | grep -o 'wptr 0x[0-9a-f]*')" = "wptr 0x000080/wptr 0x000080"
kill "$pair_pid"; wait "$pair_pid" 2>/dev/null
rmmod null_blk 2>/dev/null || true

section "max-open-zones: 8 explicit opens, then a ninth"
ctl z reset
blkzone open -o $((20 * 8192)) -c 8 "$dev"
if blkzone open -o $((28 * 8192)) -c 1 "$dev" 2> "$work/open9.err"; then rc=0; else rc=$?; fi
echo "  the ninth open: exit $rc: $(cat "$work/open9.err")"
check "the ninth explicit open fails (ETOOMANYREFS: no implicit zone to close)" "$rc" -ne 0
check "the disk counted it ($(disk_stat z .zones.violations.open_resources)) and holds 8 open" \
  "$(disk_stat z '"\(.zones.violations.open_resources)/\(.zones.conditions.explicit_open)"')" = 1/8
blkzone reset "$dev"

section "fio zonemode=zbd: random writes over 16 zones, verified"
ctl z reset
fio --name=zbd --filename="$dev" --direct=1 --ioengine=libaio --zonemode=zbd \
    --rw=randwrite --bs=64k --offset=32M --size=64M --iodepth=8 \
    --max_open_zones=8 --verify=crc32c --do_verify=1 --output="$work/fio.txt"
rc=$?
check "fio wrote and verified (exit $rc)" "$rc" -eq 0
peak=$(disk_stat z .zones.open_peak)
check "zones open at once: peak $peak, within max-open-zones 8" "$peak" -le 8
check "no zone rule broken ($(viol z)), nothing refused ($(disk_stat z .zones.refused))" \
  "$(viol z)/$(disk_stat z .zones.refused)" = 0/0
blkzone reset "$dev"
check "blkzone reset (all): every sequential zone empty" \
  "$(disk_stat z .zones.conditions.empty)" -eq 120

ublk_disk_stop z
"$PLOT" --title "zoned-ublk: blkzone, fio zbd" -o "$results/z.svg" "$results/z.trace"
check "a plot of the trace with writes per zone and the resets (z.svg)" \
  "$(grep -c 'bytes written per zone (128 zones of 4M' "$results/z.svg")" -eq 1
mkdir -p "$work/mnt"

# btrfs-progs 6.2's mkfs aborts on a zoned disk whose block groups start
# in conventional zones (8 of them here); f2fs needs 5.  One disk each.
section "a zoned btrfs: mkfs -O zoned, write, sync, umount, check"
modprobe btrfs 2>/dev/null || true
dev=$(ublk_disk_start z "${z/conventional-zones=8/conventional-zones=2}") ||
  { cat "$work/z.log"; exit 1; }
if ! mkfs.btrfs -f -q -O zoned "$dev" > "$work/mkfs.log" 2>&1; then
  cat "$work/mkfs.log"
  check "mkfs.btrfs -O zoned" 1 -eq 0
else
  if mount -t btrfs "$dev" "$work/mnt" 2> "$work/mount.log"; then
    for i in $(seq 8); do head -c $((4 << 20)) /dev/urandom > "$work/mnt/f$i"; done
    (cd "$work/mnt" && sha256sum f*) > "$work/btrfs.sha"
    sync
    umount "$work/mnt"
    btrfs check "$dev" > "$work/btrfs-check.log" 2>&1
    rc=$?
    tail -3 "$work/btrfs-check.log" | sed 's/^/    /'
    check "btrfs check clean (exit $rc)" "$rc" -eq 0
    # The remount and the read-back fail apart: which one, and which
    # files, is what a failure here needs to say.
    mount -t btrfs -o ro "$dev" "$work/mnt" 2> "$work/remount.log"
    rc=$?
    check "remounted read-only (exit $rc: $(head -c 200 "$work/remount.log"))" "$rc" -eq 0
    (cd "$work/mnt" && sha256sum -c --quiet "$work/btrfs.sha") > "$work/sha.log" 2>&1
    rc=$?
    sed 's/^/    /' "$work/sha.log" | head -8
    dmesg | grep -iE "btrfs.*(csum|error|fail)" | tail -5 | sed 's/^/    /'
    check "the files read back intact after a remount" $rc -eq 0
    umount "$work/mnt"
  else
    cat "$work/mount.log"
    check "mount the zoned btrfs" 1 -eq 0
  fi
  echo "  the disk saw: $(disk_stat z '.zones | "\(.writes.sequential) sequential-zone writes, \(.writes.conventional) conventional, \(.writes.appends) appends, \(.commands.reset) resets, open peak \(.open_peak)"')"
  check "only write-pointer writes: no zone rule broken ($(viol z)), nothing refused ($(disk_stat z .zones.refused))" \
    "$(viol z)/$(disk_stat z .zones.refused)" = 0/0
  check "btrfs wrote sequential zones ($(disk_stat z .zones.writes.sequential))" \
    "$(disk_stat z .zones.writes.sequential)" -gt 0
fi

ublk_disk_stop z

section "a zoned f2fs: mkfs.f2fs -m, write, umount, fsck"
modprobe f2fs 2>/dev/null || true
dev=$(ublk_disk_start z "$z") || { cat "$work/z.log"; exit 1; }
if ! mkfs.f2fs -f -m "$dev" > "$work/mkfs-f2fs.log" 2>&1; then
  tail -5 "$work/mkfs-f2fs.log"
  check "mkfs.f2fs -m" 1 -eq 0
elif ! mount -t f2fs "$dev" "$work/mnt" 2> "$work/mount.log"; then
  cat "$work/mount.log"
  check "mount the zoned f2fs" 1 -eq 0
else
  for i in $(seq 8); do head -c $((4 << 20)) /dev/urandom > "$work/mnt/g$i"; done
  sync
  umount "$work/mnt"
  fsck.f2fs -f "$dev" > "$work/fsck-f2fs.log" 2>&1
  rc=$?
  check "fsck.f2fs clean (exit $rc)" "$rc" -eq 0
  echo "  the disk saw: $(disk_stat z '.zones | "\(.writes.sequential) sequential-zone writes, \(.writes.conventional) conventional, \(.commands.reset) resets, open peak \(.open_peak)"')"
  check "only write-pointer writes: no zone rule broken ($(viol z)), nothing refused ($(disk_stat z .zones.refused))" \
    "$(viol z)/$(disk_stat z .zones.refused)" = 0/0
fi
ublk_disk_stop z

section "crash states of a zoned btrfs: torn views, each checked read-only"
# An epoch on a zoned btrfs with the disk's write cache on: files
# written and synced (a commit: flushes), then more written and one
# fsync'd, then the power goes with the unflushed writes kept.  Each
# torn crash state is a view with its own write pointers (a prefix of
# each zone's writes); btrfs check reads it and the zone report, read
# only: the kernel's own write pointers may still be the live disk's.
crashcheck=$CRASHCHECK
dev=$(ublk_disk_start zb "${z/conventional-zones=8/conventional-zones=2}" \
  write-cache=yes cache-size=64M atomic-unit=4K) ||
  { cat "$work/zb.log"; exit 1; }
mkfs.btrfs -f -q -O zoned "$dev" > "$work/mkfs-zb.log" 2>&1 ||
  { cat "$work/mkfs-zb.log"; exit 1; }
mount -t btrfs "$dev" "$work/mnt" || exit 1
for i in 1 2 3 4; do head -c $((1 << 20)) /dev/urandom > "$work/mnt/a$i"; done
sync
# Direct writes reach the disk at once; the fsync flushes what came
# before it, so the epoch is what follows it.
for i in 1 2 3; do dd if=/dev/urandom of="$work/mnt/b$i" bs=64K count=4 oflag=direct status=none; done
sync "$work/mnt/b2"                          # an fsync: a flush
for i in 4 5 6 7 8; do dd if=/dev/urandom of="$work/mnt/b$i" bs=64K count=4 oflag=direct status=none; done
mkdir "$work/mnt/d"; mv "$work/mnt/b4" "$work/mnt/d/"
ctl zb power-off > /dev/null
umount "$work/mnt" 2> /dev/null || umount -l "$work/mnt"
cached=$(disk_stat zb .write_cache.entries)
echo "  the epoch left $cached writes unflushed in the disk's cache"
check "the epoch left writes unflushed ($cached)" "$cached" -gt 0
# One state by hand: its zones, as the kernel's report shows them, against
# the live disk's.
blkzone report "$dev" | sed 's/, reset.*//' > "$work/zb-live.zones"
ctl zb view torn 500 > "$work/zb-view.reply"
blkzone report "$dev" | sed 's/, reset.*//' > "$work/zb-view.zones"
ctl zb view end > /dev/null
moved=$(diff "$work/zb-live.zones" "$work/zb-view.zones" | grep -c '^>')
echo "  view $(cat "$work/zb-view.reply"): $moved zones' write pointers back from the live disk's"
check "the view's zone report has the crash state's write pointers ($moved zones moved)" "$moved" -gt 0
"$crashcheck" --control "$work/zb.ctl" --dev "$dev" --states 12 --seed 500 \
  --mode torn -q --check "btrfs check --readonly {dev}" > "$work/zb-cc.out" 2>&1
rc=$?
tail -3 "$work/zb-cc.out" | sed 's/^/  /'
check "every torn state of the zoned btrfs checks clean (exit $rc)" "$rc" = 0
check "one view per state, the disk's cache untouched ($(disk_stat zb .faults.views) views, $(disk_stat zb .write_cache.entries) cached)" \
  "$(disk_stat zb .faults.views)/$(disk_stat zb .write_cache.entries)" = "13/$cached"
ctl zb power-on > /dev/null
blkzone report "$dev" | sed 's/, reset.*//' > "$work/zb-after.zones"
check "power-on: the kernel reports the zones as the epoch left them, nothing refused ($(disk_stat zb .zones.refused))" \
  "$(cmp -s "$work/zb-live.zones" "$work/zb-after.zones" && echo same)/$(disk_stat zb .zones.refused)" = same/0
ublk_disk_stop zb

section "the profiles as the kernel sees them: smr-hm-14t, zns-ssd"
dev=$(ublk_disk_start smr profile=smr-hm-14t) || { cat "$work/smr.log"; exit 1; }
q=/sys/block/${dev#/dev/}/queue
echo "  smr-hm-14t: $dev $(($(cat /sys/block/${dev#/dev/}/size) / 2097152)) GiB, nr_zones=$(cat $q/nr_zones) chunk_sectors=$(cat $q/chunk_sectors) max_open_zones=$(cat $q/max_open_zones) rotational=$(cat $q/rotational)"
check "smr-hm-14t: 52156 zones of 256 MiB, 128 open at most" \
  "$(cat $q/nr_zones)/$(cat $q/chunk_sectors)/$(cat $q/max_open_zones)" = 52156/524288/128
check "smr-hm-14t: zone 524 is the first sequential one" \
  "$(blkzone report -o $((523 * 524288)) -c 2 "$dev" | grep -c 'SEQ_WRITE_REQUIRED')" -eq 1
ublk_disk_stop smr
dev=$(ublk_disk_start zns profile=zns-ssd) || { cat "$work/zns.log"; exit 1; }
q=/sys/block/${dev#/dev/}/queue
echo "  zns-ssd: $dev nr_zones=$(cat $q/nr_zones) max_open_zones=$(cat $q/max_open_zones) max_active_zones=$(cat $q/max_active_zones) zone_append_max_bytes=$(cat $q/zone_append_max_bytes)"
check "zns-ssd: 2048 zones, 14 open and active, appends up to 128K" \
  "$(cat $q/nr_zones)/$(cat $q/max_open_zones)/$(cat $q/max_active_zones)/$(cat $q/zone_append_max_bytes)" = 2048/14/14/131072
check "zns-ssd: capacity 1077 MiB of each 2 GiB zone (cap 0x21a800)" \
  "$(blkzone report -c 1 "$dev" | grep -o 'cap 0x[0-9a-f]*')" = "cap 0x21a800"
ublk_disk_stop zns

section "power loss keeps a prefix of each zone's writes (crash torn, write-cache=on)"
# Sixteen 64K writes into zone 2, none flushed, then the power goes in
# mode torn: the zone keeps its oldest writes up to the first one not
# kept whole (cut at 4K inside it, or lost), nothing after it; the
# kernel's report puts the write pointer at the end of what survived
# and the data below it is what was written.
dev=$(ublk_disk_start zc "size=64M,zoned=host-managed,zone-size=4M,write-cache=on,atomic-unit=4K") ||
  { cat "$work/zc.log"; exit 1; }
dd if=/dev/urandom of="$work/zc.data" bs=64K count=16 status=none
dd if="$work/zc.data" of="$dev" bs=64K seek=$((2 * 64)) oflag=direct status=none
reply=$(ctl zc crash torn 11)
ctl zc power-on > /dev/null
echo "  crash torn 11 -> $reply"
persisted=$(echo "$reply" | grep -o 'persisted=[0-9]*' | cut -d= -f2)
torn=$(echo "$reply" | grep -o 'torn=[0-9]*' | cut -d= -f2)
lost=$(echo "$reply" | grep -o 'lost=[0-9]*' | cut -d= -f2)
wp=$(( $(zone_line "$dev" 2 | grep -o 'wptr 0x[0-9a-f]*' | cut -c6-) * 512 ))
echo "  zone 2: write pointer +$((wp / 1024))K: $persisted writes kept whole, $torn torn, $lost lost"
check "every write has a fate: $persisted + $torn + $lost = 16" \
  $((persisted + torn + lost)) -eq 16
check "a prefix: the write pointer ends the kept writes (+$((wp / 1024))K, $persisted whole, $torn torn)" \
  $wp -ge $((persisted * 65536)) -a $wp -lt $(( (persisted + 1) * 65536 )) -a \
  \( $torn -eq 1 -o $wp -eq $((persisted * 65536)) \)
check "the disk's own report agrees: +$((wp / 1024))K" \
  "$(ctl zc zones 8M 1 | tail -1 | awk '{ print $5 }')" = "+$((wp / 1024))K"
if [ $wp -gt 0 ]; then
  dd if="$dev" of="$work/zc.back" bs=4K count=$((wp / 4096)) skip=$((2 * 1024)) iflag=direct status=none
  check "below it, the data as written ($((wp / 4096)) blocks)" \
    "$(head -c $wp "$work/zc.data" | cmp -s - "$work/zc.back" && echo same)" = same
fi
# The kernel keeps its own write pointer per zone (zone write plugging,
# Linux 6.10+) and the crash moved the disk's back under it: a real disk
# would come back through a reset and a revalidation, a ublk disk stays.
# The kernel learns the new pointer the way it learns any surprise (see
# the recovery section above): a write at its old pointer fails on the
# disk, and a report of the zone, as a file system's error handling
# asks for, sets the kernel's pointer from the disk's.
v0=$(viol zc)
dd if="$work/zc.data" of="$dev" bs=4K seek=$((2 * 1024 + 16 * 16)) count=1 oflag=direct status=none 2>/dev/null
check "a write at the kernel's old pointer is refused by the disk (zone violations $v0 -> $(viol zc))" \
  "$(viol zc)" -eq $((v0 + 1))
zone_line "$dev" 2 > /dev/null
dd if="$work/zc.data" of="$dev" bs=4K seek=$((2 * 1024 + wp / 4096)) count=1 oflag=direct status=none
check "then writing on at the disk's write pointer works" \
  "$(zone_line "$dev" 2 | grep -o 'wptr 0x[0-9a-f]*' | cut -c6-)" = "$(printf '0x%06x' $(( (wp + 4096) / 512 )))"
ublk_disk_stop zc

section "backend=file keeps its zones across a restart"
f="size=64M,zoned=host-managed,zone-size=4M,backend=file,file=$work/zoned.img"
dev=$(ublk_disk_start zf "$f") || { cat "$work/zf.log"; exit 1; }
dd if=/dev/urandom of="$dev" bs=64K count=3 seek=$((3 * 64)) oflag=direct 2>/dev/null
blkzone finish -o $((5 * 8192)) -c 1 "$dev"
want=$(zone_line "$dev" 3 | grep -o 'wptr 0x[0-9a-f]*')
ublk_disk_stop zf
dev=$(ublk_disk_start zf "$f") || { cat "$work/zf.log"; exit 1; }
check "zone 3's write pointer survived ($want)" \
  "$(zone_line "$dev" 3 | grep -o 'wptr 0x[0-9a-f]*')" = "$want"
check "zone 3 came back closed, zone 5 full" \
  "$(zone_line "$dev" 3 | grep -c 'cond: 4(cl)')/$(zone_line "$dev" 5 | grep -c 'cond:14(fu)')" = 1/1
ublk_disk_stop zf
finish
