#!/usr/bin/env bash
# blkemu-ublk's command line: every spec is checked, with a message naming
# the key, value and rule, before any device is made; --help is complete;
# without ublk_drv the error says what to load.  The devices themselves
# are tested in the VM (scenarios/ublk-limits.sh): this host has no ublk.
source "$(dirname "$0")/functions.sh"
UBLK=${BLKEMU_UBLK:-$BLKEMU_BUILD/ublk/blkemu-ublk}
[ -x "$UBLK" ] || { echo "SKIP: blkemu-ublk was not built (liburing >= 2.2 missing)"; exit 77; }

bad () { refuses "$1" "$UBLK" "${@:2}"; }
bad "no disks"
bad "name=x: two disks with this name" --disk name=x,size=1M --disk name=x,size=1M
bad "logical-block-size=3000: must be a power of two" --disk size=1M,logical-block-size=3000
bad "unknown key 'speed'" --disk size=1M,speed=9
bad "name=a/b: must be a plain file name" --disk name=a/b,size=1M
bad "unexpected argument 'extra'" --disk size=1M extra
bad "unrecognized option '--nope'" --nope
bad "--queues 0: a number of hardware queues from 1 to 64" --queues 0 --disk size=1M
bad "--delete-stale takes no --disk" --delete-stale --disk size=1M
bad "--features takes no --disk" --features --disk size=1M
bad "d0: --recoverable: the disk's data lives in this process and dies with it; use backend=file" --recoverable --disk size=1M
bad "d0: --recover: the disk's data lives in this process" --recover 0 --disk size=1M
bad "zoned=host-managed disks cannot be recovered" --recoverable \
  --disk "size=16M,zoned=host-managed,zone-size=4M,backend=file,file=$tmp/zoned.img"
bad "1 --recover for 2 --disk: one device to take over per disk" --recover 0 \
  --disk "size=1M,backend=file,file=$tmp/r.img" --disk name=b,size=1M
bad "--recover x: the N of /dev/ublkbN, a number from 0" --recover x --disk size=1M
bad "--recover -1: the N of /dev/ublkbN, a number from 0" --recover -1 --disk size=1M
bad "--drain-timeout -1: seconds from 0 to 3600" --drain-timeout -1 --disk size=1M
bad "--drain-timeout 5x: seconds from 0 to 3600" --drain-timeout 5x --disk size=1M
bad "max-discard-segments=4: ublk has no multi-range discards (at most 1): needs a frontend that carries it" --disk size=1M,max-discard-segments=4

"$UBLK" --help > "$tmp/help"
for want in "--disk SPEC" "--queues N" "--delete-stale" "--features" "--recoverable" "--recover ID" "--drain-timeout SEC" "--completion-thread" "--ready-file PATH" "--list-profiles" "max-transfer=SIZE" "ublk_drv"; do
  grep -q -- "$want" "$tmp/help" || fail "--help lacks $want"
done
echo "ok: --help lists options, keys and what it needs"
"$UBLK" --list-profiles > "$tmp/profiles"
grep -q "san-hsv400" "$tmp/profiles" || fail "--list-profiles lacks san-hsv400"
"$UBLK" --version | grep -q "^blkemu-ublk [0-9]" || fail "--version"
echo "ok: --list-profiles, --version"

if [ ! -e /dev/ublk-control ]; then
  bad "load the ublk_drv module" --disk size=1M --ready-file "$tmp/ready"
  bad "load the ublk_drv module" --features
  [ ! -e "$tmp/ready" ] || fail "a ready file without devices"
  echo "ok: no ready file when no device was made"
fi
