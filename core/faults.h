/* Injected faults: an error rule (range, op, probability, after N,
 * once/sticky), latency spikes, stalls, a slowdown, a dropped connection,
 * and power loss (crash/power-on).  Decided under the disk lock, in
 * arrival order, from the disk's seeded generator.
 */
#ifndef BLKEMU_FAULTS_H
#define BLKEMU_FAULTS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dist.h"
#include "model.h"

struct faults {
  uint64_t matched;        /* requests the error rule matched since set */
  bool fired;              /* the rule has injected an error */
  uint64_t stall_until_ns; /* hold requests until then */
  bool drop_armed;         /* the next request drops its connection */
  bool offline;            /* crashed, until power-on */
  uint64_t slow_base_ns;   /* slowdown dilates time from here */
};

/* Silent corruption (bit-flip-, lost-write-, misdirected-write-
 * probability): a read returns one bit flipped, a write is acknowledged
 * and dropped, or lands elsewhere.  Nothing tells the client.
 */
enum silent_fault { SILENT_NONE, SILENT_FLIP, SILENT_LOST, SILENT_MISDIRECT };

/* What the faults do to one request. */
struct fault_verdict {
  int err;             /* 0, or the errno to return */
  bool refused;        /* offline or dropped: never reaches the device */
  uint64_t extra_ns;   /* a latency spike */
  uint64_t not_before; /* a stall: no completion before this time */
  unsigned marks;      /* TRACE_* marks */
  /* Silent corruption: the request succeeds, its data is wrong. */
  enum silent_fault silent;
  uint64_t silent_at; /* FLIP: the bit flipped (from the request's first
                         byte's low bit); MISDIRECT: where the data goes */
};

void faults_init (struct faults *f, const struct blkemu_config *cfg,
                  uint64_t now);
void faults_check (struct faults *f, const struct blkemu_config *cfg,
                   struct rng *rng, enum blkemu_op op, uint64_t offset,
                   uint64_t len, uint64_t now, struct fault_verdict *v);
/* slowdown=N runs the device on a clock N times slower than the wall's,
 * from slow_base_ns: the model sees compressed arrival times and its
 * deadlines are stretched back, so queues, pipes and heads stay
 * consistent under concurrency (a plain multiple of each request's time
 * would not be).
 */
static inline uint64_t
faults_to_device_time (const struct faults *f, uint64_t n, uint64_t t)
{
  return n > 1 && t > f->slow_base_ns
           ? f->slow_base_ns + (t - f->slow_base_ns) / n
           : t;
}
static inline uint64_t
faults_to_wall_time (const struct faults *f, uint64_t n, uint64_t t)
{
  return n > 1 && t > f->slow_base_ns
           ? model_add (f->slow_base_ns, model_mul (t - f->slow_base_ns, n))
           : t;
}

/* The error rule was changed: it starts counting again (error-after,
 * mode once).
 */
void faults_rearm (struct faults *f);

#endif
