/* What the device saw: per-op counters, exact request sizes, log2 size
 * buckets, HDR-style latency histograms, queue depth at arrival and the
 * sequential fraction.  Fixed-size tables: recording allocates nothing.
 */
#ifndef BLKEMU_STATS_H
#define BLKEMU_STATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "blkemu/blkemu.h"
#include "counters.h"

/* Latency buckets: values below 256 ns are exact; above, 128 buckets per
 * power of two (worst-case error 0.4% at the bucket's midpoint).
 */
#define LAT_SUB_BITS 7
#define LAT_BUCKETS                                                           \
  ((40 - LAT_SUB_BITS) * (1 << LAT_SUB_BITS) + (2 << LAT_SUB_BITS))
#define SIZE_SLOTS 1024 /* distinct exact sizes tracked per op */
#define SIZE_LOG2_BUCKETS 64
#define QD_BUCKETS 1025 /* queue depth 0..1023 exact, then "1024+" */

struct size_slot {
  uint64_t size;
  uint64_t count;
};

struct op_stats {
  uint64_t requests, bytes, errors;
  uint64_t lat_sum_ns, lat_max_ns, lat_count;
  uint64_t model_sum_ns; /* the model's deadline - arrival: the target */
  uint64_t size_other;   /* sizes that found no slot */
  uint64_t size_log2[SIZE_LOG2_BUCKETS]; /* bucket b: [2^b, 2^(b+1)) */
  /* Alignment, as nbdkit's stats filter counts it: bucket b holds the
   * requests whose offset is a multiple of 2^b and not of 2^(b+1); an
   * offset of 0 (aligned to anything) is in the last.
   */
  uint64_t align_log2[SIZE_LOG2_BUCKETS];
  struct size_slot sizes[SIZE_SLOTS]; /* open addressing on size */
  uint64_t lat[LAT_BUCKETS];
};

/* Every injected fault, by kind (counters.h), then the last crash's
 * record.
 */
struct fault_counts {
  FAULT_COUNTERS (COUNTER_FIELD)
  /* The last crash (CRASHES > 0). */
  enum blkemu_crash_mode last_mode;
  uint64_t last_seed, last_persisted, last_lost, last_torn;
};

struct stats {
  /* Counters only, up to LOCK, the last field: stats_reset clears them in
   * one go, so a new counter needs no line there.
   */
  struct fault_counts faults;
  uint64_t start_ns;
  struct op_stats op[BLKEMU_OP_COUNT];
  DEVICE_COUNTERS (COUNTER_FIELD) /* counters.h */
  uint64_t qd_hist[QD_BUCKETS];   /* requests in flight at arrival */
  uint64_t qd_max;
  uint64_t seq_requests; /* read/write starting where the last ended */
  uint64_t rw_requests;
  uint64_t next_offset;      /* end of the last read/write */
  uint64_t first_arrival_ns; /* the active window, for rates: first */
  uint64_t last_done_ns;     /* arrival to last completion */
  pthread_mutex_t lock;      /* last: see above */
};

/* ST must be zeroed memory. */
void stats_init (struct stats *st);
void stats_destroy (struct stats *st);
void stats_reset (struct stats *st);

/* One completed (or failed) request as the device saw it; MODELLED_NS is
 * the latency the model asked for (what LATENCY_NS should equal).
 * QD_AT_ARRIVAL counts the requests already in the device, this one included.
 */
void stats_record (struct stats *st, enum blkemu_op op, uint64_t offset,
                   uint64_t len, uint64_t arrival_ns, uint64_t latency_ns,
                   uint64_t modelled_ns, uint64_t qd_at_arrival, int err);
/* A request refused before reaching the device (limits, range); REASON is
 * the counter of st that says why.
 */
/* One more of COUNTER, a field of ST, under its lock. */
void stats_count (struct stats *st, uint64_t *counter);
void stats_record_refused (struct stats *st, enum blkemu_op op, uint64_t len,
                           uint64_t *reason);

/* FROM's counts added to INTO's (the caller holds both or owns them):
 * a queue's shard into the disk's snapshot.  The last crash's record and
 * the start time stay INTO's.
 */
void stats_merge (struct stats *into, const struct stats *from);

const char *stats_op_name (enum blkemu_op op);

/* Percentile (0..100) of op's latency histogram, in ns.  Caller holds the
 * lock or owns a snapshot.
 */
uint64_t stats_latency_percentile (const struct op_stats *os, double pct);

#endif
