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

struct faults {
  uint64_t matched;         /* requests the error rule matched since set */
  bool fired;               /* the rule has injected an error */
  uint64_t stall_until_ns;  /* hold requests until then */
  bool drop_armed;          /* the next request drops its connection */
  bool offline;             /* crashed, until power-on */
};

/* What the faults do to one request. */
struct fault_verdict {
  int err;              /* 0, or the errno to return */
  bool refused;         /* offline or dropped: never reaches the device */
  uint64_t extra_ns;    /* a latency spike */
  uint64_t not_before;  /* a stall: no completion before this time */
  unsigned marks;       /* TRACE_* marks */
};

void faults_init (struct faults *f, const struct blkemu_config *cfg,
                  uint64_t now);
void faults_check (struct faults *f, const struct blkemu_config *cfg,
                   struct rng *rng, enum blkemu_op op, uint64_t offset,
                   uint64_t len, uint64_t now, struct fault_verdict *v);
/* KEY was just set at runtime: re-arm the error rule or start a stall. */
void faults_key_set (struct faults *f, const struct blkemu_config *cfg,
                     const char *key, uint64_t now);

#endif
