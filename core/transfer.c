/* A request's data transfer: how it moves is decided once, by
 * request_plan, when the request is admitted; request_transfer serves
 * that plan, on the submitting thread or the disk's I/O worker.  An
 * injected error fails the request without touching the data; a split
 * request reaches the backend piece by piece, as the device would move
 * it.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

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

/* An unfilled write (write_source) its plan does not take straight into
 * the store: its data filled into its buffer now (a write cache keeps
 * it, a crash view, a misdirected write and a zone append move it, a
 * file backend's worker copies it).  A failed fill moves nothing.
 */
void
request_fill (struct request *req)
{
  req->unfilled = false;
  req->err = req->disk->write_source (req->cookie, 0, req->buf, req->len);
  if (req->err)
    req->xfer = XFER_NONE;
}

/* How REQ's data moves, once the faults and the medium have had their
 * say (request_begin, after admission).  A read lent to the sink and a
 * write taken from the source skip the request's buffer: only where
 * nothing here needs the data (a bit flip, a misdirection, the write
 * cache, a crash view, a zoned disk's write pointers).
 */
enum transfer_mode
request_plan (const struct request *req)
{
  const struct blkemu_disk *disk = req->disk;
  const struct backend_ops *ops = disk->backend.ops;
  assert (!req->is_zone); /* zone commands take zone_cmd_start */
  if (req->err)
    return XFER_NONE;
  if (req->silent == SILENT_LOST)
    return XFER_LOST;
  if (req->view)
    return XFER_VIEW;
  bool plain_data = req->silent == SILENT_NONE;
  if (req->sink_ok && plain_data)
    return XFER_LEND;
  if (req->unfilled && plain_data && ops->write_from && !ops->blocking &&
      !req->cache && !zones_on (&disk->zones))
    return XFER_TAKE;
  return XFER_COPY;
}

/* A read whose frontend delivers zeroes itself (zero_ok), of a range
 * the store holds only zeroes in: nothing is copied.  Asked when the
 * data moves, the store's contents being known only then; a bit flip
 * needs the data.
 */
static bool
reads_zeroes (struct request *req)
{
  if (!req->zero_ok || req->silent != SILENT_NONE ||
      !backend_reads_zero (&req->disk->backend, req->len, req->offset))
    return false;
  req->zeroes = true;
  return true;
}

/* Through the request's buffer, piece by piece, as the device would
 * move a split request (nothing above the limit goes through).
 */
static void
copy_pieces (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  /* A misdirected write's pieces land SHIFT bytes away (mod 2^64). */
  uint64_t shift =
    req->silent == SILENT_MISDIRECT ? req->silent_at - req->offset : 0;
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

void
request_transfer (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  switch (req->xfer) {
  case XFER_NONE:
  case XFER_LOST: return;
  case XFER_VIEW: return copy_pieces (req);
  case XFER_LEND:
    if (reads_zeroes (req))
      return;
    req->sent = true;
    req->err = disk->backend.ops->read_to (disk->backend.state, req->len,
                                           req->offset, send_piece, req);
    return;
  case XFER_TAKE:
    for (uint64_t i = 0; i < req->npieces && req->err == 0; i++)
      req->err =
        disk->backend.ops->write_from (disk->backend.state, piece_len (req, i),
                                       req->cut[i], take_piece, req);
    return;
  case XFER_COPY:
    if (reads_zeroes (req))
      return;
    return copy_pieces (req);
  }
}

/* The transfer without sleeping, when it can be: reads and plain writes
 * served from the page cache.  Returns false (nothing to rely on: the
 * worker does it all) where any piece would block, and for what only the
 * worker's path knows how to move (the write cache, a crash view, a
 * lost or misdirected write).
 */
bool
request_try_transfer (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  switch (req->xfer) {
  case XFER_NONE: return true;
  case XFER_LEND:
  case XFER_COPY:
    if (!req->cache && req->silent != SILENT_MISDIRECT)
      break;
    return false;
  case XFER_LOST:
  case XFER_VIEW:
  case XFER_TAKE: return false;
  }
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
