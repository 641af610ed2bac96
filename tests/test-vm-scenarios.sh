#!/usr/bin/env bash
# The scenarios under blkemu-vm on Debian's 6.1 and 6.12 kernels: the
# real nbd, md, loop and FUSE stack on blkemu disks.  Skips (77) with the
# reason when qemu or the kernel packages cannot be had.
source "$(dirname "$0")/functions.sh"
command -v qemu-system-x86_64 >/dev/null ||
  { echo "SKIP: qemu-system-x86_64 not installed (tools/install-deps vm)"; exit 77; }
[ -e /bin/busybox ] || { echo "SKIP: busybox-static not installed (tools/install-deps vm)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: blkemu-vm builds initramfs images as root"; exit 77; }
apt-cache policy linux-image-amd64 2>/dev/null | grep Candidate >/dev/null ||
  { echo "SKIP: no Debian kernel packages reachable through apt"; exit 77; }

# BLKEMU_VM_GROUP_NICE (run-check's part beside the make run: -19):
# this session's nice as a scheduling group.  meson runs each test in a
# session of its own, and with autogroups (Debian's default) sessions
# share the CPUs equally whatever their tasks' nice: beside a torture
# loop two scenarios took 126 s, 70 alone, and 71 s with this at -19.
# Root only; without autogroups the write changes nothing.
if [ -n "${BLKEMU_VM_GROUP_NICE:-}" ]; then
  [[ $BLKEMU_VM_GROUP_NICE =~ ^-?[0-9]+$ ]] && [ "$BLKEMU_VM_GROUP_NICE" -ge -20 ] &&
    [ "$BLKEMU_VM_GROUP_NICE" -le 19 ] ||
    fail "BLKEMU_VM_GROUP_NICE=$BLKEMU_VM_GROUP_NICE: a nice value from -20 to 19"
  if echo "$BLKEMU_VM_GROUP_NICE" 2>/dev/null > /proc/self/autogroup; then
    echo "this session's scheduling group: $(cat /proc/self/autogroup)"
  else
    echo "note: no autogroup nice $BLKEMU_VM_GROUP_NICE here: what runs beside slows the guest"
  fi
fi
kernels=${BLKEMU_VM_KERNELS:-"6.1 6.12"}
# crashcheck-ublk's torn states: 12 here (each a mount and an fsck in
# the guest, 0.9 s alone, twice that beside the sanitizer suites);
# the scenario's own default, 200, or thousands on a long run by hand
# (blkemu-vm --env STATES=N).
crash_states=${BLKEMU_VM_CRASH_STATES:-12}
# quick: the mechanism each scenario shows, with the long figures (the
# seed-000 table's runs and profiles) left to `make check-long`
# (BLKEMU_VM_SCALE=full).
scale=${BLKEMU_VM_SCALE:-quick}
# Every scenario in scenarios/ (lib.sh is their library): a new one runs
# here by being there.  Each runs on 6.12, and on 6.1 too where its
# header says the kernels differ in what it checks ("# kernels: 6.1 6.12").
all=$(cd "$top/scenarios" && ls *.sh | grep -vx lib.sh | sed 's/\.sh$//' | sort)
[ -n "$all" ] || fail "no scenarios in $top/scenarios"
scenarios=${BLKEMU_VM_SCENARIOS:-$all}
for s in $scenarios; do
  grep -qE '^# budget: *[0-9]+ *s\b' "$top/scenarios/$s.sh" ||
    fail "scenarios/$s.sh declares no budget (a line '# budget: N s')"
done
# BLKEMU_VM_PART: "quiet", only the scenarios whose header says they
# need a quiet host ("# quiet: WHY": timing that a TCG guest keeps only
# with the host's cores to itself); "rest", all the others and the
# hand-off checks (make check runs this part beside the sanitizer
# suites); unset, everything.
part=${BLKEMU_VM_PART:-}
case $part in
  '' | quiet | rest) ;;
  *) fail "BLKEMU_VM_PART=$part: must be quiet or rest" ;;
esac
if [ -n "$part" ]; then
  chosen=
  for s in $scenarios; do
    if grep -q '^# quiet:' "$top/scenarios/$s.sh"; then q=quiet; else q=rest; fi
    [ $q = "$part" ] && chosen+="$s "
  done
  scenarios=$chosen
  echo "=== the $part part: ${scenarios:-none}"
fi
kernels_of () {
  local k
  [ -n "${BLKEMU_VM_ALL_KERNELS:-}" ] && { echo "$kernels"; return; }
  k=$(sed -n 's/^# kernels: *\([0-9. ]*\).*/\1/p' "$top/scenarios/$1.sh" | head -1)
  echo "${k:-6.12}"
}
# Results: one line a scenario and kernel (name, kernel, status, seconds,
# budget, verdict), kept beside meson's logs.
results_file=${BLKEMU_VM_RESULTS:-$BLKEMU_BUILD/meson-logs/vm-scenarios${part:+-$part}.tsv}
mkdir -p "$(dirname "$results_file")"
printf 'scenario\tkernel\tstatus\tseconds\tbudget\tverdict\n' > "$results_file"
failed=() why=()
for k in $kernels; do
  list=()
  for s in $scenarios; do
    [[ " $(kernels_of "$s") " == *" $k "* ]] && list+=("$top/scenarios/$s.sh")
  done
  [ ${#list[@]} -gt 0 ] || continue
  echo "=== ${#list[@]} scenarios on $k, one guest: $(printf '%s ' "${list[@]##*/}" | sed 's/\.sh//g')"
  t0=$SECONDS rc=0
  "$top/tools/blkemu-vm" -q --kernel "$k" --batch --results "$tmp/$k" \
    --env "STATES=$crash_states" --env "BLKEMU_SCENARIO_SCALE=$scale" \
    "${list[@]}" > "$tmp/out-$k" 2>&1 || rc=$?
  echo "  $((SECONDS - t0)) s for the batch on $k (status $rc)"
  [ -s "$tmp/$k/scenarios.tsv" ] || { cat "$tmp/out-$k"; failed+=("batch on $k: no results"); continue; }
  cat "$tmp/$k/scenarios.tsv" >> "$results_file"
  while IFS=$'\t' read -r name kv st took budget verdict; do
    case $st in
      0) echo "ok: $name on $k ($took s of $budget)" ;;
      77) echo "skipped: $name on $k: $(grep -m1 SKIP "$tmp/$k/$name/output.log" 2>/dev/null || echo "$verdict")" ;;
      *)
        # The scenario's own output, then why, again at the end where a
        # truncated log still shows it.
        cat "$tmp/$k/$name/output.log" 2>/dev/null
        echo "FAILED: $name on $k ($took s, budget $budget): $verdict"
        failed+=("$name@$k")
        why+=("$name@$k: $verdict: $({ grep -E "^ *FAIL  " "$tmp/$k/$name/output.log" || tail -3 "$tmp/$k/$name/output.log"; } 2>/dev/null | head -5 | sed 's/^ *//' | paste -sd'|')") ;;
    esac
  done < "$tmp/$k/scenarios.tsv"
  # every scenario of the list has its line: none vanished
  for s in "${list[@]}"; do
    s=$(basename "$s" .sh)
    awk -F'\t' -v n="$s" '$1 == n { f = 1 } END { exit !f }' "$tmp/$k/scenarios.tsv" ||
      failed+=("$s@$k: no result")
  done
  # blkemu-vm itself stopped short: what it printed last says why.
  [[ " ${failed[*]} " != *"@$k: no result"* ]] || { echo "the batch on $k ended with:"; tail -n 40 "$tmp/out-$k"; }
done
echo "per-scenario results: $results_file"
tail -n +2 "$results_file" | sort -t$'\t' -k4,4nr | head -5 | awk -F'\t' '$4 > 0 { printf "  slowest: %s on %s, %s s (budget %s)\n", $1, $2, $4, $5 }'
if [ "$part" = quiet ]; then # the hand-off checks run with the rest
  [ ${#why[@]} -eq 0 ] || printf 'why: %s\n' "${why[@]}" >&2
  [ ${#failed[@]} -eq 0 ] || fail "scenarios failed: ${failed[*]}"
  exit 0
fi

# The hand-off to the suites people run (blkemu-vm --disk ... --
# COMMAND): on 6.12 blkemu-ublk serves the disks, on 6.1 (no ublk_drv)
# blkemu-scsi; COMMAND sees them in its environment with the disks' own
# limits, the blktests config holds them as an array, what COMMAND wrote
# reaches the disk and its stats file, and COMMAND's status is
# blkemu-vm's (3 on purpose).
cat > "$tmp/handoff.sh" <<'SCRIPT'
set -u
n=0
ok () { n=$((n + 1)); echo "handoff check $n: $*"; }
[ "$(echo $BLKEMU_DEVS | wc -w)" -eq 2 ] && [ "$TEST_DEVS" = "$BLKEMU_DEVS" ] && ok "two devices"
[ "$TEST_DEV" = "$BLKEMU_DEV_LIM" ] && [ "$SCRATCH_DEV" = "$BLKEMU_DEV_D1" ] && ok "TEST_DEV, SCRATCH_DEV in --disk order"
[ "$(cat /sys/block/${TEST_DEV#/dev/}/queue/max_sectors_kb)" -eq 64 ] && ok "max-transfer=64K caps max_sectors_kb at 64"
[ "$(cat /sys/block/${SCRATCH_DEV#/dev/}/queue/logical_block_size)" -eq 4096 ] && ok "logical-block-size=4096"
source "$BLKTESTS_CONFIG" && [ ${#TEST_DEVS[@]} -eq 2 ] && ok "the blktests config holds an array of two"
dd if=/dev/urandom of=$BLKEMU_RESULTS/pattern bs=64K count=16 status=none
dd if=$BLKEMU_RESULTS/pattern of=$BLKEMU_DEV_LIM bs=1M oflag=direct status=none &&
  cmp <(dd if=$BLKEMU_DEV_LIM bs=1M count=1 iflag=direct status=none) $BLKEMU_RESULTS/pattern && ok "1M written and read back"
[ "$("$CTL" "$BLKEMU_CTL_LIM" stats | jq '.ops.write.sizes["65536"]')" -eq 16 ] && ok "the disk saw 16 writes of 64K"
exit $((n == 7 ? EXPECT_RC : 1))
SCRIPT
for k in $kernels; do
  case $k in 6.1) want=scsi rc_want=3 ;; *) want=ublk rc_want=0 ;; esac
  echo "=== blkemu-vm --disk ... -- COMMAND on $k (blkemu-$want)"
  rc=0
  "$top/tools/blkemu-vm" -q --kernel "$k" --results "$tmp/handoff-$k" \
    --env "CTL=$top/build/tools/blkemu-ctl" --env "EXPECT_RC=$rc_want" \
    --disk name=lim,size=64M,max-transfer=64K --disk size=32M,logical-block-size=4096 \
    -- bash "$tmp/handoff.sh" > "$tmp/out" 2>&1 || rc=$?
  sed 's/^/  /' "$tmp/out"
  if [ $rc -eq $rc_want ] && grep -q "^handoff check 7:" "$tmp/out" &&
     grep -q "disk(s) on blkemu-$want" "$tmp/out" && grep -q "the command exited $rc_want" "$tmp/out" &&
     [ "$(jq '.ops.write.sizes["65536"]' "$tmp/handoff-$k/lim.json")" -eq 16 ]; then
    echo "ok: the hand-off on $k: 7 checks in the guest, status $rc, stats in the results"
  else
    failed+=("hand-off on $k (status $rc, wanted $rc_want)")
  fi
done
# --frontend nvmet (6.12: ublk_drv): the same hand-off, the disk a
# namespace of the guest's NVMe target on two paths; COMMAND sees the
# namespace's node with the disk's limits, controls the disk through its
# socket and a path's ANA state through blkemu-nvmet.
cat > "$tmp/handoff-nvmet.sh" <<'SCRIPT'
set -u
n=0
ok () { n=$((n + 1)); echo "nvmet check $n: $*"; }
d=${BLKEMU_DEV_N#/dev/}
[[ $d =~ ^nvme[0-9]+n1$ ]] && ok "BLKEMU_DEV_N is a namespace ($BLKEMU_DEV_N)"
[ "$(cat /sys/block/$d/queue/physical_block_size)" -eq 16384 ] && ok "16K physical block (NPWG, NAWUPF)"
[ "$(ls -d /sys/class/nvme/nvme* | wc -l)" -eq 2 ] && ok "two controllers (--nvmet-paths 2)"
dd if=/dev/urandom of=$BLKEMU_RESULTS/pattern bs=64K count=16 status=none
dd if=$BLKEMU_RESULTS/pattern of=$BLKEMU_DEV_N bs=1M oflag=direct status=none &&
  cmp <(dd if=$BLKEMU_DEV_N bs=1M count=1 iflag=direct status=none) $BLKEMU_RESULTS/pattern && ok "1M written and read back"
[ "$("$CTL" "$BLKEMU_CTL_N" stats | jq '.ops.write.bytes')" -ge 1048576 ] && ok "the disk's control socket counts it"
"$BLKEMU_TOP/tools/blkemu-nvmet" ana n 2 inaccessible | grep -q ": inaccessible$" && ok "path 2 made inaccessible"
exit $((n == 6 ? 0 : 1))
SCRIPT
case " $kernels " in *" 6.12 "*)
  echo "=== blkemu-vm --frontend nvmet --nvmet-paths 2 --disk ... -- COMMAND on 6.12"
  rc=0
  "$top/tools/blkemu-vm" -q --kernel 6.12 --results "$tmp/handoff-nvmet" \
    --env "CTL=$top/build/tools/blkemu-ctl" --frontend nvmet --nvmet-paths 2 \
    --disk name=n,size=64M,physical-block-size=16K,min-io=16K \
    -- bash "$tmp/handoff-nvmet.sh" > "$tmp/out" 2>&1 || rc=$?
  sed 's/^/  /' "$tmp/out"
  if [ $rc -eq 0 ] && grep -q "^nvmet check 6:" "$tmp/out" &&
     grep -q "disk(s) on blkemu-ublk, exported through nvmet on 2 path(s) each" "$tmp/out" &&
     [ "$(jq '.ops.write.bytes' "$tmp/handoff-nvmet/n.json")" -ge 1048576 ]; then
    echo "ok: the nvmet hand-off on 6.12: 6 checks in the guest, stats in the results"
  else
    failed+=("nvmet hand-off on 6.12 (status $rc)")
  fi ;;
esac
# refused_early WANT ARG...: blkemu-vm ARG... fails before any guest
# boots, saying WANT.
refused_early () {
  local want=$1; shift
  if "$top/tools/blkemu-vm" "$@" > "$tmp/out" 2>&1; then failed+=("blkemu-vm $* accepted"); return; fi
  grep -qF -- "$want" "$tmp/out" || failed+=("blkemu-vm $*: $(cat "$tmp/out")")
}
refused_early "--frontend goes with --disk" --frontend ublk true
refused_early "--batch and --disk do not go together" --batch --disk size=1M true
refused_early "no-such-script: no such script" --batch "$tmp/no-such-script"
refused_early "must be auto, ublk, scsi, nvmet, nvme, sata or virtio-blk" --disk size=1M --frontend floppy true
refused_early "--nvmet-paths goes with --frontend nvmet" --nvmet-paths 2 --disk size=1M true
refused_early "--nvmet-paths 9: a number of paths from 1 to 8" --frontend nvmet --nvmet-paths 9 --disk size=1M true
BLKEMU_VM_TCG_CPU=no-such-cpu refused_early "BLKEMU_VM_TCG_CPU=no-such-cpu: not a CPU model" --disk size=1M true

# The host's own stats of the NVMe disk, from its server: nothing above
# MDTS (128K) and at least 56 writes of it, the guest's bound (not "64 of
# 128K": the guest's block layer cuts one in a while: 124K + 4K pieces).
# qemu's own controllers over disks the host serves (tests/vm-controllers.sh
# checks them in the guest): what each controller takes from the spec,
# the guest's driver's limits, data, a read error as the controller's
# own, a crash through the guest's flushes, blkemu-ctl on the bridged
# control ports.  A spec a controller cannot express is refused before
# any guest boots.  The controllers and their drivers measured the same
# on 6.1 and 6.12: at quick scale (CI) only the newest kernel runs them.
controller_kernels=$kernels
[ "$scale" = full ] || [ -n "${BLKEMU_VM_ALL_KERNELS:-}" ] || controller_kernels=${kernels##* }
for k in $controller_kernels; do
  echo "=== qemu's controllers on $k: nvme (one with PI), sata, virtio-blk"
  rc=0 t0=$SECONDS
  "$top/tools/blkemu-vm" -q --kernel "$k" --results "$tmp/controllers-$k" \
    --disk frontend=nvme,name=n0,size=64M,max-transfer=128K,logical-block-size=4096,write-cache=yes \
    --disk frontend=nvme,name=n1,size=64M,logical-block-size=4096,metadata-size=8,protection=type1 \
    --disk frontend=sata,name=s0,size=64M,physical-block-size=4K,rotational=yes,rpm=5400,product=WDC-WD5002ABYS,write-cache=yes \
    --disk frontend=virtio-blk,name=v0,size=64M,physical-block-size=16K,min-io=16K,opt-io=64K,max-discard=1M,write-cache=yes \
    -- bash "$top/tests/vm-controllers.sh" > "$tmp/out" 2>&1 || rc=$?
  grep -E "^(==|  (PASS|FAIL|kernel:))|^controllers:" "$tmp/out" | sed 's/^/  /'
  summary=$(grep "^controllers: " "$tmp/out")
  if [ $rc -eq 0 ] && [[ $summary =~ ^controllers:\ ([0-9]+)\ checks,\ 0\ failed ]] && [ "${BASH_REMATCH[1]}" -ge 34 ] &&
     [ "$(jq '.transport.frontend' -r "$tmp/controllers-$k/n0.json")" = nvme ] &&
     [ "$(jq '([.ops.write.sizes | keys[] | select(. != "other") | tonumber] | max) <= 131072 and
              (.ops.write.sizes["131072"] // 0) >= 56' "$tmp/controllers-$k/n0.json")" = true ]; then
    echo "ok: qemu's controllers on $k: ${summary#controllers: }, stats from the host's servers ($((SECONDS - t0)) s)"
  else
    tail -n 30 "$tmp/out"
    failed+=("controllers on $k (status $rc: ${summary:-no summary})")
  fi
done
before=${#failed[@]}
refused_early "max-transfer=2K: NVMe (qemu) expresses a maximum transfer as 4K << MDTS" \
  --frontend nvme --disk size=64M,max-transfer=2K true
refused_early "SATA (qemu AHCI) has 512-byte logical sectors only" \
  --frontend sata --disk size=64M,logical-block-size=4096 true
refused_early "do not mix in one run" --disk size=1M --disk frontend=nvme,size=1M true
refused_early "frontend=floppy: must be nvme, sata or virtio-blk" --disk frontend=floppy,size=1M true
refused_early "name=twenty-one-characters: a controller's disk is found by its serial number" \
  --frontend nvme --disk name=twenty-one-characters,size=1M true
refused_early "two disks share a name" --frontend virtio-blk --disk name=a,size=1M --disk name=a,size=1M true
refused_early "at most 6 sata disks" --frontend sata $(printf -- '--disk size=1M %.0s' 1 2 3 4 5 6 7) true
[ ${#failed[@]} -gt "$before" ] ||
  echo "ok: refused before booting: nvme max-transfer=2K, sata 4K logical blocks, ublk mixed with nvme, a bad frontend=, a 21-character name, two disks of one name, 7 sata disks"

# A kernel build tree, the way a kernel developer has one: Debian's 6.12
# laid out as arch/x86/boot/bzImage plus a modules_install directory,
# booted with more vCPUs than the host has cores: the CPUs, the whole
# module tree from --modules (null_blk is not in the initramfs), module
# autoload, --env and --udev reach the guest.  Piped into cat: nothing blkemu-vm
# leaves behind may hold its output open (a forgotten watchdog held it
# for its 120 s boot deadline), so the pipe ends with the guest.
cache=${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/blkemu-vm
kd=$(ls -d "$cache"/linux-image-6.12*-amd64 2>/dev/null | head -1)
if [ -n "$kd" ] && [ -d "$kd/boot" ]; then
  mkdir -p "$tmp/kdir/arch/x86/boot"
  cp "$kd"/boot/vmlinuz-* "$tmp/kdir/arch/x86/boot/bzImage"
  cpus=$(( $(nproc) + 2 ))
  cat > "$tmp/build-tree.sh" <<'SCRIPT'
#!/bin/sh
echo "cpus $(nproc) of $EXPECT_CPUS"
modprobe null_blk && [ -b /dev/nullb0 ] && echo "null_blk from the module tree"
dmsetup create bt-zero --table "0 2048 zero" && [ -b /dev/mapper/bt-zero ] && echo "dm_mod loaded on demand"
pidof systemd-udevd > /dev/null && [ -z "${DM_DISABLE_UDEV:-}" ] && echo "udevd running (--udev)"
[ "$(nproc)" -eq "$EXPECT_CPUS" ]
SCRIPT
  echo "=== a build tree ($tmp/kdir, --modules $kd), $cpus vCPUs on $(nproc) cores, piped"
  t0=$SECONDS
  "$top/tools/blkemu-vm" -q --kernel "$tmp/kdir" --modules "$kd" --cpus $cpus --env "EXPECT_CPUS=$cpus" \
    --udev --results "$tmp/kdir-results" "$tmp/build-tree.sh" 2>&1 | cat > "$tmp/out"
  rc=${PIPESTATUS[0]} took=$((SECONDS - t0))
  sed 's/^/  /' "$tmp/out"
  if grep -q "^cpus $cpus of $cpus" "$tmp/out" && grep -q "null_blk from the module tree" "$tmp/out" &&
     grep -q "dm_mod loaded on demand" "$tmp/out" && grep -q "udevd running (--udev)" "$tmp/out" &&
     [ "$rc" -eq 0 ]; then
    echo "ok: a build tree with --modules boots, $cpus vCPUs, modules from its tree, --udev"
  else
    failed+=("build tree with --modules")
  fi
  if [ $took -lt 100 ]; then
    echo "ok: blkemu-vm piped into cat ended with its guest (${took} s)"
  else
    failed+=("blkemu-vm piped: ${took} s")
  fi
  if "$top/tools/blkemu-vm" --kernel "$tmp/kdir" "$tmp/build-tree.sh" > "$tmp/out" 2>&1; then
    failed+=("build tree without --modules accepted")
  fi
  grep -q "give --modules DIR" "$tmp/out" || failed+=("build tree without --modules: $(cat "$tmp/out")")
fi
[ ${#why[@]} -eq 0 ] || printf 'why: %s\n' "${why[@]}" >&2
[ ${#failed[@]} -eq 0 ] || fail "scenarios failed: ${failed[*]}"
