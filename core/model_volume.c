/* The volume throttle: a cloud block volume's provisioned limits, in
 * front of the link and whatever model= names (EBS, Persistent Disk and
 * Azure managed disks all throttle before the storage serves).
 *
 * A request is counted in I/Os: reads and writes as their length in
 * volume-io-unit units (rounded up, at least one; 0: one per request),
 * trims and write-zeroes as one, flushes as none.  It starts no earlier
 * than
 *   - the IOPS pacer allows: I/Os leave at the peak rate, volume-burst-
 *     iops while credits last, else the baseline, volume-iops (or
 *     volume-iops-per-gib times the size in GiB, if more);
 *   - the credit bucket allows (with volume-burst-iops): the bucket holds
 *     volume-burst-credits I/O credits, starts full, refills at the
 *     baseline and pays one credit an I/O; an empty bucket makes the
 *     request wait for its credits, so a volume driven past its baseline
 *     falls to it once the bucket is spent (gp2's burst model);
 *   - the throughput pacer allows: volume-bandwidth bytes/s, reads and
 *     writes together, a request going on once its bytes have crossed.
 * Time spent waiting is the throttle's; the stats' "volume" object has
 * the credits left, the requests delayed and the time they waited.
 */
#include <math.h>
#include <string.h>

#include "model.h"

/* The baseline in I/Os per second (0: no IOPS limit). */
uint64_t
volume_baseline_iops (const struct blkemu_config *cfg)
{
  uint64_t base = cfg->num[K_VOLUME_IOPS];
  uint64_t per_gib = cfg->num[K_VOLUME_IOPS_PER_GIB];
  if (per_gib) {
    uint64_t scaled = model_mul (per_gib, cfg->num[K_SIZE] >> 30);
    if (scaled > base)
      base = scaled;
  }
  return base;
}

bool
volume_throttles (const struct blkemu_config *cfg)
{
  return volume_baseline_iops (cfg) || cfg->num[K_VOLUME_BANDWIDTH];
}

/* How many I/Os REQ counts as. */
static uint64_t
volume_units (const struct blkemu_config *cfg, const struct model_req *req)
{
  uint64_t unit = cfg->num[K_VOLUME_IO_UNIT];
  switch (req->op) {
  case BLKEMU_OP_FLUSH: return 0;
  case BLKEMU_OP_READ:
  case BLKEMU_OP_WRITE:
    return unit && req->len > unit ? (req->len + unit - 1) / unit : 1;
  default: return 1;
  }
}

void
volume_reset (struct volume_state *v)
{
  memset (v, 0, sizeof *v);
  v->credits = -1; /* full, once the first request reads the bucket size */
}

/* The bucket at time T: refilled at BASE a second since it was last
 * read, up to CAP.
 */
static void
volume_refill (struct volume_state *v, uint64_t t, uint64_t base, double cap)
{
  if (v->credits < 0 || v->credits > cap)
    v->credits = cap;
  else if (t > v->credits_at)
    v->credits = fmin (cap, v->credits + (double) (t - v->credits_at) *
                                           (double) base / 1e9);
  if (t > v->credits_at)
    v->credits_at = t;
}

uint64_t
volume_admit (struct volume_state *v, const struct blkemu_config *cfg,
              const struct model_req *req)
{
  uint64_t t = req->arrival_ns;
  uint64_t base = volume_baseline_iops (cfg);
  uint64_t bw = cfg->num[K_VOLUME_BANDWIDTH];
  uint64_t units = volume_units (cfg, req);
  v->units += units;
  if (base && units) {
    uint64_t burst = cfg->num[K_VOLUME_BURST_IOPS];
    double cap = (double) cfg->num[K_VOLUME_BURST_CREDITS];
    uint64_t peak = base;
    t = model_max (t, v->iops_free_ns);
    if (burst > base && cap > 0) {
      volume_refill (v, t, base, cap);
      if (v->credits >= (double) units)
        peak = burst;
      else {
        /* Wait for the credits this request lacks, at the baseline. */
        double lack = (double) units - v->credits;
        t =
          model_add (t,
                     model_ns_from_double (ceil (lack * 1e9 / (double) base)));
        volume_refill (v, t, base, cap);
      }
      v->credits -= (double) units;
      if (v->credits < 0)
        v->credits = 0;
    }
    v->iops_free_ns =
      model_add (t,
                 model_ns_from_double ((double) units * 1e9 / (double) peak));
  }
  if (bw && (req->op == BLKEMU_OP_READ || req->op == BLKEMU_OP_WRITE)) {
    /* Its bytes cross the volume's pipe before it goes on. */
    t = model_add (model_max (t, v->bw_free_ns),
                   model_transfer_ns (req->len, bw));
    v->bw_free_ns = t;
  }
  if (t > req->arrival_ns) {
    v->delayed++;
    v->delayed_ns = model_add (v->delayed_ns, t - req->arrival_ns);
  }
  return t;
}

double
volume_credits (struct volume_state *v, const struct blkemu_config *cfg,
                uint64_t now)
{
  uint64_t cap = cfg->num[K_VOLUME_BURST_CREDITS];
  if (!cfg->num[K_VOLUME_BURST_IOPS] || !cap)
    return 0;
  volume_refill (v, now, volume_baseline_iops (cfg), (double) cap);
  return v->credits;
}
