/* model=array: a SAN or RAID controller's virtual disk.
 *
 * The array serves min(queue-depth, channels) requests at once.  Inside
 * the array a request is cut into array-stripe pieces served one after
 * another, each paying piece-overhead before its transfer on the shared
 * media pipe (bandwidth).  Separate requests overlap their overheads with
 * each other's transfers; one big request cannot — which is why a 4M
 * request can be slower than four 1M ones (seed 000).
 *
 * With write-cache=yes a write (not FUA) lands in a write-back cache of
 * cache-size bytes that destages at destage-rate (0: bandwidth); a write
 * that finds the cache full waits until enough has drained.  A flush waits
 * until the cache is empty.
 */
#include "model.h"

struct array_state {
  uint64_t slot_free_ns[BLKEMU_MAX_CHANNELS];
  uint64_t media_free_ns;
  uint64_t writes_done_ns;
  double cache_bytes; /* dirty bytes at cache_ns */
  uint64_t cache_ns;
};

static uint64_t
destage_rate (const struct blkemu_config *cfg)
{
  return cfg->num[K_DESTAGE_RATE] ? cfg->num[K_DESTAGE_RATE]
                                  : cfg->num[K_BANDWIDTH];
}

/* Drain the cache up to time T. */
static void
cache_drain (struct array_state *s, const struct blkemu_config *cfg,
             uint64_t t)
{
  uint64_t rate = destage_rate (cfg);
  if (t <= s->cache_ns)
    return;
  if (rate == 0)
    s->cache_bytes = 0;
  else {
    s->cache_bytes -= (double) (t - s->cache_ns) * (double) rate / 1e9;
    if (s->cache_bytes < 0)
      s->cache_bytes = 0;
  }
  s->cache_ns = t;
}

static uint64_t
array_schedule (void *state, const struct blkemu_config *cfg,
                const struct model_req *req)
{
  struct array_state *s = state;
  unsigned slot =
    model_slot (s->slot_free_ns, model_service_slots (cfg), req->arrival_ns);
  uint64_t t = model_add (model_max (req->arrival_ns, s->slot_free_ns[slot]),
                          req->latency_ns);

  if (req->op == BLKEMU_OP_FLUSH) {
    t = model_max (t, s->writes_done_ns);
    if (cfg->num[K_WRITE_CACHE]) {
      cache_drain (s, cfg, t);
      uint64_t rate = destage_rate (cfg);
      if (rate && s->cache_bytes > 0)
        t = model_add (t, model_ns_from_double (s->cache_bytes * 1e9 /
                                                (double) rate));
      cache_drain (s, cfg, t);
    }
  }
  else if (req->op == BLKEMU_OP_READ || req->op == BLKEMU_OP_WRITE) {
    uint64_t stripe = cfg->num[K_ARRAY_STRIPE];
    uint64_t bw = cfg_bandwidth (cfg, req->op);
    for (uint64_t done = 0; done < req->len; done += stripe) {
      uint64_t piece = req->len - done < stripe ? req->len - done : stripe;
      t = model_add (t, cfg->num[K_PIECE_OVERHEAD]);
      uint64_t xfer = model_transfer_ns (piece, bw);
      if (xfer) {
        s->media_free_ns = model_add (model_max (t, s->media_free_ns), xfer);
        t = s->media_free_ns;
      }
    }
    if (req->op == BLKEMU_OP_WRITE && model_write_cached (cfg, req)) {
      cache_drain (s, cfg, t);
      s->cache_bytes += (double) req->len;
      double over = s->cache_bytes - (double) cfg->num[K_CACHE_SIZE];
      uint64_t rate = destage_rate (cfg);
      if (over > 0 && rate) {
        t = model_add (t, model_ns_from_double (over * 1e9 / (double) rate));
        cache_drain (s, cfg, t);
      }
    }
  }
  if (model_is_write (req->op))
    s->writes_done_ns = model_max (s->writes_done_ns, t);
  s->slot_free_ns[slot] = t;
  return t;
}

const struct model_ops model_array_ops = {
  .name = "array",
  .state_size = sizeof (struct array_state),
  .schedule = array_schedule,
};
