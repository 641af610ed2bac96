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

# Every shipped profile loads, is listed with a description, and says
# where its figures come from.
"$BLKEMU_CTL" profiles > "$tmp/list"
n=0
for p in "$top"/profiles/*.conf; do
  name=$(basename "$p" .conf)
  nbdkit -U - "$PLUGIN" profile="$name" size=1G stats="$tmp/$name.json" \
    --run true || fail "profile $name does not load"
  grep -Eq "^  $name +[a-zA-Z0-9]" "$tmp/list" || fail "$name not listed: $(cat "$tmp/list")"
  grep -Eqi '^# .*(source|approximation)' "$p" || fail "$name: no sources/approximation note"
  n=$((n + 1))
done
expect_eq "model of san-hsv400" "$(jqr "$tmp/san-hsv400.json" .config.model)" array
expect_eq "model of sas-ssd" "$(jqr "$tmp/sas-ssd.json" .config.model)" ssd
expect_eq "model of wd-red-1t" "$(jqr "$tmp/wd-red-1t.json" .config.model)" hdd
expect_eq "link of iscsi-1gbe" "$(jqr "$tmp/iscsi-1gbe.json" '.config["link-rtt"]')" 300us
echo "ok: $n profiles load and are listed"
