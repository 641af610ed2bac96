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
scenarios=${BLKEMU_VM_SCENARIOS:-"md-raid1-mixed-limits raid0-limits direct-io-4m fuse-loop-leg max-sectors-regression readahead-iscsi mq-raid0-ssd crash-consistency ublk-limits ublk-mq-tags"}
failed=()
for k in $kernels; do
  for s in $scenarios; do
    echo "=== $s on $k"
    rc=0
    "$top/tools/blkemu-vm" -q --kernel "$k" --results "$tmp/$k-$s" \
      "$top/scenarios/$s.sh" > "$tmp/out" 2>&1 || rc=$?
    if [ $rc -eq 0 ]; then
      grep -E "PASS|checks" "$tmp/out" | tail -3
      echo "ok: $s on $k"
    elif [ $rc -eq 77 ]; then
      # the scenario needs what this kernel lacks (ublk on 6.1), and says so
      grep -m1 "SKIP" "$tmp/out" || cat "$tmp/out"
      echo "skipped: $s on $k"
    else
      cat "$tmp/out"
      failed+=("$s@$k")
    fi
  done
done
[ ${#failed[@]} -eq 0 ] || fail "scenarios failed: ${failed[*]}"
