/* A host-managed zoned disk as SCSI ZBC shows it to sd_zbc, the path
 * real SMR drives take: REPORT ZONES (ZBC IN), the zone actions (ZBC
 * OUT: open, close, finish, reset write pointer), and the sense codes
 * ZBC gives for what the zones refuse.  The zones are the core's
 * (blkemu_zone_report, blkemu_timeline_zone_submit): the same ones blkemu-ublk
 * serves.  A zone whose capacity is below its size is reported as a
 * sequential zone of that capacity and a gap zone after it (ZBC-2;
 * VPD 0xB6 then says zones start at constant offsets).  References:
 * ZBC-2 (zbc2r10), and what sd_zbc.c reads.
 */
#include <errno.h>
#include <string.h>

#include "scsi.h"

#define ZBC_TYPE_GAP 0x5
#define ASC_INSUFFICIENT_ZONE_RESOURCES 0x55, 0x0e
#define ASC_UNALIGNED_WRITE 0x21, 0x04
#define ASC_WRITE_BOUNDARY 0x21, 0x05
#define ASC_ZONE_READ_ONLY 0x27, 0x08
#define ASC_ZONE_OFFLINE 0x2c, 0x0e

/* The core zone holding LBA, or false past the end. */
static bool
zone_at (struct sdisk *d, uint64_t lba, struct blkemu_zone *z)
{
  uint64_t off = lba * d->geo.logical_block_size;
  return off < d->geo.size_bytes &&
         blkemu_zone_report (d->emu, off, z, 1) == 1 && off >= z->start;
}

/* Sense for ERR of a command on a zoned disk when the zones explain it
 * (returns false: the caller's generic mapping applies, say a medium
 * error at the write pointer).  A failed write leaves the zone as it
 * was, so its state now says why the write was refused.
 */
bool
zbc_sense (struct scmd *c, int err, bool write)
{
  struct sdisk *d = c->d;
  uint32_t lbs = d->geo.logical_block_size;
  struct blkemu_zone z;
  switch (err) {
  case ETOOMANYREFS: /* no zone can be opened */
  case EOVERFLOW:    /* nor become active */
    scsi_sense (c, DATA_PROTECT, ASC_INSUFFICIENT_ZONE_RESOURCES);
    return true;
  case EINVAL:
    if (!c->zone_action)
      return false;
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return true;
  case EIO: break;
  default: return false;
  }
  if (!zone_at (d, c->lba, &z))
    return false;
  if (z.cond == BLKEMU_ZONE_COND_OFFLINE) {
    scsi_sense (c, DATA_PROTECT, ASC_ZONE_OFFLINE);
    return true;
  }
  if (!write)
    return false;
  if (z.cond == BLKEMU_ZONE_COND_READONLY) {
    scsi_sense (c, DATA_PROTECT, ASC_ZONE_READ_ONLY);
    return true;
  }
  if (c->zone_action) { /* a conventional zone, or a condition it refuses */
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return true;
  }
  uint64_t at = c->lba * lbs, end = at + c->data_len;
  if (z.type == BLKEMU_ZONE_TYPE_CONVENTIONAL) {
    if (end <= z.start + z.len)
      return false;
    scsi_sense (c, ILLEGAL_REQUEST, ASC_WRITE_BOUNDARY); /* into a seq zone */
    return true;
  }
  if (z.cond == BLKEMU_ZONE_COND_FULL)
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
  else if (at != z.wp)
    scsi_sense (c, ILLEGAL_REQUEST, ASC_UNALIGNED_WRITE);
  else if (end > z.start + z.capacity)
    scsi_sense (c, ILLEGAL_REQUEST, ASC_WRITE_BOUNDARY);
  else
    return false;
  return true;
}

/* ---- REPORT ZONES ------------------------------------------------------ */

/* One zone descriptor (64 bytes) into B. */
static void
descriptor (uint8_t *b, unsigned type, unsigned cond, uint64_t start,
            uint64_t len, uint64_t wp)
{
  memset (b, 0, 64);
  b[0] = (uint8_t) type;
  b[1] = (uint8_t) (cond << 4);
  put_be (&b[8], len, 8);
  put_be (&b[16], start, 8);
  put_be (&b[24], wp, 8);
}

/* Whether a zone of TYPE and COND is one reporting OPTION asks for
 * (ZBC-2 table 49), or -1: an option this device does not know.
 */
static int
option_matches (unsigned option, unsigned type, unsigned cond)
{
  switch (option) {
  case 0x00: return 1; /* all */
  case 0x01:           /* by condition: empty ... offline */
  case 0x02:
  case 0x03:
  case 0x04: return type != ZBC_TYPE_GAP && cond == option;
  case 0x05: return cond == BLKEMU_ZONE_COND_FULL;
  case 0x06: return cond == BLKEMU_ZONE_COND_READONLY;
  case 0x07: return cond == BLKEMU_ZONE_COND_OFFLINE;
  case 0x10:           /* RWP recommended */
  case 0x11: return 0; /* non-sequential write resources active */
  case 0x3e: return type == ZBC_TYPE_GAP;
  case 0x3f: return cond == BLKEMU_ZONE_COND_NOT_WP; /* conventional, gap */
  default: return -1;
  }
}

/* The report under construction: descriptors go into the data area as
 * they are made; all are counted (the list length), the ones past the
 * allocation length or the area are not written.
 */
struct report {
  struct scmd *c;
  unsigned option;
  uint64_t count;
  size_t room; /* bytes the reply may hold */
};

static void
emit (struct report *r, unsigned type, unsigned cond, uint64_t start,
      uint64_t len, uint64_t wp)
{
  if (option_matches (r->option, type, cond) != 1)
    return;
  size_t at = 64 + r->count * 64;
  r->count++;
  if (at + 64 > r->room)
    return;
  uint8_t b[64];
  descriptor (b, type, cond, start, len, wp);
  scsi_copy_at (r->c, at, b, 64);
}

void
zbc_report_zones (struct scmd *c)
{
  struct sdisk *d = c->d;
  uint32_t lbs = d->geo.logical_block_size;
  uint64_t lba = be (&c->cdb[2], 8), nblocks = d->geo.size_bytes / lbs;
  uint32_t alloc = (uint32_t) be (&c->cdb[10], 4);
  bool partial = c->cdb[14] & 0x80;
  struct report r = { .c = c, .option = c->cdb[14] & 0x3f };
  if (!d->zg.nr_zones) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_OPCODE, 0);
    return;
  }
  if (option_matches (r.option, 0, 0) < 0 || alloc < 64) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return;
  }
  if (lba >= nblocks) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE, 0);
    return;
  }
  r.room = alloc < c->data_len ? alloc : c->data_len;
  /* From the zone holding LBA (the gap part of a zone, if LBA is in it)
   * to the end, or, with PARTIAL, as far as the allocation length goes.
   */
  struct blkemu_zone zones[64];
  uint64_t off = lba * lbs;
  unsigned n;
  while ((!partial || 64 + r.count * 64 < r.room) &&
         (n = blkemu_zone_report (d->emu, off, zones, 64)) > 0) {
    for (unsigned i = 0; i < n; i++) {
      const struct blkemu_zone *z = &zones[i];
      uint64_t cap_end = z->start + z->capacity;
      if (off < cap_end)
        emit (&r, z->type, z->cond, z->start / lbs, z->capacity / lbs,
              z->cond == BLKEMU_ZONE_COND_NOT_WP ? 0 : z->wp / lbs);
      if (z->capacity < z->len)
        emit (&r, ZBC_TYPE_GAP, BLKEMU_ZONE_COND_NOT_WP, cap_end / lbs,
              (z->len - z->capacity) / lbs, 0);
      off = z->start + z->len;
    }
  }
  /* Written: the descriptors that fit; PARTIAL lists only those, else
   * the list length counts every zone from LBA on.
   */
  uint64_t fit = (r.room - 64) / 64, written = r.count < fit ? r.count : fit;
  uint64_t listed = (partial ? written : r.count) * 64;
  uint8_t h[64] = { 0 };
  put_be (&h[0], listed > UINT32_MAX ? UINT32_MAX : listed, 4);
  put_be (&h[8], nblocks - 1, 8); /* MAXIMUM LBA */
  scsi_copy_at (c, 0, h, 64);
  static const uint8_t zero[64];
  for (size_t at = 64 + written * 64; at < c->data_len; at += 64)
    scsi_copy_at (c, at, zero, 64);
  c->status = 0;
}

/* ---- the zone actions ---------------------------------------------------
 */

/* ZBC OUT: CLOSE (1), FINISH (2), OPEN (3) ZONE and RESET WRITE POINTER
 * (4) of the zone starting at the LBA, through the core (timed by
 * latency-zone, counted); ALL only with RESET WRITE POINTER, which is
 * what sd sends.  Returns true when submitted.
 */
bool
zbc_zone_action (struct scmd *c, void (*done) (void *, int))
{
  static const int ops[] = { [1] = BLKEMU_ZONE_CLOSE,
                             [2] = BLKEMU_ZONE_FINISH,
                             [3] = BLKEMU_ZONE_OPEN,
                             [4] = BLKEMU_ZONE_RESET };
  struct sdisk *d = c->d;
  unsigned sa = c->cdb[1] & 0x1f;
  bool all = c->cdb[14] & 0x01;
  uint64_t lba = be (&c->cdb[2], 8);
  if (!d->zg.nr_zones) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_OPCODE, 0);
    return false;
  }
  if (sa < 1 || sa > 4 || (all && sa != 4)) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  }
  if (!all && lba >= d->geo.size_bytes / d->geo.logical_block_size) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE, 0);
    return false;
  }
  c->lba = lba;
  c->zone_action = true;
  c->data_in = false;
  c->pending = 1;
  int r =
    blkemu_timeline_zone_submit (d->tl,
                                 all ? BLKEMU_ZONE_RESET_ALL
                                     : (enum blkemu_zone_op) ops[sa],
                                 lba * d->geo.logical_block_size, done, c);
  if (r != BLKEMU_QUEUED)
    done (c, r); /* handed back complete: it ends here */
  return true;
}
