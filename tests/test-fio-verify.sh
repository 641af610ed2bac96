#!/usr/bin/env bash
# Data integrity under concurrency: fio's nbd engine with crc32c
# verification, 4 jobs at iodepth 8, on the memory and file backends,
# with a limit and the split policy in the path.
source "$(dirname "$0")/functions.sh"
requires fio --version
fio --enghelp 2>/dev/null | grep -qw nbd || { echo "SKIP: fio has no nbd engine"; exit 77; }

run_fio () {
  nbdkit -U - "$PLUGIN" "$@" stats="$tmp/s.json" --run '
    fio --name=verify --ioengine=nbd --uri="$uri" --rw=randwrite \
        --bsrange=4k-256k --bs_unaligned=0 --blockalign=4k \
        --iodepth=8 --numjobs=4 --size=16M --offset_increment=16M \
        --verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
        --group_reporting --output="'"$tmp"'/fio.out"' ||
    { cat "$tmp/fio.out"; fail "fio verify failed on [$*]"; }
  grep -q "err= 0" "$tmp/fio.out" || { cat "$tmp/fio.out"; fail "fio reported errors"; }
  echo "ok: fio verify on [$*]: $(jqr "$tmp/s.json" .ops.write.requests) writes, $(jqr "$tmp/s.json" .ops.read.requests) reads, $(jqr "$tmp/s.json" .oversize.split) split"
  expect_eq "device errors" "$(jqr "$tmp/s.json" '.ops.write.errors + .ops.read.errors')" 0
}

run_fio size=64M max-transfer=64K oversize=split
run_fio size=64M backend=file file="$tmp/disk.img" max-transfer=128K oversize=split
