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
 *     writes together, a request going on once its bytes have crossed;
 *     with volume-burst-bandwidth, at that rate while a second bucket of
 *     volume-burst-bytes (starts full, refills at volume-bandwidth, a
 *     credit a byte) holds the request's bytes (st1's and Azure's
 *     throughput bursts).
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
  /* full, once the first request reads the bucket's size */
  v->ios.level = -1;
  v->bytes.level = -1;
}

/* Bucket B at time T: refilled at RATE a second since it was last read,
 * up to CAP.
 */
static void
bucket_refill (struct volume_bucket *b, uint64_t t, uint64_t rate, double cap)
{
  if (b->level < 0 || b->level > cap)
    b->level = cap;
  else if (t > b->at)
    b->level =
      fmin (cap, b->level + (double) (t - b->at) * (double) rate / 1e9);
  if (t > b->at)
    b->at = t;
}

/* Takes COST credits from bucket B (CAP, refilled at RATE) for a request
 * that could start at *T.  Returns whether the bucket held them (the
 * request goes at the burst rate); if not, *T moves on to when the
 * missing credits have come in at RATE, and the request goes at it.
 */
static bool
bucket_take (struct volume_bucket *b, uint64_t *t, uint64_t rate, double cap,
             double cost)
{
  bool had = false;
  bucket_refill (b, *t, rate, cap);
  if (b->level >= cost)
    had = true;
  else {
    double lack = cost - b->level;
    *t =
      model_add (*t, model_ns_from_double (ceil (lack * 1e9 / (double) rate)));
    bucket_refill (b, *t, rate, cap);
  }
  b->level = fmax (0, b->level - cost);
  return had;
}

uint64_t
volume_admit (struct volume_state *v, const struct blkemu_config *cfg,
              const struct model_req *req)
{
  const uint64_t *n = cfg->num;
  uint64_t t = req->arrival_ns;
  uint64_t base = volume_baseline_iops (cfg);
  uint64_t bw = n[K_VOLUME_BANDWIDTH];
  uint64_t units = volume_units (cfg, req);
  v->units += units;
  if (base && units) {
    uint64_t peak = base;
    t = model_max (t, v->iops_free_ns);
    if (n[K_VOLUME_BURST_IOPS] > base && n[K_VOLUME_BURST_CREDITS] &&
        bucket_take (&v->ios, &t, base, (double) n[K_VOLUME_BURST_CREDITS],
                     (double) units))
      peak = n[K_VOLUME_BURST_IOPS];
    v->iops_free_ns =
      model_add (t,
                 model_ns_from_double ((double) units * 1e9 / (double) peak));
  }
  if (bw && (req->op == BLKEMU_OP_READ || req->op == BLKEMU_OP_WRITE)) {
    /* Its bytes cross the volume's pipe before it goes on, at the burst
     * rate while the byte bucket holds them.
     */
    uint64_t rate = bw;
    t = model_max (t, v->bw_free_ns);
    if (n[K_VOLUME_BURST_BANDWIDTH] > bw && n[K_VOLUME_BURST_BYTES] &&
        bucket_take (&v->bytes, &t, bw, (double) n[K_VOLUME_BURST_BYTES],
                     (double) req->len))
      rate = n[K_VOLUME_BURST_BANDWIDTH];
    t = model_add (t, model_transfer_ns (req->len, rate));
    v->bw_free_ns = t;
  }
  if (t > req->arrival_ns) {
    v->delayed++;
    v->delayed_ns = model_add (v->delayed_ns, t - req->arrival_ns);
  }
  return t;
}

/* Bucket B's level at NOW (0 when the burst is off: no BURST rate, or
 * no bucket); it refills at BASE.
 */
static double
bucket_level (struct volume_bucket *b, uint64_t now, uint64_t burst,
              uint64_t base, uint64_t cap)
{
  if (!burst || !cap)
    return 0;
  bucket_refill (b, now, base, (double) cap);
  return b->level;
}

double
volume_credits (struct volume_state *v, const struct blkemu_config *cfg,
                uint64_t now)
{
  return bucket_level (&v->ios, now, cfg->num[K_VOLUME_BURST_IOPS],
                       volume_baseline_iops (cfg),
                       cfg->num[K_VOLUME_BURST_CREDITS]);
}

double
volume_burst_bytes (struct volume_state *v, const struct blkemu_config *cfg,
                    uint64_t now)
{
  return bucket_level (&v->bytes, now, cfg->num[K_VOLUME_BURST_BANDWIDTH],
                       cfg->num[K_VOLUME_BANDWIDTH],
                       cfg->num[K_VOLUME_BURST_BYTES]);
}
