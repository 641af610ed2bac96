#!/usr/bin/env bash
# profile= loads key=value lines (comments allowed); explicit keys win.
source "$(dirname "$0")/functions.sh"
requires jq --version
cat > "$tmp/p.conf" <<'CONF'
# a test profile
max-transfer = 127K   # like a raid1 leg
latency-read = 2ms
queue-depth = 4
CONF
nbdkit -U - "$PLUGIN" size=16M profile="$tmp/p.conf" latency-read=1ms \
  stats="$tmp/s.json" --run true
expect_eq "max-transfer from profile" "$(jqr "$tmp/s.json" '.config["max-transfer"]')" 127K
expect_eq "queue-depth from profile" "$(jqr "$tmp/s.json" '.config["queue-depth"]')" 4
expect_eq "explicit latency-read wins" "$(jqr "$tmp/s.json" '.config["latency-read"]')" 1ms
