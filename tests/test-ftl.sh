#!/usr/bin/env bash
# model=ssd's flash translation layer through the plugin and fio: a
# fresh disk writes without garbage collection, the same disk in the
# steady state (precondition=random) moves pages and its writes take
# longer, a trimmed disk recovers, the stats' ftl object says so, and
# bad FTL keys are refused with the rule.  The WAF against the closed
# form is test-models' (virtual time).
source "$(dirname "$0")/functions.sh"
requires jq --version
requires fio --version

refuses "over-provisioning=0.07: only model=ssd has a flash translation layer" \
  nbdkit -U - "$PLUGIN" size=16M over-provisioning=7% --run true
refuses "flash-page=3000: must be a power of two >= logical-block-size" \
  nbdkit -U - "$PLUGIN" size=16M model=ssd over-provisioning=7% flash-page=3000 --run true
refuses "flash-block=6K: must be a multiple of flash-page, two pages at least" \
  nbdkit -U - "$PLUGIN" size=16M model=ssd over-provisioning=7% flash-block=6K --run true
refuses "flash-page=512: size / flash-page must be at most 16777216 pages" \
  nbdkit -U - "$PLUGIN" size=16G model=ssd over-provisioning=7% flash-page=512 --run true

ssd="size=64M model=ssd dies=1 latency-read=20us latency-write=100us latency-erase=1ms over-provisioning=7% flash-block=256K"
# writes N: N random 4K writes at QD1 through fio.
cat > "$tmp/writes" <<'SCRIPT'
#!/bin/sh
exec fio --name=w --ioengine=nbd --uri="$2" --rw=randwrite --bs=4k --iodepth=1 \
  --number_ios="$1" --size=64M --randseed=7 --output=/dev/null
SCRIPT
chmod +x "$tmp/writes"

nbdkit -U - "$PLUGIN" $ssd stats="$tmp/fob.json" --run "$tmp/writes 1500 \$uri" ||
  fail "a fresh FTL disk did not serve"
nbdkit -U - "$PLUGIN" $ssd precondition=random stats="$tmp/steady.json" \
  --run "$tmp/writes 1500 \$uri" || fail "a preconditioned FTL disk did not serve"
expect_eq "fresh: nothing moved" "$(jqr "$tmp/fob.json" .ftl.gc_relocations)" 0
expect_eq "fresh: WAF" "$(jqr "$tmp/fob.json" .ftl.waf)" 1
expect_eq "host pages counted" "$(jqr "$tmp/steady.json" .ftl.host_pages)" 1500
jq -e '.ftl.waf > 3 and .ftl.erases > 0 and .ftl.erase_count.max >= .ftl.erase_count.min' \
  "$tmp/steady.json" > /dev/null || fail "steady state: $(jq -c .ftl "$tmp/steady.json")"
# The model's own service times (a loaded host adds the same lateness to
# both measured means, which would blur a ratio of them).
fob=$(jqr "$tmp/fob.json" .ops.write.latency_us.modelled_mean)
steady=$(jqr "$tmp/steady.json" .ops.write.latency_us.modelled_mean)
awk -v f="$fob" -v s="$steady" 'BEGIN { exit !(s > 3 * f) }' ||
  fail "steady-state writes ($steady us) not well above fresh ones ($fob us)"
echo "ok: 4K random writes at QD1, modelled: $fob us fresh, $steady us in the steady state (WAF $(jqr "$tmp/steady.json" .ftl.waf))"

# The same steady disk trimmed whole first: no page to move.
cat > "$tmp/trimmed" <<SCRIPT
#!/bin/sh
"$NBD_IO" "\$1" trim 0 67108864 > /dev/null && exec "$tmp/writes" 1500 "\$1"
SCRIPT
chmod +x "$tmp/trimmed"
nbdkit -U - "$PLUGIN" $ssd precondition=random stats="$tmp/trim.json" \
  --run "$tmp/trimmed \$uri" || fail "the trimmed disk did not serve"
jq -e '.ftl.waf < 1.05' "$tmp/trim.json" > /dev/null ||
  fail "trimmed: $(jq -c .ftl "$tmp/trim.json")"
echo "ok: trimmed whole, the disk writes at WAF $(jqr "$tmp/trim.json" .ftl.waf)"

# The SLC cache: 16 MiB written in order into an 8 MiB cache, half fast
# and half native (no folding yet: the gaps between QD1 writes are idle
# time too); then folding at 10 MB/s, 0.5 s idle folds about 5 MB out;
# 4 MiB more are fast again.
cat > "$tmp/slc" <<SCRIPT
#!/bin/sh
set -e
seq () { fio --name=s --ioengine=nbd --uri="\$1" --rw=write --bs=1M --iodepth=1 \
  --size=\$2 --offset=\$3 --output=/dev/null; }
seq "\$1" 16M 0
"$BLKEMU_CTL" "$tmp/slc.sock" stats > "$tmp/slc1.json"
"$BLKEMU_CTL" "$tmp/slc.sock" set slc-fold-rate=10M
sleep 0.5
"$BLKEMU_CTL" "$tmp/slc.sock" stats > "$tmp/slc2.json"
seq "\$1" 4M 32M
SCRIPT
chmod +x "$tmp/slc"
nbdkit -U - "$PLUGIN" size=64M model=ssd dies=1 latency-slc-write=50us latency-write=1ms \
    slc-cache=8M slc-fold-rate=0 control="$tmp/slc.sock" stats="$tmp/slc3.json" \
    --run "$tmp/slc \$uri" || fail "the SLC disk did not serve"
expect_eq "16M in order: into the cache" "$(jqr "$tmp/slc1.json" .slc.written_fast)" 8388608
expect_eq "and past it, natively" "$(jqr "$tmp/slc1.json" .slc.written_native)" 8388608
expect_eq "the cache full" "$(jqr "$tmp/slc1.json" .slc.used)" 8388608
jq -e '.slc.folded >= 4718592' "$tmp/slc2.json" > /dev/null ||
  fail "0.5 s idle at 10 MB/s folded too little: $(jq -c .slc "$tmp/slc2.json")"
expect_eq "4M more, fast again" "$(jqr "$tmp/slc3.json" .slc.written_fast)" 12582912
mean=$(jqr "$tmp/slc1.json" .ops.write.latency_us.mean)
awk -v m="$mean" 'BEGIN { exit !(m >= 500) }' ||
  fail "the native half did not slow the writes (mean $mean us; 525 modelled)"
echo "ok: SLC cache: the cliff, the fold while idle, and fast again (mean $mean us over the first 16)"

# The control command: a fresh disk preconditioned at runtime writes as
# the steady state does; a disk without an FTL says what it needs.
cat > "$tmp/pre" <<SCRIPT
#!/bin/sh
set -e
ctl () { "$BLKEMU_CTL" "$tmp/pre.sock" "\$@"; }
ctl precondition sideways 2>&1 | grep -q "usage: precondition sequential|random"
ctl precondition random -1 2>&1 | grep -q "precondition random -1: SEED must not be negative"
ctl precondition random 7
"$tmp/writes" 1500 "\$1"
SCRIPT
chmod +x "$tmp/pre"
nbdkit -U - "$PLUGIN" $ssd control="$tmp/pre.sock" stats="$tmp/pre.json" \
  --run "$tmp/pre \$uri" || fail "precondition at runtime"
jq -e '.ftl.waf > 3 and .ftl.host_pages == 1500' "$tmp/pre.json" > /dev/null ||
  fail "precondition random at runtime: $(jq -c .ftl "$tmp/pre.json")"
nbdkit -U - "$PLUGIN" size=16M control="$tmp/no.sock" --run \
  "$BLKEMU_CTL $tmp/no.sock precondition random > $tmp/no.out 2>&1 || true"
grep -q "precondition: needs model=ssd with over-provisioning" "$tmp/no.out" ||
  fail "precondition without an FTL: $(cat "$tmp/no.out")"
echo "ok: blkemu-ctl precondition: the steady state at once (WAF $(jqr "$tmp/pre.json" .ftl.waf)), refused without an FTL"

# The volatile buffer is the write cache that exists: on an FTL disk a
# crash loses what was acknowledged but not flushed, and keeps what was.
cat > "$tmp/crash" <<SCRIPT
#!/bin/sh
set -e
io () { "$NBD_IO" "\$@" > /dev/null; }
io "\$1" write 0 65536 1
io "\$1" flush
io "\$1" write 0 65536 2
"$BLKEMU_CTL" "$tmp/crash.sock" crash lose-all > /dev/null
"$BLKEMU_CTL" "$tmp/crash.sock" power-on > /dev/null
io "\$1" read 0 65536 1
SCRIPT
chmod +x "$tmp/crash"
nbdkit -U - "$PLUGIN" size=16M model=ssd over-provisioning=7% write-cache=yes \
    control="$tmp/crash.sock" stats="$tmp/crash.json" --run "$tmp/crash \$uri" ||
  fail "an FTL disk's crash did not roll back the unflushed write"
expect_eq "the crash lost the unflushed write" "$(jqr "$tmp/crash.json" .faults.lost_writes)" 1
echo "ok: an FTL disk with write-cache=yes crashes as any disk: the flushed data is there"
