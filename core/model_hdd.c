/* model=hdd: one actuator, seek by distance, rotation by angle, zoned
 * media rate, and an optional volatile write cache.
 *
 * - Seek: seek(d) = track + a*sqrt(d) + b*d, d the distance as a fraction
 *   of the disk.  a and b are fitted so seek(1) = seek-full and the mean
 *   over uniformly random pairs of positions (E[sqrt d] = 8/15,
 *   E[d] = 1/3) is seek-avg.  Zero distance costs nothing.
 * - Rotation: the platter turns once every 60/rpm s from time 0.  A sector
 *   sits at angle frac(offset / track_bytes), track_bytes being what passes
 *   under the head in one revolution at that zone; after a seek the head
 *   waits for it to come round.
 * - Zones: the media rate falls linearly with the offset from
 *   zone-rate-outer to zone-rate-inner.
 * - A request starting where the previous one ended streams on: no seek,
 *   no rotational wait (the drive's track buffer keeps up).
 * - Write cache (write-cache=yes, not FUA): the write completes once
 *   latency-write and the host transfer (bandwidth, one pipe shared by
 *   all requests, 0: instant) are paid
 *   and the cache has room: if cache-size bytes are already waiting for
 *   the media, it waits until enough earlier writes have reached it.  Its
 *   media work still occupies the head.  A flush waits for the head to
 *   finish everything queued.
 * - Command buffer (command-buffer=SEG): a write command longer than the
 *   drive's per-command buffer segment fills it mid-command; the host
 *   transfer stalls until the media drains it and the head misses the
 *   next sector: buffer-stall (default one revolution) per further
 *   segment, on the media.  Such a command cannot complete from the
 *   cache either: only its last segment may still be in the buffer when
 *   it completes.  Seed 000's WD RE (-30% at 4M, 0% at 1M and 2M) fits a
 *   2M segment; see blkemu-models(7).
 * NCQ reordering is not modelled: the head serves in arrival order.
 */
#include <math.h>

#include "model.h"

#define CACHE_SLOTS 4096 /* cached writes tracked; more waits as if full */

struct hdd_state {
  uint64_t head_pos;     /* byte offset just after the last media op */
  uint64_t head_free_ns; /* when the head finishes its queued work */
  uint64_t host_free_ns; /* end of the last transfer on the interface */
  /* Cached writes not yet on media, oldest first (a ring). */
  struct {
    uint64_t media_done_ns, len;
  } dirty[CACHE_SLOTS];
  unsigned dirty_first, dirty_count;
  uint64_t dirty_bytes;
};

static void
seek_coeffs (const struct blkemu_config *cfg, double *a, double *b)
{
  double tr = (double) cfg->num[K_SEEK_TRACK];
  double avg = (double) cfg->num[K_SEEK_AVG];
  double full = (double) cfg->num[K_SEEK_FULL];
  *a = 5.0 * (avg - tr - (full - tr) / 3.0);
  *b = full - tr - *a;
}

uint64_t
hdd_seek_ns (const struct blkemu_config *cfg, uint64_t from, uint64_t to)
{
  if (from == to)
    return 0;
  double a, b;
  seek_coeffs (cfg, &a, &b);
  double d =
    (double) (from > to ? from - to : to - from) / (double) cfg->num[K_SIZE];
  return (uint64_t) ((double) cfg->num[K_SEEK_TRACK] + a * sqrt (d) + b * d +
                     0.5);
}

double
hdd_rate (const struct blkemu_config *cfg, uint64_t offset)
{
  double outer = (double) cfg->num[K_ZONE_RATE_OUTER];
  double inner = (double) cfg->num[K_ZONE_RATE_INNER];
  return outer - (outer - inner) * (double) offset / (double) cfg->num[K_SIZE];
}

static double
revolution_ns (const struct blkemu_config *cfg)
{
  return 60e9 / (double) cfg->num[K_RPM];
}

uint64_t
hdd_rotation_wait_ns (const struct blkemu_config *cfg, uint64_t t,
                      uint64_t offset)
{
  double rev = revolution_ns (cfg);
  double track_bytes = hdd_rate (cfg, offset) * rev / 1e9;
  double target = fmod ((double) offset / track_bytes, 1.0);
  double head = fmod ((double) t / rev, 1.0);
  double w = target - head;
  if (w < 0)
    w += 1.0;
  return (uint64_t) (w * rev);
}

static uint64_t
hdd_schedule (void *state, const struct blkemu_config *cfg,
              const struct model_req *req)
{
  struct hdd_state *s = state;

  switch (req->op) {
  case BLKEMU_OP_TRIM: return model_add (req->arrival_ns, req->latency_ns);
  case BLKEMU_OP_FLUSH:
    return model_add (model_max (req->arrival_ns, s->head_free_ns),
                      req->latency_ns);
  default: break;
  }

  /* Controller overhead, then position, then transfer. */
  uint64_t t =
    model_add (model_max (req->arrival_ns, s->head_free_ns), req->latency_ns);
  if (req->offset != s->head_pos) {
    t = model_add (t, hdd_seek_ns (cfg, s->head_pos, req->offset));
    t = model_add (t, hdd_rotation_wait_ns (cfg, t, req->offset));
  }
  double rate = hdd_rate (cfg, req->offset);
  t = model_add (t, model_ns_from_double ((double) req->len * 1e9 / rate));
  uint64_t seg = cfg->num[K_COMMAND_BUFFER];
  bool over_buffer = seg && req->op == BLKEMU_OP_WRITE && req->len > seg;
  if (over_buffer) {
    uint64_t stall = cfg->num[K_BUFFER_STALL] ? cfg->num[K_BUFFER_STALL]
                                              : (uint64_t) revolution_ns (cfg);
    t = model_add (t, model_mul ((req->len - 1) / seg, stall));
  }
  s->head_pos = req->offset + req->len;
  s->head_free_ns = t;

  if (!model_write_cached (cfg, req))
    return t;
  /* The host interface is one pipe shared by all requests. */
  s->host_free_ns =
    model_add (model_max (model_add (req->arrival_ns, req->latency_ns),
                          s->host_free_ns),
               model_transfer_ns (req->len, cfg->num[K_BANDWIDTH]));
  uint64_t done = s->host_free_ns;
  /* Forget writes already on media by then, and wait (in order) for
   * older ones until this one fits.
   */
  uint64_t limit = cfg->num[K_CACHE_SIZE];
  while (s->dirty_count) {
    unsigned i = s->dirty_first;
    bool on_media = s->dirty[i].media_done_ns <= done;
    bool must_wait =
      s->dirty_bytes + req->len > limit || s->dirty_count == CACHE_SLOTS;
    if (!on_media && !must_wait)
      break;
    done = model_max (done, s->dirty[i].media_done_ns);
    s->dirty_bytes -= s->dirty[i].len;
    s->dirty_first = (i + 1) % CACHE_SLOTS;
    s->dirty_count--;
  }
  unsigned slot = (s->dirty_first + s->dirty_count) % CACHE_SLOTS;
  s->dirty[slot].media_done_ns = t;
  s->dirty[slot].len = req->len;
  s->dirty_count++;
  s->dirty_bytes += req->len;
  /* Over the buffer: all but the last segment had to reach the media. */
  if (over_buffer)
    done = model_max (done, t - (uint64_t) ((double) seg * 1e9 / rate));
  return done;
}

const struct model_ops model_hdd_ops = {
  .name = "hdd",
  .state_size = sizeof (struct hdd_state),
  .schedule = hdd_schedule,
};
