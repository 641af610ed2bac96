/* A request inside core/: the fields every stage of its way through
 * the device reads and writes (pipeline.c admits, schedules and ends it;
 * check.c checks it under the disk lock; transfer.c moves its data; zonecmd.c
 * serves zone commands; shape.c cuts it in pieces and counts what its shape
 * cost; inflight.c keeps the writes a crash can interrupt).  Internal to
 * core/.
 */
#ifndef BLKEMU_REQUEST_H
#define BLKEMU_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "blkemu/blkemu.h"
#include "disk.h"
#include "engine.h"
#include "iowork.h"
#include "timeline.h"

/* How a request's data moves, decided once when it is admitted
 * (request_plan): request_transfer is one switch over it.
 */
enum transfer_mode {
  XFER_NONE, /* it failed (an injected or medium error): nothing moves */
  XFER_LOST, /* a silently lost write: acknowledged, never written */
  XFER_VIEW, /* through the open crash view's overlay, piece by piece */
  XFER_LEND, /* a read: the store's bytes lent to the frontend's sink */
  XFER_TAKE, /* a write: the frontend's source straight into the store */
  XFER_COPY, /* through the request's buffer, piece by piece, and the
              * write cache */
};

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
  enum transfer_mode xfer; /* request_plan's choice */
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

#define IO_PENDING 1u /* the transfer is queued or running */
#define IO_DUE 2u     /* the engine fired it: the worker completes it */

/* Where a completion is counted: its timeline's shard (no lock shared
 * with other queues), else the disk's own stats.
 */
static inline struct stats *
req_stats (const struct request *req)
{
  return req->tl ? &req->tl->stats : &req->disk->stats;
}

/* Piece I's length: cut[i] to cut[i + 1]. */
static inline uint64_t
piece_len (const struct request *req, uint64_t i)
{
  return req->cut[i + 1] - req->cut[i];
}

/* Whether REQ is served by the open crash view, and that view's opening:
 * a put after it ended (or the next one opened) is refused, not laid
 * into the next view.  Under the disk lock.
 */
static inline void
view_admit (struct request *req)
{
  req->view = req->disk->viewing;
  req->view_epoch = req->view ? overlay_epoch (&req->disk->view) : 0;
}

/* transfer.c */
enum transfer_mode request_plan (const struct request *req);
void request_fill (struct request *req);
void request_transfer (struct request *req);
bool request_try_transfer (struct request *req);

/* zonecmd.c */
int zone_cmd_start (struct request *req);
void zone_cmd_end (const struct request *req, uint64_t done, int err);

/* check.c: 0, or the errno of a refusal with *COUNTER the stat it
 * counts in; PLAIN: no faults, no zones (FV stays empty).
 */
int request_check (struct request *req, bool plain, struct fault_verdict *fv,
                   uint64_t **counter);

/* shape.c */
uint64_t count_pieces (uint64_t offset, uint64_t len, uint64_t limit,
                       uint64_t boundary, uint64_t unit);
bool crosses (uint64_t offset, uint64_t len, uint64_t boundary);
void discard_units (uint64_t offset, uint64_t len, uint64_t gran,
                    uint64_t align, uint64_t *lo, uint64_t *hi);
int request_cut (struct request *req);
void count_shape (const struct request *req, int cancel_err);
void count_faults (struct stats *st, unsigned marks, int injected, bool slowed,
                   enum silent_fault silent, bool stuck);
void record_pieces (const struct request *req, uint64_t done, int err);

/* inflight.c */
void medium_admit (struct request *req, struct fault_verdict *fv);
void medium_written (struct request *req, int err);

#endif
