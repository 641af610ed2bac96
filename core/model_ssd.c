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
 */
#include "model.h"

struct ssd_state {
  uint64_t unit_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t bus_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t programs_done_ns;
};

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
  .state_size = sizeof (struct ssd_state),
  .schedule = ssd_schedule,
};
