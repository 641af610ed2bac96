#!/usr/bin/env bash
# The files blkemu writes (stats=, trace=) are written safely in
# directories other users share: the stats file through a temporary of
# an unpredictable name created exclusively beside it, never through a
# link or into a FIFO planted at the target or at the old predictable
# temporary name (STATS.tmp.PID); trace= never through a link, except
# one to a character device (/dev/stdout).  A refused target is named
# with the rule, and the disk keeps serving.
source "$(dirname "$0")/functions.sh"
requires jq --version
d=$tmp/shared
mkdir -m 1777 "$d"
echo "precious" > "$tmp/victim"

# A FIFO at every name the old code would have opened for the dump: the
# dump, later commands and SIGTERM's shutdown must not block on it.
sock=$tmp/ctl.sock
export sock
nbdkit -U - -P "$tmp/pid" "$PLUGIN" size=16M control="$sock" stats="$d/s.json" --run '
  for p in $(seq $(( $$ - 50 )) $(( $$ + 400 ))); do mkfifo "'"$d"'/s.json.tmp.$p" 2>/dev/null; done
  timeout 10 "$BLKEMU_CTL" "$sock" dump || { echo "dump blocked or failed"; exit 1; }
  timeout 10 "$BLKEMU_CTL" "$sock" get size
' || fail "a dump beside planted FIFOs"
expect_eq "stats written beside the FIFOs" "$(jqr "$d/s.json" .config.size)" 16M
expect_eq "stats mode" "$(stat -c %a "$d/s.json")" 644
expect_eq "no temporary left" "$(ls -a "$d" | grep -c '^\.s\.json\.')" 0

# A link planted at stats=: refused when the disk starts, and refused
# (the link untouched, the file behind it unchanged) when it appears
# later, at a dump.
ln -s "$tmp/victim" "$d/link.json"
refuses "stats=$d/link.json: is a symbolic link: name the file itself" \
  nbdkit -U - "$PLUGIN" size=16M stats="$d/link.json" --run true
nbdkit -U - "$PLUGIN" size=16M control="$sock" stats="$d/late.json" --run '
  ln -s "'"$tmp"'/victim" "'"$d"'/late.json"
  if "$BLKEMU_CTL" "$sock" dump 2> "'"$tmp"'/dump.err"; then exit 1; fi
  "$BLKEMU_CTL" "$sock" get size > /dev/null
' > "$tmp/late.out" 2>&1 || true
grep -q "stats=$d/late.json: is a symbolic link" "$tmp/dump.err" ||
  fail "a link appearing at stats=: $(cat "$tmp/dump.err" "$tmp/late.out")"
echo "ok: a link appearing at stats= is refused at the dump: $(head -1 "$tmp/dump.err")"
expect_eq "the file behind the links" "$(cat "$tmp/victim")" precious
[ -L "$d/late.json" ] || fail "the link at stats= was replaced"
echo "ok: the link itself is left as it was"

# trace=: a link to a file is refused; one to a character device serves.
ln -s "$tmp/victim" "$d/trace.log"
refuses "trace=$d/trace.log: is a symbolic link" \
  nbdkit -U - "$PLUGIN" size=16M trace="$d/trace.log" --run true
expect_eq "the file behind the trace link" "$(cat "$tmp/victim")" precious
ln -s /dev/null "$d/null-trace"
nbdkit -U - "$PLUGIN" size=16M trace="$d/null-trace" --run '"$NBD_IO" "$uri" write 0 4096 1' ||
  fail "trace= through a link to /dev/null"
echo "ok: trace= through a link to a character device"
mkfifo "$d/fifo-trace"
refuses "trace=$d/fifo-trace: exists and is not a regular file" \
  nbdkit -U - "$PLUGIN" size=16M trace="$d/fifo-trace" --run true
