/* Recording into the stats tables: see stats.h. */
#include "stats.h"

#include <stddef.h>
#include <string.h>

#include "clock.h"

static const char *const op_names[BLKEMU_OP_COUNT] = { "read", "write",
                                                       "flush", "trim",
                                                       "zero" };

const char *
stats_op_name (enum blkemu_op op)
{
  return op_names[op];
}

void
stats_init (struct stats *st)
{
  /* ST comes zeroed (the disk is calloc'ed): clearing its ~300 KB of
   * histograms again would touch every page before the first request.
   */
  pthread_mutex_init (&st->lock, NULL);
  st->start_ns = clock_now_ns ();
}

void
stats_destroy (struct stats *st)
{
  pthread_mutex_destroy (&st->lock);
}

void
stats_reset (struct stats *st)
{
  pthread_mutex_lock (&st->lock);
  _Static_assert(offsetof (struct stats, lock) + sizeof (pthread_mutex_t) ==
                   sizeof (struct stats),
                 "the lock is the last field, after the counters");
  memset (st, 0, offsetof (struct stats, lock));
  st->start_ns = clock_now_ns ();
  pthread_mutex_unlock (&st->lock);
}

static unsigned
lat_bucket (uint64_t ns)
{
  if (ns < (2u << LAT_SUB_BITS))
    return (unsigned) ns;
  unsigned msb = 63 - (unsigned) __builtin_clzll (ns);
  unsigned shift = msb - LAT_SUB_BITS;
  unsigned idx = shift * (1u << LAT_SUB_BITS) + (unsigned) (ns >> shift);
  return idx < LAT_BUCKETS ? idx : LAT_BUCKETS - 1;
}

/* Lowest value and width of bucket IDX (the inverse of lat_bucket). */
static void
lat_bucket_range (unsigned idx, uint64_t *low, uint64_t *width)
{
  if (idx < (2u << LAT_SUB_BITS)) {
    *low = idx;
    *width = 1;
    return;
  }
  unsigned shift = idx / (1u << LAT_SUB_BITS) - 1;
  uint64_t mant = idx - shift * (1u << LAT_SUB_BITS);
  *low = mant << shift;
  *width = 1ull << shift;
}

uint64_t
stats_latency_percentile (const struct op_stats *os, double pct)
{
  if (os->lat_count == 0)
    return 0;
  uint64_t rank = (uint64_t) (pct / 100.0 * (double) os->lat_count + 0.5);
  if (rank < 1)
    rank = 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < LAT_BUCKETS; i++) {
    seen += os->lat[i];
    if (seen >= rank) {
      uint64_t low, width;
      lat_bucket_range (i, &low, &width);
      uint64_t mid = low + width / 2;
      return mid > os->lat_max_ns ? os->lat_max_ns : mid;
    }
  }
  return os->lat_max_ns;
}

static void
count_size (struct op_stats *os, uint64_t len)
{
  /* Fibonacci hashing of the size, then linear probing. */
  unsigned h = (unsigned) ((len * 0x9E3779B97F4A7C15ull) >> 54) % SIZE_SLOTS;
  for (unsigned probe = 0; probe < SIZE_SLOTS; probe++) {
    struct size_slot *s = &os->sizes[(h + probe) % SIZE_SLOTS];
    if (s->size == len) {
      s->count++;
      return;
    }
    if (s->count == 0) {
      s->size = len;
      s->count = 1;
      return;
    }
  }
  os->size_other++;
}

void
stats_record (struct stats *st, enum blkemu_op op, uint64_t offset,
              uint64_t len, uint64_t arrival_ns, uint64_t latency_ns,
              uint64_t modelled_ns, uint64_t qd_at_arrival, int err)
{
  struct op_stats *os = &st->op[op];
  pthread_mutex_lock (&st->lock);
  if (st->first_arrival_ns == 0 || arrival_ns < st->first_arrival_ns)
    st->first_arrival_ns = arrival_ns;
  if (arrival_ns + latency_ns > st->last_done_ns)
    st->last_done_ns = arrival_ns + latency_ns;
  os->requests++;
  if (err)
    os->errors++;
  else
    os->bytes += len;
  if (op != BLKEMU_OP_FLUSH) {
    count_size (os, len);
    os->size_log2[len ? 63 - __builtin_clzll (len) : 0]++;
    os->align_log2[offset ? __builtin_ctzll (offset)
                          : SIZE_LOG2_BUCKETS - 1]++;
  }
  os->lat[lat_bucket (latency_ns)]++;
  os->lat_sum_ns += latency_ns;
  os->model_sum_ns += modelled_ns;
  os->lat_count++;
  if (latency_ns > os->lat_max_ns)
    os->lat_max_ns = latency_ns;
  st->qd_hist[qd_at_arrival < QD_BUCKETS - 1 ? qd_at_arrival
                                             : QD_BUCKETS - 1]++;
  if (qd_at_arrival > st->qd_max)
    st->qd_max = qd_at_arrival;
  if (op == BLKEMU_OP_READ || op == BLKEMU_OP_WRITE) {
    st->rw_requests++;
    if (offset == st->next_offset)
      st->seq_requests++;
    st->next_offset = offset + len;
  }
  pthread_mutex_unlock (&st->lock);
}

/* SIZES's slots counted into OS's table, as count_size would have. */
static void
merge_sizes (struct op_stats *os, const struct op_stats *from)
{
  for (unsigned i = 0; i < SIZE_SLOTS; i++) {
    const struct size_slot *f = &from->sizes[i];
    if (f->count == 0)
      continue;
    unsigned h =
      (unsigned) ((f->size * 0x9E3779B97F4A7C15ull) >> 54) % SIZE_SLOTS;
    unsigned probe = 0;
    for (; probe < SIZE_SLOTS; probe++) {
      struct size_slot *s = &os->sizes[(h + probe) % SIZE_SLOTS];
      if (s->count == 0 || s->size == f->size) {
        s->size = f->size;
        s->count += f->count;
        break;
      }
    }
    if (probe == SIZE_SLOTS)
      os->size_other += f->count;
  }
}

static void
add_u64s (uint64_t *into, const uint64_t *from, size_t n)
{
  for (size_t i = 0; i < n; i++)
    into[i] += from[i];
}

static void
merge_op (struct op_stats *os, const struct op_stats *from)
{
  os->requests += from->requests;
  os->bytes += from->bytes;
  os->errors += from->errors;
  os->lat_sum_ns += from->lat_sum_ns;
  os->lat_count += from->lat_count;
  if (from->lat_max_ns > os->lat_max_ns)
    os->lat_max_ns = from->lat_max_ns;
  os->model_sum_ns += from->model_sum_ns;
  os->size_other += from->size_other;
  add_u64s (os->size_log2, from->size_log2, SIZE_LOG2_BUCKETS);
  add_u64s (os->align_log2, from->align_log2, SIZE_LOG2_BUCKETS);
  add_u64s (os->lat, from->lat, LAT_BUCKETS);
  merge_sizes (os, from);
}

void
stats_merge (struct stats *into, const struct stats *from)
{
  /* Every counter of counters.h; the last crash's record stays INTO's
   * (a crash is the disk's, not a queue's).
   */
#define ADD_FAULT(field, group, name, help)                                   \
  into->faults.field += from->faults.field;
#define ADD_DEVICE(field, group, name, help) into->field += from->field;
  FAULT_COUNTERS (ADD_FAULT)
  DEVICE_COUNTERS (ADD_DEVICE)
#undef ADD_FAULT
#undef ADD_DEVICE
  for (unsigned op = 0; op < BLKEMU_OP_COUNT; op++)
    merge_op (&into->op[op], &from->op[op]);
  add_u64s (into->qd_hist, from->qd_hist, QD_BUCKETS);
  if (from->qd_max > into->qd_max)
    into->qd_max = from->qd_max;
  /* Sequential: each shard's requests against its own last one. */
  into->seq_requests += from->seq_requests;
  into->rw_requests += from->rw_requests;
  if (from->first_arrival_ns &&
      (!into->first_arrival_ns ||
       from->first_arrival_ns < into->first_arrival_ns))
    into->first_arrival_ns = from->first_arrival_ns;
  if (from->last_done_ns > into->last_done_ns)
    into->last_done_ns = from->last_done_ns;
}

void
stats_count (struct stats *st, uint64_t *counter)
{
  pthread_mutex_lock (&st->lock);
  (*counter)++;
  pthread_mutex_unlock (&st->lock);
}

void
stats_record_refused (struct stats *st, enum blkemu_op op, uint64_t len,
                      uint64_t *reason)
{
  pthread_mutex_lock (&st->lock);
  (*reason)++;
  st->op[op].requests++;
  st->op[op].errors++;
  if (op != BLKEMU_OP_FLUSH)
    count_size (&st->op[op], len);
  pthread_mutex_unlock (&st->lock);
}
