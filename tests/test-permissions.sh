#!/usr/bin/env bash
# A local user gets no control of a disk it was not given.  Every
# user-facing entry point is tried as an unprivileged uid (65534) against
# disks root serves: blkemu-fuse's disk, attribute and command files
# under -o allow_other (readable, not writable: no limit changed, no byte
# written, no crash), the control socket (owner-only), and the stats and
# trace files (written by their owner, readable as files are).
source "$(dirname "$0")/functions.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to act as another user"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v setpriv > /dev/null || { echo "SKIP: setpriv (util-linux) missing"; exit 77; }
nobody () { setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"; }
chmod 755 "$tmp"
mnt=$tmp/mnt
sock=$tmp/d.sock
fuse_mount "$mnt" -o allow_other \
  --disk "name=d,size=8M,max-transfer=127K,write-cache=yes,control=$sock,stats=$tmp/d.json"
a=$mnt/.blkemu/d
{ printf 'root wrote this'; head -c 497 /dev/zero; } | dd of="$mnt/d" bs=512 count=1 iflag=fullblock conv=notrunc status=none

# denied WHAT COMMAND...: COMMAND, run as nobody, fails.
denied () {
  local what=$1; shift
  if nobody "$@" > "$tmp/out" 2>&1; then fail "as uid 65534: $what was allowed"; fi
  echo "ok: as uid 65534, $what: refused ($(head -1 "$tmp/out"))"
}
denied "set max-transfer" sh -c "echo 1M > $a/max-transfer"
denied "power off the disk" sh -c "echo off > $a/power"
denied "crash it through a view" sh -c "echo 'torn 1' > $a/view"
denied "reset its stats" sh -c "echo 1 > $a/reset"
denied "write the disk" dd if=/dev/zero of="$mnt/d" bs=512 count=1 conv=notrunc status=none
denied "truncate the disk" truncate -s 0 "$mnt/d"
denied "chmod a file" chmod 666 "$a/max-transfer"
denied "use the control socket" "$BLKEMU_CTL" "$sock" set max-transfer=1M
expect_eq "max-transfer, as root sees it" "$("$BLKEMU_CTL" "$sock" get max-transfer)" 127K
expect_eq "power" "$(cat "$a/power")" on
expect_eq "the disk's first bytes" "$(head -c 15 "$mnt/d")" "root wrote this"

# What allow_other is for: others may look.
expect_eq "as uid 65534, reading max-transfer" "$(nobody cat "$a/max-transfer")" 127K
expect_eq "as uid 65534, reading the disk" "$(nobody head -c 15 "$mnt/d")" "root wrote this"
nobody cat "$a/stats" | jq -e .ops > /dev/null || fail "as uid 65534: stats unreadable"
echo "ok: as uid 65534, the stats read"

# The owner still may: the same writes as root pass.
echo 1M > "$a/max-transfer"
expect_eq "root sets max-transfer" "$("$BLKEMU_CTL" "$sock" get max-transfer)" 1M
"$BLKEMU_CTL" "$sock" dump > /dev/null
expect_eq "stats file mode" "$(stat -c '%a %U' "$tmp/d.json")" "644 root"
