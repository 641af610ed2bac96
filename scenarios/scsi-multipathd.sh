#!/usr/bin/env bash
# multipath-tools over blkemu-scsi, as on a server: udev and multipathd
# in the guest find the two paths of a --paths 2 disk by their WWID and
# assemble /dev/mapper/mpatha (multibus: both paths carry I/O); fio
# verify writes through it while 'path 1 down' cuts a path and 'path 1
# up' restores it: the application sees no error and every block
# verifies, multipathd's path checker fails the path and reinstates it
# by itself, and the target's own per-path counts show path 1 idle while
# cut and busy again after.  Then the same over iSCSI: one target with a
# portal group per path (--iscsi --paths 2), a session to each, and
# 'path 1 down' disabling a port.
#   blkemu-vm --kernel 6.12 --udev scenarios/scsi-multipathd.sh
# Skips (77) without target_core_user, tcm_loop, dm-multipath or
# multipath-tools.
# blkemu-vm: udev
# blkemu-vm: needs target_core_user tcm_loop dm_multipath dm_round_robin
# budget: 140 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
scsi_require
command -v multipathd > /dev/null ||
  { echo "SKIP: multipath-tools is not installed (tools/install-deps vm)"; exit 77; }
modprobe dm_multipath 2>/dev/null && modprobe dm_round_robin 2>/dev/null ||
  { echo "SKIP: this kernel has no dm-multipath"; exit 77; }

# path_commands I: what path I carried, by LIO's count of its port.
path_commands () { ctl mp path | tr ' ' '\n' | awk -F: -v i="$1" '$1 == i { print $4 }'; }
# path_states: "sda:active:ready sdb:failed:faulty", from multipathd.
path_states () {
  multipathd show paths format "%d:%t:%T" | awk 'NR > 1 { printf "%s%s", s, $1; s = " " }'
}

# The guest's /etc is a scratch overlay: multipathd's configuration
# here, not the host's.  Every path a multipath candidate; multibus puts
# both in one group, so both carry I/O; the checker runs every second.
mkdir -p /etc/multipath
cat > /etc/multipath.conf <<'EOF'
defaults {
  user_friendly_names yes
  find_multipaths no
  path_grouping_policy multibus
  polling_interval 1
}
EOF

section "a disk on two paths, and multipathd"
spec="name=mp,size=64M,write-cache=on,control=$work/mp.ctl"
spec+=",stats=$results/mp.json"
scsi_start s --paths 2 --disk "$spec"
read -r _ p0 p1 < "$work/s.ready"
udevadm settle
multipathd -d -s > "$work/multipathd.log" 2>&1 &
mpd=$!
wait_for "multipath map" 60 test -b /dev/mapper/mpatha
multipath -ll 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g; s/^/  /'
naa=$(disk_stat mp .transport.scsi_naa)
check "multipathd assembled mpatha from the paths' WWID (3${naa#naa.}...)" \
  -n "$(multipath -ll mpatha 2>/dev/null | grep -F "mpatha (3${naa#naa.}")"
check "both paths active and ready: $(path_states)" \
  "$(path_states)" = "${p0#/dev/}:active:ready ${p1#/dev/}:active:ready"

section "fio verify through the map while path 1 is cut and restored"
fio --name=verify --filename=/dev/mapper/mpatha --ioengine=libaio --direct=1 \
    --rw=randwrite --bsrange=4k-64k --blockalign=4k --iodepth=8 --size=48M \
    --time_based --runtime=20 \
    --verify=crc32c --do_verify=1 --verify_backlog=64 --verify_fatal=1 \
    --output="$work/fio.out" > /dev/null 2>&1 &
fio_pid=$!
sleep 3
c0=$(path_commands 0)
echo "  path 1 down -> $(ctl mp path 1 down)"
wait_for "failed path" 20 sh -c "multipathd show paths format '%d:%t' | grep -q '${p1#/dev/}:failed'"
check "multipathd's checker failed path 1: $(path_states)" \
  -n "$(path_states | grep -F "${p1#/dev/}:failed:faulty")"
c1=$(path_commands 1) c0=$(path_commands 0)
sleep 3
check "path 1 carried nothing while cut ($c1, then $(path_commands 1))" \
  "$(path_commands 1)" -eq "$c1"
check "path 0 carried on ($c0, then $(path_commands 0))" "$(path_commands 0)" -gt "$c0"
echo "  path 1 up -> $(ctl mp path 1 up)"
wait_for "reinstated path" 20 sh -c "multipathd show paths format '%d:%t' | grep -q '${p1#/dev/}:active'"
check "multipathd reinstated path 1 by itself: $(path_states)" \
  "$(path_states)" = "${p0#/dev/}:active:ready ${p1#/dev/}:active:ready"
fio_rc=0
wait $fio_pid || fio_rc=$?
grep -E "err=|WRITE:|READ:" "$work/fio.out" | sed 's/^ */  /'
check "fio verify exit 0 (exit $fio_rc)" $fio_rc -eq 0
# Every job reported, and none with an error (the exit status alone
# would pass a fio that never reached its report).
check "fio: every job reported err= 0 ($(grep -c 'err= 0' "$work/fio.out") of them), none another" \
  "$(grep -c 'err= 0' "$work/fio.out")" -ge 1 -a "$(grep -cE 'err= *[1-9]' "$work/fio.out")" -eq 0
c1=$(path_commands 1)
dd if=/dev/zero of=/dev/mapper/mpatha bs=64k count=64 oflag=direct status=none
# The stats first: their counts are read from LIO when the stats are,
# not only at a 'path' command (the last one was path_commands above).
live=$(disk_stat mp .transport.scsi_path_commands)
check "path 1 carries I/O again ($c1, then $(path_commands 1))" \
  "$(path_commands 1)" -gt "$c1"
check "the stats count it live, no 'path' command between ($live)" \
  "${live##* }" -gt "$c1"
grep -E "failed path|reinstated|remaining active paths" "$work/multipathd.log" |
  sed 's/^/  multipathd: /'
check "multipathd logged the failure and the reinstatement" \
  -n "$(grep -F 'remaining active paths: 1' "$work/multipathd.log")" -a \
  -n "$(grep -F "$(cat "/sys/block/${p1#/dev/}/dev"): reinstated" "$work/multipathd.log")"
echo "  per path (LIO's in_cmds): $(disk_stat mp .transport.scsi_path_commands)"

section "over iSCSI: one target, a portal group per path"
# A SAN's way: the target has two ports (portal groups), the initiator a
# session to each, multipathd one map over the two sessions' disks.
# 'path 1 down' disables port 1: its session drops, its logins are
# refused, its I/O fails over after the replacement timeout (5 s).
if modprobe iscsi_target_mod 2>/dev/null && command -v iscsiadm > /dev/null; then
  spec="name=mi,size=64M,control=$work/mi.ctl,stats=$results/mi.json"
  scsi_start si --iscsi 127.0.0.1:3270 --paths 2 --disk "$spec"
  read -r _ iqn portal0 portal1 < "$work/si.ready"
  check "two portals, ports 3270 and 3271: $portal0 $portal1" \
    "$portal0 $portal1" = "127.0.0.1:3270 127.0.0.1:3271"
  i0=$(iscsi_login "$iqn" "$portal0" 5) i1=$(iscsi_login "$iqn" "$portal1" 5)
  check "a session and a disk per portal: ${i0:-none} ${i1:-none}" \
    -b "$i0" -a -b "$i1" -a "$i0" != "$i1"
  udevadm settle
  naa=$(disk_stat mi .transport.scsi_naa)
  # map_of WWID: the map multipathd made of the WWID starting so.
  map_of () { multipathd show maps format "%n %w" | awk -v w="$1" 'index($2, w) == 1 { print $1 }'; }
  wait_for "iSCSI multipath map" 60 sh -c "multipathd show maps format '%n %w' | grep -q 3${naa#naa.}"
  map=$(map_of "3${naa#naa.}")
  multipath -ll "$map" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g; s/^/  /'
  check "multipathd assembled $map from the two sessions' disks" \
    -n "$map" -a -n "$(multipath -ll "$map" 2>/dev/null | grep -F "${i0#/dev/}")" \
    -a -n "$(multipath -ll "$map" 2>/dev/null | grep -F "${i1#/dev/}")"
  fio --name=verify --filename="/dev/mapper/$map" --ioengine=libaio --direct=1 \
      --rw=randwrite --bsrange=4k-64k --blockalign=4k --iodepth=8 --size=48M \
      --time_based --runtime=30 \
      --verify=crc32c --do_verify=1 --verify_backlog=64 --verify_fatal=1 \
      --output="$work/fio-iscsi.out" > /dev/null 2>&1 &
  fio_pid=$!
  sleep 3
  echo "  path 1 down -> $(ctl mi path 1 down)"
  t0=$SECONDS
  wait_for "failed iSCSI path" 40 sh -c "multipathd show paths format '%d:%t' | grep -q '${i1#/dev/}:failed'"
  check "multipathd failed the disabled port's path after $((SECONDS - t0)) s: $(path_states)" \
    -n "$(path_states | grep -F "${i1#/dev/}:failed")"
  c1=$(ctl mi path | tr ' ' '\n' | awk -F: '$1 == 1 { print $NF }')
  sleep 3
  check "port 1 carried nothing while disabled ($c1, then $(ctl mi path | tr ' ' '\n' | awk -F: '$1 == 1 { print $NF }'))" \
    "$(ctl mi path | tr ' ' '\n' | awk -F: '$1 == 1 { print $NF }')" = "$c1"
  echo "  path 1 up -> $(ctl mi path 1 up)"
  t0=$SECONDS
  wait_for "reinstated iSCSI path" 40 sh -c "multipathd show paths format '%d:%t' | grep -q '${i1#/dev/}:active'"
  check "iscsid logged in again and multipathd reinstated it after $((SECONDS - t0)) s: $(path_states)" \
    -n "$(path_states | grep -F "${i1#/dev/}:active:ready")"
  fio_rc=0
  wait $fio_pid || fio_rc=$?
  grep -E "err=|WRITE:|READ:" "$work/fio-iscsi.out" | sed 's/^ */  /'
  check "fio verify through the iSCSI map: exit 0, no error (exit $fio_rc)" \
    $fio_rc -eq 0 -a -n "$(grep -F 'err= 0' "$work/fio-iscsi.out")"
  c1=$(ctl mi path | tr ' ' '\n' | awk -F: '$1 == 1 { print $NF }')
  dd if=/dev/zero of="/dev/mapper/$map" bs=64k count=64 oflag=direct status=none
  check "port 1 carries I/O again ($c1, then $(ctl mi path | tr ' ' '\n' | awk -F: '$1 == 1 { print $NF }'))" \
    "$(ctl mi path | tr ' ' '\n' | awk -F: '$1 == 1 { print $NF }')" -gt "$c1"
  echo "  per port (LIO's in_cmds): $(disk_stat mi .transport.scsi_path_commands)"
  multipath -f "$map" > /dev/null 2>&1 || true
  iscsi_logout "$iqn" "$portal0"
  iscsi_logout "$iqn" "$portal1"
  scsi_stop si
else
  echo "  (skipped: no iscsi_target_mod or no iscsiadm in this guest)"
fi

section "teardown"
multipathd shutdown > /dev/null 2>&1 || kill $mpd
wait $mpd 2>/dev/null || true
multipath -F > /dev/null 2>&1 || true
check "no multipath map left" ! -e /dev/mapper/mpatha
scsi_stop s
check "stats at exit carry the per-path counts: $(jq -r .transport.scsi_path_commands "$results/mp.json")" \
  -n "$(jq -r .transport.scsi_path_commands "$results/mp.json" | grep -E "^${p0#/dev/} [1-9][0-9]*, ${p1#/dev/} [1-9][0-9]*$")"
finish
