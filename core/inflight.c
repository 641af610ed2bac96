/* The medium's side of a request: a read of an unreadable sector fails,
 * a write is on the disk's list of writes in flight until it completes
 * (a crash in mode interrupted leaves those unreadable), and a completed
 * write heals the sectors it wrote.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

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
void
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
void
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
