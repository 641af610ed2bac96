/* The key table: every spec key's name, type, default, bounds, whether
 * it changes at runtime, and its help line.  Which frontends carry a
 * key is the carriage table's (blkemu-ctl carriage, each frontend's
 * descriptor), never a help line's.  `nbdkit blkemu --help`, the
 * frontends' --list-keys and the man pages' tables come from here.
 */
#include "keys.h"

#define MAX_LAT 60000000000ull /* 60 s: the longest latency key */
const struct key_def config_keys[K_COUNT] = {
  [K_SIZE] = { "size", T_SIZE, NULL, NULL, 1, BLKEMU_MAX_SIZE, false,
               "capacity (required unless backend=file, where the file's size "
               "is used)",
               GATE_NONE },
  [K_BACKEND] = { "backend", T_ENUM, "memory", CHOICES (BACKEND_LIST), 0, 0,
                  false,
                  "where data lives: memory (sparse), file (file=PATH), null "
                  "(discard)",
                  GATE_NONE },
  [K_FILE] = { "file", T_STRING, NULL, NULL, 0, 0, false,
               "backing file or block device for backend=file (created if "
               "missing)",
               GATE_NONE },
  [K_NAME] = { "name", T_STRING, "disk0", NULL, 0, 0, false,
               "the disk's name in stats, trace and FUSE paths", GATE_NONE },
  [K_LOGICAL_BLOCK_SIZE] = { "logical-block-size", T_SIZE, "512", NULL, 512,
                             65536, false,
                             "smallest addressable unit: a power of two, "
                             "512..64K",
                             GATE_NONE },
  [K_PHYSICAL_BLOCK_SIZE] = { "physical-block-size", T_SIZE, "0", NULL, 0,
                              1u << 20, false,
                              "internal block size: a power of two >= logical "
                              "(0: same as logical)",
                              GATE_NONE },
  [K_MIN_IO] = { "min-io", T_SIZE, "0", NULL, 0, 1u << 30, false,
                 "minimum I/O hint, a multiple of the logical block size (0: "
                 "none)",
                 GATE_NONE },
  [K_OPT_IO] = { "opt-io", T_SIZE, "0", NULL, 0, 1u << 30, false,
                 "optimal I/O hint, a multiple of the logical block size (0: "
                 "none)",
                 GATE_NONE },
  [K_MAX_TRANSFER] = { "max-transfer", T_SIZE, "32M", NULL, 512,
                       BLKEMU_MAX_TRANSFER, true,
                       "largest read/write payload (max_hw_sectors_kb), a "
                       "multiple of the "
                       "logical block size, <= 32M",
                       GATE_NONE },
  [K_MAX_DISCARD] = { "max-discard", T_SIZE, "0", NULL, 0, NOMAX, true,
                      "largest trim, a multiple of the logical block size (0: "
                      "unlimited)",
                      GATE_NONE },
  [K_MAX_WRITE_ZEROES] = { "max-write-zeroes", T_SIZE, "0", NULL, 0, NOMAX,
                           true,
                           "largest write-zeroes, a multiple of the logical "
                           "block size "
                           "(0: unlimited)",
                           GATE_NONE },
  [K_BOUNDARY] = { "boundary", T_SIZE, "0", NULL, 0, 1ull << 40, true,
                   "no request may cross a multiple of this (the kernel's "
                   "chunk_sectors: "
                   "NVMe's optimal I/O boundary, a RAID stripe); a crossing "
                   "one follows "
                   "oversize= (0: none)",
                   GATE_NONE },
  [K_OVERSIZE] = { "oversize", T_ENUM, "error", CHOICES (OVERSIZE_LIST), 0, 0,
                   true,
                   "a request above its limit or across boundary=: error "
                   "(EINVAL), split "
                   "(device splits it, each piece timed), allow (served "
                   "whole); all "
                   "counted",
                   GATE_NONE },
  [K_VIRT_BOUNDARY] = { "virt-boundary", T_SIZE, "0", NULL, 0, 1u << 20, false,
                        "the kernel's virt_boundary_mask + 1: no gap between "
                        "the segments of "
                        "a request except at multiples of this (NVMe's 4K); a "
                        "power of two "
                        ">= 4K (0: none)",
                        GATE_NONE },
  [K_DISCARD_GRANULARITY] = { "discard-granularity", T_SIZE, "0", NULL, 0,
                              1u << 30, false,
                              "the unit a trim frees: a multiple of "
                              "logical-block-size >= the "
                              "physical block; the device frees only whole "
                              "units and counts the "
                              "rest (0: the physical block, nothing "
                              "counted)",
                              GATE_NONE },
  [K_DISCARD_ALIGNMENT] = { "discard-alignment", T_SIZE, "0", NULL, 0,
                            1u << 30, false,
                            "offset of the first whole discard unit, below "
                            "discard-granularity",
                            GATE_NONE },
  [K_MAX_DISCARD_SEGMENTS] = { "max-discard-segments", T_UINT, "1", NULL, 1,
                               65535, false,
                               "ranges in one discard; every frontend sends "
                               "single ranges, and "
                               "ublk_drv accepts only 1",
                               GATE_NONE },
  [K_MAX_SEGMENTS] = { "max-segments", T_UINT, "0", NULL, 0, 65535, false,
                       "the kernel's max_segments: memory segments per "
                       "request (0: the driver's default)",
                       GATE_NONE },
  [K_MAX_SEGMENT_SIZE] = { "max-segment-size", T_SIZE, "0", NULL, 0, 1u << 31,
                           false,
                           "the kernel's max_segment_size, >= 4K (0: "
                           "unlimited)",
                           GATE_NONE },
  [K_SEGMENT_BOUNDARY] = { "segment-boundary", T_SIZE, "0", NULL, 0,
                           1ull << 32, false,
                           "the kernel's seg_boundary_mask + 1: no segment "
                           "crosses a multiple of "
                           "this; a power of two >= 4K (0: 4G, the "
                           "default)",
                           GATE_NONE },
  [K_DMA_ALIGNMENT] = { "dma-alignment", T_SIZE, "0", NULL, 0, 4096, false,
                        "the kernel's dma_alignment + 1: memory alignment of "
                        "direct I/O "
                        "buffers, a power of two <= 4K (0: the driver's "
                        "default)",
                        GATE_NONE },
  [K_ZONED] = { "zoned", T_ENUM, "none", "none|host-managed", 0, 0, false,
                "host-managed: every sequential zone has a write pointer that "
                "writes "
                "must start at (ZBC/ZNS rules, zone commands, zone "
                "append)",
                GATE_ZERO },
  [K_ZONE_SIZE] = { "zone-size", T_SIZE, "0", NULL, 0, 1ull << 40, false,
                    "zoned: size of each zone, a power of two >= 4K; the "
                    "disk's size is a "
                    "whole number of zones",
                    GATE_NONE },
  [K_ZONE_CAPACITY] = { "zone-capacity", T_SIZE, "0", NULL, 0, 1ull << 40,
                        false,
                        "zoned: writable bytes of each sequential zone, <= "
                        "zone-size (ZNS); "
                        "0: all of it",
                        GATE_NONE },
  [K_CONVENTIONAL_ZONES] = { "conventional-zones", T_UINT, "0", NULL, 0, NOMAX,
                             false,
                             "zoned: the first N zones take writes anywhere "
                             "(no write pointer)",
                             GATE_NONE },
  [K_MAX_OPEN_ZONES] = { "max-open-zones", T_UINT, "0", NULL, 0, NOMAX, false,
                         "zoned: zones open at once; at the limit a write "
                         "closes an implicitly "
                         "open zone, or fails (0: no limit)",
                         GATE_NONE },
  [K_MAX_ACTIVE_ZONES] = { "max-active-zones", T_UINT, "0", NULL, 0, NOMAX,
                           false,
                           "zoned: zones open or closed at once, >= "
                           "max-open-zones (0: no limit)",
                           GATE_NONE },
  [K_MAX_ZONE_APPEND] = { "max-zone-append", T_SIZE, "0", NULL, 0,
                          BLKEMU_MAX_TRANSFER, false,
                          "zoned: largest zone append, a multiple of "
                          "logical-block-size "
                          "(0: max-transfer)",
                          GATE_NONE },
  [K_LATENCY_ZONE] = { "latency-zone", T_DURATION, "0", NULL, 0, MAX_LAT, true,
                       "zoned: service time of a zone command (open, close, "
                       "finish, reset)",
                       GATE_NONE },
  [K_LATENCY_READ] = { "latency-read", T_DURATION, "0", NULL, 0, MAX_LAT, true,
                       "base service time of a read", GATE_ZERO },
  [K_LATENCY_WRITE] = { "latency-write", T_DURATION, "0", NULL, 0, MAX_LAT,
                        true, "base service time of a write or write-zeroes",
                        GATE_ZERO },
  [K_LATENCY_FLUSH] = { "latency-flush", T_DURATION, "0", NULL, 0, MAX_LAT,
                        true,
                        "base service time of a flush (which also waits for "
                        "earlier writes)",
                        GATE_ZERO },
  [K_LATENCY_TRIM] = { "latency-trim", T_DURATION, "0", NULL, 0, MAX_LAT, true,
                       "base service time of a trim", GATE_ZERO },
  [K_BANDWIDTH] = { "bandwidth", T_RATE, "0", NULL, 0, NOMAX, true,
                    "media transfer rate shared by all requests, bytes/s (0: "
                    "unlimited)",
                    GATE_ZERO },
  [K_READ_BANDWIDTH] = { "read-bandwidth", T_RATE, "0", NULL, 0, NOMAX, true,
                         "transfer rate for reads (0: use bandwidth)",
                         GATE_ZERO },
  [K_WRITE_BANDWIDTH] = { "write-bandwidth", T_RATE, "0", NULL, 0, NOMAX, true,
                          "transfer rate for writes (0: use bandwidth)",
                          GATE_ZERO },
  [K_QUEUE_DEPTH] = { "queue-depth", T_UINT, "128", NULL, 1,
                      BLKEMU_MAX_QUEUE_DEPTH, true,
                      "requests the device holds at once; later ones wait for "
                      "a slot",
                      GATE_NONE },
  [K_CHANNELS] = { "channels", T_UINT, "0", NULL, 0, BLKEMU_MAX_CHANNELS, true,
                   "requests serviced in parallel (0: as many as queue-depth, "
                   "up to 4096)",
                   GATE_NONE },
  [K_MODEL] = { "model", T_ENUM, "fixed", CHOICES (MODEL_LIST), 0, 0, false,
                "timing model: fixed (latency + size/bandwidth), hdd (seek, "
                "rotation, "
                "zones), ssd (dies behind channels), array (internal stripes, "
                "write-back "
                "cache), link (a network link to an instant device); see "
                "blkemu-models(7)",
                GATE_ZERO },
  [K_ROTATIONAL] = { "rotational", T_BOOL, "no", NULL, 0, 0, false,
                     "advertise a rotational device (yes|no)", GATE_NONE },
  /* For T_STRING keys, max is the longest value (0: any length); a
   * bounded one takes printable ASCII only, as INQUIRY fields do.
   */
  [K_VENDOR] = { "vendor", T_STRING, "BLKEMU", NULL, 0, 8, false,
                 "vendor identification a SCSI INQUIRY answers (lsscsi, "
                 "sg_inq, /sys/block/X/device/vendor): printable ASCII, <= 8 "
                 "characters",
                 GATE_NONE },
  [K_PRODUCT] = { "product", T_STRING, NULL, NULL, 0, 16, false,
                  "product identification (INQUIRY, "
                  "/sys/block/X/device/model): "
                  "printable ASCII, <= 16 characters (unset: the disk's "
                  "name)",
                  GATE_NONE },
  [K_REVISION] = { "revision", T_STRING, NULL, NULL, 0, 4, false,
                   "product revision level (INQUIRY, "
                   "/sys/block/X/device/rev): "
                   "printable ASCII, <= 4 characters (unset: blkemu's "
                   "version)",
                   GATE_NONE },
  [K_LATENCY_DIST] = { "latency-dist", T_ENUM, "fixed", CHOICES (DIST_LIST), 0,
                       0, true,
                       "how each base latency varies: fixed; uniform "
                       "(+-latency-jitter); normal "
                       "(sd latency-jitter); lognormal (mean the base, sd "
                       "latency-jitter); "
                       "percentiles (p50 the base, tail from "
                       "latency-p99/-p999)",
                       GATE_ZERO },
  [K_LATENCY_JITTER] = { "latency-jitter", T_DURATION, "0", NULL, 0, MAX_LAT,
                         true,
                         "spread of uniform, normal and lognormal latencies",
                         GATE_NONE },
  [K_LATENCY_P99] = { "latency-p99", T_DURATION, "0", NULL, 0, MAX_LAT, true,
                      "latency-dist=percentiles: the 99th percentile of a "
                      "read (other ops "
                      "scale with their base)",
                      GATE_NONE },
  [K_LATENCY_P999] = { "latency-p999", T_DURATION, "0", NULL, 0, MAX_LAT, true,
                       "latency-dist=percentiles: the 99.9th percentile of a "
                       "read",
                       GATE_NONE },
  [K_SEED] = { "seed", T_UINT, "1", NULL, 0, NOMAX, false,
               "seed of the random draws (latencies, fault probabilities): "
               "same seed, "
               "same arrival order, same numbers",
               GATE_NONE },
  [K_RPM] = { "rpm", T_UINT, "7200", NULL, 1000, 30000, true,
              "model=hdd: spindle speed; a revolution is 60/rpm seconds",
              GATE_NONE },
  [K_SEEK_TRACK] = { "seek-track", T_DURATION, "1ms", NULL, 0, MAX_LAT, true,
                     "model=hdd: track-to-track seek (the shortest non-zero "
                     "seek)",
                     GATE_NONE },
  [K_SEEK_AVG] = { "seek-avg", T_DURATION, "8500us", NULL, 0, MAX_LAT, true,
                   "model=hdd: average seek over random positions (datasheet "
                   "figure)",
                   GATE_NONE },
  [K_SEEK_FULL] = { "seek-full", T_DURATION, "16ms", NULL, 0, MAX_LAT, true,
                    "model=hdd: full-stroke seek; seek(d) = track + a*sqrt(d) "
                    "+ b*d with a, b "
                    "fitted to the average",
                    GATE_NONE },
  [K_ZONE_RATE_OUTER] = { "zone-rate-outer", T_RATE, "150M", NULL, 1, NOMAX,
                          true,
                          "model=hdd: media rate at the start of the disk "
                          "(outer tracks)",
                          GATE_NONE },
  [K_ZONE_RATE_INNER] = { "zone-rate-inner", T_RATE, "75M", NULL, 1, NOMAX,
                          true,
                          "model=hdd: media rate at the end of the disk "
                          "(linear in between)",
                          GATE_NONE },
  [K_COMMAND_BUFFER] = { "command-buffer", T_SIZE, "0", NULL, 0, NOMAX, true,
                         "model=hdd: the drive's buffer segment for one write "
                         "command; a larger "
                         "command stalls when it fills and pays buffer-stall "
                         "for each further "
                         "segment (0: no such limit)",
                         GATE_NONE },
  [K_BUFFER_STALL] = { "buffer-stall", T_DURATION, "0", NULL, 0, MAX_LAT, true,
                       "model=hdd: what each stall of command-buffer costs "
                       "the media (0: one "
                       "revolution, 60/rpm)",
                       GATE_NONE },
  [K_DIES] = { "dies", T_UINT, "1", NULL, 1, BLKEMU_MAX_CHANNELS, true,
               "model=ssd: dies per channel; channels x dies requests run in "
               "parallel",
               GATE_NONE },
  [K_CHANNEL_BANDWIDTH] = { "channel-bandwidth", T_RATE, "0", NULL, 0, NOMAX,
                            true,
                            "model=ssd: transfer rate of each channel's bus "
                            "(0: instant)",
                            GATE_NONE },
  [K_OVER_PROVISIONING] = { "over-provisioning", T_PROB, "0", NULL, 0, 0,
                            false,
                            "model=ssd: spare flash as a share of the "
                            "capacity (7%: consumer, 28%: enterprise); turns "
                            "on the flash translation layer and its garbage "
                            "collection (0: none)",
                            GATE_NONE },
  [K_FLASH_PAGE] = { "flash-page", T_SIZE, "4K", NULL, 512, 1u << 20, false,
                     "model=ssd, over-provisioning: the mapping unit and "
                     "program size, a power of two",
                     GATE_NONE },
  [K_FLASH_BLOCK] = { "flash-block", T_SIZE, "1M", NULL, 4096, 1u << 30, false,
                      "model=ssd, over-provisioning: the erase block, a "
                      "multiple of flash-page",
                      GATE_NONE },
  [K_LATENCY_ERASE] = { "latency-erase", T_DURATION, "3ms", NULL, 0, MAX_LAT,
                        true,
                        "model=ssd, over-provisioning: erasing a block, on "
                        "the die its garbage collection runs on",
                        GATE_NONE },
  [K_PRECONDITION] = { "precondition", T_ENUM, "none",
                       CHOICES (PRECONDITION_LIST), 0, 0, false,
                       "model=ssd, over-provisioning: start from fresh flash "
                       "(none), every page written once (sequential) or the "
                       "steady state of random writes (random)",
                       GATE_NONE },
  [K_SLC_CACHE] = { "slc-cache", T_SIZE, "0", NULL, 0, NOMAX, true,
                    "model=ssd: a static SLC cache of this many bytes in "
                    "front of the native cells (0: none)",
                    GATE_NONE },
  [K_SLC_DYNAMIC] = { "slc-dynamic", T_PROB, "0", NULL, 0, 0, true,
                      "model=ssd, over-provisioning: this share of the free "
                      "flash also runs as SLC cache (0: none)",
                      GATE_NONE },
  [K_LATENCY_SLC_WRITE] = { "latency-slc-write", T_DURATION, "0", NULL, 0,
                            MAX_LAT, true,
                            "model=ssd: a write's program time in the SLC "
                            "cache (latency-write: the native one)",
                            GATE_NONE },
  [K_SLC_FOLD_RATE] = { "slc-fold-rate", T_RATE, "100M", NULL, 0, NOMAX, true,
                        "model=ssd: bytes/s the idle drive folds from SLC "
                        "into native cells (0: never)",
                        GATE_NONE },
  [K_NATIVE_WRITE_RATE] = { "native-write-rate", T_RATE, "0", NULL, 0, NOMAX,
                            true,
                            "model=ssd: bytes/s a die programs into native "
                            "(TLC/QLC) cells, on top of latency-write (0: "
                            "latency-write alone)",
                            GATE_NONE },
  [K_ARRAY_STRIPE] = { "array-stripe", T_SIZE, "1M", NULL, 512, NOMAX, true,
                       "model=array: internal transfer size; a larger request "
                       "is split inside "
                       "the array into pieces served one after another",
                       GATE_NONE },
  [K_PIECE_OVERHEAD] = { "piece-overhead", T_DURATION, "0", NULL, 0, MAX_LAT,
                         true, "model=array: cost of each internal piece",
                         GATE_NONE },
  [K_WRITE_CACHE] = { "write-cache", T_BOOL, "no", NULL, 0, 0, true,
                      "volatile write cache: writes complete before reaching "
                      "media, flush waits for them, and 'crash' discards "
                      "what was not flushed; turning it off at runtime "
                      "writes back what it holds first",
                      GATE_ZERO },
  [K_CACHE_SIZE] = { "cache-size", T_SIZE, "64M", NULL, 0, NOMAX, true,
                     "write cache capacity (hdd, array): a write waits when "
                     "the unwritten "
                     "backlog exceeds it",
                     GATE_NONE },
  [K_DESTAGE_RATE] = { "destage-rate", T_RATE, "0", NULL, 0, NOMAX, true,
                       "model=array: rate at which the write cache drains (0: "
                       "bandwidth)",
                       GATE_NONE },
  [K_ATOMIC_UNIT] = { "atomic-unit", T_SIZE, "0", NULL, 0, 1u << 30, false,
                      "the aligned unit no write is torn within: a crash in "
                      "torn mode cuts cached writes only at multiples of it "
                      "(a write inside one unit is whole or absent); a power "
                      "of two >= logical (0: physical-block-size)",
                      GATE_NONE },
  [K_ATOMIC_WRITE_MAX] = { "atomic-write-max", T_SIZE, "0", NULL, 0,
                           BLKEMU_MAX_TRANSFER, false,
                           "the largest atomic write the device takes (SCSI "
                           "WRITE ATOMIC: the kernel's "
                           "atomic_write_max_bytes), written whole or not at "
                           "all by any crash; a multiple of the logical "
                           "block, "
                           "<= max-transfer (0: no atomic writes)",
                           GATE_NONE },
  [K_ATOMIC_WRITE_GRANULARITY] = { "atomic-write-granularity", T_SIZE, "0",
                                   NULL, 0, BLKEMU_MAX_TRANSFER, false,
                                   "an atomic write's length and offset are "
                                   "multiples of this (the kernel's "
                                   "atomic_write_unit_min_bytes): a power of "
                                   "two >= logical, <= atomic-write-max (0: "
                                   "physical-block-size)",
                                   GATE_NONE },
  [K_LINK_BANDWIDTH] = { "link-bandwidth", T_RATE, "0", NULL, 0, NOMAX, true,
                         "link in front of the device: payload bytes/s each "
                         "way (0: no link)",
                         GATE_ZERO },
  [K_LINK_RTT] = { "link-rtt", T_DURATION, "0", NULL, 0, MAX_LAT, true,
                   "link: round trip paid once per request", GATE_ZERO },
  [K_LINK_WINDOW] = { "link-window", T_UINT, "0", NULL, 0, BLKEMU_MAX_CHANNELS,
                      true,
                      "link: requests outstanding on the link at once (0: "
                      "unlimited)",
                      GATE_NONE },
  /* A cloud volume's provisioned limits; profiles/cloud-*.conf cite the
   * providers' figures.
   */
  [K_VOLUME_IOPS] = { "volume-iops", T_UINT, "0", NULL, 0, 100000000, true,
                      "volume throttle: baseline I/Os per second, in "
                      "volume-io-unit units (0: no IOPS limit)",
                      GATE_ZERO },
  [K_VOLUME_IOPS_PER_GIB] = { "volume-iops-per-gib", T_UINT, "0", NULL, 0,
                              1000000, true,
                              "volume throttle: baseline I/Os per second per "
                              "GiB of size, when more than volume-iops (gp2: "
                              "3)",
                              GATE_ZERO },
  [K_VOLUME_BURST_IOPS] = { "volume-burst-iops", T_UINT, "0", NULL, 0,
                            100000000, true,
                            "volume throttle: I/Os per second while burst "
                            "credits last (0: no burst)",
                            GATE_NONE },
  [K_VOLUME_BURST_CREDITS] = { "volume-burst-credits", T_UINT, "0", NULL, 0,
                               NOMAX, true,
                               "volume throttle: the credit bucket, in I/Os; "
                               "starts full, refills at the baseline, one "
                               "credit an I/O",
                               GATE_NONE },
  [K_VOLUME_BANDWIDTH] = { "volume-bandwidth", T_RATE, "0", NULL, 0, NOMAX,
                           true,
                           "volume throttle: bytes/s, reads and writes "
                           "together (0: no throughput limit)",
                           GATE_ZERO },
  [K_VOLUME_BURST_BANDWIDTH] = { "volume-burst-bandwidth", T_RATE, "0", NULL,
                                 0, NOMAX, true,
                                 "volume throttle: bytes/s while the byte "
                                 "bucket lasts (0: no throughput burst)",
                                 GATE_NONE },
  [K_VOLUME_BURST_BYTES] = { "volume-burst-bytes", T_SIZE, "0", NULL, 0, NOMAX,
                             true,
                             "volume throttle: the throughput burst's bucket, "
                             "in bytes; starts full, refills at "
                             "volume-bandwidth",
                             GATE_NONE },
  [K_VOLUME_IO_UNIT] = { "volume-io-unit", T_SIZE, "0", NULL, 0, 1ull << 30,
                         true,
                         "volume throttle: a read or write counts as its "
                         "length in these units, rounded up (0: one I/O a "
                         "request)",
                         GATE_NONE },
  [K_ERROR_MODE] = { "error-mode", T_ENUM, "off", CHOICES (ERROR_MODE_LIST), 0,
                     0, true,
                     "inject errors into matching requests: always (each with "
                     "error-probability), once (the first hit, then off), "
                     "sticky (after the "
                     "first hit every match fails)",
                     GATE_ZERO },
  [K_ERROR_OP] = { "error-op", T_ENUM, "any", CHOICES (ERROR_OP_LIST), 0, 0,
                   true, "which requests the error rule matches", GATE_NONE },
  [K_ERROR_OFFSET] = { "error-offset", T_SIZE, "0", NULL, 0, NOMAX, true,
                       "start of the byte range the error rule matches",
                       GATE_NONE },
  [K_ERROR_LENGTH] = { "error-length", T_SIZE, "0", NULL, 0, NOMAX, true,
                       "length of that range (0: to the end of the disk)",
                       GATE_NONE },
  [K_ERROR_ERRNO] = { "error-errno", T_ENUM, "EIO",
                      "EIO|ENOSPC|EPERM|ENOMEM|EINVAL|EOVERFLOW|ENOTSUP|"
                      "ESHUTDOWN",
                      0, 0, true, "the error an injected fault returns",
                      GATE_NONE },
  [K_ERROR_PROBABILITY] = { "error-probability", T_PROB, "1", NULL, 0, 0, true,
                            "chance that a matching request fails (0..1 or "
                            "N%)",
                            GATE_NONE },
  [K_ERROR_AFTER] = { "error-after", T_UINT, "0", NULL, 0, NOMAX, true,
                      "matching requests that pass before the rule can fire",
                      GATE_NONE },
  [K_SPIKE_PROBABILITY] = { "spike-probability", T_PROB, "0", NULL, 0, 0, true,
                            "chance that a request pays spike-latency on "
                            "top",
                            GATE_ZERO },
  [K_SPIKE_LATENCY] = { "spike-latency", T_DURATION, "0", NULL, 0, MAX_LAT,
                        true, "extra service time of a latency spike",
                        GATE_NONE },
  [K_STALL] = { "stall", T_DURATION, "0", NULL, 0, 3600000000000ull, true,
                "hold every request until this long after the key was set (a "
                "hung "
                "device, to exercise timeouts)",
                GATE_NONE },
  [K_SLOWDOWN] = { "slowdown", T_UINT, "1", NULL, 1, 1000, true,
                   "the device runs N times slower: its clock is dilated, so "
                   "queues and "
                   "pipes stay consistent (a failing disk; or a time scale "
                   "for slow hosts)",
                   GATE_ABOVE_ONE },
  [K_BIT_FLIP_PROBABILITY] = { "bit-flip-probability", T_PROB, "0", NULL, 0, 0,
                               true,
                               "chance that a read returns one bit flipped "
                               "(the medium keeps the right data): silent "
                               "corruption for checksumming filesystems",
                               GATE_ZERO },
  [K_LOST_WRITE_PROBABILITY] = { "lost-write-probability", T_PROB, "0", NULL,
                                 0, 0, true,
                                 "chance that a write is acknowledged and "
                                 "never reaches the medium",
                                 GATE_ZERO },
  [K_MISDIRECTED_WRITE_PROBABILITY] = { "misdirected-write-probability",
                                        T_PROB, "0", NULL, 0, 0, true,
                                        "chance that a write lands at another "
                                        "offset of the disk (same length, "
                                        "block-aligned), its own sectors "
                                        "keeping their old data",
                                        GATE_ZERO },
  [K_PROFILE] = { "profile", T_STRING, NULL, NULL, 0, 0, false,
                  "preset: profiles/NAME.conf or a path; explicit keys "
                  "override it",
                  GATE_NONE },
  [K_STATS] = { "stats", T_STRING, NULL, NULL, 0, 0, false,
                "JSON stats file, written at exit, on SIGUSR1 and on 'dump'",
                GATE_NONE },
  [K_TRACE] = { "trace", T_STRING, NULL, NULL, 0, 0, false,
                "per-request trace file (see blkemu-trace(5))", GATE_NONE },
  [K_TRACE_FORMAT] = { "trace-format", T_ENUM, "blkemu",
                       CHOICES (TRACE_FORMAT_LIST), 0, 0, false,
                       "what trace= writes: blkemu (text, blkemu-plot reads "
                       "it), blktrace "
                       "(binary events for blkparse, btt, iowatcher) or iolog "
                       "(fio's iolog v3, "
                       "for fio --read_iolog)",
                       GATE_NONE },
  [K_TRACE_MAX_SIZE] = { "trace-max-size", T_SIZE, "1G", NULL, 0, NOMAX, false,
                         "the trace file stops at this size, with a last line "
                         "saying so; later "
                         "requests are counted in stats as trace.dropped (0: "
                         "unlimited)",
                         GATE_NONE },
  [K_CONTROL] = { "control", T_STRING, NULL, NULL, 0, 0, false,
                  "unix socket for runtime get/set/stats/reset (blkemu-ctl)",
                  GATE_NONE },
  [K_CONTROL_MODE] = { "control-mode", T_MODE, "0600", NULL, 0, 0666, false,
                       "permissions of the control socket, octal (read/write "
                       "bits only): "
                       "0600 lets only the owner crash or reconfigure the "
                       "disk, 0660 its group "
                       "too",
                       GATE_NONE },
  [K_SUMMARY] = { "summary", T_BOOL, "no", NULL, 0, 0, false,
                  "print an iostat-style summary and histograms on stderr at "
                  "exit",
                  GATE_NONE },
};
