/* One request's way through the device: range and alignment checks,
 * the oversize policy and boundary, the timing model, the backend, the
 * wait for the deadline (blkemu_io, in the caller's thread) or the
 * completion engine (blkemu_submit), then stats and trace.  With a
 * blocking backend (file) blkemu_submit leaves the transfer to the disk's
 * I/O worker, and the request completes at its deadline or when its
 * transfer ends, whichever is later.
 */
#include "pipeline.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "clock.h"
#include "disk.h"
#include "engine.h"
#include "error.h"
#include "timeline.h"

/* The limit that applies to OP's length (0: none). */
static uint64_t
op_limit (const struct blkemu_config *cfg, enum blkemu_op op)
{
  switch (op) {
  case BLKEMU_OP_READ:
  case BLKEMU_OP_WRITE: return cfg->num[K_MAX_TRANSFER];
  case BLKEMU_OP_TRIM: return cfg->num[K_MAX_DISCARD];
  case BLKEMU_OP_ZERO: return cfg->num[K_MAX_WRITE_ZEROES];
  default: return 0;
  }
}

/* Refuse a request before it reaches the device. */
static int
refuse (struct blkemu_disk *disk, enum blkemu_op op, uint64_t len,
        uint64_t offset, uint64_t arrival, uint64_t *counter, unsigned marks,
        int err)
{
  stats_record_refused (&disk->stats, op, len, counter);
  trace_record (&disk->trace, arrival, op, offset, len, 0, 0, err, marks);
  return err;
}

/* In a crash view (core/power.c) the medium is read through the view's
 * overlay and written into it; nothing reaches the medium or the cache.
 */
static int
serve_view (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
            uint64_t len, uint64_t offset, uint64_t epoch)
{
  switch (op) {
  case BLKEMU_OP_READ: {
    int r = backend_io (&disk->backend, op, buf, len, offset, 0);
    return r ? r : overlay_patch (&disk->view, buf, offset, len);
  }
  case BLKEMU_OP_WRITE:
    return overlay_put (&disk->view, epoch, offset, len, buf);
  case BLKEMU_OP_TRIM:
  case BLKEMU_OP_ZERO:
    return overlay_put (&disk->view, epoch, offset, len, NULL);
  default: return 0; /* a flush: the view is thrown away anyway */
  }
}

/* Data movement, through the volatile cache's undo log when there is one.
 * A flush always goes through it (a log left from before write-cache was
 * turned off still needs its flush); CRASH_GEN is the cache's generation
 * when the request arrived.  HOST_LEN is the whole request's length, of
 * which this may be a piece: a write larger than the cache goes through
 * to the medium, all of its pieces (blkemu-robustness(7)).  VIEW: the
 * request was admitted into a crash view, of epoch VIEW_EPOCH.
 */
static int
serve_data (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
            uint64_t len, uint64_t offset, unsigned flags, uint64_t host_len,
            bool cache, uint64_t cache_size, uint64_t crash_gen, bool view,
            uint64_t view_epoch)
{
  if (view)
    return serve_view (disk, op, buf, len, offset, view_epoch);
  if (op == BLKEMU_OP_FLUSH)
    return wcache_flush_run (&disk->wcache, crash_gen);
  if (cache && model_is_write (op))
    return wcache_write (&disk->wcache, op, buf, len, offset, flags,
                         (flags & BLKEMU_FLAG_FUA) || host_len > cache_size,
                         cache_size);
  return backend_io (&disk->backend, op, buf, len, offset, flags);
}

static void
count_faults (struct stats *st, unsigned marks, int injected, bool slowed,
              enum silent_fault silent, bool stuck)
{
  pthread_mutex_lock (&st->lock);
  st->faults.stuck_reads += stuck;
  st->faults.bit_flips += silent == SILENT_FLIP;
  st->faults.silently_lost += silent == SILENT_LOST;
  st->faults.misdirected += silent == SILENT_MISDIRECT;
  st->faults.errors += injected != 0;
  st->faults.spikes += (marks & TRACE_SPIKE) != 0;
  st->faults.stalled += (marks & TRACE_STALL) != 0;
  st->faults.slowed += slowed;
  pthread_mutex_unlock (&st->lock);
}

/* One request from arrival to completion.  blkemu_io keeps it on the
 * stack and waits in the caller's thread; blkemu_submit allocates it and
 * the completion engine fires it.
 */
#define INLINE_PIECES 4
#define LEND_ZONES 4 /* a lent read spans at most this many zones */

struct request {
  struct engine_entry entry; /* entry.deadline_ns: the last piece's */
  struct blkemu_disk *disk;
  struct engine *engine;      /* fires it: the disk's, or a timeline's */
  struct blkemu_timeline *tl; /* submitted on it: its pool and stats */
  struct request *pool_next;  /* in its timeline's pool */
  /* A data request (op), or a zone command (zone_op when is_zone): a
   * command of its own, which none of the data path's stages sees.
   */
  enum blkemu_op op;
  bool is_zone;
  enum blkemu_zone_op zone_op;
  unsigned flags, marks;
  uint64_t len, offset, arrival;
  uint64_t npieces;
  uint64_t split_limit;      /* split: the pieces' largest size, or 0 */
  uint64_t split_boundary;   /* split: at multiples of this, or 0 */
  uint64_t split_unit;       /* split: a limit's cut at a multiple of this */
  uint64_t qd;               /* in flight, this request's pieces included */
  uint64_t free_lo, free_hi; /* trim: the whole discard units freed */
  int err;                   /* injected or from the backend */
  bool injected, slowed;
  enum silent_fault silent;   /* its silent corruption, if any */
  uint64_t silent_at;         /* the bit flipped, or the misdirected offset */
  struct zone_span zone_span; /* a zone command: what it changed */
  uint64_t *append_at;        /* a zone append: where the data went */
  uint64_t *deadline;         /* per piece */
  uint64_t *cut;              /* piece i is [cut[i], cut[i + 1]) */
  uint64_t inline_deadline[INLINE_PIECES];
  uint64_t inline_cut[INLINE_PIECES + 1];
  blkemu_done_cb done;
  void *cookie;
  /* The transfer, when the I/O worker runs it after request_begin. */
  struct iowork_job job;
  void *buf;
  bool own_buf;  /* buf is a copy of a write's data */
  bool zero_ok;  /* a read whose frontend takes BLKEMU_READ_ZEROES */
  bool zeroes;   /* ... and its data was all zeroes: buf not written */
  bool sink_ok;  /* a read whose frontend takes BLKEMU_READ_SENT */
  bool unfilled; /* a write whose data is still the write source's */
  bool sent;     /* ... and its data went to the frontend's sink */
  /* A zoned disk's read lent to the sink: the zones it touches, where
   * each ends and where its data ends (zeroes are sent past a write
   * pointer, as zones_mask_read writes them into a buffer).
   */
  unsigned lend_zones;
  uint64_t lend_zone_end[LEND_ZONES], lend_data_end[LEND_ZONES];
  bool cache;
  bool view;           /* served by the open crash view */
  uint64_t view_epoch; /* ... the view's overlay epoch at admission */
  bool stuck;          /* a read a stuck bit changed */
  /* A write on the disk's in-flight list (interrupted crashes). */
  struct request *wnext, *wprev;
  bool listed;
  bool view_heals; /* a crash view's write: heals view_bad when done */
  uint64_t cache_size, crash_gen;
  unsigned io_state; /* IO_PENDING | IO_DUE, atomic */
  int due_err;       /* the engine's cancel error, once due */
};
/* Where a completion is counted: its timeline's shard (no lock shared
 * with other queues), else the disk's own stats.
 */
static struct stats *
req_stats (const struct request *req)
{
  return req->tl ? &req->tl->stats : &req->disk->stats;
}

#define IO_PENDING 1u /* the transfer is queued or running */
#define IO_DUE 2u     /* the engine fired it: the worker completes it */

static uint64_t
piece_len (const struct request *req, uint64_t i)
{
  return req->cut[i + 1] - req->cut[i];
}

/* Where a piece starting at POS ends: at END, after LIMIT bytes or at the
 * next multiple of BOUNDARY, whichever comes first (0: no such cut).
 */
static uint64_t
next_cut (uint64_t pos, uint64_t end, uint64_t limit, uint64_t boundary,
          uint64_t unit)
{
  uint64_t e = end;
  if (limit && end - pos > limit) {
    e = pos + limit;
    /* At a multiple of the atomic unit where the limit leaves room for
     * one: each piece is a write of its own in a crash state, and no
     * device tears a unit by its own split (127K on a 4K-sector disk
     * is served as 124K pieces).
     */
    if (e / unit * unit > pos)
      e = e / unit * unit;
  }
  if (boundary) {
    uint64_t b = (pos / boundary + 1) * boundary;
    if (b < e)
      e = b;
  }
  return e;
}

static uint64_t
count_pieces (uint64_t offset, uint64_t len, uint64_t limit, uint64_t boundary,
              uint64_t unit)
{
  uint64_t n = 0;
  for (uint64_t pos = offset, end = offset + len; pos < end;
       pos = next_cut (pos, end, limit, boundary, unit))
    n++;
  return n ? n : 1;
}

/* Does [OFFSET, OFFSET + LEN) cross a multiple of BOUNDARY? */
static bool
crosses (uint64_t offset, uint64_t len, uint64_t boundary)
{
  return boundary && len && offset / boundary != (offset + len - 1) / boundary;
}

/* The part of a trim of [OFFSET, OFFSET + LEN) made of whole discard
 * units (GRAN bytes, the first starting at ALIGN), in *LO..*HI (empty
 * when LO >= HI).  A device frees only whole units: the rest keeps its
 * data, as a real one may.
 */
static void
discard_units (uint64_t offset, uint64_t len, uint64_t gran, uint64_t align,
               uint64_t *lo, uint64_t *hi)
{
  uint64_t end = offset + len;
  *lo = offset <= align ? align
                        : align + (offset - align + gran - 1) / gran * gran;
  *hi = end < align ? 0 : align + (end - align) / gran * gran;
}

/* Under the disk lock: range and alignment, the oversize policy (how many
 * pieces the device serves) for a request above its limit or across a
 * boundary, and the faults.  Returns 0, or the errno of a refusal with
 * *COUNTER the stat it counts in.
 */
/* The zone rules for a request the other checks let through (under the
 * disk lock): a write at the write pointer moves it, an append learns
 * its offset here (its length fits one zone: no split), a trim may only
 * touch conventional zones.  Returns 0 or the error, *COUNTER set.
 */
static int
check_zones (struct request *req, const struct fault_verdict *fv,
             uint64_t **counter)
{
  struct blkemu_disk *disk = req->disk;
  if (!zones_on (&disk->zones)) {
    if (!req->append_at)
      return 0;
    *counter = &disk->stats.zone_refused;
    return EINVAL;
  }
  if (fv->err)
    return 0;
  int r = 0;
  if (req->op == BLKEMU_OP_READ)
    r = zones_read (&disk->zones, req->offset, req->len);
  else if (req->op == BLKEMU_OP_TRIM)
    r = zones_trim (&disk->zones, req->offset, req->len);
  else if (model_is_write (req->op)) {
    r = zones_write (&disk->zones, &req->offset, req->len,
                     req->append_at != NULL);
    if (r == 0 && req->append_at) {
      *req->append_at = req->offset;
      req->marks |= TRACE_APPEND;
    }
  }
  if (r)
    *counter = &disk->stats.zone_refused;
  return r;
}

static int
request_check (struct request *req, bool plain, struct fault_verdict *fv,
               uint64_t **counter)
{
  struct blkemu_disk *disk = req->disk;
  struct stats *st = &disk->stats;
  const uint64_t *n = disk->cfg.num;
  uint64_t len = req->len, offset = req->offset;
  uint64_t limit = op_limit (&disk->cfg, req->op);
  assert (!req->is_zone); /* zone commands take zone_cmd_begin */

  req->marks = 0;
  req->npieces = 1;
  req->split_limit = req->split_boundary = 0;
  if (req->op != BLKEMU_OP_FLUSH) {
    if (offset > n[K_SIZE] || len > n[K_SIZE] - offset) {
      *counter = &st->out_of_range;
      return EINVAL;
    }
    uint64_t lbs = n[K_LOGICAL_BLOCK_SIZE];
    if (offset % lbs || len % lbs || len == 0) {
      *counter = &st->misaligned;
      return EINVAL;
    }
  }
  req->free_lo = offset;
  req->free_hi = offset + len;
  if (req->op == BLKEMU_OP_TRIM && n[K_DISCARD_GRANULARITY])
    discard_units (offset, len, n[K_DISCARD_GRANULARITY],
                   n[K_DISCARD_ALIGNMENT], &req->free_lo, &req->free_hi);
  if (req->flags & BLKEMU_FLAG_FUA)
    req->marks = TRACE_FUA;
  bool over = limit && len > limit;
  bool across =
    req->op != BLKEMU_OP_FLUSH && crosses (offset, len, n[K_BOUNDARY]);
  if (over)
    req->marks |= TRACE_OVERSIZE;
  if (across)
    req->marks |= TRACE_BOUNDARY;
  enum oversize_policy policy = (enum oversize_policy) n[K_OVERSIZE];
  /* An atomic write is never cut: where it would be, it is refused. */
  if (req->flags & BLKEMU_FLAG_ATOMIC && policy == OVERSIZE_SPLIT)
    policy = OVERSIZE_ERROR;
  if ((over || across) && policy == OVERSIZE_ERROR) {
    *counter = over ? &st->oversize_rejected : &st->boundary_rejected;
    return EINVAL;
  }
  if ((over || across) && policy == OVERSIZE_SPLIT) {
    req->split_limit = over ? limit : 0;
    req->split_boundary = across ? n[K_BOUNDARY] : 0;
    req->split_unit = disk_atomic_unit (disk);
    req->npieces = count_pieces (offset, len, req->split_limit,
                                 req->split_boundary, req->split_unit);
    req->marks = (req->marks & ~TRACE_OVERSIZE) | TRACE_SPLIT;
  }
  if (plain)
    return 0; /* no faults, no zones: FV stays empty */
  faults_check (&disk->faults, &disk->cfg, &disk->rng, req->op, offset, len,
                req->arrival, fv);
  /* Silent faults need a medium of plain blocks: not a zone's write
   * pointer, not a crash view's scratch.
   */
  if (fv->silent && (zones_on (&disk->zones) || disk->viewing)) {
    fv->silent = SILENT_NONE;
    fv->marks &= ~TRACE_CORRUPT;
  }
  req->silent = fv->silent;
  req->silent_at = fv->silent_at;
  req->marks |= fv->marks;
  if (fv->refused) {
    *counter =
      fv->err == BLKEMU_ERR_DROP ? &st->faults.dropped : &st->faults.offline;
    return fv->err;
  }
  /* Last: a request refused above must not move a write pointer. */
  return check_zones (req, fv, counter);
}

/* Whether REQ is served by the open crash view, and that view's opening:
 * a put after it ended (or the next one opened) is refused, not laid
 * into the next view.  Under the disk lock.
 */
static void
view_admit (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  req->view = disk->viewing;
  req->view_epoch = req->view ? overlay_epoch (&disk->view) : 0;
}

/* Under the disk lock: a zone command's checks, state change and
 * schedule (latency-zone, no media model).  Returns 0 or the errno of a
 * refusal, counted in *COUNTER.
 */
static int
zone_cmd_begin (struct request *req, uint64_t **counter)
{
  struct blkemu_disk *disk = req->disk;
  req->npieces = 1;
  if (__atomic_load_n (&disk->cancelled, __ATOMIC_ACQUIRE)) {
    *counter = &disk->stats.cancelled;
    return ESHUTDOWN;
  }
  if (disk->faults.offline) {
    *counter = &disk->stats.faults.offline;
    return EIO;
  }
  *counter = &disk->stats.zone_refused;
  if (!zones_on (&disk->zones))
    return EOPNOTSUPP;
  int r =
    zones_command (&disk->zones, req->zone_op, req->offset, &req->zone_span);
  if (r)
    return r;
  req->deadline = req->inline_deadline;
  req->cut = req->inline_cut;
  req->cut[0] = req->cut[1] = req->offset;
  uint64_t lat =
    dist_sample (&disk->cfg, &disk->rng, disk->cfg.num[K_LATENCY_ZONE]);
  req->deadline[0] =
    model_add (req->arrival, model_mul (lat, disk->cfg.num[K_SLOWDOWN]));
  req->entry.deadline_ns = req->deadline[0];
  req->qd = __atomic_add_fetch (&disk->in_flight, 1, __ATOMIC_RELAXED);
  req->crash_gen = wcache_generation (&disk->wcache);
  view_admit (req);
  return 0;
}

/* A reset frees its zones' blocks, straight on the medium: the command
 * is durable when it completes, whatever the write cache holds.  A
 * finish makes its zone's cached writes durable.
 */
static void
zone_cmd_transfer (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  const struct zone_span *span = &req->zone_span;
  if (req->err || span->lo == span->hi)
    return;
  /* In a crash view the log is frozen and the medium the live disk's:
   * what the command leaves unwritten reads zeroes in the view alone.
   */
  if (req->view) {
    if (span->unwritten < span->hi)
      req->err = overlay_put (&disk->view, req->view_epoch, span->unwritten,
                              span->hi - span->unwritten, NULL);
    return;
  }
  /* The zone's state is durable at once; so are its writes (finish), or
   * they are gone (reset): no crash may bring back what came before.
   */
  wcache_settle (&disk->wcache, span->lo, span->hi - span->lo);
  /* What reads as never written holds zeroes on the medium too: a reset's
   * blocks, and whatever an earlier crash left past a finished zone's
   * write pointer.
   */
  if (disk->backend.ops->can_trim && span->unwritten < span->hi)
    req->err = backend_io (&disk->backend, BLKEMU_OP_TRIM, NULL,
                           span->hi - span->unwritten, span->unwritten, 0);
}

/* Under the disk lock: every piece scheduled as the device would queue
 * it, at arrival; each draws its own base latency, the first carries any
 * spike.  Sets the pieces' deadlines and the request's (the last).
 */
static void
request_schedule (struct request *req, bool plain,
                  const struct fault_verdict *fv)
{
  struct blkemu_disk *disk = req->disk;
  if (plain) {
    /* disk_is_plain: the fixed model at zero cost, nothing cached. */
    for (uint64_t i = 0; i < req->npieces; i++)
      req->deadline[i] = req->arrival;
    req->entry.deadline_ns = req->arrival;
    req->slowed = false;
    return;
  }
  uint64_t slowdown = disk->cfg.num[K_SLOWDOWN];
  uint64_t last = req->arrival;
  for (uint64_t i = 0; i < req->npieces; i++) {
    struct model_req mreq = {
      .op = req->op,
      .offset = req->cut[i],
      .len = piece_len (req, i),
      .flags = req->flags,
      .arrival_ns =
        faults_to_device_time (&disk->faults, slowdown, req->arrival),
      .latency_ns = dist_sample (&disk->cfg, &disk->rng,
                                 cfg_latency_ns (&disk->cfg, req->op)) +
                    (i == 0 ? fv->extra_ns : 0),
    };
    uint64_t t =
      faults_to_wall_time (&disk->faults, slowdown,
                           disk->model->schedule (disk->model_state,
                                                  &disk->cfg, &mreq));
    /* Device time rounds on the way there and back: never before the
     * request arrived (slowdown=7 gave deadlines a few ns early).
     */
    req->deadline[i] = model_max (t, model_max (fv->not_before, req->arrival));
    last = model_max (last, req->deadline[i]);
  }
  req->entry.deadline_ns = last;
  if (model_write_cached (&disk->cfg,
                          &(struct model_req){ .op = req->op,
                                               .flags = req->flags }))
    req->marks |= TRACE_CACHED;
  req->slowed = slowdown > 1;
  if (req->slowed)
    req->marks |= TRACE_SLOW;
}

/* The data transfer.  An injected error fails the request without
 * touching the data.  A split request reaches the backend piece by
 * piece, as the device would move it: nothing above the limit goes
 * through.
 */
/* What a read returns wrong, silently: the medium's stuck bits forced,
 * and with a bit-flip fault one bit flipped on the way, the medium
 * untouched.
 */
static void
flip_read (struct request *req)
{
  if (req->op != BLKEMU_OP_READ || req->err || !req->buf)
    return;
  unsigned char *b = req->buf;
  if (stuckbits_any (&req->disk->stuck) &&
      stuckbits_apply (&req->disk->stuck, b, req->offset, req->len)) {
    req->stuck = true;
    req->marks |= TRACE_CORRUPT;
  }
  if (req->silent == SILENT_FLIP)
    b[req->silent_at / 8] ^= (unsigned char) (1u << (req->silent_at % 8));
}

/* A piece of a read at OFFSET, to the frontend's sink; on a zoned disk
 * what lies past a write pointer goes as zeroes, whatever the medium
 * holds there (data a crash rolled back).
 */
static int
send_piece (void *arg, uint64_t offset, const void *data, uint64_t len)
{
  struct request *req = arg;
  blkemu_read_sink sink = req->disk->read_sink;
  if (!req->lend_zones)
    return sink (req->cookie, offset - req->offset, data, len);
  const char *p = data;
  unsigned k = 0;
  while (len > 0) {
    while (k + 1 < req->lend_zones && offset >= req->lend_zone_end[k])
      k++;
    uint64_t stop = req->lend_zone_end[k] < offset + len
                      ? req->lend_zone_end[k]
                      : offset + len;
    bool has_data = offset < req->lend_data_end[k];
    if (has_data && req->lend_data_end[k] < stop)
      stop = req->lend_data_end[k];
    uint64_t n = stop - offset;
    int r = sink (req->cookie, offset - req->offset, has_data ? p : NULL, n);
    if (r)
      return r;
    offset += n;
    len -= n;
    p = p ? p + n : NULL;
  }
  return 0;
}

/* A piece of a write at OFFSET, from the frontend's source into DST. */
static int
take_piece (void *arg, uint64_t offset, void *dst, uint64_t len)
{
  struct request *req = arg;
  return req->disk->write_source (req->cookie, offset - req->offset, dst, len);
}

/* An unfilled write (write_source): left for request_transfer to take
 * straight into the store when nothing needs its data before, else
 * filled into its buffer now (a write cache keeps, a crash view, a
 * misdirected write and a zone append move, a file backend's worker
 * copies).  An injected error needs no data.
 */
static void
request_fill (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  if (req->err)
    return;
  if (disk->backend.ops->write_from && !disk->backend.ops->blocking &&
      !req->cache && !req->view && req->silent == SILENT_NONE &&
      !zones_on (&disk->zones))
    return;
  req->unfilled = false;
  req->err = disk->write_source (req->cookie, 0, req->buf, req->len);
}

static void
request_transfer (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  if (req->is_zone)
    return zone_cmd_transfer (req);
  if (req->silent == SILENT_LOST)
    return; /* acknowledged, never written */
  /* A misdirected write's pieces land SHIFT bytes away (mod 2^64). */
  uint64_t shift =
    req->silent == SILENT_MISDIRECT ? req->silent_at - req->offset : 0;
  /* Zeroes the frontend delivers itself: not written here (a bit flip
   * needs the data, a crash view may hold some).
   */
  if (req->zero_ok && !req->err && !req->view && req->silent == SILENT_NONE &&
      backend_reads_zero (&disk->backend, req->len, req->offset)) {
    req->zeroes = true;
    return;
  }
  /* The store's bytes lent to the frontend (one copy fewer), where
   * nothing here needs them after (a bit flip, a zoned disk's mask).
   */
  if (req->sink_ok && !req->err && !req->view && req->silent == SILENT_NONE) {
    req->sent = true;
    req->err = disk->backend.ops->read_to (disk->backend.state, req->len,
                                           req->offset, send_piece, req);
    return;
  }
  /* Still unfilled here: straight from the source into the store. */
  if (req->unfilled) {
    for (uint64_t i = 0; i < req->npieces && req->err == 0; i++)
      req->err =
        disk->backend.ops->write_from (disk->backend.state, piece_len (req, i),
                                       req->cut[i], take_piece, req);
    return;
  }
  for (uint64_t i = 0; i < req->npieces && req->err == 0; i++) {
    /* A trim frees only the whole discard units inside each piece. */
    uint64_t lo = model_max (req->cut[i], req->free_lo);
    uint64_t hi =
      req->cut[i + 1] < req->free_hi ? req->cut[i + 1] : req->free_hi;
    if (req->op == BLKEMU_OP_TRIM && lo >= hi)
      continue;
    if (req->op != BLKEMU_OP_TRIM) {
      lo = req->cut[i];
      hi = req->cut[i + 1];
    }
    req->err =
      serve_data (disk, req->op,
                  req->buf ? (char *) req->buf + (lo - req->offset) : NULL,
                  hi - lo, lo + shift, req->flags, req->len, req->cache,
                  req->cache_size, req->crash_gen, req->view, req->view_epoch);
  }
  flip_read (req);
}

/* The transfer without sleeping, when it can be: reads and plain writes
 * served from the page cache.  Returns false (nothing to rely on: the
 * worker does it all) where any piece would block.
 */
static bool
request_try_transfer (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  if (req->err || req->cache || req->view)
    return req->err != 0;
  /* The worker's path knows where a lost or misdirected write goes. */
  if (req->silent == SILENT_LOST || req->silent == SILENT_MISDIRECT)
    return false;
  for (uint64_t i = 0; i < req->npieces; i++) {
    int r = backend_try_io (&disk->backend, req->op,
                            (char *) req->buf + (req->cut[i] - req->offset),
                            piece_len (req, i), req->cut[i], req->flags);
    if (r == EAGAIN)
      return false;
    if (r) {
      req->err = r;
      break;
    }
  }
  flip_read (req);
  return true;
}

/* Where a write meets the medium: its own offset, a misdirected write's
 * landing place, or nowhere (a lost write; returns false).
 */
static bool
medium_target (const struct request *req, uint64_t *at)
{
  if (req->silent == SILENT_LOST)
    return false;
  *at = req->silent == SILENT_MISDIRECT ? req->silent_at : req->offset;
  return true;
}

/* The medium's side of an admitted request: a read of an unreadable
 * sector fails with a medium error (EIO), and a write joins the list of
 * writes in flight, which a crash in mode interrupted leaves unreadable.
 */
static void
medium_admit (struct request *req, struct fault_verdict *fv)
{
  struct blkemu_disk *disk = req->disk;
  /* A crash view shows the medium's unreadable sectors as the crash
   * would leave them, until the view writes them.
   */
  struct badranges *bad = req->view ? &disk->view_bad : &disk->bad;
  if (req->op == BLKEMU_OP_READ &&
      badranges_hit (bad, req->offset, req->len)) {
    fv->err = EIO;
    req->marks |= TRACE_MEDIUM;
    stats_count (&disk->stats, &disk->stats.faults.medium_errors);
  }
  else if (req->view && model_is_write (req->op))
    req->view_heals = true; /* its own scratch: no crash interrupts it */
  else if (req->op == BLKEMU_OP_WRITE || req->op == BLKEMU_OP_ZERO) {
    pthread_mutex_lock (&disk->inflight_lock);
    req->wprev = NULL;
    req->wnext = disk->inflight_writes;
    if (req->wnext)
      req->wnext->wprev = req;
    disk->inflight_writes = req;
    req->listed = true;
    pthread_mutex_unlock (&disk->inflight_lock);
  }
}

/* The write is done (or failed): off the list; what it wrote over an
 * unreadable sector made it readable.
 */
static void
medium_written (struct request *req, int err)
{
  struct blkemu_disk *disk = req->disk;
  if (req->view_heals && err == 0 &&
      (req->op == BLKEMU_OP_WRITE || req->op == BLKEMU_OP_ZERO))
    badranges_clear (&disk->view_bad, req->offset, req->len);
  if (!req->listed)
    return;
  pthread_mutex_lock (&disk->inflight_lock);
  if (req->wprev)
    req->wprev->wnext = req->wnext;
  else
    disk->inflight_writes = req->wnext;
  if (req->wnext)
    req->wnext->wprev = req->wprev;
  req->listed = false;
  pthread_mutex_unlock (&disk->inflight_lock);
  /* It healed the sectors it wrote: a misdirected write the ones it
   * landed on, not its own; a lost write none.
   */
  uint64_t at;
  if (err == 0 && medium_target (req, &at))
    badranges_clear (&disk->bad, at, req->len);
}

void
disk_interrupt_writes (struct blkemu_disk *disk, uint64_t *ranges)
{
  *ranges = 0;
  pthread_mutex_lock (&disk->inflight_lock);
  for (struct request *r = disk->inflight_writes; r; r = r->wnext) {
    /* Unreadable where the head was writing: for a misdirected write
     * the wrong place; an atomic write leaves old data or new, not torn.
     */
    uint64_t at, end;
    if ((r->flags & BLKEMU_FLAG_ATOMIC) || !medium_target (r, &at))
      continue;
    /* A sequential zone's drive finds its write pointer again after the
     * last sector it wrote whole: there the write is torn (the crash's
     * prefix), with nothing unreadable below the pointer.
     */
    end = at + r->len;
    if (zones_on (&disk->zones) && end > zones_conventional_end (&disk->zones))
      end = zones_conventional_end (&disk->zones);
    if (end > at && badranges_add (&disk->bad, at, end - at) == 0)
      (*ranges)++;
  }
  pthread_mutex_unlock (&disk->inflight_lock);
}

/* A zone command: the zone rules under the disk lock, the sidecar
 * written after it.  Returns 0 or the error it fails with.
 */
static int
zone_cmd_start (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  uint64_t *counter = NULL;
  pthread_mutex_lock (&disk->lock);
  int r = zone_cmd_begin (req, &counter);
  pthread_mutex_unlock (&disk->lock);
  zones_sidecar_sync (&disk->zones, &disk->lock);
  if (r) {
    stats_count (&disk->stats, counter);
    return r;
  }
  req->err = 0;
  request_transfer (req); /* a reset's hole punch: short */
  return 0;
}

/* The pieces a checked request is served as: cut[i] to cut[i + 1], each
 * with its deadline.  Returns 0 or ENOMEM.
 */
static int
request_cut (struct request *req)
{
  req->deadline = req->inline_deadline;
  req->cut = req->inline_cut;
  if (req->npieces > INLINE_PIECES) {
    /* One block: the deadlines, then the cuts. */
    req->deadline = malloc ((2 * req->npieces + 1) * sizeof *req->deadline);
    if (!req->deadline)
      return ENOMEM;
    req->cut = req->deadline + req->npieces;
  }
  uint64_t end = req->offset + req->len;
  req->cut[0] = req->offset;
  for (uint64_t i = 1; i < req->npieces; i++)
    req->cut[i] = next_cut (req->cut[i - 1], end, req->split_limit,
                            req->split_boundary, req->split_unit);
  req->cut[req->npieces] = end;
  return 0;
}

/* A scheduled request enters the device: what it needs of the disk's
 * state, read under the disk lock the caller holds.
 */
static void
request_admit (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  req->cache = disk->cfg.num[K_WRITE_CACHE] != 0;
  view_admit (req);
  /* A cache larger than the disk holds at most the disk's size of old
   * data: cache-size=1T on a 64M disk must not let repeated overwrites
   * grow the undo log to a terabyte.
   */
  req->cache_size = disk->cfg.num[K_CACHE_SIZE] < disk->cfg.num[K_SIZE]
                      ? disk->cfg.num[K_CACHE_SIZE]
                      : disk->cfg.num[K_SIZE];
  req->qd =
    __atomic_add_fetch (&disk->in_flight, req->npieces, __ATOMIC_RELAXED);
  /* Read under the lock that blkemu_disk_crash takes to go offline: a crash
   * after this point fails a flush that has not finished.
   */
  req->crash_gen = wcache_generation (&disk->wcache);
  /* A zoned read lent: its write pointers now, or the buffer and its
   * mask when it spans more zones than the request has room for.
   */
  if (req->sink_ok && zones_on (&disk->zones)) {
    req->lend_zones =
      zones_read_limits (&disk->zones, req->offset, req->len,
                         req->lend_zone_end, req->lend_data_end, LEND_ZONES);
    req->sink_ok = req->lend_zones != 0;
  }
}

/* A blocking caller's slot on the plain path, kept per thread in a
 * pthread key rather than a __thread variable: the plugin is dlopen'ed,
 * its dynamic TLS is freed by glibc when a thread exits, and
 * ThreadSanitizer reported the next thread's first use of that memory
 * as a race with the free (as clock.c's timer-slack flag did).
 */
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

static void
slot_key_create (void)
{
  pthread_key_create (&slot_key, NULL);
}

/* Where REQ counts on the plain path: its queue's slot, or its
 * thread's (blocking callers: nbdkit's and FUSE's threads).
 */
static unsigned
plain_slot (const struct request *req)
{
  if (req->tl)
    return req->tl->plain_slot;
  pthread_once (&slot_once, slot_key_create);
  uintptr_t slot = (uintptr_t) pthread_getspecific (slot_key); /* 1 + slot */
  if (!slot) {
    slot = 1 + disk_plain_slot (req->disk);
    pthread_setspecific (slot_key, (void *) slot);
  }
  return (unsigned) (slot - 1);
}

/* Admission's way in: the plain path where the disk has nothing for a
 * request to read under its lock (disk.h), else the lock.  The gate may
 * have been closed for a stall that has since ended: the lock's holder
 * opens it again.  Returns whether the path is plain.
 */
static bool
request_enter (const struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  if (disk_plain_enter (disk, plain_slot (req)))
    return true;
  pthread_mutex_lock (&disk->lock);
  disk_plain_recheck (disk);
  return false;
}

static void
request_leave (const struct request *req, bool plain)
{
  if (plain)
    disk_plain_leave (req->disk, plain_slot (req));
  else
    pthread_mutex_unlock (&req->disk->lock);
}

/* Checks and schedule, then the data transfer unless DEFER (the caller
 * queues it).  Returns 0 with REQ scheduled (finish it with request_end),
 * or the errno of a refusal (recorded; nothing to finish).
 */
static int
request_begin (struct request *req, void *buf, bool defer)
{
  struct blkemu_disk *disk = req->disk;
  uint64_t *counter = &disk->stats.cancelled;
  struct fault_verdict fv = { 0 };
  int r = ESHUTDOWN;

  if (req->is_zone)
    return zone_cmd_start (req);
  if (__atomic_load_n (&disk->cancelled, __ATOMIC_ACQUIRE))
    return refuse (disk, req->op, req->len, req->offset, req->arrival, counter,
                   0, r);
  bool plain = request_enter (req);
  if ((r = request_check (req, plain, &fv, &counter)) != 0) {
    request_leave (req, plain);
    if (req->marks & TRACE_BOUNDARY)
      stats_count (&disk->stats, &disk->stats.boundary_crossed);
    return refuse (disk, req->op, req->len, req->offset, req->arrival, counter,
                   req->marks, r);
  }
  if (request_cut (req) != 0) {
    request_leave (req, plain);
    return ENOMEM;
  }
  request_schedule (req, plain, &fv);
  req->buf = buf;
  request_admit (req);
  request_leave (req, plain);
  if (!fv.err)
    medium_admit (req, &fv);
  /* The zone's new write pointer reaches its sidecar before the data
   * moves (backend=file), with the disk lock dropped.  Only writes move
   * write pointers: reads take no sidecar lock.
   */
  if (model_is_write (req->op))
    zones_sidecar_sync (&disk->zones, &disk->lock);

  req->err = fv.err;
  req->injected = fv.err != 0 && !(req->marks & TRACE_MEDIUM);
  if (req->unfilled)
    request_fill (req);
  if (!defer)
    request_transfer (req);
  return 0;
}

/* The power went while REQ was in the device: it never completed.
 * Whatever it left on the medium counts as unflushed (a later crash may
 * take it); acknowledging it would promise data that the crash may
 * already have rolled back.  Returns the error it completes with.
 */
static int
request_crashed (struct request *req)
{
  struct stats *st = req_stats (req);
  req->err = EIO;
  req->marks |= TRACE_CRASHED;
  stats_count (st, &st->faults.crash_aborted);
  return EIO;
}

/* What the request's shape cost: splits, allowed oversize, boundary
 * crossings, cancellation, the part of a trim not made of whole units.
 */
static void
count_shape (const struct request *req, int cancel_err)
{
  struct stats *st = req_stats (req);
  uint64_t freed =
    req->free_hi > req->free_lo ? req->free_hi - req->free_lo : 0;
  bool partial = req->op == BLKEMU_OP_TRIM && freed != req->len;
  /* The stats lock is contended: take it here only when there is
   * something to count (stats_record takes it anyway).
   */
  if (!(req->marks & (TRACE_SPLIT | TRACE_OVERSIZE | TRACE_BOUNDARY)) &&
      !cancel_err && !partial)
    return;
  pthread_mutex_lock (&st->lock);
  if (req->split_limit) {
    st->oversize_split++;
    st->oversize_pieces += req->npieces;
  }
  else if (req->marks & TRACE_OVERSIZE)
    st->oversize_allowed++;
  st->boundary_crossed += (req->marks & TRACE_BOUNDARY) != 0;
  st->boundary_split += req->split_boundary != 0;
  st->cancelled += cancel_err != 0 && cancel_err != ECANCELED;
  st->aborted += cancel_err == ECANCELED;
  if (partial && !req->err && !cancel_err) {
    st->discard_unaligned++;
    st->discard_kept_bytes += req->len - freed;
  }
  pthread_mutex_unlock (&st->lock);
}

/* Each piece is a request the device saw: stats and trace.  Pieces that
 * finished before the last one keep their modelled completion time.
 */
static void
record_pieces (const struct request *req, uint64_t done, int err)
{
  struct blkemu_disk *disk = req->disk;
  uint64_t npieces = req->npieces, last = req->entry.deadline_ns;
  for (uint64_t i = 0; i < npieces; i++) {
    uint64_t piece_off = req->cut[i];
    uint64_t plen = piece_len (req, i);
    uint64_t end = req->deadline[i] < done ? req->deadline[i] : done;
    if (req->deadline[i] == last)
      end = done;
    uint64_t piece_qd =
      req->qd > npieces - 1 - i ? req->qd - (npieces - 1 - i) : 1;
    stats_record (req_stats (req), req->op, piece_off,
                  req->op == BLKEMU_OP_FLUSH ? 0 : plen, req->arrival,
                  end - req->arrival, req->deadline[i] - req->arrival,
                  piece_qd, err);
    trace_record (&disk->trace, req->arrival, req->op, piece_off, plen,
                  end - req->arrival, piece_qd, err, req->marks);
  }
}

/* Completion: stats and trace for each piece.  CANCEL_ERR is non-zero when
 * the disk stopped before the deadline (the request fails with it).
 * Returns the request's result.
 */
static int
request_end (struct request *req, int cancel_err)
{
  struct blkemu_disk *disk = req->disk;
  uint64_t done = clock_now_ns ();
  int err = req->err ? req->err : cancel_err;
  __atomic_sub_fetch (&disk->in_flight, req->npieces, __ATOMIC_RELAXED);
  if (err == 0 && wcache_generation (&disk->wcache) != req->crash_gen)
    err = request_crashed (req);
  /* A write that completed made its sectors readable again.  One a crash
   * interrupted was marked unreadable by it (disk_interrupt_writes) before
   * this runs: the mark stays, as its data did not complete.
   */
  medium_written (req, err);
  if (req->is_zone) {
    /* A reset frees its zones' data: traced as a trim of them. */
    if (req->zone_op == BLKEMU_ZONE_RESET ||
        req->zone_op == BLKEMU_ZONE_RESET_ALL)
      trace_record (&disk->trace, req->arrival, BLKEMU_OP_TRIM,
                    req->zone_span.lo, req->zone_span.hi - req->zone_span.lo,
                    done - req->arrival, req->qd, err, TRACE_ZONE_RESET);
    return err;
  }
  /* A zoned disk reads zeroes past a write pointer, whatever the medium
   * still holds there (data a crash rolled back).
   */
  if (req->op == BLKEMU_OP_READ && !err && !req->zeroes && !req->sent &&
      zones_on (&disk->zones)) {
    pthread_mutex_lock (&disk->lock);
    zones_mask_read (&disk->zones, req->buf, req->len, req->offset);
    pthread_mutex_unlock (&disk->lock);
  }
  if (req->marks &
      (TRACE_FAULT | TRACE_SPIKE | TRACE_STALL | TRACE_SLOW | TRACE_CORRUPT))
    count_faults (req_stats (req), req->marks, req->injected, req->slowed,
                  err ? SILENT_NONE : req->silent, req->stuck && !err);
  count_shape (req, cancel_err);
  record_pieces (req, done, err);
  if (req->deadline != req->inline_deadline)
    free (req->deadline);
  return err;
}

/* The blocking wait of blkemu_io: a futex that blkemu_disk_cancel and
 * blkemu_disk_interrupt wake, the last microseconds spun.  Returns 0 or
 * ESHUTDOWN.  (nbdkit_nanosleep, used for long waits before, asserted
 * when nbdkit's captive --run parent took a SIGTERM: it shares the quit
 * pipe, and the sleeper woke to a quit that nbdkit had not seen.)
 */
static int
wait_deadline (struct blkemu_disk *disk, uint64_t deadline)
{
  return clock_wait_until_or_cancel (deadline, &disk->cancelled) == 0
           ? 0
           : ESHUTDOWN;
}

/* The blocking form: REQ (on the caller's stack) begun, waited out in
 * the caller's thread, ended.  blkemu_io, blkemu_zone_command and
 * blkemu_zone_append.
 */
static int
request_run (struct request *req, void *buf)
{
  int r = request_begin (req, buf, false);
  if (r)
    return r;
  return request_end (req, wait_deadline (req->disk, req->entry.deadline_ns));
}

/* The contracts blkemu.h states for a request.  A frontend breaking one
 * has a bug to fix, not a client to answer: the frontends translate
 * their clients' flags and ops, and refuse what they cannot carry.
 */
static void
assert_request (struct blkemu_disk *disk, enum blkemu_op op, const void *buf,
                uint64_t len, unsigned flags)
{
  assert (disk);
  assert ((unsigned) op < BLKEMU_OP_COUNT);
  assert ((flags & ~(BLKEMU_FLAG_FUA | BLKEMU_FLAG_MAY_TRIM |
                     BLKEMU_FLAG_ATOMIC)) == 0);
  assert (!(flags & BLKEMU_FLAG_ATOMIC) || op == BLKEMU_OP_WRITE);
  assert (buf || len == 0 || (op != BLKEMU_OP_READ && op != BLKEMU_OP_WRITE));
  (void) disk, (void) op, (void) buf, (void) len, (void) flags;
}

int
blkemu_io (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
           uint64_t len, uint64_t offset, unsigned flags)
{
  assert_request (disk, op, buf, len, flags);
  struct request req = {
    .disk = disk,
    .op = op,
    .flags = flags,
    .len = len,
    .offset = offset,
    .arrival = clock_now_ns (),
  };
  return request_run (&req, buf);
}

/* A request for an asynchronous submit: from TL's pool when there is
 * one (the owner's thread takes, so only the owner pops), else malloc'ed.
 */
static struct request *
request_alloc (struct blkemu_timeline *tl)
{
  if (!tl)
    return malloc (sizeof (struct request));
  struct request *req = tl->free_local;
  if (!req)
    req = __atomic_exchange_n (&tl->free_remote, NULL, __ATOMIC_ACQUIRE);
  if (req)
    tl->free_local = req->pool_next;
  else if (!(req = malloc (sizeof *req)))
    return NULL;
  __atomic_add_fetch (&tl->outstanding, 1, __ATOMIC_RELAXED);
  return req;
}

/* REQ back to its timeline's pool (from any thread), or freed. */
static void
request_release (struct request *req)
{
  struct blkemu_timeline *tl = req->tl;
  if (!tl) {
    free (req);
    return;
  }
  if (pthread_equal (pthread_self (),
                     __atomic_load_n (&tl->owner, __ATOMIC_RELAXED))) {
    req->pool_next = tl->free_local;
    tl->free_local = req;
  }
  else {
    /* Pushed only, and taken whole by the owner: no ABA. */
    req->pool_next = __atomic_load_n (&tl->free_remote, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n (&tl->free_remote, &req->pool_next,
                                         req, true, __ATOMIC_RELEASE,
                                         __ATOMIC_RELAXED))
      ;
  }
  /* Last: blkemu_timeline_free waits for this to free the pool. */
  __atomic_sub_fetch (&tl->outstanding, 1, __ATOMIC_RELEASE);
}

void
pipeline_pool_free (struct blkemu_timeline *tl)
{
  assert (__atomic_load_n (&tl->outstanding, __ATOMIC_ACQUIRE) == 0);
  struct request *lists[2] = { tl->free_local, tl->free_remote };
  for (int i = 0; i < 2; i++)
    while (lists[i]) {
      struct request *next = lists[i]->pool_next;
      free (lists[i]);
      lists[i] = next;
    }
  tl->free_local = tl->free_remote = NULL;
}

static void
request_complete (struct request *req, int cancel_err)
{
  int err = request_end (req, cancel_err);
  if (req->own_buf)
    free (req->buf);
  req->done (req->cookie, err           ? err
                          : req->zeroes ? BLKEMU_READ_ZEROES
                          : req->sent   ? BLKEMU_READ_SENT
                                        : 0);
  request_release (req);
}

static void request_io_run (struct iowork_job *job);

/* Queue REQ's transfer on the worker.  A write's data is copied: the
 * caller's buffer is only lent for the duration of blkemu_submit (FUSE
 * hands its own back when the write handler returns).  Returns false
 * when it cannot be queued (no memory, no thread).
 */
static bool
request_defer (struct request *req)
{
  if (req->op == BLKEMU_OP_WRITE && req->buf) {
    void *copy = malloc (req->len);
    if (!copy)
      return false;
    memcpy (copy, req->buf, req->len);
    req->buf = copy;
    req->own_buf = true;
  }
  req->io_state = IO_PENDING;
  req->job.run = request_io_run;
  if (iowork_add (&req->disk->iowork, &req->job) == 0)
    return true;
  req->io_state = 0;
  if (req->own_buf) {
    free (req->buf);
    req->own_buf = false;
  }
  return false;
}

bool
pipeline_abortable (const struct engine_entry *entry, void *cookie)
{
  const struct request *req = (const struct request *) entry;
  return req->cookie == cookie && !(req->marks & TRACE_STALL);
}

/* Due (or cancelled).  A transfer still with the I/O worker completes
 * the request when it ends; whichever of the two comes second completes.
 */
void
pipeline_fire (struct engine_entry *entry, int cancel_err)
{
  struct request *req = (struct request *) entry; /* entry is first */
  req->due_err = cancel_err;
  if (__atomic_fetch_or (&req->io_state, IO_DUE, __ATOMIC_ACQ_REL) &
      IO_PENDING)
    return;
  request_complete (req, cancel_err);
}

/* On the I/O worker.  After blkemu_disk_cancel the transfer is skipped
 * and the request fails with ESHUTDOWN, even if its deadline had already
 * passed: it must not report data moved that never was.
 */
static void
request_io_run (struct iowork_job *job)
{
  struct request *req =
    (struct request *) ((char *) job - offsetof (struct request, job));
  if (!__atomic_load_n (&req->disk->cancelled, __ATOMIC_ACQUIRE))
    request_transfer (req);
  else if (req->err == 0)
    req->err = ESHUTDOWN;
  if (__atomic_fetch_and (&req->io_state, ~IO_PENDING, __ATOMIC_ACQ_REL) &
      IO_DUE)
    request_complete (req, req->due_err);
}

/* Queue a begun request on the engine, or complete it now if due. */
static void
request_finish_async (struct request *req, int r)
{
  if (r == 0 && req->entry.deadline_ns <= clock_now_ns ()) {
    pipeline_fire (&req->entry, 0);
    return;
  }
  struct engine *engine = req->engine ? req->engine : &req->disk->engine;
  if (r == 0 && (r = engine_add (engine, &req->entry)) != 0) {
    pipeline_fire (&req->entry, r);
    return;
  }
  if (r) {
    blkemu_done_cb done = req->done;
    void *cookie = req->cookie;
    request_release (req);
    done (cookie, r);
  }
}

/* The asynchronous form: a request allocated for a read, write,
 * write-zeroes, trim or flush (APPEND_AT: a zone append), begun and
 * queued on the engine, or completed at once.
 */
static void
submit (struct blkemu_disk *disk, struct blkemu_timeline *tl,
        enum blkemu_op op, void *buf, uint64_t len, uint64_t offset,
        unsigned flags, uint64_t *append_at, blkemu_done_cb done, void *cookie)
{
  assert_request (disk, op, buf, len, flags);
  assert (done);
  uint64_t arrival = clock_now_ns ();
  struct request *req = request_alloc (tl);
  if (!req) {
    done (cookie, ENOMEM);
    return;
  }
  *req = (struct request){
    .disk = disk,
    .engine = tl ? &tl->engine : NULL,
    .tl = tl,
    .op = op,
    .flags = flags,
    .len = len,
    .offset = offset,
    .arrival = arrival,
    .done = done,
    .cookie = cookie,
    .append_at = append_at,
    /* A stuck bit needs the data in the buffer. */
    .zero_ok = op == BLKEMU_OP_READ && disk->frontend &&
               (disk->frontend->ops & BLKEMU_FE_ZERO_READS) &&
               !stuckbits_any (&disk->stuck),
    .sink_ok =
      op == BLKEMU_OP_READ && disk->read_sink && !stuckbits_any (&disk->stuck),
    .unfilled = op == BLKEMU_OP_WRITE && disk->write_source && len > 0,
  };
  bool defer = disk->backend.ops->blocking;
  int r = request_begin (req, buf, defer);
  /* Served from the page cache at once when nothing queued before it
   * could be overtaken; otherwise the worker moves it, in order.
   */
  if (r == 0 && defer &&
      !(iowork_idle (&disk->iowork) && request_try_transfer (req)) &&
      !request_defer (req))
    request_transfer (req); /* cannot queue: move the data here */
  /* Already due (no latency, or the transfer took that long): complete
   * here, without waking the completion thread and back.
   */
  request_finish_async (req, r);
}

void
blkemu_submit (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
               uint64_t len, uint64_t offset, unsigned flags,
               blkemu_done_cb done, void *cookie)
{
  submit (disk, NULL, op, buf, len, offset, flags, NULL, done, cookie);
}

void
pipeline_submit_on (struct blkemu_timeline *tl, enum blkemu_op op, void *buf,
                    uint64_t len, uint64_t offset, unsigned flags,
                    blkemu_done_cb done, void *cookie)
{
  submit (tl->disk, tl, op, buf, len, offset, flags, NULL, done, cookie);
}

void
blkemu_submit_append (struct blkemu_disk *disk, const void *buf, uint64_t len,
                      uint64_t zone_offset, unsigned flags,
                      uint64_t *written_at, blkemu_done_cb done, void *cookie)
{
  /* A write: BUF is only read (the cast as in blkemu_zone_append). */
  submit (disk, NULL, BLKEMU_OP_WRITE, (void *) buf, len, zone_offset, flags,
          written_at, done, cookie);
}

void
blkemu_zone_submit (struct blkemu_disk *disk, enum blkemu_zone_op op,
                    uint64_t offset, blkemu_done_cb done, void *cookie)
{
  struct request *req = malloc (sizeof *req);
  if (!req) {
    done (cookie, ENOMEM);
    return;
  }
  *req = (struct request){
    .disk = disk,
    .is_zone = true,
    .zone_op = op,
    .offset = offset,
    .arrival = clock_now_ns (),
    .done = done,
    .cookie = cookie,
  };
  if ((unsigned) op >= BLKEMU_ZONE_OP_COUNT) {
    free (req);
    done (cookie, EINVAL);
    return;
  }
  request_finish_async (req, request_begin (req, NULL, false));
}

int
blkemu_zone_command (struct blkemu_disk *disk, enum blkemu_zone_op op,
                     uint64_t offset)
{
  if ((unsigned) op >= BLKEMU_ZONE_OP_COUNT)
    return EINVAL;
  struct request req = {
    .disk = disk,
    .is_zone = true,
    .zone_op = op,
    .offset = offset,
    .arrival = clock_now_ns (),
  };
  return request_run (&req, NULL);
}

int
blkemu_zone_append (struct blkemu_disk *disk, const void *buf, uint64_t len,
                    uint64_t zone_offset, unsigned flags, uint64_t *written_at)
{
  struct request req = {
    .disk = disk,
    .op = BLKEMU_OP_WRITE,
    .flags = flags,
    .len = len,
    .offset = zone_offset,
    .arrival = clock_now_ns (),
    .append_at = written_at,
  };
  /* A write: the backend only reads BUF (the path is shared with reads,
   * hence the cast).
   */
  return request_run (&req, (void *) buf);
}
