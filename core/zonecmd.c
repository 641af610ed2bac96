/* Zone commands (open, close, finish, reset, reset all): a command of
 * their own, which none of the data path's stages sees.  Under the disk
 * lock the zone rules and a latency-zone deadline; then the medium's
 * side (a reset's blocks trimmed, a finish's cached writes settled).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

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

/* A zone command: the zone rules under the disk lock, the sidecar
 * written after it.  Returns 0 or the error it fails with.
 */
int
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
  zone_cmd_transfer (req); /* a reset's hole punch: short */
  return 0;
}

/* A zone command's completion: a reset frees its zones' data, traced as
 * a trim of them.
 */
void
zone_cmd_end (const struct request *req, uint64_t done, int err)
{
  if (req->zone_op == BLKEMU_ZONE_RESET ||
      req->zone_op == BLKEMU_ZONE_RESET_ALL)
    trace_record (&req->disk->trace, req->arrival, BLKEMU_OP_TRIM,
                  req->zone_span.lo, req->zone_span.hi - req->zone_span.lo,
                  done - req->arrival, req->qd, err, TRACE_ZONE_RESET);
}
