/* model=ssd: channels x dies flash units behind per-channel buses.
 *
 * A request takes the unit that frees first (the controller spreads
 * load).  A read senses on its die (latency-read) then crosses its
 * channel's bus at channel-bandwidth; a write crosses the bus then
 * programs (latency-write).  Units serve in parallel and buses are shared
 * by their dies, so IOPS grow with the queue depth up to channels x dies
 * and then flatten.  With write-cache=yes a write (not FUA) completes when
 * its data is across the bus; the program still holds the die and a
 * flush waits for every program.
 *
 * With over-provisioning= a flash translation layer (ftl.c) maps the
 * pages: a write first pays, on its die, for the garbage collection it
 * triggered (each relocated page a read and a program, each erase
 * latency-erase), so fresh-out-of-box speed falls to the steady state
 * once the spare blocks are used.  A trim unmaps pages.  The mapping
 * survives a power cycle (model_reset forgets timing only).
 *
 * With slc-cache= (or slc-dynamic=, a share of the free flash) writes
 * program at latency-slc-write while the SLC cache has room, then at
 * latency-write (the native TLC/QLC cells; native-write-rate adds a
 * per-byte cost a die pays there); while every die is idle the
 * cache folds into native cells at slc-fold-rate, freeing it.
 */
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "model.h"

struct ssd_state {
  uint64_t unit_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t bus_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t programs_done_ns;
  uint64_t busy_until_ns; /* the last die's work ends */
  uint64_t fold_at_ns;    /* folding counted up to here */
  /* Kept across a power cycle (flash, not timing): */
  struct ftl *ftl; /* NULL: no over-provisioning */
  struct ssd_slc slc;
};

static void *
ssd_create (const struct blkemu_config *cfg)
{
  struct ssd_state *s = calloc (1, sizeof *s);
  if (s && cfg->num[K_OVER_PROVISIONING] && !(s->ftl = ftl_create (cfg))) {
    free (s);
    return NULL;
  }
  return s;
}

static void
ssd_destroy (void *state)
{
  struct ssd_state *s = state;
  ftl_destroy (s->ftl);
  free (s);
}

static void
ssd_reset (void *state)
{
  struct ssd_state *s = state;
  struct ftl *ftl = s->ftl;
  struct ssd_slc slc = s->slc;
  memset (s, 0, sizeof *s);
  s->ftl = ftl;
  s->slc = slc;
}

struct ftl *
ssd_ftl (void *state)
{
  return ((struct ssd_state *) state)->ftl;
}

struct ssd_slc *
ssd_slc (void *state)
{
  return &((struct ssd_state *) state)->slc;
}

uint64_t
ssd_slc_capacity (void *state, const struct blkemu_config *cfg)
{
  struct ssd_state *s = state;
  uint64_t cap = cfg->num[K_SLC_CACHE];
  if (s->ftl && cfg->num[K_SLC_DYNAMIC]) {
    /* A share of the flash no data holds, run as SLC (a bit a cell). */
    uint64_t free_bytes =
      (uint64_t) (s->ftl->pages - s->ftl->mapped) * cfg->num[K_FLASH_PAGE];
    cap += (uint64_t) ((double) free_bytes * (double) cfg->num[K_SLC_DYNAMIC] /
                       BLKEMU_PROB_ONE);
  }
  return cap;
}

static uint64_t ssd_fold (struct ssd_state *s, const struct blkemu_config *cfg,
                          uint64_t now);

void
ssd_slc_settle (void *state, const struct blkemu_config *cfg, uint64_t now)
{
  ssd_fold (state, cfg, now);
}

/* While every die is idle the SLC cache folds into native cells at
 * slc-fold-rate; a request arriving meanwhile waits for the fold
 * program under way.  Returns that wait.
 */
static uint64_t
ssd_fold (struct ssd_state *s, const struct blkemu_config *cfg, uint64_t now)
{
  if (s->fold_at_ns == 0) { /* new, or reset: no idle time known */
    s->fold_at_ns = now;
    return 0;
  }
  uint64_t from = model_max (s->busy_until_ns, s->fold_at_ns);
  s->fold_at_ns = model_max (s->fold_at_ns, now);
  uint64_t rate = cfg->num[K_SLC_FOLD_RATE];
  if (now <= from || !s->slc.used || !rate)
    return 0;
  uint64_t idle = now - from;
  uint64_t can = model_ns_from_double ((double) idle * (double) rate / 1e9);
  if (can >= s->slc.used) {
    s->slc.folded += s->slc.used;
    s->slc.used = 0;
    return 0;
  }
  s->slc.used -= can;
  s->slc.folded += can;
  uint64_t prog = cfg->num[K_LATENCY_WRITE];
  uint64_t into = prog ? idle % prog : 0; /* of the fold program under way */
  return into ? prog - into : 0;
}

/* The die time the FTL's work for REQ costs before its own program. */
static uint64_t
ssd_ftl_ns (struct ssd_state *s, const struct blkemu_config *cfg,
            const struct model_req *req)
{
  uint64_t fp = cfg->num[K_FLASH_PAGE];
  if (req->op == BLKEMU_OP_TRIM) {
    ftl_trim (s->ftl, req->offset, req->len, fp);
    return 0;
  }
  if (req->op != BLKEMU_OP_WRITE && req->op != BLKEMU_OP_ZERO)
    return 0;
  struct ftl_work w = { 0 };
  ftl_write (s->ftl, req->offset, req->len, fp, &w);
  uint64_t move =
    model_add (cfg->num[K_LATENCY_READ], cfg->num[K_LATENCY_WRITE]);
  return model_add (model_mul (w.relocated, move),
                    model_mul (w.erases, cfg->num[K_LATENCY_ERASE]));
}

static uint64_t
ssd_schedule (void *state, const struct blkemu_config *cfg,
              const struct model_req *req)
{
  struct ssd_state *s = state;
  uint64_t channels = cfg->num[K_CHANNELS] ? cfg->num[K_CHANNELS] : 1;
  uint64_t dies = cfg->num[K_DIES];
  uint64_t units = channels * dies;
  uint64_t qd = cfg->num[K_QUEUE_DEPTH];
  if (units > qd)
    units = qd;
  if (units > BLKEMU_MAX_CHANNELS)
    units = BLKEMU_MAX_CHANNELS;

  if (req->op == BLKEMU_OP_FLUSH)
    return model_add (model_max (req->arrival_ns, s->programs_done_ns),
                      req->latency_ns);

  uint64_t fold_wait = 0, program = req->latency_ns;
  bool slc = ssd_slc_on (cfg), fast = false;
  if (slc)
    fold_wait = ssd_fold (s, cfg, req->arrival_ns);
  if (slc && (req->op == BLKEMU_OP_WRITE || req->op == BLKEMU_OP_ZERO)) {
    /* Into the SLC cache while it has room (one bit a cell: fast),
     * else straight into native cells.
     */
    if (s->slc.used + req->len <= ssd_slc_capacity (s, cfg)) {
      s->slc.used += req->len;
      s->slc.fast += req->len;
      program = cfg->num[K_LATENCY_SLC_WRITE];
      fast = true;
    }
    else
      s->slc.native += req->len;
  }
  if (!fast && (req->op == BLKEMU_OP_WRITE || req->op == BLKEMU_OP_ZERO))
    program =
      model_add (program,
                 model_transfer_ns (req->len, cfg->num[K_NATIVE_WRITE_RATE]));
  unsigned u = model_earliest (s->unit_free_ns, (unsigned) units);
  uint64_t *bus = &s->bus_free_ns[u % channels]; /* interleaved */
  uint64_t start =
    model_max (model_add (req->arrival_ns, fold_wait), s->unit_free_ns[u]);
  if (s->ftl)
    start = model_add (start, ssd_ftl_ns (s, cfg, req));
  uint64_t xfer =
    req->op == BLKEMU_OP_READ || req->op == BLKEMU_OP_WRITE
      ? model_transfer_ns (req->len, cfg->num[K_CHANNEL_BANDWIDTH])
      : 0;
  uint64_t done, reply;

  if (req->op == BLKEMU_OP_READ) {
    uint64_t sensed = model_add (start, req->latency_ns);
    *bus = model_add (model_max (sensed, *bus), xfer);
    done = reply = *bus;
  }
  else {
    *bus = model_add (model_max (start, *bus), xfer);
    done = model_add (*bus, program);
    reply = model_write_cached (cfg, req) ? *bus : done;
    s->programs_done_ns = model_max (s->programs_done_ns, done);
  }
  s->unit_free_ns[u] = done;
  s->busy_until_ns = model_max (s->busy_until_ns, done);
  return reply;
}

const struct model_ops model_ssd_ops = {
  .name = "ssd",
  .create = ssd_create,
  .destroy = ssd_destroy,
  .reset = ssd_reset,
  .schedule = ssd_schedule,
};
