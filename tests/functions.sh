# Shared helpers for the shell tests (sourced).  meson passes the build
# outputs in the environment; a test run by hand finds them in build/.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${BLKEMU_BUILD:=$top/build}"
: "${PLUGIN:=$BLKEMU_BUILD/nbd/nbdkit-blkemu-plugin.so}"
: "${NBD_IO:=$BLKEMU_BUILD/tests/nbd-io}"
: "${BLKEMU_CTL:=$BLKEMU_BUILD/tools/blkemu-ctl}"
export PLUGIN NBD_IO BLKEMU_CTL

# A scratch directory removed when the test exits.
tmp=$(mktemp -d /tmp/blkemu-test.XXXXXX)
cleanup_hooks=()
cleanup () {
  local h dev
  for h in "${cleanup_hooks[@]}"; do eval "$h" || true; done
  # Loop devices over the scratch files: loop_attach runs in a command
  # substitution, whose hooks are lost with its subshell.
  for dev in $(losetup -a 2>/dev/null | awk -F: -v t="($tmp/" 'index($0, t) { print $1 }'); do
    losetup -d "$dev" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# requires CMD ARGS...: skip the test (exit 77) unless the command works.
requires () {
  if ! "$@" >/dev/null 2>&1; then
    echo "SKIP: required command failed: $*"
    exit 77
  fi
}

fail () {
  echo "FAIL: $*" >&2
  exit 1
}

# refuses 'EXPECTED MESSAGE PART' COMMAND ARGS...: COMMAND fails, and its
# output names what it refused (the command-line tests' one check).
refuses () {
  local want=$1; shift
  if "$@" > "$tmp/out" 2>&1; then fail "[${*:2}] accepted"; fi
  grep -qF -- "$want" "$tmp/out" || fail "[${*:2}]: no '$want' in: $(cat "$tmp/out")"
  echo "ok: [${*:2}] -> $(grep -F -- "$want" "$tmp/out" | head -1)"
}

# profile_key KEY FILE: KEY's value in a profile (nothing when it is
# absent or commented out)
profile_key () { awk -v k="$1" '$1 == k && $2 == "=" { print $3 }' "$2"; }

# expect_eq WHAT ACTUAL EXPECTED
expect_eq () {
  [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
  echo "ok: $1 = $2"
}

# within WHAT ACTUAL EXPECTED PERCENT: |actual/expected - 1| <= percent%
within () {
  if awk -v a="$2" -v e="$3" -v p="$4" \
       'BEGIN { d = (a - e) / e; if (d < 0) d = -d; exit !(d * 100 <= p) }'; then
    echo "ok: $1 = $2 (expected $3 +-$4%)"
  else
    fail "$1: got $2, expected $3 +-$4%"
  fi
}

# between WHAT ACTUAL LOW HIGH: low <= actual <= high
between () {
  if awk -v a="$2" -v l="$3" -v h="$4" 'BEGIN { exit !(a >= l && a <= h) }'; then
    echo "ok: $1 = $2 (expected $3..$4)"
  else
    fail "$1: got $2, expected $3..$4"
  fi
}

# jqr FILE FILTER: one value from a JSON file.
jqr () {
  jq -r "$2" "$1"
}

# nbdkit_wrapped: the nbdkit on PATH is a sanitizer run's wrapper script
# (run-asan-tests, run-tsan-tests).  An nbdkit with a preloaded sanitizer
# may hang at exit (see wait_exit), TSan's wrapper runs --run itself (no
# captive parent) and TSan does not survive the fork into the
# background: the tests of exits, signals and daemons run on the plain
# build only.
nbdkit_wrapped () {
  head -c 2 "$(command -v nbdkit)" 2>/dev/null | grep -q '#!'
}

# ---- FUSE and loop helpers ------------------------------------------
: "${BLKEMU_FUSE:=$BLKEMU_BUILD/fuse/blkemu-fuse}"

# requires_fuse_loop: skip unless FUSE mounts and loop devices work here.
requires_fuse_loop () {
  [ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
  command -v fusermount3 >/dev/null || { echo "SKIP: fusermount3 not installed"; exit 77; }
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: loop devices need root"; exit 77; }
  losetup -f >/dev/null 2>&1 || { echo "SKIP: no free loop device"; exit 77; }
}

# fuse_mount MNT ARGS...: start blkemu-fuse in the foreground (its log in
# MNT.log), wait for the mount, and undo everything at exit.
fuse_mount () {
  local mnt=$1; shift
  mkdir -p "$mnt"
  "$BLKEMU_FUSE" -f "$mnt" "$@" 2> "$mnt.log" &
  fuse_pid=$!
  # each mount's own pid: a later fuse_mount replaces $fuse_pid
  cleanup_hooks+=("fuse_umount '$mnt' $fuse_pid")
  local i
  for i in $(seq 100); do
    mountpoint -q "$mnt" && return 0
    kill -0 "$fuse_pid" 2>/dev/null || break
    sleep 0.05
  done
  cat "$mnt.log" >&2
  fail "blkemu-fuse did not mount $mnt"
}

# fs_umount DIR: unmount the file system on DIR, waiting up to 10 s
# while it is busy (udev's blkid and btrfs's device scan open the loop
# devices under it for a moment after every change), then lazily, so
# that the FUSE server under its loop devices can still be let go.
fs_umount () {
  local dir=$1 i
  for i in $(seq 50); do
    mountpoint -q "$dir" || return 0
    umount "$dir" 2> /dev/null && return 0
    sleep 0.2
  done
  echo "fs_umount: $dir still busy after 10 s; unmounting lazily" >&2
  umount -l "$dir"
}

fuse_umount () {
  local mnt=$1 pid=${2:-$fuse_pid} dev
  for dev in $(losetup -a | awk -F: -v m="$mnt/" 'index($0, m) { print $1 }'); do
    losetup -d "$dev" || true
  done
  # A file system over those loop devices lets them go asynchronously
  # (btrfs, under ASan, after its umount returned): the mount stays busy
  # for a while.  Try for 10 s, then unmount lazily; the server exits
  # once the kernel lets it go, and is killed if it has not in 20 s.
  local i
  for i in $(seq 50); do
    mountpoint -q "$mnt" || break
    fusermount3 -u "$mnt" 2> /dev/null && break
    sleep 0.2
  done
  mountpoint -q "$mnt" && fusermount3 -uz "$mnt"
  for i in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2> /dev/null; then
    echo "fuse_umount: blkemu-fuse ($pid) still running 20 s after its unmount: killed" >&2
    kill -KILL "$pid" 2> /dev/null
  fi
  wait "$pid" 2>/dev/null || true
}

# loop_attach FILE [LOSETUP OPTIONS]: a loop device over FILE (under
# $tmp), removed at exit by cleanup, even when called as $(loop_attach).
loop_attach () {
  local f=$1; shift
  losetup -f --show "$@" "$f"
}

# ---- stopping a server ------------------------------------------------

# wait_exit WHAT PID SECONDS: wait for PID to exit; on a hang print every
# thread's stack and fail.  One hang is not ours and is let through, only
# under run-asan-tests (BLKEMU_PRELOADED_ASAN=1): Debian's uninstrumented
# nbdkit with the ASan runtime preloaded sometimes ends with glibc's
# locale lock left with a negative reader count, and p11-kit's destructor
# (_dl_fini -> freelocale) then waits on it forever.  By then the plugin
# has unloaded (its stats are written); the stack must show exactly that
# or the hang fails like any other.
wait_exit () {
  local what=$1 pid=$2 secs=$3 stacks
  timeout "$secs" tail --pid="$pid" -f /dev/null && return 0
  stacks=$(gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 |
           grep -v '^\[' || true)
  echo "$stacks" >&2
  if [ "${BLKEMU_PRELOADED_ASAN:-0}" = 1 ] &&
     [ "$(grep -c '^Thread ' <<< "$stacks")" = 1 ] &&
     grep -q '__freelocale' <<< "$stacks" && grep -q '_dl_fini' <<< "$stacks"
  then
    echo "note: $what: the known exit hang of nbdkit under the preloaded ASan runtime (p11-kit's freelocale in _dl_fini, after unload); killed"
    kill -KILL "$pid" 2>/dev/null || true
    return 0
  fi
  fail "$what did not exit within ${secs}s"
}
