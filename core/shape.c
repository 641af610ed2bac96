/* A request's shape: where the oversize policy and the boundary cut it
 * into pieces, the part of a trim made of whole discard units, and at
 * completion what its shape and faults cost (stats and trace per piece).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

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

uint64_t
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
bool
crosses (uint64_t offset, uint64_t len, uint64_t boundary)
{
  return boundary && len && offset / boundary != (offset + len - 1) / boundary;
}

/* The part of a trim of [OFFSET, OFFSET + LEN) made of whole discard
 * units (GRAN bytes, the first starting at ALIGN), in *LO..*HI (empty
 * when LO >= HI).  A device frees only whole units: the rest keeps its
 * data, as a real one may.
 */
void
discard_units (uint64_t offset, uint64_t len, uint64_t gran, uint64_t align,
               uint64_t *lo, uint64_t *hi)
{
  uint64_t end = offset + len;
  *lo = offset <= align ? align
                        : align + (offset - align + gran - 1) / gran * gran;
  *hi = end < align ? 0 : align + (end - align) / gran * gran;
}

/* The pieces a checked request is served as: cut[i] to cut[i + 1], each
 * with its deadline.  Returns 0 or ENOMEM.
 */
int
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

/* What the request's shape cost: splits, allowed oversize, boundary
 * crossings, cancellation, the part of a trim not made of whole units.
 */
void
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

void
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

/* Each piece is a request the device saw: stats and trace.  Pieces that
 * finished before the last one keep their modelled completion time.
 */
void
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
