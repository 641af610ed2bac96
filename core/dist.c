/* Latency distributions: see dist.h.
 *
 * Every shape is a function of the base latency, so one latency-dist
 * applies to reads, writes, flushes and trims alike:
 *   uniform      base +- jitter
 *   normal       base + jitter * z, cut at 0
 *   lognormal    mean base, standard deviation jitter
 *   percentiles  log-latency piecewise linear in z through
 *                (0, ln p50), (z99, ln p99), (z999, ln p999), the p50
 *                being the base; the tail of other ops scales with their
 *                base by the same ratios.
 */
#include "dist.h"

#include <math.h>

static uint64_t
rotl (uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

void
rng_seed (struct rng *r, uint64_t seed)
{
  /* splitmix64 spreads any seed, 0 included, over the whole state. */
  for (int i = 0; i < 4; i++) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    r->s[i] = z ^ (z >> 31);
  }
}

uint64_t
rng_next (struct rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl (s[3], 45);
  return result;
}

double
rng_uniform (struct rng *r)
{
  return (double) (rng_next (r) >> 11) * 0x1.0p-53;
}

double
rng_normal (struct rng *r)
{
  double u1 = 1.0 - rng_uniform (r); /* (0, 1]: log stays finite */
  double u2 = rng_uniform (r);
  return sqrt (-2.0 * log (u1)) * cos (2.0 * M_PI * u2);
}

bool
rng_chance (struct rng *r, uint64_t ppb)
{
  if (ppb == 0)
    return false;
  if (ppb >= BLKEMU_PROB_ONE)
    return true;
  return rng_next (r) % BLKEMU_PROB_ONE < ppb;
}

double
dist_from_z (const struct blkemu_config *cfg, uint64_t base_ns, double z)
{
  double base = (double) base_ns, jitter = (double) cfg->num[K_LATENCY_JITTER];

  switch ((enum latency_dist) cfg->num[K_LATENCY_DIST]) {
  case DIST_NORMAL: return base + jitter * z;
  case DIST_LOGNORMAL: {
    if (base <= 0)
      return 0;
    double s2 = log (1.0 + (jitter / base) * (jitter / base));
    return exp (log (base) - s2 / 2 + sqrt (s2) * z);
  }
  case DIST_PERCENTILES: {
    double p50 = (double) cfg->num[K_LATENCY_READ];
    double p99 = (double) cfg->num[K_LATENCY_P99];
    double p999 = (double) cfg->num[K_LATENCY_P999];
    double s1 = log (p99 / p50) / Z_P99;
    double s2 = log (p999 / p99) / (Z_P999 - Z_P99);
    double lz = z <= Z_P99 ? s1 * z : s1 * Z_P99 + s2 * (z - Z_P99);
    return base * exp (lz);
  }
  case DIST_FIXED:
  case DIST_UNIFORM: break;
  }
  return base;
}

uint64_t
dist_sample (const struct blkemu_config *cfg, struct rng *r, uint64_t base_ns)
{
  double v;
  switch ((enum latency_dist) cfg->num[K_LATENCY_DIST]) {
  case DIST_FIXED: return base_ns;
  case DIST_UNIFORM:
    v = (double) base_ns +
        (2.0 * rng_uniform (r) - 1.0) * (double) cfg->num[K_LATENCY_JITTER];
    break;
  default:
    if (base_ns == 0)
      return 0;
    v = dist_from_z (cfg, base_ns, rng_normal (r));
    break;
  }
  return v > 0 ? (uint64_t) (v + 0.5) : 0;
}
