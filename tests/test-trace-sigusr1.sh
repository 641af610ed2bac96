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
