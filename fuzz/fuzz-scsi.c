/* Fuzz blkemu-scsi's command set (scsi/commands.c, inquiry.c, zbc.c) with any
 * CDB and any data-out, as the ring hands them over, on a small memory disk
 * with no latency (every I/O completes before blkemu_timeline_submit
 * returns, on the ring thread's timeline as in ring.c), and
 * check:
 *   - every command is answered exactly once, GOOD, BUSY or CHECK
 *     CONDITION, and a CHECK CONDITION carries fixed-format sense with
 *     a sense key;
 *   - nothing is read or written outside the data area (ASan);
 *   - a READ after a GOOD WRITE of the same blocks returns that data.
 *   - REPORT ZONES' descriptors tile the disk, as sd_zbc requires;
 *   - a refused MODE SELECT changes nothing; after one, the caching
 *     page MODE SENSE gives, sent back with WCE flipped (sd's
 *     cache_type), is taken and turns the write cache over.
 * Input: byte 0 the data area size in 512-byte units (0..127; the top
 * bit picks the zoned disk), bytes
 * 1..16 the CDB, the rest the data-out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../scsi/scsi.h"

/* A plain disk, and a zoned one (capacity below the zone size: REPORT
 * ZONES interleaves gap zones).
 */
static struct sdisk disks[2];
static unsigned answers;
static uint8_t last_status, last_sense_key;

/* What ring.c does with an answer, less the ring. */
static void
harness_complete (struct scmd *c)
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
open_disk (struct sdisk *d, const char *name, const char *spec_text)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_spec *spec = blkemu_spec_new ();
  if (blkemu_spec_set_list (spec, spec_text, err, sizeof err) == -1 ||
      !(d->emu = blkemu_disk_open (spec, NULL, err, sizeof err))) {
    fprintf (stderr, "fuzz-scsi: %s\n", err);
    abort ();
  }
  blkemu_spec_free (spec);
  d->name = name;
  d->complete = harness_complete;
  d->naa = 0x6001405123456789ull;
  if (!(d->tl = blkemu_timeline_new (d->emu)))
    abort ();
  blkemu_disk_geometry (d->emu, &d->geo);
  scsi_identity (d);
}

static void
setup (void)
{
  open_disk (&disks[0], "fz",
             "name=fz,size=1M,max-transfer=64K,opt-io=32K,"
             "max-discard=128K,max-discard-segments=4,"
             "atomic-write-max=32K,atomic-write-granularity=4K");
  open_disk (&disks[1], "fzz",
             "name=fzz,size=4M,max-transfer=64K,zoned=host-managed,"
             "zone-size=256K,zone-capacity=192K,conventional-zones=2,"
             "max-open-zones=3");
}

/* One command with CDB and a data area of AREA bytes holding DATA. */
static struct scmd *
command (struct sdisk *disk, const uint8_t *cdb, uint8_t *area,
         size_t area_len)
{
  struct scmd *c = calloc (1, sizeof *c + 2 * sizeof (struct iovec));
  if (!c)
    abort ();
  c->d = disk;
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
run (struct sdisk *disk, const uint8_t *cdb, uint8_t *area, size_t area_len)
{
  unsigned before = answers;
  scsi_execute (command (disk, cdb, area, area_len));
  if (answers != before + 1) {
    fprintf (stderr, "fuzz-scsi: opcode 0x%02x answered %u times\n", cdb[0],
             answers - before);
    abort ();
  }
  return last_status;
}

static bool
write_cache (struct sdisk *disk)
{
  char v[8] = "";
  blkemu_disk_get (disk->emu, "write-cache", v, sizeof v, NULL, 0);
  return strcmp (v, "yes") == 0;
}

/* sd's cache_type store: MODE SENSE(10) of the caching page, WCE
 * flipped, MODE SELECT(10) of it; the cache must follow.
 */
static void
flip_wce (struct sdisk *disk)
{
  bool was = write_cache (disk);
  uint8_t sense10[16] = { 0x5a, 0, 0x08, 0, 0, 0, 0, 0, 64 };
  uint8_t page[64] = { 0 };
  if (run (disk, sense10, page, sizeof page) != 0 || page[8] != 0x08 ||
      ((page[10] & 0x04) != 0) != was)
    abort ();
  uint8_t list[28] = { 0 };
  memcpy (&list[8], &page[8], 20);
  list[10] ^= 0x04;
  uint8_t select10[16] = { 0x55, 0x10, 0, 0, 0, 0, 0, 0, sizeof list };
  if (run (disk, select10, list, sizeof list) != 0 ||
      write_cache (disk) == was)
    abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (!disks[0].emu)
    setup ();
  if (size < 17)
    return 0;
  struct sdisk *disk = &disks[data[0] >> 7]; /* the top bit: zoned */
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
  disk->unit_attention = false;
  bool cache_before = write_cache (disk);
  unsigned status = run (disk, cdb, area, area_len);
  if (status != 0x00 && status != 0x02 && status != 0x08)
    abort (); /* TASK SET FULL (0x28) cannot come: one command at a time */
  if (status == 0x02 && last_sense_key == 0)
    abort ();
  if (cdb[0] == 0x15 || cdb[0] == 0x55) {
    if (status != 0 && write_cache (disk) != cache_before)
      abort ();
    flip_wce (disk);
  }
  /* A WRITE(10) that succeeded: READ(10) of the same blocks returns it. */
  if (cdb[0] == 0x2a && status == 0) {
    uint32_t nb = (uint32_t) cdb[7] << 8 | cdb[8];
    uint8_t rcdb[16] = { 0x28,   0, cdb[2], cdb[3], cdb[4],
                         cdb[5], 0, cdb[7], cdb[8] };
    uint8_t *back = calloc (1, area_len ? area_len : 1);
    if (run (disk, rcdb, back, area_len) != 0 ||
        memcmp (back, sent, nb * 512) != 0)
      abort ();
    free (back);
  }
  /* REPORT ZONES, all zones: the descriptors that fit tile the LBA
   * range from the zone holding the start with no hole or overlap (what
   * sd_zbc checks), and the list length is a multiple of 64.
   */
  if (cdb[0] == 0x95 && status == 0 && (cdb[14] & 0x3f) == 0 &&
      area_len >= 64) {
    uint64_t listed = be (area, 4), next = 0;
    size_t fit = (area_len - 64) / 64;
    uint32_t alloc = (uint32_t) be (&cdb[10], 4);
    if (alloc < area_len)
      fit = alloc < 64 ? 0 : (alloc - 64) / 64;
    if (listed % 64)
      abort ();
    for (size_t i = 0; i < fit && i < listed / 64; i++) {
      const uint8_t *z = area + 64 + i * 64;
      uint64_t start = be (&z[16], 8), len = be (&z[8], 8);
      if (len == 0 || (i > 0 && start != next))
        abort ();
      next = start + len;
    }
  }
  free (sent);
  free (area);
  return 0;
}
