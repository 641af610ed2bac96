#!/usr/bin/env bash
# trace= records one line per request the device saw; SIGUSR1 writes the
# stats file while the server runs.
source "$(dirname "$0")/functions.sh"
requires jq --version
nbdkit -U - -P "$tmp/pid" "$PLUGIN" size=64M max-transfer=64K oversize=split \
    trace="$tmp/trace" stats="$tmp/s.json" --run '
  set -e
  "$NBD_IO" "$uri" write 0 262144 1
  "$NBD_IO" "$uri" read 0 65536 1
  "$NBD_IO" "$uri" flush
  kill -USR1 $(cat '"$tmp"'/pid)
  for i in $(seq 50); do [ -s '"$tmp"'/s.json ] && break; sleep 0.1; done
  cp '"$tmp"'/s.json '"$tmp"'/live.json'
expect_eq "stats on SIGUSR1" "$(jqr "$tmp/live.json" .ops.write.requests)" 4
grep -v '^#' "$tmp/trace" > "$tmp/records"
expect_eq "trace records" "$(wc -l < "$tmp/records")" 6
expect_eq "split pieces traced" "$(awk '$2 == "W" && $4 == 65536 && $8 == "split"' "$tmp/records" | wc -l)" 4
expect_eq "offsets of pieces" "$(awk '$2 == "W" { printf "%s ", $3 }' "$tmp/records")" "0 65536 131072 196608 "
expect_eq "read traced" "$(awk '$2 == "R" && $7 == "ok"' "$tmp/records" | wc -l)" 1
expect_eq "flush traced" "$(awk '$2 == "F"' "$tmp/records" | wc -l)" 1

# trace-max-size: the file stops at the cap with a line saying so; the
# requests it could not hold are counted, the disk serves on.
nbdkit -U - "$PLUGIN" size=64M trace="$tmp/capped" trace-max-size=4K \
    stats="$tmp/cap.json" --run '
  fio --name=cap --ioengine=nbd --uri="$uri" --rw=randread --bs=4k \
      --number_ios=500 --size=64M --output=/dev/null'
between "capped trace size (bytes)" "$(stat -c %s "$tmp/capped")" 3000 4200
expect_eq "last line" "$(tail -1 "$tmp/capped")" "# trace stopped: trace-max-size reached"
expect_eq "records + dropped = requests" \
  "$(jqr "$tmp/cap.json" '.trace.records + .trace.dropped')" \
  "$(jqr "$tmp/cap.json" '.ops.read.requests')"
expect_eq "records = lines" "$(jqr "$tmp/cap.json" .trace.records)" \
  "$(grep -vc '^#' "$tmp/capped")"

# A trace that cannot be written (a full disk: /dev/full) is reported on
# stderr and in stats, and the disk serves on.
if [ -w /dev/full ]; then
  nbdkit -U - -P "$tmp/pid2" "$PLUGIN" size=64M trace=/dev/full \
      stats="$tmp/full.json" --run '
    set -e
    "$NBD_IO" "$uri" write 0 4096 1 > /dev/null
    kill -USR1 $(cat '"$tmp"'/pid2)
    sleep 0.5
    "$NBD_IO" "$uri" read 0 4096 1 > /dev/null' 2> "$tmp/full.err" ||
    fail "the disk stopped serving when its trace could not be written"
  grep -q "trace=/dev/full: No space left on device: tracing stopped" "$tmp/full.err" ||
    fail "no message for the failed trace: $(cat "$tmp/full.err")"
  expect_eq "trace write error in stats" "$(jqr "$tmp/full.json" .trace.write_error)" ENOSPC
  between "requests not traced" "$(jqr "$tmp/full.json" .trace.dropped)" 1 2
fi

# trace.bytes is the trace file's size, in every format, at the cap and
# on a full file system (it counted the cap's closing line out and bytes
# that never left the buffer: 3009 for a 3000-byte cap, 65601 on a full
# 64 KiB tmpfs).
for fmt in blkemu iolog blktrace; do
  nbdkit -U - "$PLUGIN" size=64M trace="$tmp/cap.$fmt" trace-format=$fmt \
      trace-max-size=3000 stats="$tmp/cap-$fmt.json" --run '
    fio --name=cap --ioengine=nbd --uri="$uri" --rw=randread --bs=4k \
        --number_ios=500 --size=64M --output=/dev/null'
  size=$(stat -c %s "$tmp/cap.$fmt")
  expect_eq "$fmt: trace.bytes = the file's size at the cap" \
    "$(jqr "$tmp/cap-$fmt.json" .trace.bytes)" "$size"
  between "$fmt: capped file (bytes)" "$size" 2000 3000
done
[ "$(tail -1 "$tmp/cap.iolog" | awk '{ print $2, $3 }')" = "disk0 close" ] ||
  fail "a capped iolog does not end with its close line"
if [ "$(id -u)" -eq 0 ] && mkdir -p "$tmp/small" &&
   mount -t tmpfs -o size=64k tmpfs "$tmp/small" 2> /dev/null; then
  cleanup_hooks+=("umount '$tmp/small'")
  nbdkit -U - "$PLUGIN" size=64M trace="$tmp/small/t" stats="$tmp/small.json" \
      --run 'fio --name=full --ioengine=nbd --uri="$uri" --rw=randread \
             --bs=4k --number_ios=3000 --size=64M --output=/dev/null' 2> "$tmp/small.err"
  expect_eq "full tmpfs: trace.bytes = the file's size" \
    "$(jqr "$tmp/small.json" .trace.bytes)" "$(stat -c %s "$tmp/small/t")"
  expect_eq "full tmpfs: the error" "$(jqr "$tmp/small.json" .trace.write_error)" ENOSPC
  expect_eq "full tmpfs: records = lines" "$(jqr "$tmp/small.json" .trace.records)" \
    "$(grep -vc '^#' "$tmp/small/t")"
else
  echo "skip: full-tmpfs case (needs root to mount a 64 KiB tmpfs)"
fi

# Output paths that cannot be files are refused at once: a FIFO with no
# reader blocked start-up forever; /proc and /sys are kernel interfaces.
mkfifo "$tmp/fifo"
refused () {
  local want=$1; shift
  if timeout 10 nbdkit -U - "$PLUGIN" size=1M "$@" --run true 2> "$tmp/refused.err"; then
    fail "[$*] accepted"
  fi
  [ $? != 124 ] || fail "[$*]: start-up hung"
  grep -qF -- "$want" "$tmp/refused.err" || fail "[$*]: no '$want' in: $(cat "$tmp/refused.err")"
  echo "ok: [$*] -> $want"
}
refused "trace=$tmp/fifo: exists and is not a regular file or a character device (a FIFO" trace="$tmp/fifo"
refused "stats=$tmp/fifo: exists and is not a regular file (a FIFO" stats="$tmp/fifo"
refused "trace=/proc/version: is a kernel interface" trace=/proc/version
refused "stats=/proc/version: is a kernel interface" stats=/proc/version
refused "file=/proc/self/status: is a kernel interface" backend=file file=/proc/self/status
refused "trace=$tmp: exists and is not a regular file" trace="$tmp"
