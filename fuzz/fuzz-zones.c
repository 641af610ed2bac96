/* Fuzz a zoned disk (random geometry, limits, write cache) with random
 * writes, appends, reads, zone commands, flushes and crashes, against a
 * shadow of every sequential zone, and check what the standards and
 * blkemu-ublk(8) promise:
 *   - a write or append off the write pointer, past the capacity or into
 *     a full zone fails (EIO/EINVAL) and changes nothing;
 *   - a refusal for want of resources (ETOOMANYREFS, EOVERFLOW) happens
 *     only at max-open-zones with no implicitly open zone to close, or at
 *     max-active-zones for an empty zone;
 *   - after every step the report agrees with the shadow (write
 *     pointers, empty and full zones) and the open and active counts stay
 *     within their limits;
 *   - a read returns the latest data below a write pointer and zeroes
 *     past it;
 *   - a crash in mode lose-all rolls each write pointer back exactly to
 *     the first write not flushed (FUA writes and zone commands are
 *     durable, a finish with its zone's writes), and what stays below it
 *     is the data last written there; in modes subset, torn, interrupted
 *     and pick each zone keeps a prefix of its unflushed writes, cut at
 *     a block in torn and interrupted (which leaves no sector of a
 *     sequential zone unreadable): the write pointer lands between the first
 * unflushed block and where it was, everything below it reads as last written,
 * nothing above it survives (no hole below a write pointer). The clock is
 * virtual (virtual-clock.h), so latency-zone costs nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"
#include "virtual-clock.h"

#define BLK 4096u
#define ZBLOCKS 16u /* zone-size=64K */
#define ZS (ZBLOCKS * BLK)
#define MAXZONES 16u

struct zshadow {
  unsigned wp;              /* blocks into the zone */
  bool full;                /* finished, or written to its capacity */
  unsigned first_unflushed; /* lowest block of a write a crash would undo */
  uint32_t version[ZBLOCKS];
  /* The writes a crash decides (not flushed, FUA'd or settled by a zone
   * command), in order: each write's fate in the crash report follows
   * from where the zone's write pointer lands.
   */
  unsigned nw;
  struct {
    unsigned at, nb;
  } w[ZBLOCKS];
};

static struct zshadow zs[MAXZONES];
static unsigned nzones, nconv, cap_blocks, max_open, max_active;
static uint32_t next_version;
static unsigned char buf[ZBLOCKS * BLK];

#define NO_COVERAGE __attribute__ ((noinline, no_sanitize ("coverage")))

static void NO_COVERAGE
fill (unsigned char *p, unsigned block, uint32_t version)
{
  for (unsigned i = 0; i < BLK; i += 8) {
    uint32_t w[2] = { block, version };
    memcpy (p + i, w, 8);
  }
}

/* The block's version, 0 for zeroes, UINT32_MAX for anything else. */
static uint32_t NO_COVERAGE
version_of (const unsigned char *p, unsigned block)
{
  static const unsigned char zero[BLK];
  if (!memcmp (p, zero, BLK))
    return 0;
  static unsigned char want[BLK];
  uint32_t w[2];
  memcpy (w, p, 8);
  fill (want, block, w[1]);
  return w[0] == block && !memcmp (want, p, BLK) ? w[1] : UINT32_MAX;
}

/* The next crash's mode and seed, drawn by the step, and its report. */
static enum blkemu_crash_mode crash_mode;
static uint64_t crash_seed;
static struct blkemu_crash_report crash_report;

static void
crash (struct blkemu_disk *d, const char *what)
{
  char err[BLKEMU_ERR_MAX];
  if (blkemu_disk_crash_state (d, crash_mode, crash_seed, &crash_report, err,
                               sizeof err)) {
    fprintf (stderr, "%s: %s\n", what, err);
    abort ();
  }
  blkemu_disk_power_on (d);
}

static void
fail (const char *what, unsigned zone, long a, long b)
{
  fprintf (stderr, "zone %u: %s (%ld, %ld)\n", zone, what, a, b);
  abort ();
}

/* The report against the shadow, and the limits. */
static void
check_report (struct blkemu_disk *d)
{
  struct blkemu_zone z[MAXZONES];
  if (blkemu_zone_report (d, 0, z, MAXZONES) != nzones)
    fail ("report: wrong number of zones", 0, nzones, 0);
  unsigned open = 0, active = 0;
  for (unsigned i = nconv; i < nzones; i++) {
    uint64_t start = (uint64_t) i * ZS;
    unsigned wp = (unsigned) ((z[i].wp - start) / BLK);
    if (zs[i].full) {
      if (z[i].cond != BLKEMU_ZONE_COND_FULL || z[i].wp != start + ZS)
        fail ("should be full", i, z[i].cond, (long) wp);
      continue;
    }
    if (wp != zs[i].wp || z[i].cond == BLKEMU_ZONE_COND_FULL)
      fail ("write pointer", i, (long) wp, zs[i].wp);
    /* At the start: empty, or explicitly opened before any write. */
    bool at_start = z[i].cond == BLKEMU_ZONE_COND_EMPTY ||
                    (z[i].cond == BLKEMU_ZONE_COND_EXP_OPEN && wp == 0);
    if ((wp == 0) != at_start)
      fail ("empty iff at the start", i, z[i].cond, (long) wp);
    open += z[i].cond == BLKEMU_ZONE_COND_IMP_OPEN ||
            z[i].cond == BLKEMU_ZONE_COND_EXP_OPEN;
    active += z[i].cond == BLKEMU_ZONE_COND_IMP_OPEN ||
              z[i].cond == BLKEMU_ZONE_COND_EXP_OPEN ||
              z[i].cond == BLKEMU_ZONE_COND_CLOSED;
  }
  if (max_open && open > max_open)
    fail ("too many open", 0, open, max_open);
  if (max_active && active > max_active)
    fail ("too many active", 0, active, max_active);
}

/* Why the device may refuse a write that keeps the rules: resources. */
static void
check_resource_refusal (struct blkemu_disk *d, unsigned zone, int r)
{
  struct blkemu_zone z[MAXZONES];
  blkemu_zone_report (d, 0, z, MAXZONES);
  unsigned imp = 0, exp = 0, closed = 0;
  for (unsigned i = nconv; i < nzones; i++) {
    imp += z[i].cond == BLKEMU_ZONE_COND_IMP_OPEN;
    exp += z[i].cond == BLKEMU_ZONE_COND_EXP_OPEN;
    closed += z[i].cond == BLKEMU_ZONE_COND_CLOSED;
  }
  if (r == ETOOMANYREFS && !(max_open && imp == 0 && exp >= max_open))
    fail ("ETOOMANYREFS with room to open", zone, imp, exp);
  if (r == EOVERFLOW &&
      !(max_active && z[zone].cond == BLKEMU_ZONE_COND_EMPTY &&
        imp + exp + closed >= max_active))
    fail ("EOVERFLOW with room to activate", zone, imp + exp + closed,
          z[zone].cond);
  if (r != ETOOMANYREFS && r != EOVERFLOW)
    fail ("a write within the rules failed", zone, r, 0);
}

/* A crash inside the next wait (and power back on before it returns). */
static struct blkemu_disk *strike_disk;
static void
strike (void)
{
  crash (strike_disk, "crash in flight");
}

/* A write (or an append) of NB blocks at block B of ZONE.  STRUCK: a
 * crash comes while it waits, after its data moved: it must fail, and
 * the shadow takes it as written, unflushed (the crash then decides).
 * Returns whether the crash came.
 */
static bool
write_blocks (struct blkemu_disk *d, unsigned zone, unsigned b, unsigned nb,
              bool append, bool fua, bool struck)
{
  if (struck) {
    strike_disk = d;
    during_next_wait = strike;
  }
  struct zshadow *s = &zs[zone];
  uint32_t v = next_version++;
  unsigned at = append ? s->wp : b;
  for (unsigned i = 0; i < nb; i++)
    fill (buf + i * BLK, at + i, v); /* where the shadow expects them */
  uint64_t start = (uint64_t) zone * ZS, where = 0;
  int r = append ? blkemu_zone_append (d, buf, nb * BLK, start,
                                       fua ? BLKEMU_FLAG_FUA : 0, &where)
                 : blkemu_io (d, BLKEMU_OP_WRITE, buf, nb * BLK,
                              start + b * BLK, fua ? BLKEMU_FLAG_FUA : 0);
  bool crashed = struck && !during_next_wait;
  during_next_wait = NULL;
  bool legal = !s->full && at == s->wp && at + nb <= cap_blocks;
  if (!legal) {
    if (r != EIO && r != EINVAL)
      fail ("an illegal write was not refused", zone, r, at);
    if (crashed)
      fail ("an illegal write reached the device", zone, r, at);
    return false;
  }
  if (crashed && r == 0)
    fail ("a write in flight across a crash was acknowledged", zone, r, at);
  if (r && !crashed) {
    check_resource_refusal (d, zone, r);
    return false;
  }
  if (append && !crashed && where != start + at * BLK)
    fail ("append landed elsewhere", zone, (long) where, at);
  for (unsigned i = 0; i < nb; i++)
    s->version[at + i] = v;
  if (!fua && at < s->first_unflushed)
    s->first_unflushed = at;
  if (!fua)
    s->w[s->nw++] = (typeof (s->w[0])){ at, nb };
  s->wp = at + nb;
  s->full = s->wp == cap_blocks;
  return crashed;
}

static void
read_zone (struct blkemu_disk *d, unsigned zone)
{
  if (blkemu_io (d, BLKEMU_OP_READ, buf, ZS, (uint64_t) zone * ZS, 0))
    fail ("read failed", zone, 0, 0);
  const struct zshadow *s = &zs[zone];
  unsigned wp = s->full ? ZBLOCKS : s->wp;
  for (unsigned i = 0; i < ZBLOCKS; i++) {
    uint32_t want = i < wp && i < cap_blocks ? s->version[i] : 0;
    /* Below a finished zone's end the blocks never written read zeroes. */
    uint32_t got = version_of (buf + i * BLK, i);
    if (got != want)
      fail ("read data", zone, (long) got, (long) want);
  }
}

static void shadow_crash (struct blkemu_disk *d);

static void
reset_shadow (unsigned zone)
{
  memset (&zs[zone], 0, sizeof zs[zone]);
  zs[zone].first_unflushed = ZBLOCKS;
}

/* The zoned disk an input chose, its shadow reset. */
static struct blkemu_disk *
zones_open (struct input *in, bool *cache)
{
  char spec[512], err[BLKEMU_ERR_MAX];
  nzones = 2 + take (in, MAXZONES - 1);
  nconv = take (in, 3) % nzones;
  if (nconv == nzones)
    nconv = nzones - 1;
  cap_blocks = take (in, 2) ? ZBLOCKS : ZBLOCKS - 4;
  unsigned seq = nzones - nconv;
  max_active = take (in, 2) ? take (in, seq + 1) : 0;
  max_open = take (in, 2) ? take (in, seq + 1) : 0;
  if (max_active && max_open > max_active)
    max_open = max_active;
  *cache = take (in, 2);
  snprintf (spec, sizeof spec,
            "size=%u,logical-block-size=4096,zoned=host-managed,"
            "zone-size=%u,zone-capacity=%u,conventional-zones=%u,"
            "max-open-zones=%u,max-active-zones=%u,write-cache=%s,"
            "cache-size=16M,latency-zone=1ms,latency-write=10us",
            nzones * ZS, ZS, cap_blocks * BLK, nconv, max_open, max_active,
            *cache ? "yes" : "no");
  struct blkemu_disk *d =
    blkemu_disk_open_spec (spec, 0, NULL, err, sizeof err);
  if (!d) {
    fprintf (stderr, "%s: %s\n", spec, err);
    abort ();
  }
  for (unsigned i = 0; i < MAXZONES; i++)
    reset_shadow (i);
  next_version = 1;
  if (getenv ("FUZZ_ZONES_DEBUG"))
    fprintf (stderr, "%s\n", spec);
  return d;
}

/* Open, close or finish ZONE. */
static void
zone_change (struct blkemu_disk *d, struct input *in, unsigned zone)
{
  struct zshadow *s = &zs[zone];
  enum blkemu_zone_op op = (enum blkemu_zone_op) take (in, 3);
  int r = blkemu_zone_command (d, op, (uint64_t) zone * ZS);
  if (r == ETOOMANYREFS || r == EOVERFLOW)
    return; /* the report check covers the rest */
  if (op == BLKEMU_ZONE_FINISH && r == 0) {
    s->full = true; /* durable, with its writes */
    s->first_unflushed = ZBLOCKS;
    s->nw = 0;
  }
  if (r && !(op == BLKEMU_ZONE_OPEN && s->full) &&
      !(op == BLKEMU_ZONE_CLOSE && s->full))
    fail ("zone command failed", zone, r, op);
}

/* Step WHAT on ZONE, blocks B..B+NB; STRUCK: a crash meets it in flight. */
static void
zone_step (struct blkemu_disk *d, struct input *in, unsigned what,
           unsigned zone, unsigned b, unsigned nb, bool struck, bool cache)
{
  switch (what) {
  case 0:
  case 1:
  case 2:
    if (write_blocks (d, zone, b, nb, false, what == 2, struck))
      shadow_crash (d);
    break;
  case 3:
    if (write_blocks (d, zone, b, nb, true, take (in, 2), struck))
      shadow_crash (d);
    break;
  case 5: zone_change (d, in, zone); break;
  case 6: /* reset */
    if (blkemu_zone_command (d, BLKEMU_ZONE_RESET, (uint64_t) zone * ZS))
      fail ("reset failed", zone, 0, 0);
    reset_shadow (zone);
    break;
  case 7:
    if (take (in, 8) == 0) {
      if (blkemu_zone_command (d, BLKEMU_ZONE_RESET_ALL, 0))
        fail ("reset-all failed", 0, 0, 0);
      for (unsigned i = nconv; i < nzones; i++)
        reset_shadow (i);
    }
    break;
  case 8: /* flush */
    if (blkemu_io (d, BLKEMU_OP_FLUSH, NULL, 0, 0, 0))
      fail ("flush failed", 0, 0, 0);
    for (unsigned i = 0; i < nzones; i++) {
      zs[i].first_unflushed = ZBLOCKS;
      zs[i].nw = 0;
    }
    break;
  case 9: /* a zone command on a conventional zone */
    if (nconv && blkemu_zone_command (d, BLKEMU_ZONE_RESET, 0) != EIO)
      fail ("conventional zone took a reset", 0, 0, 0);
    break;
  case 10: /* crash and power on */
    if (!cache)
      break;
    crash (d, "crash");
    shadow_crash (d);
    break;
  default: read_zone (d, zone); break; /* 4 and 11 */
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct input in = { data, size };
  bool cache;
  struct blkemu_disk *d = zones_open (&in, &cache);
  unsigned seq = nzones - nconv;
  bool debug = getenv ("FUZZ_ZONES_DEBUG") != NULL;
  for (int step = 0; step < 96 && in.n > 0; step++) {
    unsigned what = take (&in, 12);
    unsigned zone = nconv + take (&in, seq);
    struct zshadow *s = &zs[zone];
    unsigned nb = 1 + take (&in, 6);
    /* Mostly at the write pointer; sometimes anywhere. */
    unsigned b = take (&in, 4) ? s->wp : take (&in, ZBLOCKS);
    if (b >= ZBLOCKS) /* a full zone's: stay inside it */
      b = ZBLOCKS - 1;
    if (b + nb > ZBLOCKS)
      nb = ZBLOCKS - b;
    if (debug)
      fprintf (stderr,
               "step %d: op %u zone %u block %u n %u (shadow wp %u%s)\n", step,
               what, zone, b, nb, s->wp, s->full ? " full" : "");
    /* With the cache, a write or append now and then meets a crash in
     * flight.
     */
    bool struck = cache && take (&in, 6) == 0;
    if (struck || what == 10) {
      static const enum blkemu_crash_mode modes[] = {
        BLKEMU_CRASH_LOSE_ALL, BLKEMU_CRASH_SUBSET, BLKEMU_CRASH_TORN,
        BLKEMU_CRASH_PICK, BLKEMU_CRASH_INTERRUPTED
      };
      crash_mode = modes[take (&in, 5)];
      crash_seed = take (&in, 256);
    }
    zone_step (d, &in, what, zone, b, nb, struck, cache);
    check_report (d);
  }
  for (unsigned i = nconv; i < nzones; i++)
    read_zone (d, i);
  blkemu_disk_close (d);
  return 0;
}

/* What a power loss leaves, in the shadow: each zone back to its first
 * unflushed write (lose-all) or to the end of the prefix of its
 * unflushed blocks that survived (read off the disk: the reads and the
 * report after the step hold the rest to it), the rest reading zeroes;
 * zones active beyond the limit finished, the last first.
 */
static void
shadow_crash (struct blkemu_disk *d)
{
  uint64_t fates[3] = { 0 }; /* persisted, torn, lost */
  /* Interrupted or not, no sector of a sequential zone is unreadable:
   * the write in flight is torn there (and only those zones are written).
   */
  uint64_t nbad = 0;
  free (blkemu_disk_bad_list (d, &nbad));
  if (nbad)
    fail ("a crash left sectors of a sequential zone unreadable", 0,
          (long) nbad, crash_mode);
  for (unsigned i = nconv; i < nzones; i++) {
    struct zshadow *t = &zs[i];
    if (!t->full || t->first_unflushed < ZBLOCKS) {
      unsigned hi = t->full ? cap_blocks : t->wp;
      unsigned wp = t->first_unflushed < hi ? t->first_unflushed : hi;
      if (crash_mode != BLKEMU_CRASH_LOSE_ALL) {
        if (blkemu_io (d, BLKEMU_OP_READ, buf, ZS, (uint64_t) i * ZS, 0))
          fail ("read after a crash failed", i, 0, 0);
        while (wp < hi && version_of (buf + wp * BLK, wp) == t->version[wp])
          wp++;
      }
      /* Kept below the write pointer, cut by it (torn), lost above. */
      for (unsigned k = 0; k < t->nw; k++)
        fates[t->w[k].at + t->w[k].nb <= wp ? 0 : t->w[k].at < wp ? 1 : 2]++;
      if (!t->full || wp < cap_blocks) {
        t->full = false;
        t->wp = wp;
      }
    }
    for (unsigned k = t->full ? ZBLOCKS : t->wp; k < ZBLOCKS; k++)
      t->version[k] = 0;
    t->first_unflushed = ZBLOCKS;
    t->nw = 0;
  }
  const struct blkemu_crash_report *c = &crash_report;
  if (c->persisted != fates[0] || c->torn != fates[1] || c->lost != fates[2]) {
    fprintf (stderr,
             "crash %s seed %llu: reported persisted=%llu torn=%llu "
             "lost=%llu, the write pointers say %llu %llu %llu\n",
             blkemu_crash_mode_name (crash_mode),
             (unsigned long long) crash_seed,
             (unsigned long long) c->persisted, (unsigned long long) c->torn,
             (unsigned long long) c->lost, (unsigned long long) fates[0],
             (unsigned long long) fates[1], (unsigned long long) fates[2]);
    abort ();
  }
  /* Zones active beyond the limit are finished, the last first. */
  unsigned active = 0;
  for (unsigned i = nconv; i < nzones; i++)
    active += !zs[i].full && zs[i].wp > 0;
  for (unsigned i = nzones; i-- > nconv && max_active && active > max_active;)
    if (!zs[i].full && zs[i].wp > 0) {
      zs[i].full = true;
      active--;
    }
}
