/* The SCSI commands blkemu-scsi answers (LIO passes every one through
 * to a TCMU device but REPORT LUNS): the disk's identity and limits as
 * the sd driver reads them (inquiry.c), the zone commands (zbc.c), and
 * the I/O, handed to the core through the ring thread's timeline
 * (blkemu_timeline_submit) and answered when it calls back.  Anything else:
 * ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE.  References: SPC-4 and
 * SBC-3.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi.h"

/* ---- I/O through the core ------------------------------------------------
 */

/* A core result as SCSI status and sense. */
static void
result_to_sense (struct scmd *c, int err, bool write)
{
  switch (err) {
  case 0: c->status = GOOD; break;
  case EIO:
  case BLKEMU_ERR_MEDIUM:
  case BLKEMU_ERR_DROP: {
    /* A disk without power answers nothing a medium error would: LOGICAL
     * UNIT NOT READY, MANUAL INTERVENTION REQUIRED (sd fails the command
     * without retrying; the intervention is a power-on).
     */
    if (blkemu_disk_offline (c->d->emu)) {
      scsi_sense (c, NOT_READY, 0x04, 0x03);
      break;
    }
    if (c->d->zg.nr_zones && zbc_sense (c, err, write))
      break;
    /* The information field names the first block that failed: md
     * rewrites that one from the other leg, and sd completes the blocks
     * before it.
     */
    uint32_t lbs = c->d->geo.logical_block_size;
    uint64_t lba =
      blkemu_disk_error_at (c->d->emu, c->lba * lbs, c->data_len) / lbs;
    if (write)
      scsi_sense_at (c, MEDIUM_ERROR, 0x0c, 0x00, lba); /* WRITE ERROR */
    else
      scsi_sense_at (c, MEDIUM_ERROR, 0x11, 0x00, lba); /* UNRECOVERED READ */
    break;
  }
  case ENOSPC: /* SPACE ALLOCATION FAILED WRITE PROTECT */
    scsi_sense (c, DATA_PROTECT, 0x27, 0x07);
    break;
  case EROFS: scsi_sense (c, DATA_PROTECT, 0x27, 0x00); break;
  case EINVAL:
  case ETOOMANYREFS:
  case EOVERFLOW:
    if (c->d->zg.nr_zones && zbc_sense (c, err, write))
      break;
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    break;
  case ESHUTDOWN: /* LOGICAL UNIT NOT READY, CAUSE NOT REPORTABLE */
    scsi_sense (c, NOT_READY, 0x04, 0x00);
    break;
  case EAGAIN:
  case EBUSY: c->status = BUSY; break;
  default: /* INTERNAL TARGET FAILURE */
    scsi_sense (c, HARDWARE_ERROR, 0x44, 0x00);
    break;
  }
}

/* A VERIFY's read is back: a read error is the medium's (MEDIUM ERROR
 * at the first bad block); with BYTCHK, the blocks read are compared
 * with the Data-Out buffer (BYTCHK=1: one block for each; 3: one block
 * for all), and the first byte that differs is a MISCOMPARE whose
 * information field is its offset into the Data-Out buffer (SBC-4).
 */
static void
verify_done (struct scmd *c)
{
  uint8_t bytchk = c->bytchk - 1;
  if (c->err || bytchk == 0) {
    result_to_sense (c, c->err, false);
    c->d->complete (c);
    return;
  }
  uint32_t lbs = c->d->geo.logical_block_size;
  size_t want = bytchk == 1 ? c->data_len : lbs;
  uint8_t *expected = malloc (want);
  if (!expected) {
    c->status = BUSY;
    c->d->complete (c);
    return;
  }
  scsi_copy_out (c, expected, want);
  const uint8_t *got = c->buf;
  size_t at = 0;
  for (; at < c->data_len; at++)
    if (got[at] != expected[bytchk == 1 ? at : at % lbs])
      break;
  free (expected);
  if (at < c->data_len)
    scsi_sense_at (c, MISCOMPARE, 0x1d, 0x00, bytchk == 1 ? at : at % lbs);
  else
    c->status = GOOD;
  c->d->complete (c);
}

void
scsi_io_done (void *cookie, int result)
{
  struct scmd *c = cookie;
  pthread_mutex_lock (&c->lock);
  if (result && !c->err)
    c->err = result;
  bool last = --c->pending == 0;
  pthread_mutex_unlock (&c->lock);
  if (!last)
    return;
  if (c->bytchk) {
    verify_done (c);
    return;
  }
  if (!c->err && c->data_in && c->buf) /* read into a bounce buffer */
    scsi_copy_in (c, c->buf, c->data_len);
  result_to_sense (c, c->err, !c->data_in);
  c->d->complete (c);
}

/* Check the range of NBLOCKS from LBA; answers and returns false when
 * it is out of the disk.
 */
static bool
in_range (struct scmd *c, uint64_t lba, uint64_t nblocks)
{
  uint64_t nr = c->d->geo.size_bytes / c->d->geo.logical_block_size;
  if (lba > nr || nblocks > nr - lba) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE, 0);
    return false;
  }
  return true;
}

/* A submission's answer: one the core hands back complete (refused, or
 * due at once) ends here, as one it queued ends in scsi_io_done from the
 * ring thread's run of the timeline.
 */
static void
answered (struct scmd *c, int r)
{
  if (r != BLKEMU_QUEUED)
    scsi_io_done (c, r);
}

/* One submission of C's; it ends in scsi_io_done. */
static void
submit (struct scmd *c, enum blkemu_op op, void *buf, uint64_t lba,
        uint64_t nblocks, unsigned flags)
{
  uint32_t lbs = c->d->geo.logical_block_size;
  answered (c, blkemu_timeline_submit (c->d->tl, op, buf, nblocks * lbs,
                                       lba * lbs, flags, scsi_io_done, c));
}

static bool
read_write (struct scmd *c, bool write, uint64_t lba, uint64_t nblocks,
            unsigned flags)
{
  uint32_t lbs = c->d->geo.logical_block_size;
  if (!in_range (c, lba, nblocks) || nblocks == 0)
    return false;
  if (nblocks * lbs > c->data_len) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  }
  /* The data area itself when the command's data is one piece of it
   * (the core reads or writes it in place, as tcmu-runner's handlers
   * do); else a bounce buffer, copied in or out.
   */
  size_t len = nblocks * lbs;
  void *buf = c->iov_cnt == 1 ? c->iov[0].iov_base : NULL;
  if (!buf) {
    if (!(buf = c->buf = malloc (len))) {
      c->status = BUSY;
      return false;
    }
    if (write)
      scsi_copy_out (c, c->buf, len);
  }
  c->lba = lba;
  c->data_in = !write;
  c->data_len = len;
  c->pending = 1;
  submit (c, write ? BLKEMU_OP_WRITE : BLKEMU_OP_READ, buf, lba, nblocks,
          flags);
  return true;
}

/* VERIFY(10)/(16): the blocks are read from the medium (a bad one
 * fails as a read would) and, with BYTCHK, compared with what the
 * initiator sent.  Transfer lengths past MAXIMUM TRANSFER LENGTH are
 * refused, as for a read (SBC-4 counts VERIFY among the commands it
 * bounds).
 */
static bool
verify (struct scmd *c, uint64_t lba, uint64_t nblocks)
{
  const struct blkemu_geometry *g = &c->d->geo;
  uint32_t lbs = g->logical_block_size;
  uint8_t bytchk = (c->cdb[1] >> 1) & 3;
  if (!in_range (c, lba, nblocks) || nblocks == 0)
    return false;
  size_t len = nblocks * lbs;
  if (bytchk == 2 || (g->max_transfer_bytes && len > g->max_transfer_bytes) ||
      (bytchk == 1 && c->data_len < len) ||
      (bytchk == 3 && c->data_len < lbs)) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  }
  if (!(c->buf = malloc (len))) {
    c->status = BUSY;
    return false;
  }
  c->bytchk = bytchk + 1;
  c->lba = lba;
  c->data_in = false;
  c->data_len = len;
  c->pending = 1;
  submit (c, BLKEMU_OP_READ, c->buf, lba, nblocks, 0);
  return true;
}

/* WRITE ATOMIC(16) (SBC-4): within the Block Limits page's atomic
 * fields (no atomic boundary), then a write the core keeps whole or
 * loses whole at a crash.
 */
static bool
write_atomic (struct scmd *c)
{
  struct sdisk *d = c->d; /* C may be answered and gone once submitted */
  const struct blkemu_geometry *g = &d->geo;
  uint64_t lba = be (&c->cdb[2], 8), nb = be (&c->cdb[12], 2);
  uint64_t gran = g->atomic_write_granularity, lbs = g->logical_block_size;
  if (!g->atomic_write_max_bytes) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_OPCODE, 0);
    return false;
  }
  if (be (&c->cdb[10], 2) != 0 || nb * lbs > g->atomic_write_max_bytes ||
      (nb * lbs) % gran || (lba * lbs) % gran) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  }
  __atomic_add_fetch (&d->atomic_writes, 1, __ATOMIC_RELAXED);
  return read_write (c, true, lba, nb,
                     BLKEMU_FLAG_ATOMIC |
                       (c->cdb[1] & 0x08 ? BLKEMU_FLAG_FUA : 0));
}

/* UNMAP: each block descriptor a trim of its own, all submitted at
 * once (the core takes one range a request); the command ends with the
 * last, failing with the first error.
 */
static bool
unmap (struct scmd *c)
{
  uint8_t *p = malloc (c->data_len ? c->data_len : 1);
  if (!p) {
    c->status = BUSY;
    return false;
  }
  size_t len = scsi_copy_out (c, p, c->data_len);
  size_t n = len >= 8 ? be (&p[2], 2) / 16 : 0;
  if (len < 8 || 8 + n * 16 > len ||
      n > (c->d->geo.max_discard_segments ? c->d->geo.max_discard_segments
                                          : 1)) {
    free (p);
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAMETERS, 0);
    return false;
  }
  for (size_t i = 0; i < n; i++)
    if (!in_range (c, be (&p[8 + i * 16], 8), be (&p[16 + i * 16], 4))) {
      free (p);
      return false;
    }
  c->pending = 1; /* held until every descriptor is submitted */
  for (size_t i = 0; i < n; i++) {
    uint64_t nb = be (&p[16 + i * 16], 4);
    if (nb == 0)
      continue;
    pthread_mutex_lock (&c->lock);
    c->pending++;
    pthread_mutex_unlock (&c->lock);
    if (!c->lba)
      c->lba = be (&p[8 + i * 16], 8);
    submit (c, BLKEMU_OP_TRIM, NULL, be (&p[8 + i * 16], 8), nb, 0);
  }
  free (p);
  c->data_in = false;
  scsi_io_done (c, 0); /* the hold */
  return true;
}

/* WRITE SAME(10) and (16): with UNMAP, or of a block of zeroes, a
 * zeroing (which may deallocate with UNMAP); any other block, written
 * over the range.
 */
/* The largest piece of a patterned WRITE SAME (see write_same). */
#define WRITE_SAME_PIECE (256u << 10)

static bool
write_same (struct scmd *c, uint64_t lba, uint64_t nb)
{
  const struct blkemu_geometry *g = &c->d->geo;
  uint32_t lbs = g->logical_block_size;
  bool unmap_bit = c->cdb[1] & 0x08;
  uint64_t max = g->max_write_zeroes_bytes ? g->max_write_zeroes_bytes
                                           : g->max_transfer_bytes;
  if (!in_range (c, lba, nb))
    return false;
  if (nb == 0 || nb * lbs > max || c->data_len < lbs) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  }
  uint8_t *block = malloc (lbs);
  if (!block) {
    c->status = BUSY;
    return false;
  }
  scsi_copy_out (c, block, lbs);
  bool zero = true;
  for (uint32_t i = 0; i < lbs && zero; i++)
    zero = block[i] == 0;
  c->lba = lba;
  c->pending = 1;
  if (zero || unmap_bit) {
    free (block);
    submit (c, BLKEMU_OP_ZERO, NULL, lba, nb,
            unmap_bit ? BLKEMU_FLAG_MAY_TRIM : 0);
    return true;
  }
  /* A pattern repeated over the range: one buffer of at most
   * WRITE_SAME_PIECE bytes, the pattern in every block, written to each
   * piece of the range in turn, so that 512 bytes from an initiator pin
   * that much, not the whole range (32 MiB a command, gigabytes at the
   * queue's depth).  The pieces go to the core together; the command
   * ends with the last (scsi_io_done).
   */
  uint64_t per = WRITE_SAME_PIECE / lbs ? WRITE_SAME_PIECE / lbs : 1;
  if (per > nb)
    per = nb;
  c->buf = malloc (per * lbs);
  if (!c->buf) {
    free (block);
    c->status = BUSY;
    return false;
  }
  for (uint64_t i = 0; i < per; i++)
    memcpy ((char *) c->buf + i * lbs, block, lbs);
  free (block);
  uint64_t pieces = (nb + per - 1) / per;
  void *pattern = c->buf; /* C may be answered and gone after the last */
  c->pending = (int) pieces;
  for (uint64_t i = 0; i < pieces; i++) {
    uint64_t n = i + 1 < pieces ? per : nb - i * per;
    answered (c, blkemu_timeline_submit (c->d->tl, BLKEMU_OP_WRITE, pattern,
                                         n * lbs, (lba + i * per) * lbs, 0,
                                         scsi_io_done, c));
  }
  return true;
}

/* ---- dispatch ---------------------------------------------------------- */

/* Answers C here, or hands it to the core and returns true: then it
 * completes in scsi_io_done (maybe already) and is not to be touched.
 */
static bool
dispatch (struct scmd *c)
{
  const uint8_t *cdb = c->cdb;
  switch (cdb[0]) {
  case 0x00: return false; /* TEST UNIT READY */
  case 0x03: {             /* REQUEST SENSE: nothing pending */
    uint8_t b[SENSE_LEN] = { 0x70, 0, 0, 0, 0, 0, 0, SENSE_LEN - 8 };
    scsi_reply (c, b, sizeof b, cdb[4]);
    return false;
  }
  case 0x12: scsi_inquiry (c); return false;
  case 0x1a: scsi_mode_sense (c, false); return false;
  case 0x5a: scsi_mode_sense (c, true); return false;
  case 0x15: scsi_mode_select (c, false); return false;
  case 0x55: scsi_mode_select (c, true); return false;
  case 0x25: scsi_read_capacity (c, false); return false;
  case 0x9e: /* SERVICE ACTION IN(16) */
    if ((cdb[1] & 0x1f) == 0x10)
      scsi_read_capacity (c, true);
    else
      scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  case 0x08: /* READ(6): 0 blocks means 256 */
  case 0x0a: /* WRITE(6) */
    return read_write (c, cdb[0] == 0x0a, be (&cdb[1], 3) & 0x1fffff,
                       cdb[4] ? cdb[4] : 256, 0);
  case 0x28: /* READ(10) */
  case 0x2a: /* WRITE(10) */
    return read_write (c, cdb[0] == 0x2a, be (&cdb[2], 4), be (&cdb[7], 2),
                       cdb[1] & 0x08 ? BLKEMU_FLAG_FUA : 0);
  case 0x88: /* READ(16) */
  case 0x8a: /* WRITE(16) */
    return read_write (c, cdb[0] == 0x8a, be (&cdb[2], 8), be (&cdb[10], 4),
                       cdb[1] & 0x08 ? BLKEMU_FLAG_FUA : 0);
  case 0x9c: return write_atomic (c); /* WRITE ATOMIC(16) */
  case 0x35:                          /* SYNCHRONIZE CACHE(10) */
  case 0x91:                          /* SYNCHRONIZE CACHE(16) */
    c->pending = 1;
    answered (c, blkemu_timeline_submit (c->d->tl, BLKEMU_OP_FLUSH, NULL, 0, 0,
                                         0, scsi_io_done, c));
    return true;
  case 0x42: return unmap (c);
  case 0x41: /* WRITE SAME(10) */
    return write_same (c, be (&cdb[2], 4), be (&cdb[7], 2));
  case 0x93: /* WRITE SAME(16) */
    return write_same (c, be (&cdb[2], 8), be (&cdb[10], 4));
  case 0x94: return zbc_zone_action (c, scsi_io_done); /* ZBC OUT */
  case 0x95:                                           /* ZBC IN */
    if ((cdb[1] & 0x1f) == 0x00)
      zbc_report_zones (c);
    else
      scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  case 0xa3: /* MAINTENANCE IN */
    if ((cdb[1] & 0x1f) == 0x0c)
      scsi_report_opcodes (c);
    else
      scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return false;
  case 0x2f:
    return verify (c, be (&cdb[2], 4), be (&cdb[7], 2)); /* VERIFY(10) */
  case 0x8f:
    return verify (c, be (&cdb[2], 8), be (&cdb[10], 4)); /* VERIFY(16) */
  default:
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_OPCODE, 0);
    return false;
  }
}

/* Whether OPCODE reaches the medium (through the core). */
static bool
media_command (uint8_t opcode)
{
  switch (opcode) {
  case 0x08:
  case 0x0a:
  case 0x28:
  case 0x2a:
  case 0x88:
  case 0x8a:
  case 0x35:
  case 0x91:
  case 0x41:
  case 0x42:
  case 0x93:
  case 0x94:
  case 0x2f:
  case 0x8f:
  case 0x9c: return true;
  default: return false;
  }
}

/* A slot in the disk's queue of queue-depth commands, or false: the
 * command is answered TASK SET FULL (SAM-5 5.3.4), as an array does.
 */
static bool
queue_slot (struct scmd *c)
{
  struct sdisk *d = c->d;
  if (__atomic_add_fetch (&d->in_flight, 1, __ATOMIC_RELAXED) <=
      d->geo.queue_depth) {
    c->counted = true;
    return true;
  }
  __atomic_sub_fetch (&d->in_flight, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch (&d->task_set_full, 1, __ATOMIC_RELAXED);
  c->status = TASK_SET_FULL;
  return false;
}

void
scsi_execute (struct scmd *c)
{
  c->status = GOOD;
  /* After power-on (at start, or a control power-on after a crash), the
   * first command but INQUIRY and REQUEST SENSE learns it (SPC-4 6.6:
   * POWER ON, RESET, OR BUS DEVICE RESET OCCURRED).
   */
  uint64_t power_ons = blkemu_disk_power_ons (c->d->emu);
  if (power_ons != c->d->power_ons) {
    c->d->power_ons = power_ons;
    c->d->unit_attention = true;
  }
  uint8_t op = c->cdb[0];
  if (c->d->unit_attention && op != 0x12 && op != 0x03) {
    c->d->unit_attention = false;
    scsi_sense (c, UNIT_ATTENTION, 0x29, 0x00);
  }
  else if ((!media_command (op) || queue_slot (c)) && dispatch (c))
    return;
  c->d->complete (c);
}
