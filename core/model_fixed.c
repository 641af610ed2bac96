/* model=fixed: every request costs its base latency plus size/bandwidth.
 *
 * The device services min(queue-depth, channels) requests at once, first
 * come first served; the others wait for a slot.  Payload transfers share
 * one media pipe at `bandwidth`, so the rate holds whatever the queue
 * depth.  A flush also waits for every write that arrived before it.
 */
#include "model.h"

struct fixed_state {
  uint64_t slot_free_ns[BLKEMU_MAX_CHANNELS]; /* when each slot is free */
  uint64_t media_free_ns;                     /* end of the last transfer */
  uint64_t writes_done_ns;                    /* last write's completion */
};

static uint64_t
fixed_schedule (void *state, const struct blkemu_config *cfg,
                const struct model_req *req)
{
  struct fixed_state *s = state;
  unsigned slot =
    model_slot (s->slot_free_ns, model_service_slots (cfg), req->arrival_ns);
  uint64_t start = model_max (req->arrival_ns, s->slot_free_ns[slot]);

  uint64_t done = start;
  bool has_payload = req->op == BLKEMU_OP_READ || req->op == BLKEMU_OP_WRITE;
  if (has_payload) {
    uint64_t xfer = model_transfer_ns (req->len, cfg_bandwidth (cfg, req->op));
    if (xfer) {
      s->media_free_ns = model_add (model_max (start, s->media_free_ns), xfer);
      done = s->media_free_ns;
    }
  }
  done = model_add (done, req->latency_ns);

  if (req->op == BLKEMU_OP_FLUSH)
    done = model_max (done, s->writes_done_ns);
  if (model_is_write (req->op))
    s->writes_done_ns = model_max (s->writes_done_ns, done);

  s->slot_free_ns[slot] = done;
  return done;
}

const struct model_ops model_fixed_ops = {
  .name = "fixed",
  .state_size = sizeof (struct fixed_state),
  .schedule = fixed_schedule,
};
