/* Under the disk lock: a request's range and alignment, the oversize
 * policy (how many pieces the device serves) for a request above its
 * limit or across a boundary, the faults, and the zone rules.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>

#include "request.h"

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

/* Under the disk lock: range and alignment, the oversize policy (how many
 * pieces the device serves) for a request above its limit or across a
 * boundary, and the faults.  Returns 0, or the errno of a refusal with
 * *COUNTER the stat it counts in.
 */
int
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
