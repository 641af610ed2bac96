/* Fuzz blkemu-scsi's command set (scsi/commands.c) with any CDB and any
 * data-out, as the ring hands them over, on a small memory disk with no
 * latency (every I/O completes before blkemu_submit returns), and check:
 *   - every command is answered exactly once, GOOD, BUSY or CHECK
 *     CONDITION, and a CHECK CONDITION carries fixed-format sense with
 *     a sense key;
 *   - nothing is read or written outside the data area (ASan);
 *   - a READ after a GOOD WRITE of the same blocks returns that data.
 * Input: byte 0 the data area size in 512-byte units (0..127), bytes
 * 1..16 the CDB, the rest the data-out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../scsi/scsi.h"

static struct sdisk disk;
static unsigned answers;
static uint8_t last_status, last_sense_key;

/* What ring.c does with an answer, less the ring. */
void
ring_complete (struct scmd *c)
{
  if (c->counted) /* as ring.c: the command leaves the disk's queue */
    __atomic_sub_fetch (&c->d->in_flight, 1, __ATOMIC_RELAXED);
  answers++;
  last_status = c->status;
  last_sense_key = c->sense[2] & 0x0f;
  if (c->status == 0x02 &&
      (c->sense[0] & 0x7f) != 0x70 /* fixed format, current */)
    abort ();
  free (c->buf);
  pthread_mutex_destroy (&c->lock);
  free (c);
}

static void
setup (void)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_spec *spec = blkemu_spec_new ();
  if (blkemu_spec_set_list (spec,
                            "name=fz,size=1M,max-transfer=64K,opt-io=32K,"
                            "max-discard=128K,max-discard-segments=4",
                            err, sizeof err) == -1 ||
      !(disk.emu = blkemu_disk_open (spec, NULL, err, sizeof err))) {
    fprintf (stderr, "fuzz-scsi: %s\n", err);
    abort ();
  }
  blkemu_spec_free (spec);
  disk.name = "fz";
  disk.naa = 0x6001405123456789ull;
  blkemu_disk_geometry (disk.emu, &disk.geo);
  scsi_identity (&disk);
}

/* One command with CDB and a data area of AREA bytes holding DATA. */
static struct scmd *
command (const uint8_t *cdb, uint8_t *area, size_t area_len)
{
  struct scmd *c = calloc (1, sizeof *c + 2 * sizeof (struct iovec));
  if (!c)
    abort ();
  c->d = &disk;
  memcpy (c->cdb, cdb, 16);
  pthread_mutex_init (&c->lock, NULL);
  /* Two iovs, as the data area's blocks come: split in the middle. */
  c->iov = (struct iovec *) (c + 1);
  c->iov_cnt = 2;
  c->iov[0] = (struct iovec){ area, area_len / 2 };
  c->iov[1] = (struct iovec){ area + area_len / 2, area_len - area_len / 2 };
  c->data_len = area_len;
  return c;
}

static unsigned
run (const uint8_t *cdb, uint8_t *area, size_t area_len)
{
  unsigned before = answers;
  scsi_execute (command (cdb, area, area_len));
  if (answers != before + 1) {
    fprintf (stderr, "fuzz-scsi: opcode 0x%02x answered %u times\n", cdb[0],
             answers - before);
    abort ();
  }
  return last_status;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (!disk.emu)
    setup ();
  if (size < 17)
    return 0;
  size_t area_len = (size_t) (data[0] & 0x7f) * 512;
  uint8_t cdb[16];
  memcpy (cdb, data + 1, 16);
  /* Exact-size allocations: ASan sees any step outside. */
  uint8_t *area = malloc (area_len ? area_len : 1);
  size_t n = size - 17 < area_len ? size - 17 : area_len;
  memcpy (area, data + 17, n);
  memset (area + n, 0xa5, area_len - n);
  uint8_t *sent = malloc (area_len ? area_len : 1);
  memcpy (sent, area, area_len);
  disk.unit_attention = false;
  unsigned status = run (cdb, area, area_len);
  if (status != 0x00 && status != 0x02 && status != 0x08)
    abort (); /* TASK SET FULL (0x28) cannot come: one command at a time */
  if (status == 0x02 && last_sense_key == 0)
    abort ();
  /* A WRITE(10) that succeeded: READ(10) of the same blocks returns it. */
  if (cdb[0] == 0x2a && status == 0) {
    uint32_t nb = (uint32_t) cdb[7] << 8 | cdb[8];
    uint8_t rcdb[16] = { 0x28,   0, cdb[2], cdb[3], cdb[4],
                         cdb[5], 0, cdb[7], cdb[8] };
    uint8_t *back = calloc (1, area_len ? area_len : 1);
    if (run (rcdb, back, area_len) != 0 || memcmp (back, sent, nb * 512) != 0)
      abort ();
    free (back);
  }
  free (sent);
  free (area);
  return 0;
}
