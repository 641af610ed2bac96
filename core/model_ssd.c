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
 */
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "model.h"

struct ssd_state {
  uint64_t unit_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t bus_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t programs_done_ns;
  struct ftl *ftl; /* NULL: no over-provisioning */
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
  memset (s, 0, sizeof *s);
  s->ftl = ftl;
}

struct ftl *
ssd_ftl (void *state)
{
  return ((struct ssd_state *) state)->ftl;
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

  unsigned u = model_earliest (s->unit_free_ns, (unsigned) units);
  uint64_t *bus = &s->bus_free_ns[u % channels]; /* interleaved */
  uint64_t start = model_max (req->arrival_ns, s->unit_free_ns[u]);
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
    done = model_add (*bus, req->latency_ns);
    reply = model_write_cached (cfg, req) ? *bus : done;
    s->programs_done_ns = model_max (s->programs_done_ns, done);
  }
  s->unit_free_ns[u] = done;
  return reply;
}

const struct model_ops model_ssd_ops = {
  .name = "ssd",
  .create = ssd_create,
  .destroy = ssd_destroy,
  .reset = ssd_reset,
  .schedule = ssd_schedule,
};
