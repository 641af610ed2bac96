/* Timing models: given a request and the device's state, when does it
 * complete?  One ops table per model (like fio's engines); the disk calls
 * through it under its lock, so a model sees requests in arrival order and
 * may keep any state it likes (channels, head position, caches).
 */
#ifndef BLKEMU_MODEL_H
#define BLKEMU_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct model_req {
  enum blkemu_op op;
  uint64_t offset;
  uint64_t len;
  unsigned flags;
  uint64_t arrival_ns; /* when it reaches this model */
  uint64_t latency_ns; /* its base service time, drawn from latency-dist
                          (spikes included) by the disk */
};

struct model_ops {
  const char *name;
  /* A model whose state is one flat struct gives its size: the state is
   * zeroed at creation and by reset.  A model with more to do (the link
   * owns the device behind it) sets create, destroy and reset instead.
   */
  size_t state_size;
  void *(*create) (const struct blkemu_config *cfg);
  void (*destroy) (void *state);
  /* Completion deadline (CLOCK_MONOTONIC ns) of REQ.  Called under the disk
   * lock, in arrival order; the model commits REQ to its state.
   */
  uint64_t (*schedule) (void *state, const struct blkemu_config *cfg,
                        const struct model_req *req);
  /* Forget history (after a stats reset or a configuration change). */
  void (*reset) (void *state);
};

extern const struct model_ops model_fixed_ops;
extern const struct model_ops model_hdd_ops;
extern const struct model_ops model_ssd_ops;
extern const struct model_ops model_array_ops;
/* The link wraps the model named by model= (model=link: an instant fixed
 * device); the disk always schedules through it, so link-* keys can be
 * set at runtime whatever the model.
 */
extern const struct model_ops model_link_ops;

/* A model's state: new, freed, history forgotten (through the ops'
 * create/destroy/reset, or state_size when they are not set).
 */
void *model_create (const struct model_ops *m,
                    const struct blkemu_config *cfg);
void model_destroy (const struct model_ops *m, void *state);
void model_reset (const struct model_ops *m, void *state);

/* The volume throttle in front of the link (model_volume.c). */
struct volume_bucket {
  double level; /* credits in it (-1: full, not yet read) */
  uint64_t at;  /* when LEVEL was last refilled */
};
struct volume_state {
  struct volume_bucket ios;   /* the IOPS burst's credits, in I/Os */
  struct volume_bucket bytes; /* the throughput burst's, in bytes */
  uint64_t iops_free_ns; /* the IOPS pacer: the next I/O's earliest start */
  uint64_t bw_free_ns;   /* the throughput pacer */
  uint64_t units;        /* I/Os counted */
  uint64_t delayed;      /* requests the throttle held */
  uint64_t delayed_ns;   /* and how long, in all */
};
bool volume_throttles (const struct blkemu_config *cfg);
uint64_t volume_baseline_iops (const struct blkemu_config *cfg);
void volume_reset (struct volume_state *v);
/* When REQ may start, the throttle's limits met; commits it. */
uint64_t volume_admit (struct volume_state *v, const struct blkemu_config *cfg,
                       const struct model_req *req);
/* The burst credits left at NOW (0 without a bucket). */
double volume_credits (struct volume_state *v, const struct blkemu_config *cfg,
                       uint64_t now);
/* The throughput burst's bytes left at NOW (0 without its bucket). */
double volume_burst_bytes (struct volume_state *v,
                           const struct blkemu_config *cfg, uint64_t now);
/* The link's throttle (STATE: the link model's). */
struct volume_state *link_volume (void *state);
/* The device model's state behind the link. */
void *link_device (void *state);
/* model=ssd's flash translation layer (NULL without over-provisioning). */
struct ftl;
struct ftl *ssd_ftl (void *ssd_state);
/* model=ssd's SLC cache (slc-cache=, slc-dynamic=). */
struct ssd_slc {
  uint64_t used;   /* bytes in SLC cells now */
  uint64_t fast;   /* bytes written into the cache */
  uint64_t native; /* bytes written past it, at the native rate */
  uint64_t folded; /* bytes folded out while idle */
};
struct ssd_slc *ssd_slc (void *ssd_state);
/* Does CFG give model=ssd an SLC cache? */
static inline bool
ssd_slc_on (const struct blkemu_config *cfg)
{
  return cfg->num[K_SLC_CACHE] || cfg->num[K_SLC_DYNAMIC];
}
/* The folding done by device time NOW, for a report (no request). */
void ssd_slc_settle (void *ssd_state, const struct blkemu_config *cfg,
                     uint64_t now);
/* Its size now: slc-cache plus slc-dynamic's share of the free flash. */
uint64_t ssd_slc_capacity (void *ssd_state, const struct blkemu_config *cfg);

/* The device model behind the link. */
const struct model_ops *model_lookup (enum model_kind kind);

/* Requests the device services at once: min(queue-depth, channels),
 * channels 0 meaning queue-depth, at most BLKEMU_MAX_CHANNELS.
 */
unsigned model_service_slots (const struct blkemu_config *cfg);

/* Index of the earliest of N times (FIFO slot choice). */
static inline unsigned
model_earliest (const uint64_t *free_ns, unsigned n)
{
  unsigned best = 0;
  for (unsigned i = 1; i < n; i++)
    if (free_ns[i] < free_ns[best])
      best = i;
  return best;
}

/* The slot a request arriving at ARRIVAL_NS takes: the first one free by
 * then (any free slot starts it at once, and a later arrival finds the
 * others just as free), else the earliest to free up.  O(1) while a slot
 * is free, however many there are: the scan of all 128 slots of a
 * default disk was a third of the core's instructions per request.
 */
static inline unsigned
model_slot (const uint64_t *free_ns, unsigned n, uint64_t arrival_ns)
{
  unsigned best = 0;
  for (unsigned i = 0; i < n; i++) {
    if (free_ns[i] <= arrival_ns)
      return i;
    if (free_ns[i] < free_ns[best])
      best = i;
  }
  return best;
}

static inline uint64_t
model_max (uint64_t a, uint64_t b)
{
  return a > b ? a : b;
}

static inline bool
model_is_write (enum blkemu_op op)
{
  return op == BLKEMU_OP_WRITE || op == BLKEMU_OP_ZERO || op == BLKEMU_OP_TRIM;
}

/* Does REQ go into the volatile write cache (write-cache=yes, a write
 * that is not FUA)?  Such a write completes before its media work.
 */
static inline bool
model_write_cached (const struct blkemu_config *cfg,
                    const struct model_req *req)
{
  return model_is_write (req->op) && cfg->num[K_WRITE_CACHE] &&
         !(req->flags & BLKEMU_FLAG_FUA);
}

/* The hdd seek curve, seek(d) = track + a*sqrt(d) + b*d for d the
 * distance as a fraction of the disk; exposed for the unit tests.
 */
uint64_t hdd_seek_ns (const struct blkemu_config *cfg, uint64_t from,
                      uint64_t to);
/* Media rate at OFFSET, bytes/s, linear from outer to inner zone. */
double hdd_rate (const struct blkemu_config *cfg, uint64_t offset);
/* Time until OFFSET's sector passes under the head, from time T. */
uint64_t hdd_rotation_wait_ns (const struct blkemu_config *cfg, uint64_t t,
                               uint64_t offset);

/* Times saturate at MODEL_NEVER: a 32 MiB read at bandwidth=1 and
 * slowdown=1000 is 10^10 s away, past what 64 bits of nanoseconds hold;
 * it must wait (until the disk stops), not wrap into the past.
 */
#define MODEL_NEVER UINT64_MAX

static inline uint64_t
model_add (uint64_t a, uint64_t b)
{
  return a > MODEL_NEVER - b ? MODEL_NEVER : a + b;
}

static inline uint64_t
model_mul (uint64_t a, uint64_t b)
{
  uint64_t r;
  return __builtin_mul_overflow (a, b, &r) ? MODEL_NEVER : r;
}

/* Nanoseconds from a double, saturating (the cast is undefined above). */
static inline uint64_t
model_ns_from_double (double ns)
{
  return ns >= 18446744073709551615.0 ? MODEL_NEVER
         : ns > 0                     ? (uint64_t) ns
                                      : 0;
}

/* Transfer time of LEN bytes at BYTES_PER_S (0: instant). */
static inline uint64_t
model_transfer_ns (uint64_t len, uint64_t bytes_per_s)
{
  if (bytes_per_s == 0)
    return 0;
  unsigned __int128 ns = (unsigned __int128) len * 1000000000u / bytes_per_s;
  return ns > MODEL_NEVER ? MODEL_NEVER : (uint64_t) ns;
}

#endif
