/* What blkemu-scsi's disk says about itself, as the sd driver reads it:
 * INQUIRY and its VPD pages (identity, Block Limits, the zoned and
 * rotation pages), READ CAPACITY, the caching and control mode pages
 * (MODE SENSE, and MODE SELECT turning the write cache on and off), and
 * REPORT SUPPORTED OPERATION CODES.  commands.c dispatches to them.
 * References: SPC-4, SBC-3, ZBC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi.h"

static uint32_t
blocks (const struct sdisk *d, uint64_t bytes)
{
  uint64_t n = bytes / d->geo.logical_block_size;
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
}

/* ---- INQUIRY and the VPD pages ---------------------------------------- */

static void
pad_copy (uint8_t *dst, const char *src, size_t n)
{
  memset (dst, ' ', n);
  memcpy (dst, src, strlen (src) < n ? strlen (src) : n);
}

/* The disk's value of KEY, or FALLBACK when it is unset, cut to LEN. */
static void
key_or (struct sdisk *d, const char *key, const char *fallback, char *out,
        size_t len)
{
  char v[64] = "";
  blkemu_disk_get (d->emu, key, v, sizeof v, NULL, 0);
  const char *src = *v ? v : fallback;
  size_t n = strnlen (src, len - 1); /* a longer fallback is cut */
  memcpy (out, src, n);
  out[n] = '\0';
}

/* The write cache now: write-cache changes at runtime (MODE SELECT, or
 * blkemu-ctl set), so it is read at each MODE SENSE.
 */
static bool
write_cache_on (struct sdisk *d)
{
  char v[8];
  key_or (d, "write-cache", "no", v, sizeof v);
  return strcmp (v, "yes") == 0;
}

void
scsi_identity (struct sdisk *d)
{
  char rpm[16];
  key_or (d, "vendor", "BLKEMU", d->vendor, sizeof d->vendor);
  key_or (d, "product", d->name, d->product, sizeof d->product);
  key_or (d, "revision", BLKEMU_VERSION, d->revision, sizeof d->revision);
  size_t n = strlen (d->revision); /* the version cut to 4: "0.1." */
  if (n && d->revision[n - 1] == '.')
    d->revision[n - 1] = '\0';
  key_or (d, "rpm", "7200", rpm, sizeof rpm);
  d->rotation_rate = d->geo.rotational ? (uint16_t) atoi (rpm) : 1;
  d->wce_default = write_cache_on (d);
  blkemu_disk_zoned (d->emu, &d->zg);
}

static size_t
standard_inquiry (const struct sdisk *d, uint8_t *b)
{
  memset (b, 0, 36);
  /* connected; a direct access block device, or a host-managed zoned
   * one (ZBC), which sd takes only by this type
   */
  b[0] = d->zg.nr_zones ? 0x14 : 0x00;
  b[2] = 0x06; /* SPC-4 */
  b[3] = 0x12; /* HISUP, response data format 2 */
  b[4] = 36 - 5;
  b[7] = 0x02; /* CMDQUE */
  pad_copy (&b[8], d->vendor, 8);
  pad_copy (&b[16], d->product, 16);
  pad_copy (&b[32], d->revision, 4);
  return 36;
}

/* The last is for zoned disks only. */
static const uint8_t vpd_pages[] = {
  0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2, 0xb6
};

/* The Block Limits VPD page (SBC-3 6.6.4), its length: where sd learns
 * max_sectors_kb's cap, io_opt, the unmap and write-same limits and,
 * from 6.11, the atomic write fields.
 */
static size_t
block_limits_page (const struct sdisk *d, uint8_t *b)
{
  const struct blkemu_geometry *g = &d->geo;
  uint32_t lbs = g->logical_block_size;
  put_be (&b[6], g->min_io_bytes / lbs, 2);
  put_be (&b[8], blocks (d, g->max_transfer_bytes), 4);
  put_be (&b[12], blocks (d, g->opt_io_bytes), 4);
  if (g->can_trim) {
    put_be (&b[20],
            g->max_discard_bytes ? blocks (d, g->max_discard_bytes)
                                 : UINT32_MAX,
            4);
    put_be (&b[24], g->max_discard_segments ? g->max_discard_segments : 1, 4);
    put_be (&b[28], g->discard_granularity ? g->discard_granularity / lbs : 1,
            4);
    if (g->discard_alignment)
      put_be (&b[32], 0x80000000u | g->discard_alignment / lbs, 4);
  }
  put_be (&b[36],
          g->max_write_zeroes_bytes ? blocks (d, g->max_write_zeroes_bytes)
                                    : blocks (d, g->max_transfer_bytes),
          8);
  if (g->atomic_write_max_bytes) { /* SBC-4: atomic writes, no boundary */
    put_be (&b[44], blocks (d, g->atomic_write_max_bytes), 4);
    put_be (&b[48], blocks (d, g->atomic_write_granularity), 4);
    put_be (&b[52], blocks (d, g->atomic_write_granularity), 4);
  }
  return 0x3c;
}

static size_t
vpd_page (const struct sdisk *d, uint8_t page, uint8_t *b)
{
  const struct blkemu_geometry *g = &d->geo;
  uint32_t lbs = g->logical_block_size;
  size_t len;
  memset (b, 0, 256);
  b[1] = page;
  switch (page) {
  case 0x00: /* supported pages */
    len = sizeof vpd_pages - (d->zg.nr_zones ? 0 : 1);
    memcpy (&b[4], vpd_pages, len);
    break;
  case 0x80: /* unit serial number: stable per disk */
    len =
      (size_t) snprintf ((char *) &b[4], 32, "blkemu-%012llx",
                         (unsigned long long) (d->naa & 0xffffffffffffull));
    break;
  case 0x83:     /* device identification: NAA 6, then the T10 vendor id */
    b[4] = 0x01; /* binary */
    b[5] = 0x03; /* LU, NAA */
    b[7] = 16;
    put_be (&b[8], d->naa, 8);
    put_be (&b[16], d->naa ^ 0x0123456789abcdefull, 8);
    b[24] = 0x02; /* ASCII */
    b[25] = 0x01; /* LU, T10 vendor identification */
    snprintf ((char *) &b[28], 40, "%-8s%s", d->vendor, d->name);
    b[27] = (uint8_t) strlen ((char *) &b[28]);
    len = 24 + b[27];
    break;
  case 0xb0: len = block_limits_page (d, b); break;
  case 0xb1: /* block device characteristics */
    len = 0x3c;
    put_be (&b[4], d->rotation_rate, 2);
    break;
  case 0xb2: /* logical block provisioning */
    len = 4;
    if (g->can_trim)
      b[5] = 0x80 | 0x40;             /* LBPU, LBPWS */
    b[6] = g->can_trim ? 0x02 : 0x00; /* thin provisioned */
    break;
  case 0xb6: /* zoned block device characteristics (ZBC-2 6.5.2) */
    if (!d->zg.nr_zones)
      return 0;
    len = 0x3c;
    b[4] = 0x01; /* URSWRZ: reads past a write pointer return zeroes */
    put_be (&b[16], d->zg.max_open ? d->zg.max_open : UINT32_MAX, 4);
    if (d->zg.zone_capacity < d->zg.zone_size) {
      b[23] = 0x08; /* constant zone start offset: gap zones follow */
      put_be (&b[24], d->zg.zone_size / lbs, 8);
    }
    else
      b[23] = 0x01; /* constant zone length */
    break;
  default: return 0;
  }
  put_be (&b[2], len, 2);
  return len + 4;
}

void
scsi_inquiry (struct scmd *c)
{
  uint8_t b[256];
  size_t alloc = be (&c->cdb[3], 2), len;
  if (c->cdb[1] & 0x01)
    len = vpd_page (c->d, c->cdb[2], b);
  else if (c->cdb[2] == 0)
    len = standard_inquiry (c->d, b);
  else
    len = 0;
  if (len == 0) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return;
  }
  scsi_reply (c, b, len, alloc);
}

/* ---- capacity, mode pages ------------------------------------------------
 */

void
scsi_read_capacity (struct scmd *c, bool sixteen)
{
  const struct blkemu_geometry *g = &c->d->geo;
  uint64_t last = g->size_bytes / g->logical_block_size - 1;
  uint8_t b[32] = { 0 };
  if (!sixteen) {
    put_be (&b[0], last > UINT32_MAX ? UINT32_MAX : last, 4);
    put_be (&b[4], g->logical_block_size, 4);
    scsi_reply (c, b, 8, 8);
    return;
  }
  put_be (&b[0], last, 8);
  put_be (&b[8], g->logical_block_size, 4);
  unsigned exp = 0;
  while ((g->logical_block_size << (exp + 1)) <= g->physical_block_size)
    exp++;
  b[13] = (uint8_t) exp;
  if (g->can_trim)
    b[14] = 0x80 | 0x40; /* LBPME, LBPRZ: trimmed blocks read zeroes */
  if (c->d->zg.nr_zones)
    b[12] |= 0x10; /* RC BASIS 1: the whole capacity, not the first zones */
  scsi_reply (c, b, 32, be (&c->cdb[10], 4));
}

/* The mode pages, as page control PC asks for them: 0 current, 1 the
 * mask of what MODE SELECT may change, 2 defaults.  The caching page's
 * WCE is the write cache (write-cache, which MODE SELECT changes: sd's
 * cache_type, sdparm --set WCE); read caching cannot be turned off (RCD
 * stays 0).  The control page's GLTSD: no log pages to save.  Each
 * returns the page's length.
 */
static size_t
caching_page (struct sdisk *d, uint8_t pc, uint8_t *p)
{
  memset (p, 0, 20);
  p[0] = 0x08;
  p[1] = 0x12;
  if (pc == 1 || (pc == 0 ? write_cache_on (d) : d->wce_default))
    p[2] = 0x04; /* WCE */
  return 20;
}

static size_t
control_page (uint8_t pc, uint8_t *p)
{
  memset (p, 0, 12);
  p[0] = 0x0a;
  p[1] = 0x0a;
  if (pc != 1)
    p[2] = 0x02; /* GLTSD */
  return 12;
}

/* MODE SENSE(6) and (10): the caching and the control page; no block
 * descriptors.  Saved values (PC 3) are not kept.
 */
void
scsi_mode_sense (struct scmd *c, bool ten)
{
  uint8_t page = c->cdb[2] & 0x3f, pc = c->cdb[2] >> 6;
  uint8_t b[64] = { 0 };
  size_t hdr = ten ? 8 : 4, len = hdr;
  if (pc == 3) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_SAVING_NOT_SUPPORTED, 0);
    return;
  }
  if (c->cdb[3] != 0 && c->cdb[3] != 0xff) { /* a subpage: none here */
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return;
  }
  if (page == 0x08 || page == 0x3f)
    len += caching_page (c->d, pc, &b[len]);
  if (page == 0x0a || page == 0x3f)
    len += control_page (pc, &b[len]);
  if (len == hdr) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return;
  }
  if (ten)
    put_be (&b[0], len - 2, 2);
  else
    b[0] = (uint8_t) (len - 1);
  /* The device-specific parameter: DPOFUA, the disk honours FUA (sd
   * then sends FUA writes instead of a write and a SYNCHRONIZE CACHE).
   */
  if (c->d->geo.can_fua)
    b[ten ? 3 : 2] = 0x10;
  scsi_reply (c, b, len, ten ? be (&c->cdb[7], 2) : c->cdb[4]);
}

/* MODE SELECT(6) and (10): pages as MODE SENSE gives them, in which only
 * what the changeable mask has set may differ from the current values:
 * the caching page's WCE.  Every page is checked before anything
 * changes.  Turning WCE off writes the cache back before the command
 * completes (core: blkemu_disk_set).
 */
void
scsi_mode_select (struct scmd *c, bool ten)
{
  size_t want = ten ? be (&c->cdb[7], 2) : c->cdb[4];
  size_t hdr = ten ? 8 : 4;
  uint8_t b[256];
  if (c->cdb[1] & 0x01) { /* SP: nothing is saved */
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return;
  }
  if (want == 0)
    return; /* no parameter list: nothing to change */
  if (want > sizeof b || want < hdr) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_PARAMETER_LIST_LENGTH, 0);
    return;
  }
  size_t len = scsi_copy_out (c, b, want);
  size_t at = hdr + (ten ? be (&b[6], 2) : b[3]); /* past block descriptors */
  bool wce = write_cache_on (c->d);
  bool cur_wce = wce;
  if (len < want || at > len) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_PARAMETER_LIST_LENGTH, 0);
    return;
  }
  while (at < len) {
    uint8_t cur[32], mask[32];
    size_t n = len - at >= 2 ? (size_t) b[at + 1] + 2 : 0, pn = 0;
    uint8_t code = b[at] & 0x7f; /* SPF set: a subpage, none here */
    if (code == 0x08) {
      pn = caching_page (c->d, 0, cur);
      caching_page (c->d, 1, mask);
    }
    else if (code == 0x0a) {
      pn = control_page (0, cur);
      control_page (1, mask);
    }
    if (n == 0 || at + n > len) {
      scsi_sense (c, ILLEGAL_REQUEST, ASC_PARAMETER_LIST_LENGTH, 0);
      return;
    }
    bool same = pn == n;
    for (size_t i = 1; same && i < n; i++)
      same = ((b[at + i] ^ cur[i]) & ~mask[i]) == 0;
    if (!same) {
      scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_PARAMETERS, 0);
      return;
    }
    if (code == 0x08)
      wce = (b[at + 2] & 0x04) != 0;
    at += n;
  }
  if (wce == cur_wce)
    return;
  char err[256];
  if (blkemu_disk_set (c->d->emu, "write-cache", wce ? "yes" : "no", err,
                       sizeof err) != 0) {
    if (blkemu_disk_offline (c->d->emu))
      scsi_sense (c, NOT_READY, 0x04, 0x03);
    else
      scsi_sense (c, HARDWARE_ERROR, 0x44, 0x00); /* the write-back failed */
  }
}

/* ---- REPORT SUPPORTED OPERATION CODES (SPC-4 6.35) ---------------------- */

/* Every command dispatch answers (REPORT LUNS is LIO's), with its
 * service action where the opcode has several, and its CDB length.
 */
static const struct {
  uint8_t opcode;
  bool has_sa;
  uint16_t sa;
  uint8_t cdb_len;
} supported_ops[] = {
  { 0x00, false, 0, 6 },    /* TEST UNIT READY */
  { 0x03, false, 0, 6 },    /* REQUEST SENSE */
  { 0x08, false, 0, 6 },    /* READ(6) */
  { 0x0a, false, 0, 6 },    /* WRITE(6) */
  { 0x12, false, 0, 6 },    /* INQUIRY */
  { 0x15, false, 0, 6 },    /* MODE SELECT(6) */
  { 0x1a, false, 0, 6 },    /* MODE SENSE(6) */
  { 0x25, false, 0, 10 },   /* READ CAPACITY(10) */
  { 0x28, false, 0, 10 },   /* READ(10) */
  { 0x2a, false, 0, 10 },   /* WRITE(10) */
  { 0x2f, false, 0, 10 },   /* VERIFY(10) */
  { 0x35, false, 0, 10 },   /* SYNCHRONIZE CACHE(10) */
  { 0x41, false, 0, 10 },   /* WRITE SAME(10) */
  { 0x42, false, 0, 10 },   /* UNMAP */
  { 0x55, false, 0, 10 },   /* MODE SELECT(10) */
  { 0x5a, false, 0, 10 },   /* MODE SENSE(10) */
  { 0x88, false, 0, 16 },   /* READ(16) */
  { 0x8a, false, 0, 16 },   /* WRITE(16) */
  { 0x8f, false, 0, 16 },   /* VERIFY(16) */
  { 0x91, false, 0, 16 },   /* SYNCHRONIZE CACHE(16) */
  { 0x93, false, 0, 16 },   /* WRITE SAME(16) */
  { 0x9c, false, 0, 16 },   /* WRITE ATOMIC(16), with atomic-write-max */
  { 0x9e, true, 0x10, 16 }, /* READ CAPACITY(16) */
  { 0xa0, false, 0, 12 },   /* REPORT LUNS (LIO answers it) */
  { 0xa3, true, 0x0c, 12 }, /* REPORT SUPPORTED OPERATION CODES */
  /* zoned disks only */
  { 0x94, true, 0x01, 16 }, /* CLOSE ZONE */
  { 0x94, true, 0x02, 16 }, /* FINISH ZONE */
  { 0x94, true, 0x03, 16 }, /* OPEN ZONE */
  { 0x94, true, 0x04, 16 }, /* RESET WRITE POINTER */
  { 0x95, true, 0x00, 16 }, /* REPORT ZONES */
};
#define N_SUPPORTED (sizeof supported_ops / sizeof supported_ops[0])

/* Whether this disk takes OPCODE (the zone and atomic commands only
 * when it has zones or atomic writes).
 */
static bool
available (const struct sdisk *d, uint8_t opcode)
{
  if (opcode == 0x94 || opcode == 0x95)
    return d->zg.nr_zones > 0;
  if (opcode == 0x9c)
    return d->geo.atomic_write_max_bytes > 0;
  return true;
}

void
scsi_report_opcodes (struct scmd *c)
{
  const uint8_t *cdb = c->cdb;
  unsigned options = cdb[2] & 0x07;
  uint8_t want = cdb[3];
  uint16_t want_sa = (uint16_t) be (&cdb[4], 2);
  uint32_t alloc = (uint32_t) be (&cdb[6], 4);
  uint8_t b[4 + N_SUPPORTED * 8] = { 0 };
  size_t len;
  if (options == 0) { /* all commands */
    len = 4;
    for (size_t i = 0; i < N_SUPPORTED; i++) {
      if (!available (c->d, supported_ops[i].opcode))
        continue;
      b[len] = supported_ops[i].opcode;
      put_be (&b[len + 2], supported_ops[i].sa, 2);
      b[len + 5] = supported_ops[i].has_sa ? 0x01 : 0x00; /* SERVACTV */
      put_be (&b[len + 6], supported_ops[i].cdb_len, 2);
      len += 8;
    }
    put_be (&b[0], len - 4, 4);
    scsi_reply (c, b, len, alloc);
    return;
  }
  if (options != 1 && options != 2) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return;
  }
  /* One command: SUPPORT 011b with its CDB usage map (every bit may be
   * set), or 001b, not supported.  Asking by opcode alone for one with
   * service actions, or by service action for one without, is an error.
   */
  size_t i = 0;
  while (i < N_SUPPORTED && supported_ops[i].opcode != want)
    i++;
  if (i < N_SUPPORTED && supported_ops[i].has_sa != (options == 2)) {
    scsi_sense (c, ILLEGAL_REQUEST, ASC_INVALID_FIELD_IN_CDB, 0);
    return;
  }
  while (i < N_SUPPORTED && supported_ops[i].opcode == want && options == 2 &&
         supported_ops[i].sa != want_sa)
    i++;
  if (i == N_SUPPORTED || supported_ops[i].opcode != want ||
      !available (c->d, want)) {
    b[1] = 0x01; /* not supported */
    scsi_reply (c, b, 4, alloc);
    return;
  }
  uint8_t n = supported_ops[i].cdb_len;
  b[1] = 0x03; /* supported as the standard says */
  put_be (&b[2], n, 2);
  memset (&b[4], 0xff, n);
  b[4] = want;
  if (supported_ops[i].has_sa)
    b[5] = (uint8_t) (want_sa & 0x1f);
  scsi_reply (c, b, 4 + n, alloc);
}
