/* The link: a network between the host and the device (iSCSI, NBD over
 * TCP), in front of whatever model= names.
 *
 * A request waits for a place in the window (link-window outstanding
 * requests, 0: unlimited), travels half a round trip to the device —
 * a write's payload first crosses the upstream pipe at link-bandwidth —
 * is served by the device model, and comes back in the other half, a
 * read's payload crossing the downstream pipe.  At queue depth 1 a
 * request of S bytes therefore takes rtt + S / link-bandwidth plus the
 * device's own time.  With no link-* key set the link is not there.
 * A volume throttle (volume-* keys, model_volume.c) sits in front.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

struct link_state {
  struct volume_state volume; /* the throttle in front */
  const struct model_ops *device;
  void *device_state;
  uint64_t window_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t up_free_ns, down_free_ns;
};

static void *
link_create (const struct blkemu_config *cfg)
{
  struct link_state *s = calloc (1, sizeof *s);
  if (!s)
    return NULL;
  volume_reset (&s->volume);
  s->device = model_lookup ((enum model_kind) cfg->num[K_MODEL]);
  s->device_state = model_create (s->device, cfg);
  if (!s->device_state) {
    free (s);
    return NULL;
  }
  return s;
}

static void
link_destroy (void *state)
{
  struct link_state *s = state;
  model_destroy (s->device, s->device_state);
  free (s);
}

static void
link_reset (void *state)
{
  struct link_state *s = state;
  model_reset (s->device, s->device_state);
  volume_reset (&s->volume);
  memset (s->window_free_ns, 0, sizeof s->window_free_ns);
  s->up_free_ns = s->down_free_ns = 0;
}

struct volume_state *
link_volume (void *state)
{
  return &((struct link_state *) state)->volume;
}

void *
link_device (void *state)
{
  return ((struct link_state *) state)->device_state;
}

static uint64_t
link_schedule (void *state, const struct blkemu_config *cfg,
               const struct model_req *in)
{
  struct link_state *s = state;
  /* The volume's throttle first: the request reaches the link when its
   * limits let it go.
   */
  struct model_req throttled = *in;
  const struct model_req *req = in;
  if (volume_throttles (cfg)) {
    throttled.arrival_ns = volume_admit (&s->volume, cfg, in);
    req = &throttled;
  }
  uint64_t rtt = cfg->num[K_LINK_RTT], bw = cfg->num[K_LINK_BANDWIDTH];
  uint64_t window = cfg->num[K_LINK_WINDOW];

  if (rtt == 0 && bw == 0 && window == 0)
    return s->device->schedule (s->device_state, cfg, req);

  unsigned slot = 0;
  uint64_t t = req->arrival_ns;
  if (window) {
    slot = model_earliest (s->window_free_ns, (unsigned) window);
    t = model_max (t, s->window_free_ns[slot]);
  }
  uint64_t there = rtt / 2, back = rtt - there;

  if (req->op == BLKEMU_OP_WRITE) {
    s->up_free_ns = model_add (model_max (t, s->up_free_ns),
                               model_transfer_ns (req->len, bw));
    t = s->up_free_ns;
  }
  struct model_req at_device = *req;
  at_device.arrival_ns = model_add (t, there);
  t = s->device->schedule (s->device_state, cfg, &at_device);

  if (req->op == BLKEMU_OP_READ) {
    s->down_free_ns = model_add (model_max (t, s->down_free_ns),
                                 model_transfer_ns (req->len, bw));
    t = s->down_free_ns;
  }
  t = model_add (t, back);
  if (window)
    s->window_free_ns[slot] = t;
  return t;
}

const struct model_ops model_link_ops = {
  .name = "link",
  .create = link_create,
  .destroy = link_destroy,
  .schedule = link_schedule,
  .reset = link_reset,
};
