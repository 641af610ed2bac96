#!/usr/bin/env bash
# Every bad spec stops nbdkit before it serves, with a message that names
# the key, the value and the rule.
source "$(dirname "$0")/functions.sh"

# bad_spec 'EXPECTED MESSAGE PART' KEY=VALUE...
bad_spec () {
  local want=$1; shift
  if nbdkit -U - "$PLUGIN" "$@" --run true > "$tmp/out" 2>&1; then
    fail "[$*] was accepted"
  fi
  grep -qF -- "$want" "$tmp/out" ||
    fail "[$*]: message lacks '$want': $(cat "$tmp/out")"
  echo "ok: [$*] -> $(grep -F -- "$want" "$tmp/out" | head -1)"
}

bad_spec "size=-1G: must not be negative" size=-1G
bad_spec "size: you must specify size=SIZE" max-transfer=1M
bad_spec "unknown key 'colour'" size=1G colour=blue
bad_spec "logical-block-size=3000: must be a power of two" size=1G logical-block-size=3000
bad_spec "logical-block-size=256: must be at least 512" size=1G logical-block-size=256
bad_spec "max-transfer=2K: must be at least logical-block-size (4096)" size=1G logical-block-size=4K max-transfer=2K
bad_spec "max-transfer=1000: must be a multiple of logical-block-size (512)" size=1G max-transfer=1000
bad_spec "max-transfer=64M: must be at most 32M" size=1G max-transfer=64M
bad_spec "size=1000: must be a multiple of logical-block-size" size=1000
bad_spec "latency-read=1: takes a number with a unit" size=1G latency-read=1
bad_spec "latency-read=1xs: takes a number with a unit" size=1G latency-read=1xs
bad_spec "latency-write=-1ms: must not be negative" size=1G latency-write=-1ms
bad_spec "latency-flush=1.0000000001s: is not a whole number" size=1G latency-flush=1.0000000001s
bad_spec "oversize=truncate: must be one of error|split|allow" size=1G oversize=truncate
# The kernel's other queue limits, with blk_validate_limits()' rules.
bad_spec "virt-boundary=3K: must be a power of two >= 4K" size=1G virt-boundary=3K
bad_spec "virt-boundary=2K: must be a power of two >= 4K" size=1G virt-boundary=2K
bad_spec "segment-boundary=1K: must be a power of two >= 4K" size=1G segment-boundary=1K
bad_spec "dma-alignment=8K: must be at most 4K" size=1G dma-alignment=8K
bad_spec "dma-alignment=3K: must be a power of two <= 4K" size=1G dma-alignment=3K
# INQUIRY's strings: SPC's field widths, printable ASCII.
bad_spec "vendor=SEAGATE-X: must be at most 8 characters" size=1G vendor=SEAGATE-X
bad_spec "product=WDC WD5001FXYZ-0X: must be at most 16 characters" size=1G "product=WDC WD5001FXYZ-0X"
bad_spec "revision=12345: must be at most 4 characters" size=1G revision=12345
bad_spec "must be printable ASCII" size=1G "$(printf 'vendor=H\tP')"
bad_spec "product=: must not be empty" size=1G product=
# Atomic writes: SBC's Block Limits rules.
bad_spec "atomic-write-max=3000: must be a multiple of logical-block-size, <= max-transfer" size=1G atomic-write-max=3000
bad_spec "atomic-write-max=2M: must be a multiple of logical-block-size, <= max-transfer" size=1G max-transfer=1M atomic-write-max=2M
bad_spec "atomic-write-granularity=4K: must be a power of two >= logical-block-size dividing atomic-write-max (which must be set)" size=1G atomic-write-granularity=4K
bad_spec "atomic-write-granularity=24K: must be a power of two" size=1G atomic-write-max=48K atomic-write-granularity=24K
# Zoned disks: every key's rule, then NBD's refusal of a valid one.
Z="zoned=host-managed zone-size=4M"
bad_spec "zoned=yes: must be one of none|host-managed" size=1G zoned=yes
bad_spec "zone-size=4M: only for a zoned disk (zoned=host-managed)" size=1G zone-size=4M
bad_spec "max-open-zones=4: only for a zoned disk" size=1G max-open-zones=4
bad_spec "zone-size=0: must be a power of two of at least 4K" size=1G zoned=host-managed
bad_spec "zone-size=3M: must be a power of two" size=1G zoned=host-managed zone-size=3M
bad_spec "size=1026M: a zoned disk's size must be a whole number of zones (zone-size=4M)" size=1026M $Z
bad_spec "zone-capacity=8M: must be a multiple of the physical block, at most zone-size (4M)" size=1G $Z zone-capacity=8M
bad_spec "conventional-zones=256: must leave at least one sequential zone (the disk has 256 zones of 4M)" size=1G $Z conventional-zones=256
bad_spec "max-open-zones=16: must be at most max-active-zones (8)" size=1G $Z max-open-zones=16 max-active-zones=8
bad_spec "max-active-zones=300: must be at most the sequential zones (256)" size=1G $Z max-active-zones=300
bad_spec "max-zone-append=2M: must be a multiple of logical-block-size, at most max-transfer" size=1G $Z max-zone-append=2M max-transfer=1M
bad_spec "boundary=1M: a zoned disk's boundary is its zone-size (4M)" size=1G $Z boundary=1M
bad_spec "latency-zone=fast: takes a number with a unit" size=1G $Z latency-zone=fast
bad_spec "zoned=host-managed: NBD has no zone commands, zone reports or zone append: needs a frontend that carries it (blkemu-ctl carriage)" size=1G $Z
bad_spec "max-segment-size=2K: must be at least 4K" size=1G max-segment-size=2K
bad_spec "max-segment-size=64K: cannot be combined with virt-boundary" size=1G virt-boundary=4K max-segment-size=64K
bad_spec "max-segment-size=1M: must be at most segment-boundary" size=1G segment-boundary=64K max-segment-size=1M
bad_spec "max-segments=70000: must be at most 65535" size=1G max-segments=70000
bad_spec "max-discard-segments=0: must be at least 1" size=1G max-discard-segments=0
bad_spec "discard-granularity=1K: must be a multiple of logical-block-size (512) and at least the physical block (4096)" size=1G physical-block-size=4K discard-granularity=1K
bad_spec "discard-granularity=6000: must be a multiple of logical-block-size (512)" size=1G discard-granularity=6000
bad_spec "discard-alignment=64K: must be a multiple of logical-block-size (512) below discard-granularity (65536)" size=1G discard-granularity=64K discard-alignment=64K
bad_spec "discard-alignment=4K: must be a multiple of logical-block-size (512) below discard-granularity (512)" size=1G discard-alignment=4K
bad_spec "backend=tape: must be one of memory|file|null" size=1G backend=tape
bad_spec "backend=file: needs file=PATH" size=1G backend=file
bad_spec "physical-block-size=512: must be a power of two >= logical-block-size" size=1G logical-block-size=4K physical-block-size=512
bad_spec "atomic-unit=3K: must be a power of two >= logical-block-size (0: physical-block-size)" size=1G atomic-unit=3K
bad_spec "atomic-unit=2K: must be a power of two >= logical-block-size (0: physical-block-size)" size=1G logical-block-size=4K atomic-unit=2K
bad_spec "queue-depth=0: must be at least 1" size=1G queue-depth=0
bad_spec "bandwidth=fast: takes a number" size=1G bandwidth=fast
bad_spec "profile=no-such-profile: no such profile" size=1G profile=no-such-profile
bad_spec "file=$tmp/missing/x: No such file or directory" file="$tmp/missing/x"
bad_spec "rotational=maybe: must be yes or no" size=1G rotational=maybe
bad_spec "model=tape: must be one of fixed|hdd|ssd|array|link" size=1G model=tape
bad_spec "seek-avg=15ms: must lie between 6ms and 9ms for this seek-track and seek-full" size=1G model=hdd seek-track=1ms seek-avg=15ms seek-full=16ms
bad_spec "seek-track=20ms: must be at most seek-full" size=1G model=hdd seek-track=20ms
bad_spec "zone-rate-inner=200M: must be at most zone-rate-outer" size=1G model=hdd zone-rate-inner=200M
bad_spec "rpm=100: must be at least 1000" size=1G rpm=100
bad_spec "dies=1024: channels x dies must be at most 4096" size=1G model=ssd channels=8 dies=1024
bad_spec "latency-dist=pareto: must be one of fixed|uniform|normal|lognormal|percentiles" size=1G latency-dist=pareto
bad_spec "latency-read=0: latency-dist=percentiles needs a non-zero latency-read" size=1G latency-dist=percentiles
bad_spec "latency-p99=500us: must be at least latency-read" size=1G latency-dist=percentiles latency-read=1ms latency-p99=500us latency-p999=2ms
bad_spec "latency-p999=2ms: must be at least latency-p99" size=1G latency-dist=percentiles latency-read=1ms latency-p99=5ms latency-p999=2ms
bad_spec "error-probability=1.5: must be between 0 and 1" size=1G error-probability=1.5
bad_spec "spike-probability=often: must start with a number" size=1G spike-probability=often
bad_spec "error-errno=EAGAIN: must be one of EIO|ENOSPC" size=1G error-errno=EAGAIN
bad_spec "error-mode=never: must be one of off|always|once|sticky" size=1G error-mode=never
bad_spec "error-offset=2G: must lie inside the disk" size=1G error-offset=2G
bad_spec "slowdown=0: must be at least 1" size=1G slowdown=0
bad_spec "link-window=5000: must be at most 4096" size=1G link-window=5000

# Overflow and malformed numbers (an adversarial review found each one
# accepted): the key, the value and the rule are named.
bad_spec "latency-read=18446744073.9s: is too large" size=1G latency-read=18446744073.9s
bad_spec "stall=18446744073.9s: is too large" size=1G stall=18446744073.9s
bad_spec "error-probability=18446744073.9: is too large" size=1G error-probability=18446744073.9
bad_spec "bandwidth=1.5.5G: takes a number" size=1G bandwidth=1.5.5G
bad_spec "latency-read=2.5.999ms: takes a number with a unit" size=1G latency-read=2.5.999ms
bad_spec "size=18446744073709551104: must be at most 4194304T" size=18446744073709551104
bad_spec "size=2048T: backend=memory holds at most 1024T" size=2048T
bad_spec "profile=/dev/zero: /dev/zero is not a regular file" size=1G profile=/dev/zero
head -c 70000 /dev/zero | tr '\0' '#' > "$tmp/huge.conf"
bad_spec "is larger than 65536 bytes" size=1G profile="$tmp/huge.conf"
printf 'max-transfer = 127K\0\n' > "$tmp/nul.conf"
bad_spec "holds a NUL byte" size=1G profile="$tmp/nul.conf"

bad_spec "trace-format=pcap: must be one of blkemu|blktrace|iolog" size=1G trace-format=pcap
bad_spec "trace-max-size=-1: must not be negative" size=1G trace-max-size=-1
bad_spec "control-mode=600x: must be an octal mode" size=1G control-mode=600x

# qemu's controllers (controller=, qemu-device=): what one cannot express
# stops the start; what it can becomes its -device.
bad_spec "controller=floppy: must be nvme, sata or virtio-blk" size=1G controller=floppy
bad_spec "qemu-device=$tmp/d: needs controller=nvme|sata|virtio-blk" size=1G qemu-device="$tmp/d"
bad_spec "max-transfer=2K: NVMe (qemu) expresses a maximum transfer as 4K << MDTS" \
  size=1G controller=nvme qemu-device="$tmp/d" max-transfer=2K
bad_spec "logical-block-size=4K: SATA (qemu AHCI) has 512-byte logical sectors only" \
  size=1G controller=sata qemu-device="$tmp/d" logical-block-size=4K
bad_spec "min-io=64M: virtio-blk (qemu) holds at most 65535 logical blocks there" \
  size=1G controller=virtio-blk qemu-device="$tmp/d" min-io=64M
bad_spec "NVMe (qemu) has no zone commands" \
  size=1G controller=nvme zoned=host-managed zone-size=64M
nbdkit -U - "$PLUGIN" size=1G name=n0 controller=nvme qemu-device="$tmp/n0.dev" \
  max-transfer=96K logical-block-size=4K --run true 2> "$tmp/out" || fail "nvme: $(cat "$tmp/out")"
want='nvme,serial=n0,id=blkemu-ctrl-n0,mdts=4
nvme-ns,bus=blkemu-ctrl-n0,logical_block_size=4096,physical_block_size=4096,ms=0,mset=0,pi=0,pil=0,write-cache=off'
[ "$(cat "$tmp/n0.dev")" = "$want" ] || fail "nvme's -device for max-transfer=96K: $(cat "$tmp/n0.dev")"
echo "ok: controller=nvme max-transfer=96K -> $(cat "$tmp/n0.dev" | paste -sd' ') (64K, the largest 4K << MDTS that fits)"
# Metadata and protection information: NVMe's LBA format on qemu's
# namespace; no other frontend keeps metadata.
bad_spec "protection=type1: needs metadata-size >= 8" size=1G metadata-size=4 protection=type1
bad_spec "metadata-size=8: NBD has no per-block metadata: needs a frontend that carries it" size=1G metadata-size=8
bad_spec "protection=type3: needs metadata-size >= 8" size=1G protection=type3
bad_spec "protection=type4: must be one of none|type1|type2|type3" size=1G metadata-size=8 protection=type4
bad_spec "metadata-size=64K: must be at most 65535" size=1G controller=nvme metadata-size=64K
bad_spec "name=n.0/x: NVMe (qemu) names its namespace's bus after the disk" \
  size=1G name=n.0/x controller=nvme qemu-device="$tmp/d"
nbdkit -U - "$PLUGIN" size=1G name=n1 controller=nvme qemu-device="$tmp/n1.dev" \
  metadata-size=16 protection=type2 --run true 2> "$tmp/out" || fail "nvme with PI: $(cat "$tmp/out")"
grep -qx 'nvme-ns,bus=blkemu-ctrl-n1,.*,ms=16,mset=0,pi=2,pil=0,write-cache=off' "$tmp/n1.dev" ||
  fail "nvme's -device for metadata-size=16 protection=type2: $(cat "$tmp/n1.dev")"
echo "ok: controller=nvme metadata-size=16 protection=type2 -> $(tail -1 "$tmp/n1.dev")"
# qemu's ms is a number of bytes: 1K is 1024, not the key's own "1K".
nbdkit -U - "$PLUGIN" size=1G name=n2 controller=nvme qemu-device="$tmp/n2.dev" \
  metadata-size=1K protection=type3 --run true 2> "$tmp/out" || fail "nvme, 1K of metadata: $(cat "$tmp/out")"
grep -qx 'nvme-ns,bus=blkemu-ctrl-n2,.*,ms=1024,mset=0,pi=3,pil=0,write-cache=off' "$tmp/n2.dev" ||
  fail "nvme's -device for metadata-size=1K protection=type3: $(cat "$tmp/n2.dev")"
echo "ok: controller=nvme metadata-size=1K protection=type3 -> $(tail -1 "$tmp/n2.dev")"

# A profile with a bad line names the file and the line.
printf 'max-transfer = 127K\nlatency-read = soon\n' > "$tmp/bad.conf"
bad_spec "bad.conf:2: latency-read=soon" size=1G profile="$tmp/bad.conf"
