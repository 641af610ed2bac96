/* The device's event counters, each described once.  An entry
 *   X (FIELD, GROUP, NAME, HELP)
 * makes a uint64_t FIELD in its struct (stats.h), a sum in stats_merge
 * (a queue's shard into the disk's snapshot), a zero in stats_reset, and
 * the JSON member NAME, inside the object GROUP when GROUP is not NULL
 * (blkemu-stats(5); test-stats-doc holds the page to the JSON).  A new
 * counter is a line here, where it is counted, and its line in
 * blkemu-stats(5).  The order is the JSON's.
 */
#ifndef BLKEMU_COUNTERS_H
#define BLKEMU_COUNTERS_H

/* struct stats: what became of requests the device refused or reshaped.
 * Members of one GROUP are consecutive (one JSON object).  GROUP "zones"
 * is written with the zone report (json_zones), not here.
 */
#define DEVICE_COUNTERS(X)                                                    \
  X (oversize_rejected, "oversize", "rejected",                               \
     "requests above max-transfer refused with EINVAL")                       \
  X (oversize_split, "oversize", "split", "requests split by the device")     \
  X (oversize_pieces, "oversize", "pieces", "pieces those splits produced")   \
  X (oversize_allowed, "oversize", "allowed",                                 \
     "requests above the limit served whole")                                 \
  X (boundary_crossed, "boundary", "crossed",                                 \
     "requests across a multiple of boundary=")                               \
  X (boundary_split, "boundary", "split", "of those, split at the boundary")  \
  X (boundary_rejected, "boundary", "rejected",                               \
     "of those, refused (oversize=error)")                                    \
  X (discard_unaligned, "discard", "unaligned",                               \
     "trims not made of whole discard units")                                 \
  X (discard_kept_bytes, "discard", "kept_bytes",                             \
     "their bytes outside whole units, kept")                                 \
  X (misaligned, NULL, "misaligned", "offset or length not block aligned")    \
  X (out_of_range, NULL, "out_of_range", "beyond the end of the disk")        \
  X (cancelled, NULL, "cancelled", "failed with ESHUTDOWN: the disk stopped") \
  X (aborted, NULL, "aborted", "ended early: blkemu_disk_abort")              \
  X (zone_refused, "zones", "refused", "refused by the zone rules (zoned=)")

/* struct fault_counts: every injected fault, by kind (JSON "faults"). */
#define FAULT_COUNTERS(X)                                                     \
  X (errors, "faults", "errors", "injected by the error rule")                \
  X (spikes, "faults", "spikes", "requests that paid spike-latency")          \
  X (stalled, "faults", "stalled", "requests held by a stall")                \
  X (slowed, "faults", "slowed", "requests stretched by slowdown")            \
  X (dropped, "faults", "dropped", "connections dropped")                     \
  X (offline, "faults", "offline", "requests refused while crashed")          \
  X (crashes, "faults", "crashes", "power losses")                            \
  X (lost_writes, "faults", "lost_writes",                                    \
     "unflushed writes a crash discarded")                                    \
  X (lost_bytes, "faults", "lost_bytes", "their bytes")                       \
  X (crash_aborted, "faults", "crash_aborted",                                \
     "in flight at a crash: failed with EIO")                                 \
  X (persisted_writes, "faults", "persisted_writes",                          \
     "cached writes a crash let reach the medium")                            \
  X (torn_writes, "faults", "torn_writes",                                    \
     "of the lost ones, those that landed in part")                           \
  X (views, "faults", "views", "crash views opened")                          \
  X (medium_errors, "faults", "medium_errors",                                \
     "reads failed on an unreadable sector")                                  \
  X (interrupted, "faults", "interrupted", "writes a crash left unreadable")  \
  X (bit_flips, "faults", "bit_flips", "reads returned with one bit flipped") \
  X (silently_lost, "faults", "silently_lost_writes",                         \
     "writes acknowledged, never written")                                    \
  X (misdirected, "faults", "misdirected_writes",                             \
     "writes that landed at another offset")                                  \
  X (stuck_reads, "faults", "stuck_reads", "reads a stuck bit changed")

#define COUNTER_FIELD(field, group, name, help) uint64_t field;

#endif
