#!/usr/bin/env bash
# Multipath over blkemu-scsi: --paths 2 exports one disk through two
# tcm_loop targets, two SCSI hosts, two sd disks with one WWID, and the
# kernel's dm-multipath (round-robin over both) serves them as one
# device.  'path 1 down' on the disk's control socket cuts path 1 as a
# pulled cable would (tcm_loop fails its commands with
# DID_TRANSPORT_DISRUPTED): a write running through the map completes,
# dm-multipath fails the path and sends everything down path 0, the data
# reads back whole; 'path 1 up' and a reinstate bring it back into the
# rotation.  With queue_if_no_path, both paths down holds the I/O
# instead of failing it, and it completes when a path returns.  The disk
# behind the paths never stops serving.
#   blkemu-vm --kernel 6.12 scenarios/scsi-multipath.sh
# Skips (77) without target_core_user, tcm_loop or dm-multipath.
# blkemu-vm: needs target_core_user tcm_loop dm_multipath dm_round_robin
# budget: 80 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
scsi_require
modprobe dm_multipath 2>/dev/null && modprobe dm_round_robin 2>/dev/null ||
  { echo "SKIP: this kernel has no dm-multipath"; exit 77; }

# maj_min DEV: "8:16", as dm-multipath's status names a path.
maj_min () { cat "/sys/block/${1#/dev/}/dev"; }
# writes DEV: write requests the path's disk completed.
writes () { awk '{ print $5 }' "/sys/block/${1#/dev/}/stat"; }
# path_state MAP DEV: A (active) or F (failed), from dmsetup status.
path_state () {
  dmsetup status "$1" | tr ' ' '\n' | awk -v p="$(maj_min "$2")" 'f { print; exit } $0 == p { f = 1 }'
}

spec="name=mp,size=64M,write-cache=on,control=$work/mp.ctl"
spec+=",stats=$results/mp.json,trace=$results/mp.trace"
section "one disk, two paths (blkemu-scsi --paths 2)"
scsi_start s --paths 2 --disk "$spec"
read -r _ p0 p1 < "$work/s.ready"
sed 's/^/  /' "$work/s.log"
check "two SCSI disks for one ($p0 $p1)" -n "$p1" -a "$p0" != "$p1"
# host_of DEV: the SCSI host of a disk, from its H:C:T:L.
host_of () { local h; h=$(basename "$(readlink -f "/sys/block/${1#/dev/}/device")"); echo "host${h%%:*}"; }
host0=$(host_of "$p0") host1=$(host_of "$p1")
echo "  $p0 on $host0, $p1 on $host1"
check "each path on its own SCSI host ($host0, $host1)" "$host0" != "$host1"
wwid0=$(cat "/sys/block/${p0#/dev/}/device/wwid")
wwid1=$(cat "/sys/block/${p1#/dev/}/device/wwid")
echo "  wwid: $wwid0"
check "one WWID on both paths (what multipath groups by)" \
  -n "$wwid0" -a "$wwid0" = "$wwid1"
# path_commands I: what path I carried, by LIO's count of its port.
path_commands () { ctl mp path | tr ' ' '\n' | awk -F: -v i="$1" '$1 == i { print $4 }'; }
check "the control socket lists the paths: $(ctl mp path)" \
  -n "$(ctl mp path | grep -E "^0:${p0#/dev/}:up:[0-9]+ 1:${p1#/dev/}:up:[0-9]+$")"

section "dm-multipath over both (round-robin, one path group)"
sectors=$(blockdev --getsz "$p0")
# multipath: no features, no hardware handler, one group of two paths,
# each given one request in turn.
dmsetup create mpt --table \
  "0 $sectors multipath 0 0 1 1 round-robin 0 2 1 $p0 1 $p1 1"
dmsetup status mpt | sed 's/^/  /'
dd if=/dev/urandom of="$work/a" bs=1M count=16 status=none
w0=$(writes "$p0") w1=$(writes "$p1")
dd if="$work/a" of=/dev/mapper/mpt bs=64k oflag=direct status=none
echo "  16M in 64K writes: $(( $(writes "$p0") - w0 )) on $p0, $(( $(writes "$p1") - w1 )) on $p1"
check "round-robin writes through both paths" \
  $(( $(writes "$p0") - w0 )) -gt 0 -a $(( $(writes "$p1") - w1 )) -gt 0
check "both paths active: $(path_state mpt "$p0") $(path_state mpt "$p1")" \
  "$(path_state mpt "$p0")$(path_state mpt "$p1")" = AA

section "path 1 cut while a write runs"
dd if=/dev/urandom of="$work/b" bs=1M count=32 status=none
# The cut must land inside the write on any host: capped at 8 MiB/s the
# 32M take 4 s however fast the machine, and the cut comes once the
# write is under way (a quarter of it through the paths), not after a
# guessed sleep.
ctl mp set write-bandwidth=8M > /dev/null
w=$(( $(writes "$p0") + $(writes "$p1") ))
dd if="$work/b" of=/dev/mapper/mpt bs=64k oflag=direct status=none &
dd_pid=$!
for _ in $(seq 100); do
  [ $(( $(writes "$p0") + $(writes "$p1") - w )) -ge 32 ] && break
  sleep 0.1
done
reply=$(ctl mp path 1 down)
echo "  path 1 down -> $reply after $(( $(writes "$p0") + $(writes "$p1") - w )) of 512 writes"
check "the cut came while the write ran" -d "/proc/$dd_pid"
check "path 1 down answered: $reply" "$reply" = "${p1#/dev/} down"
dd_rc=0
wait $dd_pid || dd_rc=$?
check "the write through the map completed (dd exit $dd_rc)" $dd_rc -eq 0
ctl mp set write-bandwidth=0 > /dev/null
dmsetup status mpt | sed 's/^/  /'
check "dm-multipath failed path 1: $(path_state mpt "$p1")" \
  "$(path_state mpt "$p1")" = F
check "path 0 stays active" "$(path_state mpt "$p0")" = A
dmesg | grep -E "multipath: .*Failing path|DID_TRANSPORT|rejecting I/O" | tail -3 | sed 's/^/  dmesg: /'
w0=$(writes "$p0") w1=$(writes "$p1") c0=$(path_commands 0) c1=$(path_commands 1)
dd if="$work/a" of=/dev/mapper/mpt bs=64k oflag=direct seek=512 status=none
echo "  16M more: $(( $(writes "$p0") - w0 )) writes on $p0, $(( $(writes "$p1") - w1 )) on $p1"
check "with path 1 down every write goes down path 0" \
  $(( $(writes "$p1") - w1 )) -eq 0 -a $(( $(writes "$p0") - w0 )) -gt 0
c0=$(( $(path_commands 0) - c0 )) c1=$(( $(path_commands 1) - c1 ))
check "the target's own count agrees: path 0 carried $c0 commands, path 1 $c1" \
  $c1 -eq 0 -a $c0 -ge 256
echo "  scsi_path_commands: $(disk_stat mp .transport.scsi_path_commands)"
dd if=/dev/mapper/mpt of="$work/b.back" bs=1M count=32 iflag=direct status=none
check "the 32M written across the cut read back whole" \
  "$(cmp -s "$work/b" "$work/b.back" && echo same)" = same
check "the disk's stats name the cut path: $(disk_stat mp .transport.scsi_paths)" \
  "$(disk_stat mp .transport.scsi_paths)" = "${p0#/dev/} up, ${p1#/dev/} down"

section "path 1 back"
reply=$(ctl mp path 1 up)
check "path 1 up answered: $reply" "$reply" = "${p1#/dev/} up"
dmsetup message mpt 0 "reinstate_path $p1"
w1=$(writes "$p1")
dd if="$work/a" of=/dev/mapper/mpt bs=64k oflag=direct status=none
check "reinstated: both active again ($(path_state mpt "$p0")$(path_state mpt "$p1"))" \
  "$(path_state mpt "$p0")$(path_state mpt "$p1")" = AA
check "path 1 takes writes again ($(( $(writes "$p1") - w1 )))" \
  $(( $(writes "$p1") - w1 )) -gt 0

section "bad path commands are refused, naming the rule"
reply=$(ctl mp path 2 down 2>&1 || true)
check "path 2 of 2: $reply" -n "$(echo "$reply" | grep -F 'error: path 2: I must be a path of this disk, 0 to 1')"
reply=$(ctl mp path 0 sideways 2>&1 || true)
check "path 0 sideways: $reply" -n "$(echo "$reply" | grep -F 'usage: path [I down|up]')"

section "both paths down with queue_if_no_path: I/O waits, then completes"
dmsetup remove mpt
dmsetup create mpq --table \
  "0 $sectors multipath 1 queue_if_no_path 0 1 1 round-robin 0 2 1 $p0 1 $p1 1"
ctl mp path 0 down > /dev/null
ctl mp path 1 down > /dev/null
dd if="$work/a" of=/dev/mapper/mpq bs=64k oflag=direct seek=256 status=none &
dd_pid=$!
sleep 3
check "with no path the write is held, not failed (dd still running)" \
  -d "/proc/$dd_pid"
dmsetup status mpq | sed 's/^/  /'
ctl mp path 0 up > /dev/null
dmsetup message mpq 0 "reinstate_path $p0"
dd_rc=0
wait $dd_pid || dd_rc=$?
check "it completes once path 0 is back (dd exit $dd_rc)" $dd_rc -eq 0
dd if=/dev/mapper/mpq of="$work/a.back" bs=64k skip=256 count=256 iflag=direct status=none
check "and its data is there" "$(cmp -s "$work/a" "$work/a.back" && echo same)" = same
ctl mp path 1 up > /dev/null
dmsetup remove mpq
seen mp

section "teardown"
scsi_stop s
check "configfs holds no export of the disk" \
  -z "$(ls /sys/kernel/config/target/loopback 2>/dev/null | grep naa || true)"
check "stats written at exit list the paths" \
  "$(jq -r .transport.scsi_paths "$results/mp.json")" = "${p0#/dev/} up, ${p1#/dev/} up"
finish
