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

kernels=${BLKEMU_VM_KERNELS:-"6.1 6.12"}
# crashcheck-ublk's torn states: 50 here (about a minute under TCG);
# the scenario's own default, 200, or thousands on a long run by hand
# (blkemu-vm --env STATES=N).
crash_states=${BLKEMU_VM_CRASH_STATES:-50}
# Every scenario in scenarios/ (lib.sh is their library): a new one runs
# here by being there.
all=$(cd "$top/scenarios" && ls *.sh | grep -vx lib.sh | sed 's/\.sh$//' | sort)
[ -n "$all" ] || fail "no scenarios in $top/scenarios"
scenarios=${BLKEMU_VM_SCENARIOS:-$all}
echo "scenarios: $(echo $scenarios | wc -w) on kernels $kernels"
failed=()
for k in $kernels; do
  for s in $scenarios; do
    echo "=== $s on $k"
    rc=0 t0=$SECONDS
    "$top/tools/blkemu-vm" -q --kernel "$k" --results "$tmp/$k-$s" \
      --env "STATES=$crash_states" "$top/scenarios/$s.sh" > "$tmp/out" 2>&1 || rc=$?
    took="$((SECONDS - t0)) s"
    if [ $rc -eq 0 ]; then
      grep -E "PASS|checks" "$tmp/out" | tail -3
      echo "ok: $s on $k ($took)"
    elif [ $rc -eq 77 ]; then
      # the scenario needs what this kernel lacks (ublk on 6.1), and says so
      grep -m1 "SKIP" "$tmp/out" || cat "$tmp/out"
      echo "skipped: $s on $k ($took)"
    else
      cat "$tmp/out"
      echo "FAILED: $s on $k ($took)"
      failed+=("$s@$k")
    fi
  done
done

# Nothing blkemu-vm leaves behind holds its output open: piped into
# another program (tee, a CI log), it ends when the guest does, not when
# a forgotten watchdog's 120 s boot deadline runs out.
printf '#!/bin/sh\necho piped-guest-ran\n' > "$tmp/piped.sh"
t0=$SECONDS
"$top/tools/blkemu-vm" -q --kernel "${kernels##* }" --results "$tmp/piped" "$tmp/piped.sh" 2>&1 | cat > "$tmp/out"
took=$((SECONDS - t0))
if grep -q piped-guest-ran "$tmp/out" && [ $took -lt 100 ]; then
  echo "ok: blkemu-vm piped into cat ended with its guest (${took} s)"
else
  cat "$tmp/out"
  failed+=("blkemu-vm piped: ${took} s")
fi

# A kernel build tree, the way a kernel developer has one: Debian's 6.12
# laid out as arch/x86/boot/bzImage plus a modules_install directory,
# booted with more vCPUs than the host has cores.
cache=${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/blkemu-vm
kd=$(ls -d "$cache"/linux-image-6.12*-amd64 2>/dev/null | head -1)
if [ -n "$kd" ] && [ -d "$kd/boot" ]; then
  mkdir -p "$tmp/kdir/arch/x86/boot"
  cp "$kd"/boot/vmlinuz-* "$tmp/kdir/arch/x86/boot/bzImage"
  cpus=$(( $(nproc) + 2 ))
  echo "=== vm-any-module on a build tree ($tmp/kdir, --modules $kd), $cpus vCPUs on $(nproc) cores"
  rc=0
  "$top/tools/blkemu-vm" -q --kernel "$tmp/kdir" --modules "$kd" --cpus $cpus --env "EXPECT_CPUS=$cpus" \
    --results "$tmp/kdir-results" "$top/scenarios/vm-any-module.sh" > "$tmp/out" 2>&1 || rc=$?
  if [ $rc -eq 0 ] && grep -q "PASS  $cpus CPUs, as --cpus asked" "$tmp/out"; then
    grep -E "checks" "$tmp/out" | tail -1
    echo "ok: a build tree with --modules boots, $cpus vCPUs"
  else
    cat "$tmp/out"
    failed+=("vm-any-module@build-tree")
  fi
  if "$top/tools/blkemu-vm" --kernel "$tmp/kdir" "$top/scenarios/vm-any-module.sh" > "$tmp/out" 2>&1; then
    failed+=("build tree without --modules accepted")
  fi
  grep -q "give --modules DIR" "$tmp/out" || failed+=("build tree without --modules: $(cat "$tmp/out")")
fi
[ ${#failed[@]} -eq 0 ] || fail "scenarios failed: ${failed[*]}"
