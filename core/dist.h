/* Seeded randomness and latency distributions.  Draws happen under the
 * disk lock in arrival order, so one seed and one arrival order give the
 * same numbers every run.
 */
#ifndef BLKEMU_DIST_H
#define BLKEMU_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct rng {
  uint64_t s[4]; /* xoshiro256** state */
};

void rng_seed (struct rng *r, uint64_t seed);
uint64_t rng_next (struct rng *r);
/* Uniform in [0, 1). */
double rng_uniform (struct rng *r);
/* Standard normal (Box-Muller). */
double rng_normal (struct rng *r);
/* True with probability PPB parts per billion. */
bool rng_chance (struct rng *r, uint64_t ppb);

/* Standard normal quantiles the percentile shape is pinned to. */
#define Z_P99 2.3263478740408408
#define Z_P999 3.0902323061678132

/* The latency of one request whose base latency is BASE_NS, drawn from
 * cfg's latency-dist.  Never negative.
 */
uint64_t dist_sample (const struct blkemu_config *cfg, struct rng *r,
                      uint64_t base_ns);
/* The value a standard-normal Z maps to (for the shapes built on one). */
double dist_from_z (const struct blkemu_config *cfg, uint64_t base_ns,
                    double z);

#endif
