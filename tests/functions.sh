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
  local h
  for h in "${cleanup_hooks[@]}"; do eval "$h" || true; done
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

# jqr FILE FILTER: one value from a JSON file.
jqr () {
  jq -r "$2" "$1"
}
