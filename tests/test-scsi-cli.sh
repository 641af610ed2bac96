#!/usr/bin/env bash
# blkemu-scsi's command line: every spec is checked, with a message
# naming the key, value and rule, before anything reaches configfs;
# --help is complete; without LIO's modules the error says which.  The
# disks themselves are tested in the VM (scenarios/scsi-disk.sh).
source "$(dirname "$0")/functions.sh"
SCSI=${BLKEMU_SCSI:-$BLKEMU_BUILD/scsi/blkemu-scsi}
[ -x "$SCSI" ] || { echo "SKIP: blkemu-scsi was not built (linux/target_core_user.h missing)"; exit 77; }

bad () { refuses "$1" "$SCSI" "${@:2}"; }
bad "no disks"
bad "name=x: two disks with this name" --disk name=x,size=1M --disk name=x,size=1M
bad "logical-block-size=3000: must be a power of two" --disk size=1M,logical-block-size=3000
bad "unknown key 'speed'" --disk size=1M,speed=9
bad "unexpected argument 'extra'" --disk size=1M extra
bad "--delete-stale takes no --disk" --delete-stale --disk size=1M
bad "--paths 0: the number of paths per disk, 1 to 8" --paths 0 --disk size=1M
bad "--paths 9: the number of paths per disk, 1 to 8" --paths 9 --disk size=1M
bad "--paths 2x: the number of paths per disk, 1 to 8" --paths 2x --disk size=1M
bad "--iscsi 1.2.3: ADDRESS[:PORT], an IPv4 address or [an IPv6 one] and a port 1 to 65535 (default 3260)" --iscsi 1.2.3 --disk size=1M
bad "--iscsi 127.0.0.1:0: ADDRESS[:PORT]" --iscsi 127.0.0.1:0 --disk size=1M
bad "--iscsi [::1: ADDRESS[:PORT]" --iscsi '[::1' --disk size=1M
printf 'initiator iqn.x\n' > "$tmp/auth-bad-iqn"
printf 'chap onlyuser\n' > "$tmp/auth-chap"
printf '# nothing\n' > "$tmp/auth-empty"
printf 'mutual-chap t s\n' > "$tmp/auth-mutual"
printf 'initiator iqn.2026-12.org.blkemu:guest\nbogus x\n' > "$tmp/auth-unknown"
bad "--iscsi-auth $tmp/auth-bad-iqn: line 1: initiator iqn.x: one iSCSI name" --iscsi 127.0.0.1 --iscsi-auth "$tmp/auth-bad-iqn" --disk size=1M
bad "--iscsi-auth $tmp/auth-chap: line 1: chap takes USER SECRET" --iscsi 127.0.0.1 --iscsi-auth "$tmp/auth-chap" --disk size=1M
bad "--iscsi-auth $tmp/auth-empty: line 1: no directive" --iscsi 127.0.0.1 --iscsi-auth "$tmp/auth-empty" --disk size=1M
bad "line 1: mutual-chap needs a chap line" --iscsi 127.0.0.1 --iscsi-auth "$tmp/auth-mutual" --disk size=1M
bad "--iscsi-auth $tmp/auth-unknown: line 2: bogus: unknown directive" --iscsi 127.0.0.1 --iscsi-auth "$tmp/auth-unknown" --disk size=1M
# A comment longer than any buffer is one comment: its tail (here an
# initiator ACL) is not a directive.
{ printf '# %01100d' 0; printf ' initiator iqn.2026-12.org.evil:x\n'; } > "$tmp/auth-long-comment"
bad "--iscsi-auth $tmp/auth-long-comment: line 1: no directive" --iscsi 127.0.0.1 --iscsi-auth "$tmp/auth-long-comment" --disk size=1M
bad "--iscsi-auth $tmp/none: No such file or directory" --iscsi 127.0.0.1 --iscsi-auth "$tmp/none" --disk size=1M
printf "chap u secret\n" > "$tmp/auth-ok"
bad "--iscsi-auth: only with --iscsi" --iscsi-auth "$tmp/auth-ok" --disk size=1M
bad "--iscsi 127.0.0.1:65535 with --paths 2: path I listens on the port + I, and the last port, 65536, is above 65535" --iscsi 127.0.0.1:65535 --paths 2 --disk size=1M
# A zoned disk is served (as ZBC), and its keys are checked first.
bad "zone-size=3K: must be a power of two of at least 4K" \
  --disk size=1M,zoned=host-managed,zone-size=3K

"$SCSI" --help > "$tmp/help"
for want in "--disk SPEC" "--delete-stale" "--ready-file PATH" "--paths N" "path I down|up" "path I on PORT + I" "--iscsi ADDRESS" "--iscsi-auth FILE" "mutual-chap USER SECRET" "iqn.2026-12.org.blkemu:NAME" "--list-profiles" "max-transfer=SIZE" "tcm_loop"; do
  grep -q -- "$want" "$tmp/help" || fail "--help lacks $want"
done
echo "ok: --help lists options, keys and what it needs"
"$SCSI" --version | grep -q "^blkemu-scsi [0-9]" || fail "--version"
[ "$("$BLKEMU_BUILD/tools/blkemu-ctl" carriage |
     awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "scsi") c = i }
          $1 == "max-transfer" && c { print $c }')" = told+device ] ||
  fail "blkemu-ctl carriage has no scsi column (max-transfer told+device)"
echo "ok: --version, blkemu-ctl carriage shows SCSI"

if [ ! -d /sys/module/target_core_user ] && ! modprobe -n target_core_user 2>/dev/null; then
  bad "the kernel module target_core_user could not be loaded" --disk size=1M --ready-file "$tmp/ready"
  [ ! -e "$tmp/ready" ] || fail "a ready file without disks"
  echo "ok: no ready file when no disk was made"
fi
