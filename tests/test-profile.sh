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
  if grep -Eq '^zoned *= *host-managed' "$p"; then
    # Validated whole (its own size: the zones fit it), then refused by
    # NBD, which carries no zones: blkemu-ublk serves these.
    nbdkit -U - "$PLUGIN" profile="$name" --run true > "$tmp/$name.out" 2>&1 &&
      fail "zoned profile $name served over NBD"
    grep -q "NBD has no zone commands" "$tmp/$name.out" ||
      fail "zoned profile $name: $(cat "$tmp/$name.out")"
  else
    nbdkit -U - "$PLUGIN" profile="$name" size=1G stats="$tmp/$name.json" \
      --run true || fail "profile $name does not load"
  fi
  grep -Eq "^  $name +[a-zA-Z0-9]" "$tmp/list" || fail "$name not listed: $(cat "$tmp/list")"
  grep -Eqi '^# .*(source|approximation)' "$p" || fail "$name: no sources/approximation note"
  n=$((n + 1))
done
expect_eq "model of san-hsv400" "$(jqr "$tmp/san-hsv400.json" .config.model)" array
expect_eq "model of sas-ssd" "$(jqr "$tmp/sas-ssd.json" .config.model)" ssd
expect_eq "model of wd-red-1t" "$(jqr "$tmp/wd-red-1t.json" .config.model)" hdd
expect_eq "link of iscsi-1gbe" "$(jqr "$tmp/iscsi-1gbe.json" '.config["link-rtt"]')" 300us

# BLKEMU_PROFILE_DIR is listed first, whole and sorted, however many.
mkdir "$tmp/many"
for i in $(seq 300 -1 1); do
  printf '# p%03d: test profile %d\nsize=1M\n' "$i" "$i" > "$tmp/many/p$(printf %03d "$i").conf"
done
BLKEMU_PROFILE_DIR=$tmp/many "$BLKEMU_CTL" profiles > "$tmp/many.list"
expect_eq "first line" "$(sed -n 1p "$tmp/many.list")" "profiles in $tmp/many:"
expect_eq "own profiles listed" "$(grep -c '^  p[0-9]' "$tmp/many.list")" 300
expect_eq "sorted, description" "$(sed -n 2p "$tmp/many.list" | tr -s ' ')" " p001 test profile 1"
expect_eq "last" "$(sed -n 301p "$tmp/many.list" | tr -s ' ')" " p300 test profile 300"
grep -q '^  san-hsv400 ' "$tmp/many.list" || fail "shipped profiles not listed after BLKEMU_PROFILE_DIR"
echo "ok: $n profiles load and are listed"
