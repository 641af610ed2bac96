# Helpers for scenarios (sourced; bash).  A scenario runs as root inside
# blkemu-vm (or on any Linux host with nbd and md): it serves blkemu disks
# with nbdkit, attaches them with blkemu-attach, builds the stack, drives
# I/O, prints a report and asserts invariants.
set -uo pipefail

top=${BLKEMU_TOP-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# The build tree's programs, or the installed ones (blkemu-vm run from
# anywhere passes an empty BLKEMU_TOP).
if [ -n "$top" ] && [ -e "$top/build/nbd/nbdkit-blkemu-plugin.so" ]; then
  PLUGIN=$top/build/nbd/nbdkit-blkemu-plugin.so
  CTL=$top/build/tools/blkemu-ctl
  FUSE=$top/build/fuse/blkemu-fuse
  UBLK=$top/build/ublk/blkemu-ublk
  SCSI=$top/build/scsi/blkemu-scsi
  ATTACH=$top/tools/blkemu-attach
  PLOT=$top/build/tools/blkemu-plot
  FIEMAP=$top/build/tools/blkemu-fiemap
  CRASHCHECK=$top/tools/blkemu-crashcheck
  NVMET=$top/tools/blkemu-nvmet
else
  PLUGIN=blkemu CTL=blkemu-ctl FUSE=blkemu-fuse UBLK=blkemu-ublk
  SCSI=blkemu-scsi
  ATTACH=blkemu-attach PLOT=blkemu-plot FIEMAP=blkemu-fiemap
  CRASHCHECK=blkemu-crashcheck NVMET=blkemu-nvmet
fi
results=${BLKEMU_RESULTS:-/tmp/blkemu-results}
work=$(mktemp -d /tmp/scenario.XXXXXX)
mkdir -p "$results"
failures=0
checks=0

# Kernel chatter (I/O errors a scenario provokes on purpose) stays in dmesg.
dmesg -n 1 2>/dev/null || true

# section TITLE: a heading, with the seconds since the scenario began
# (where a long run spends its time shows without another tool).
section () { printf '\n=== %s  [t+%d s]\n' "$*" "$SECONDS"; }

# same_on_every_kernel WHAT: true where the sections WHAT names check
# nothing the kernel's version changes.  At quick scale (CI) they run on
# the newest kernel of the header's "# kernels:" line only (elsewhere
# this says so and is false); at full scale on every kernel.
same_on_every_kernel () {
  [ "${BLKEMU_SCENARIO_SCALE:-full}" = quick ] || return 0
  local newest
  newest=$(sed -n 's/^# kernels: *\([0-9. ]*\).*/\1/p' "$0" | head -1 | awk '{ print $NF }')
  [ -n "$newest" ] || return 0
  case $(uname -r) in
    "$newest".* | "$newest"-*) return 0 ;;
  esac
  printf '\n=== %s: on %s only at quick scale (the same on every kernel)\n' "$1" "$newest"
  return 1
}

# check DESCRIPTION TEST-ARGS...: an invariant, counted and printed.
check () {
  local what=$1; shift
  checks=$((checks + 1))
  if [ "$@" ]; then echo "  PASS  $what"
  else echo "  FAIL  $what"; failures=$((failures + 1)); fi
}

# disk_start NAME KEY=VALUE...: serve a blkemu disk on $work/NAME.sock
# with its control socket at $work/NAME.ctl.  NBDKIT_OPTS adds server
# options (e.g. --threads).
disk_start () {
  local name=$1; shift
  # shellcheck disable=SC2086
  nbdkit ${NBDKIT_OPTS:-} -U "$work/$name.sock" -P "$work/$name.pid" "$PLUGIN" name="$name" \
    control="$work/$name.ctl" stats="$results/$name.json" "$@" ||
    { echo "cannot start disk $name"; exit 1; }
  local i
  for i in $(seq 100); do [ -S "$work/$name.ctl" ] && return 0; sleep 0.05; done
  echo "disk $name has no control socket"; exit 1
}
# disk_stop NAME: stop the server and wait for it (it writes stats= at exit).
disk_stop () {
  local pid i
  pid=$(cat "$work/$1.pid")
  kill "$pid" 2>/dev/null
  # blkemu-ublk lets requests in flight finish for up to 5 s
  for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "  (disk $1 did not stop in 10 s; killed)"
    kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$work/$1.sock" "$work/$1.ctl"
}
ctl () { "$CTL" "$work/$1.ctl" "${@:2}"; }

# md_create DEV LEVEL MEMBER... [-- MDADM-OPTION...]: a running array
# with 1.2 metadata (raid1 --assume-clean: the legs start identical), or
# the scenario stops with mdadm's words.
md_create () {
  local md=$1 level=$2 members=() opts=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do members+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; opts=("$@"); }
  [ "$level" = 1 ] && opts+=(--assume-clean)
  mdadm --create "$md" --run --level="$level" --raid-devices=${#members[@]} --metadata=1.2 \
    ${opts[@]+"${opts[@]}"} "${members[@]}" > "$work/mdadm.log" 2>&1 < /dev/null ||
    { cat "$work/mdadm.log"; echo "mdadm --create $md failed"; exit 1; }
}
# md_wait DEV [SECONDS]: wait (default 120 s) for the array's resync,
# recovery or check to end; fails if it did not.
md_wait () {
  wait_for "$1 idle" "${2:-120}" sh -c "[ \"\$(cat /sys/block/${1#/dev/}/md/sync_action)\" = idle ]"
}
# md_check DEV: run md's check (reads every leg, repairs read errors from
# the others, counts mismatches) and wait for it.
md_check () { echo check > "/sys/block/${1#/dev/}/md/sync_action"; md_wait "$1" 120; }

# raid1_on A B: disks A and B (disk_start) attached as /dev/nbd0 and
# /dev/nbd1 and made /dev/md0, a clean raid1 with 1.2 metadata.
raid1_on () {
  "$ATTACH" nbd "$work/$1.sock" /dev/nbd0 > /dev/null
  "$ATTACH" nbd "$work/$2.sock" /dev/nbd1 > /dev/null
  md_create /dev/md0 1 /dev/nbd0 /dev/nbd1
}

# wait_for WHAT SECONDS COMMAND...: poll COMMAND four times a second
# until it succeeds; after SECONDS say that WHAT never came and fail.
wait_for () {
  local what=$1 n=$2 i; shift 2
  for i in $(seq $((n * 4))); do "$@" && return 0; sleep 0.25; done
  echo "  (no $what after $n s)"
  return 1
}

# server_ready NAME TENTHS WHAT: wait up to TENTHS tenths of a second for
# the server of $work/NAME.pid to write $work/NAME.ready; if it exits or
# the time runs out, show its log and fail saying WHAT did not start.
server_ready () {
  local i
  for i in $(seq "$2"); do
    [ -e "$work/$1.ready" ] && return 0
    kill -0 "$(cat "$work/$1.pid")" 2>/dev/null || break
    sleep 0.1
  done
  [ -e "$work/$1.ready" ] && return 0
  cat "$work/$1.log" >&2
  echo "$3 did not start" >&2
  exit 1
}

# ublk_disk_start NAME KEY=VALUE...: the same disk as disk_start, served
# by blkemu-ublk as a block device; prints its path (/dev/ublkbN).
# UBLK_OPTS adds server options (--recoverable); the log of each server
# of NAME is appended to $work/NAME.log.
ublk_disk_start () {
  local name=$1 keys; shift
  keys=$(IFS=,; echo "$*")
  ublk_serve "$name" --disk \
    "name=$name,control=$work/$name.ctl,stats=$results/$name.json${keys:+,$keys}"
  awk '{ print $2 }' "$work/$name.ready"
}
# ublk_serve NAME ARGS...: one blkemu-ublk with ARGS (several --disk),
# log in $work/NAME.log, pid in $work/NAME.pid, its ready file
# $work/NAME.ready ("DISK /dev/ublkbN" lines) there once every disk is
# (up to 30 s a disk).
ublk_serve () {
  local name=$1 a disks=0; shift
  for a; do [ "$a" = --disk ] && disks=$((disks + 1)); done
  rm -f "$work/$name.ready"
  # shellcheck disable=SC2086
  "$UBLK" ${UBLK_OPTS:-} --ready-file "$work/$name.ready" "$@" >> "$work/$name.log" 2>&1 &
  echo $! > "$work/$name.pid"
  server_ready "$name" $((300 * disks)) "blkemu-ublk: $name"
}
# ublk_disk_stop NAME: the server removes the device and writes stats=.
ublk_disk_stop () { disk_stop "$1"; }
# ublk_available: ublk_drv loads here and blkemu-ublk was built.
ublk_available () {
  modprobe ublk_drv 2>/dev/null
  [ -e /dev/ublk-control ] && command -v "$UBLK" > /dev/null
}

# ublk_require: load ublk_drv, or skip (exit 77) saying what is missing.
ublk_require () {
  modprobe ublk_drv 2>/dev/null
  [ -e /dev/ublk-control ] ||
    { echo "SKIP: this kernel has no ublk_drv (needs Linux 6.0+; Debian's 6.1 does not build it)"; exit 77; }
  command -v "$UBLK" > /dev/null || { echo "SKIP: blkemu-ublk was not built (liburing >= 2.2 missing)"; exit 77; }
}
# scsi_require: LIO's TCMU and tcm_loop load here and blkemu-scsi was
# built, or skip (exit 77) saying what is missing.
scsi_require () {
  modprobe target_core_user 2>/dev/null && modprobe tcm_loop 2>/dev/null && modprobe sd_mod 2>/dev/null ||
    { echo "SKIP: this kernel has no target_core_user or tcm_loop"; exit 77; }
  command -v "$SCSI" > /dev/null || { echo "SKIP: blkemu-scsi was not built"; exit 77; }
}
# scsi_start NAME --disk SPEC...: run blkemu-scsi (log in $work/NAME.log,
# pid in $work/NAME.pid) and wait for its disks; sets sd[DISK]=/dev/sdX.
declare -A sd
scsi_start () {
  local name=$1 d dev; shift
  rm -f "$work/$name.ready"
  "$SCSI" --ready-file "$work/$name.ready" "$@" > "$work/$name.log" 2>&1 &
  echo $! > "$work/$name.pid"
  server_ready "$name" 600 "blkemu-scsi: $name"
  while read -r d dev; do sd[$d]=$dev; done < "$work/$name.ready"
}
# scsi_stop NAME: SIGTERM; the server removes its disks and writes stats=.
scsi_stop () {
  local pid rc=0
  pid=$(cat "$work/$1.pid")
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  return $rc
}

# iscsi_login IQN PORTAL [REPLACEMENT_TIMEOUT]: log this guest in to an
# iSCSI target (open-iscsi: iscsid started once, with /etc/iscsi on a
# tmpfs, the host's being read-only here) and print the SCSI disk that
# the session to PORTAL made (/dev/sdX).  REPLACEMENT_TIMEOUT: seconds a
# lost session holds its I/O before failing it (open-iscsi's default,
# 120, is for a single path; multipath setups use a few seconds).
# ISCSI_CHAP="USER SECRET [TARGET_USER TARGET_SECRET]": log in with CHAP
# (and mutual CHAP).
iscsi_login () {
  local iqn=$1 portal=$2 timeout=${3:-} s i
  command -v iscsiadm > /dev/null ||
    { echo "iscsiadm missing: install open-iscsi (tools/install-deps vm)" >&2; return 1; }
  if [ ! -e "$work/iscsid.pid" ]; then
    ip link set lo up 2>/dev/null
    modprobe iscsi_tcp && modprobe sd_mod || return 1
    mkdir -p "$work/etc-iscsi" /run/lock/iscsi
    cp -a /etc/iscsi/. "$work/etc-iscsi/" 2>/dev/null
    mount -t tmpfs tmpfs /etc/iscsi && cp -a "$work/etc-iscsi/." /etc/iscsi/ || return 1
    echo "InitiatorName=iqn.2026-12.org.blkemu:guest" > /etc/iscsi/initiatorname.iscsi
    iscsid -f > "$work/iscsid.log" 2>&1 &
    echo $! > "$work/iscsid.pid"
    sleep 1
  fi
  iscsiadm -m discovery -t sendtargets -p "$portal" > "$work/iscsi-discovery.log" 2>&1 &&
    { [ -z "$timeout" ] || iscsiadm -m node -T "$iqn" -p "$portal" -o update \
        -n node.session.timeo.replacement_timeout -v "$timeout"; } &&
    iscsi_chap "$iqn" "$portal" ${ISCSI_CHAP:-} &&
    iscsiadm -m node -T "$iqn" -p "$portal" --login > "$work/iscsi-login.log" 2>&1 ||
    { cat "$work/iscsi-discovery.log" "$work/iscsi-login.log" >&2; return 1; }
  for i in $(seq 100); do
    for s in /sys/class/iscsi_session/session*; do
      [ "$(cat "$s/targetname" 2>/dev/null)" = "$iqn" ] || continue
      # The session to this portal (a multipath target has several).
      [ "$(cat "$s"/device/connection*/iscsi_connection/connection*/persistent_port 2>/dev/null)" = "${portal##*:}" ] ||
        continue
      for b in "$s"/device/target*/*/block/*; do
        [ -e "$b" ] && { echo "/dev/${b##*/}"; return 0; }
      done
    done
    sleep 0.1
  done
  echo "iscsi_login: no disk appeared for $iqn" >&2
  return 1
}
# iscsi_chap IQN PORTAL [USER SECRET [TARGET_USER TARGET_SECRET]]: the
# node record's CHAP settings (none: no authentication).
iscsi_chap () {
  local iqn=$1 portal=$2
  set -- "${@:3}"
  up () { iscsiadm -m node -T "$iqn" -p "$portal" -o update -n "node.session.auth.$1" -v "$2"; }
  [ $# -eq 0 ] && { up authmethod None; return; }
  up authmethod CHAP && up username "$1" && up password "$2" || return 1
  [ $# -lt 4 ] || { up username_in "$3" && up password_in "$4"; }
}
# iscsi_logout IQN PORTAL
iscsi_logout () {
  iscsiadm -m node -T "$1" -p "$2" --logout > /dev/null 2>&1
}

# One seed on every frontend that carries it, the scenario form of
# nbdkit's foreach_plugin: for_each_frontend FUNC runs FUNC FRONTEND
# for nbd, ublk and scsi in turn, each in its own section, skipping (and
# saying so) those this kernel lacks; inside, frontend_disk serves a
# disk through FRONTEND and prints its block device, and ctl, disk_stat
# and seen work on it by NAME whatever the frontend.
frontend_usable () {
  case $1 in
    nbd) modprobe nbd nbds_max=8 2>/dev/null; [ -e /dev/nbd0 ] ;;
    ublk) ublk_available ;;
    scsi) modprobe target_core_user 2>/dev/null && modprobe tcm_loop 2>/dev/null &&
            modprobe sd_mod 2>/dev/null && command -v "$SCSI" > /dev/null ;;
    *) return 1 ;;
  esac
}
for_each_frontend () {
  local f ran=0
  for f in nbd ublk scsi; do
    if ! frontend_usable "$f"; then
      section "$f: not on this kernel ($(uname -r)), skipped"
      continue
    fi
    section "through $f"
    "$1" "$f"
    ran=$((ran + 1))
  done
  check "ran on $ran frontends (nbd, and ublk or scsi at least)" "$ran" -ge 2
}
# frontend_disk FRONTEND NAME KEY=VALUE...: the disk NAME (control socket
# $work/NAME.ctl, stats in the results) served through FRONTEND; sets
# $dev to its block device (not in a $(...): the servers are this
# shell's children, for frontend_disk_stop to wait on).
frontend_disk () {
  local f=$1 name=$2 keys n; shift 2
  case $f in
    nbd)
      disk_start "$name" "$@"
      for n in $(seq 0 7); do
        [ -s /sys/block/nbd$n/pid ] || break
      done
      "$ATTACH" nbd "$work/$name.sock" "/dev/nbd$n" > /dev/null || { echo "cannot attach $name"; exit 1; }
      echo "/dev/nbd$n" > "$work/$name.dev" ;;
    ublk) ublk_disk_start "$name" "$@" > "$work/$name.dev" ;;
    scsi)
      keys=$(IFS=,; echo "$*")
      scsi_start "$name" --disk "name=$name,control=$work/$name.ctl,stats=$results/$name.json${keys:+,$keys}"
      echo "${sd[$name]}" > "$work/$name.dev" ;;
  esac
  dev=$(cat "$work/$name.dev")
}
# frontend_disk_stop FRONTEND NAME: the disk gone, its stats written.
frontend_disk_stop () {
  case $1 in
    nbd) "$ATTACH" detach "$(cat "$work/$2.dev")" > /dev/null; disk_stop "$2" ;;
    ublk) ublk_disk_stop "$2" ;;
    scsi) scsi_stop "$2" ;;
  esac
}

# fresh_ext4 NAME DEV MNT [MOUNT-OPTIONS]: disk NAME powered on, a fresh
# ext4 on DEV (no lazy init: a kernel thread zeroing inode tables would
# write and flush at its own pace) mounted at MNT; the scenario stops
# with mkfs's or mount's words.
fresh_ext4 () {
  ctl "$1" power-on > /dev/null
  mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 "$2" \
    > "$work/mkfs.log" 2>&1 || { cat "$work/mkfs.log" >&2; exit 1; }
  mount ${4:+-o "$4"} "$2" "$3" || { echo "cannot mount ext4 on $2 (${4:-defaults})" >&2; exit 1; }
}
# cut_power NAME DEV MNT: the power goes with disk NAME's unflushed writes
# kept (power-off: for crash views); the dead file system at MNT is let
# go and DEV's buffers dropped.
cut_power () {
  ctl "$1" power-off > /dev/null
  umount "$3" 2> /dev/null || umount -l "$3"
  blockdev --flushbufs "$2" 2> /dev/null || true
}

# crash_disk NAME SIZE: the disk an application's crash scenario runs on
# (write-cached, 4K physical blocks, traced) served by blkemu-ublk; its
# device path in $dev, a mount point in $mnt, one for the states in $chk.
# The kernel's writeback defaults (dirty data kept 30 s, the flusher
# woken every 5 s): the bugs live in the page cache past a journal
# commit, whatever ran before on this machine.
crash_disk () {
  echo 3000 > /proc/sys/vm/dirty_expire_centisecs
  echo 500 > /proc/sys/vm/dirty_writeback_centisecs
  mnt=$work/fs chk=$work/check
  mkdir -p "$mnt" "$chk"
  dev=$(ublk_disk_start "$1" size="$2" write-cache=yes physical-block-size=4096 \
    "trace=$work/$1.trace") || exit 1
}
# crash_states NAME DISK MODE N SEED CHECK: blkemu-crashcheck runs CHECK
# ({dev}: $dev) on N states of MODE from SEED, every one (--keep-going);
# the summary in $work/NAME.out, each failing state's whole output under
# $work/NAME.logs.  states_passed NAME: how many passed.
crash_states () {
  "$CRASHCHECK" --control "$work/$2.ctl" --dev "$dev" --states "$4" --seed "$5" \
    --mode "$3" --keep-going --log "$work/$1.logs" --check "$6" > "$work/$1.out" 2>&1
}
states_passed () { grep -o "[0-9]* passed" "$work/$1.out" | tail -1 | cut -d' ' -f1; }

# disk_stat NAME JQ: one value from a disk's live stats.  A plain path
# (.ops.write.bytes, .ops.write.sizes["4096"]) blkemu-ctl selects itself:
# jq takes ~0.3 s to start in a TCG guest, blkemu-ctl ~0.05.
disk_stat () {
  if [[ $2 =~ ^(\.[A-Za-z0-9_]+|\.?\[(\"[^\"]*\"|[0-9]+)\])+$ ]]; then
    ctl "$1" stats "$2"
  else
    ctl "$1" stats | jq -r "$2"
  fi
}
# max_size NAME OP: the largest request size (bytes) the disk saw for OP;
# "none" when it saw none, so that a bound on it ("-le 127K") fails
# instead of holding for a disk that was never written.  The sizes'
# keys are byte counts, and "other" past the table's end.
max_size () {
  local sizes max=none
  sizes=$(ctl "$1" stats ".ops.$2.sizes") || return
  while [[ $sizes =~ \"([0-9]+)\":(.*) ]]; do
    [ "$max" = none ] || [ "${BASH_REMATCH[1]}" -gt "$max" ] && max=${BASH_REMATCH[1]}
    sizes=${BASH_REMATCH[2]}
  done
  echo "$max"
}

# kib BYTES: BYTES in KiB, or "none" as max_size says it.
kib () { case $1 in none) echo none ;; *) echo $(($1 / 1024)) ;; esac; }

# queue_limits DEV...: one line per device, like the seeds' tables.
queue_limits () {
  printf '  %-8s %8s %8s %9s %6s %6s %8s %8s %4s\n' device max_kb hw_kb segments lbs pbs io_min io_opt rot
  local d q
  for d in "$@"; do
    q=/sys/block/${d#/dev/}/queue
    printf '  %-8s %8s %8s %9s %6s %6s %8s %8s %4s\n' "${d#/dev/}" \
      "$(cat $q/max_sectors_kb)" "$(cat $q/max_hw_sectors_kb)" "$(cat $q/max_segments)" \
      "$(cat $q/logical_block_size)" "$(cat $q/physical_block_size)" \
      "$(cat $q/minimum_io_size)" "$(cat $q/optimal_io_size)" "$(cat $q/rotational)"
  done
}

# seen NAME: what a disk saw: the iostat-style summary and histograms.
seen () { ctl "$1" summary | sed 's/^/  /'; }

# diskstats DEV: "reads merges sectors writes merges sectors" from /sys.
diskstats () { awk '{ print $1, $2, $3, $5, $6, $7 }' "/sys/block/${1#/dev/}/stat"; }

finish () {
  section "verdict"
  echo "  $checks checks, $failures failed"
  cp "$work"/*.log "$results/" 2>/dev/null || true
  [ "$failures" -eq 0 ]
}
