#!/usr/bin/env bash
# blkemu-nvmet's command line: every argument is checked, with a message
# naming it, its value and the rule, before configfs is touched; --help
# names every command and option.  The exports themselves are tested in
# the VM (scenarios/nvmet-ublk.sh): this host has no nvmet.
source "$(dirname "$0")/functions.sh"
NVMET=$(dirname "$0")/../tools/blkemu-nvmet

bad () { refuses "$1" "$NVMET" "${@:2}"; }
bad "usage: blkemu-nvmet export NAME DEVICE"
bad "usage:" export onlyname
bad "NAME 'a/b': 1-64 letters, digits" export a/b /dev/null
bad "NAME '': 1-64 letters" remove ''
bad "DEVICE '$tmp': not a block device" export a "$tmp"
bad "DEVICE '/dev/null': not a block device" export a /dev/null
# The options are checked before DEVICE is used: a block device is not
# needed to see them refused, so any block device name will do here.
blk=
for b in /dev/loop0 /dev/vda /dev/sda /dev/nvme0n1; do [ -b "$b" ] && { blk=$b; break; }; done
if [ -n "$blk" ]; then
  bad "--paths '9': a number of paths from 1 to 8" export a "$blk" --paths 9
  bad "--paths 'x': a number of paths from 1 to 8" export a "$blk" --paths x
  bad "--model '$(printf 'm%.0s' $(seq 41))': 1-40 printable ASCII" export a "$blk" --model "$(printf 'm%.0s' $(seq 41))"
  bad "--serial '123456789012345678901': 1-20 printable ASCII" export a "$blk" --serial 123456789012345678901
  bad "--firmware 'ninechars': 1-8 printable ASCII" export a "$blk" --firmware ninechars
  bad "unknown option '--nope'" export a "$blk" --nope 1
  bad "--paths needs a value" export a "$blk" --paths
else
  echo "note: no block device here to check the export options against"
fi
bad "STATE 'broken': one of optimized non-optimized inaccessible persistent-loss change" ana a 1 broken
bad "usage:" ana a 1
bad "usage:" list extra
"$NVMET" --help > "$tmp/help"
for w in export ana remove list --paths --model --serial --firmware optimized inaccessible NAWUPF NPWG NOWS ZNS; do
  grep -q -- "$w" "$tmp/help" || fail "--help does not mention $w"
done
echo "ok: --help names every command, option and what the target carries"
