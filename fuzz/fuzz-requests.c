/* Fuzz request sequences on a disk with random limits, policies, models,
 * faults, write cache and crash/power-on, through the public API, and
 * check what the docs promise:
 *   - no read or write above max-transfer reaches the backend unless
 *     oversize=allow (a backend wrapper checks every call);
 *   - a read returns the newest data written, exactly;
 *   - after crash and power-on, in every crash mode (lose-all, subset,
 *     torn at a random atomic-unit), every block holds its flushed (or
 *     FUA'd, or written through: a host write larger than the cache,
 *     split or not) version or one written since: flushed data survives,
 *     nothing else appears; without write-cache nothing is lost; each
 *     aligned atomic unit an acknowledged write touched holds all of its
 *     blocks there or none (what later requests left aside), in a view
 *     as after the crash;
 *   - a request in flight when a crash strikes (the crash runs inside its
 *     wait, and power may come back before it completes) fails with EIO,
 *     whatever it is: nothing is acknowledged that the crash undid; in
 *     mode interrupted a struck write's blocks, and only those, read EIO
 *     until healed;
 *   - silent faults keep their contract: a read counted as bit-flipped
 *     differs from a clean re-read of the same range in exactly one bit
 *     (the medium kept the right data), one not counted is exact; a
 *     write counted as lost changed nothing, before or after a crash; a
 *     write counted as misdirected changed exactly one run of blocks as
 *     long as itself, elsewhere, to its data in its order (found by
 *     reading the whole disk: every block carries the block it was
 *     meant for), and its landing place is then what a crash may keep
 *     or undo; a struck one is not counted (it failed), so the scan
 *     after the crash finds where it went: its own blocks or one other
 *     run, never both, holding its data in order (all of it without the
 *     cache), and in mode interrupted that run, and only it, unreadable;
 *   - a crash view shows a legal crash state and serves its own writes;
 *     a view opened after it with the same mode and seed shows the same
 *     state, none of the first one's writes (views after views); then
 *     power-on gives back every block as written (no view touched the
 *     medium or the cache), or the crash of that mode and seed leaves
 *     exactly what the views showed;
 *   - unreadable sectors (bad add) fail every read until a write or
 *     write-zeroes heals them (a trim does not); after a crash, in a
 *     view as in the crash itself, a block is unreadable exactly when
 *     it holds a version from before its heal (the crash undid the
 *     heal) or was never healed;
 *   - stuck bits (stuck add) read their value in every read that covers
 *     them, through every path (blocking, timeline, lent reads, views,
 *     after crashes), and change nothing else; a read they changed is
 *     counted once in faults.stuck_reads; writes do not unstick them;
 *   - stats count exactly the bytes of the requests that succeeded, and
 *     no latency exceeds the time that passed;
 *   - the heap the disk holds stays within a bound of its size, as the
 *     allocator counts it (a log that counts itself right can still
 *     keep more than it counts);
 *   - a flash translation layer, an SLC cache or a volume throttle changes
 *     when requests complete, never what they read;
 *   - all of it holds whichever way the requests come: blkemu_io, or
 *     submitted on a timeline (as blkemu-ublk's queues do; the crash
 *     strikes between the submit and the run), with or without a write
 *     source and a read sink (the data taken from where it lies and lent
 *     instead of copied: the buffers the core gets hold garbage, so a
 *     write read from its buffer, or a read claimed sent and not sunk,
 *     shows as wrong data).
 * The clock is virtual (virtual-clock.h defines clock.h's functions, so
 * the core's clock.o is not linked): every model runs at full speed and
 * the run is deterministic.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"
#include "disk.h"
#include "timeline.h"

#include "virtual-clock.h"

#include <sanitizer/allocator_interface.h>

/* ---- the backend wrapper -------------------------------------------- */

static const struct backend_ops *real_ops;
static uint64_t max_rw;  /* 0: not checked (oversize=allow) */
static int inside_crash; /* crash restores whole undo entries */
static bool checking;    /* a read or write request is being served
                            (write-zeroes and trim save their old data
                            with reads of their own length) */

static int
w_pread (void *st, void *buf, uint64_t len, uint64_t off)
{
  if (checking && max_rw && !inside_crash && len > max_rw) {
    fprintf (stderr, "backend read of %llu > max-transfer %llu\n",
             (unsigned long long) len, (unsigned long long) max_rw);
    abort ();
  }
  return real_ops->pread (st, buf, len, off);
}

static int
w_pwrite (void *st, const void *buf, uint64_t len, uint64_t off, bool fua)
{
  if (checking && max_rw && !inside_crash && len > max_rw) {
    fprintf (stderr, "backend write of %llu > max-transfer %llu\n",
             (unsigned long long) len, (unsigned long long) max_rw);
    abort ();
  }
  return real_ops->pwrite (st, buf, len, off, fua);
}

static struct backend_ops wrapper;

/* ---- the shadow ----------------------------------------------------- */

#define BLOCKS 64
#define CAND 8

struct shadow {
  uint32_t latest, durable;
  uint32_t cand[CAND]; /* versions written since the last flush */
  int ncand;           /* -1: too many to track */
  bool has_alt;        /* without the cache: ALT is as legal as LATEST */
  uint32_t alt;        /* (a struck write that may have been refused) */
  /* Unreadable sectors (bad add): BAD, reads fail now; MARKED, a mark
   * that no crash has yet been kept from bringing back: BAD, or healed
   * by cached writes only.  POST: the versions written since the heal
   * (NPOST -1: too many).  A crash that leaves one of them is readable;
   * one that leaves an older version undid the heal: unreadable.
   * PRE_ZERO: zeroes were among the older versions (token 0 is every
   * zeroing's, so a 0 then says nothing).
   */
  bool bad, marked, pre_zero;
  uint32_t post[CAND];
  int npost;
};

static struct shadow sh[BLOCKS];
#define TOKEN_EIO (UINT32_MAX - 1) /* read_all: this block read EIO */
static uint32_t next_version;

/* What a block holds, as the shadow names it: version V of the data
 * meant for block SRC (a misdirected write puts it elsewhere), or 0 for
 * zeroes.
 */
static uint32_t
token (uint64_t src, uint32_t v)
{
  return v ? v * BLOCKS + (uint32_t) src : 0;
}

/* The data helpers are plain loops: keep coverage (and its cost) for the
 * code under test.
 */
#define NO_COVERAGE __attribute__ ((noinline, no_sanitize ("coverage")))

static void NO_COVERAGE
fill (unsigned char *p, uint64_t lbs, uint64_t block, uint32_t version)
{
  for (uint64_t i = 0; i < lbs; i += 8) {
    uint32_t w[2] = { (uint32_t) block, version };
    memcpy (p + i, w, 8);
  }
  if (version == 0)
    memset (p, 0, lbs);
}

/* The token of the block at P, or UINT32_MAX for data no write made. */
static uint32_t NO_COVERAGE
token_of (const unsigned char *p, uint64_t lbs)
{
  static unsigned char want[65536];
  uint32_t w[2];
  memcpy (w, p, 8);
  if (w[0] >= BLOCKS)
    return UINT32_MAX;
  fill (want, lbs, w[0], w[1]);
  return memcmp (want, p, lbs) == 0 ? token (w[0], w[1]) : UINT32_MAX;
}

static void
written (uint64_t b, uint32_t v, bool fua)
{
  sh[b].latest = v;
  if (fua) {
    sh[b].durable = v;
    sh[b].ncand = 0;
  }
  else if (sh[b].ncand >= 0 && sh[b].ncand < CAND)
    sh[b].cand[sh[b].ncand++] = v;
  else
    sh[b].ncand = -1;
}

static bool NO_COVERAGE
may_hold (const struct shadow *s, uint32_t v)
{
  if (v == s->durable || s->ncand < 0)
    return true;
  for (int i = 0; i < s->ncand; i++)
    if (s->cand[i] == v)
      return true;
  return false;
}

/* ---- atomicity ------------------------------------------------------ */

/* After a crash each aligned atomic unit that an acknowledged write
 * touched holds all of that write's blocks in it or none of them
 * (blkemu-robustness(7)): a write inside one unit is whole or absent,
 * one crossing a multiple is cut there only.  The groups to check are
 * the writes since the last flush or crash, one group per unit they
 * touch, as a mask of blocks (BLOCKS is 64).  A later request takes the
 * blocks it touches out of every group (they hold what that one left);
 * what is left of a group is still whole or absent: a FUA write that
 * cut a cached one's undo entry in two must not leave half the rest.
 */
_Static_assert(BLOCKS == 64, "a group is a 64-bit mask of blocks");
struct group {
  uint64_t mask;
  uint32_t v;
};
static struct group groups[BLOCKS];
static unsigned ngroups;

static uint64_t
blocks_mask (uint64_t b, uint64_t nb)
{
  return (nb >= 64 ? ~0ull : (1ull << nb) - 1) << b;
}

static void
groups_touch (uint64_t b, uint64_t nb)
{
  uint64_t m = blocks_mask (b, nb);
  unsigned kept = 0;
  for (unsigned i = 0; i < ngroups; i++)
    if ((groups[i].mask &= ~m) != 0)
      groups[kept++] = groups[i];
  ngroups = kept;
}

/* oversize=split: max-transfer in blocks (0: writes are not split).  A
 * piece the device cuts is a write of its own in a crash state, cut at
 * a multiple of the unit where the limit leaves room for one (so below
 * one unit a piece may hold part of one: atomic-unit above max-transfer
 * promises nothing more).
 */
static uint64_t split_blocks;

/* Version V written to NB blocks from B, UNIT blocks to an atomic unit:
 * a group for each unit each piece touches.
 */
static void
groups_add (uint64_t b, uint64_t nb, uint32_t v, uint64_t unit)
{
  groups_touch (b, nb);
  for (uint64_t at = b, cut = b; at < b + nb;) {
    if (at == cut) { /* a piece starts: where does it end? */
      cut = b + nb;
      if (split_blocks && cut - at > split_blocks) {
        cut = at + split_blocks;
        if (cut / unit * unit > at)
          cut = cut / unit * unit;
      }
    }
    uint64_t end = (at / unit + 1) * unit;
    if (end > cut)
      end = cut;
    if (ngroups == BLOCKS)
      abort (); /* disjoint, none empty: cannot be */
    groups[ngroups++] = (struct group){ blocks_mask (at, end - at), v };
    at = end;
  }
}

/* TOKENS: every block of a crash state (WHAT: which one). */
static void
groups_check (const uint32_t *tokens, const char *what)
{
  for (unsigned i = 0; i < ngroups; i++) {
    const struct group *g = &groups[i];
    uint64_t there = 0, unread = 0;
    for (unsigned j = 0; j < BLOCKS; j++)
      if (g->mask >> j & 1 && tokens[j] == TOKEN_EIO)
        unread |= 1ull << j;
    if (unread)
      continue; /* what an unreadable block holds is not known */
    for (unsigned j = 0; j < BLOCKS; j++)
      if (g->mask >> j & 1 && tokens[j] == token (j, g->v))
        there |= 1ull << j;
    if (there != 0 && there != g->mask) {
      fprintf (stderr,
               "%s: a write of version %u is in blocks %#llx of its %#llx "
               "in one atomic unit\n",
               what, g->v, (unsigned long long) there,
               (unsigned long long) g->mask);
      for (unsigned j = 0; j < BLOCKS; j++)
        fprintf (stderr, "  block %u: version %u%s\n", j, tokens[j] / BLOCKS,
                 g->mask >> j & 1 ? " (the group's)" : "");
      abort ();
    }
  }
}

/* ---- memory --------------------------------------------------------- */

/* The heap a disk holds beyond what it held once opened, as the
 * allocator counts it (not the log's own counters: FUA writes inside a
 * large cached one once grew memory by a copy of the rest each, while
 * the log counted less than cache-size).  Its log keeps at most the
 * disk's size of old data, whatever cache-size says; a crash state or
 * a view puts back at most as much; bookkeeping is small.  BASE: after
 * the open.
 */
static size_t heap_peak; /* the most seen above BASE (FUZZ_DEBUG) */

static void
heap_check (size_t base, uint64_t disk_bytes, int step)
{
  size_t now = __sanitizer_get_current_allocated_bytes ();
  size_t bound = 3 * disk_bytes + (512 << 10);
  size_t held = now > base ? now - base : 0;
  if (held > heap_peak)
    heap_peak = held;
  if (held > bound) {
    fprintf (stderr,
             "step %d: the disk holds %zu bytes of heap more than at its "
             "open (bound %zu: a disk of %llu bytes)\n",
             step, held, bound, (unsigned long long) disk_bytes);
    abort ();
  }
}

/* ---- unreadable sectors ------------------------------------------------ */

static void
post_add (struct shadow *s, uint32_t v)
{
  if (s->npost >= 0 && s->npost < CAND)
    s->post[s->npost++] = v;
  else
    s->npost = -1;
}

/* bad add over block B. */
static void
mark_bad (uint64_t b)
{
  struct shadow *s = &sh[b];
  bool zero = s->latest == 0 || s->durable == 0 || s->ncand < 0;
  for (int i = 0; i < s->ncand; i++)
    zero |= s->cand[i] == 0;
  for (int i = 0; i < s->npost; i++)
    zero |= s->post[i] == 0;
  s->pre_zero = (s->marked && s->pre_zero) || zero || s->npost < 0;
  s->bad = s->marked = true;
  s->npost = 0;
}

/* Version V reached block B: a write or write-zeroes (HEALS) or a trim
 * (which does not), DURABLE or cached.
 */
static void
medium_wrote (uint64_t b, uint32_t v, bool heals, bool durable)
{
  struct shadow *s = &sh[b];
  if (!s->marked)
    return;
  if (s->bad && !heals) {  /* a trim of an unreadable block: still so */
    s->pre_zero |= v == 0; /* and its zeroes are from before the heal */
    return;
  }
  if (durable) {
    s->bad = s->marked = false;
    return;
  }
  s->bad = false;
  post_add (s, v);
}

/* A flush succeeded: a heal is durable, a mark on an unread block stays. */
static void
bad_flushed (void)
{
  for (int i = 0; i < BLOCKS; i++) {
    struct shadow *s = &sh[i];
    if (!s->bad)
      s->marked = false;
    s->pre_zero = s->latest == 0;
    s->npost = 0;
  }
}

/* After a crash that left version V in block S (as read once healed):
 * 1 unreadable, 0 readable, -1 either (the shadow cannot tell).
 */
static int
bad_after_crash (const struct shadow *s, uint32_t v)
{
  if (!s->marked)
    return 0;
  if (s->bad)
    return 1;
  if (s->npost < 0 || (v == 0 && s->pre_zero))
    return -1;
  for (int i = 0; i < s->npost; i++)
    if (s->post[i] == v)
      return 0;
  return 1;
}

/* The block is as read after a crash (healed if it was unreadable). */
static void
bad_reset (struct shadow *s)
{
  s->bad = s->marked = s->pre_zero = false;
  s->npost = 0;
}

/* ---- the way requests come ------------------------------------------- */

/* NULL: every request through blkemu_io.  Else through this timeline,
 * the virtual clock moved to each wake-up.
 */
static struct blkemu_timeline *timeline;
static bool by_source; /* writes taken by the source, reads lent */

struct pending {
  bool done;
  int result;
  const unsigned char *data; /* a write's data, where the source finds it */
  unsigned char *into;       /* where the sink puts a read's */
  uint64_t len;
};

static void
pending_done (void *cookie, int result)
{
  struct pending *p = cookie;
  if (p->done)
    abort (); /* DONE exactly once */
  p->done = true;
  p->result = result == BLKEMU_READ_SENT ? 0 : result;
}

static int
take_write (void *cookie, uint64_t at, void *dst, uint64_t len)
{
  struct pending *p = cookie;
  if (!p->data || at + len > p->len)
    abort ();
  memcpy (dst, p->data + at, len);
  return 0;
}

static int
lend_read (void *cookie, uint64_t at, const void *data, uint64_t len)
{
  struct pending *p = cookie;
  if (!p->into || at + len > p->len)
    abort ();
  if (data)
    memcpy (p->into + at, data, len);
  else
    memset (p->into + at, 0, len);
  return 0;
}

/* One request, the way this run sends them; returns what blkemu_io
 * would.  On a timeline the crash hook strikes a request still in flight
 * after its submit (its data moved, as inside blkemu_io's wait).
 */
static int
io (struct blkemu_disk *disk, enum blkemu_op op, void *buf, uint64_t len,
    uint64_t off, unsigned flags)
{
  if (!timeline)
    return blkemu_io (disk, op, buf, len, off, flags);
  static unsigned char decoy[BLOCKS * 4096 + 4096];
  struct pending p = { .len = len };
  void *given = buf;
  if (by_source && buf && len <= sizeof decoy) {
    /* The core must take the write from the source and put a lent
     * read through the sink: what it finds in DECOY is garbage.
     */
    memset (decoy, 0xa5, len);
    if (op == BLKEMU_OP_WRITE)
      p.data = buf;
    else {
      p.into = buf;
      memset (buf, 0x5a, len);
    }
    given = op == BLKEMU_OP_WRITE ? decoy : buf;
  }
  int r = blkemu_timeline_submit (timeline, op, given, len, off, flags,
                                  pending_done, &p);
  /* DONE is never called inside the submit: a request handed back
   * complete ends here, one queued from the timeline's run.
   */
  assert (!p.done);
  if (r != BLKEMU_QUEUED)
    pending_done (&p, r);
  if (!p.done && during_next_wait) {
    void (*hook) (void) = during_next_wait;
    during_next_wait = NULL;
    hook ();
  }
  while (!p.done) {
    uint64_t wake = blkemu_timeline_wake_at (timeline);
    if (wake == UINT64_MAX) {
      fprintf (stderr, "a request on the timeline was never completed\n");
      abort ();
    }
    clock_wait_until (wake);
    blkemu_timeline_run (timeline);
  }
  /* A timeline tells a medium error apart; blkemu_io says EIO. */
  if (p.result == BLKEMU_ERR_MEDIUM) {
    if (op != BLKEMU_OP_READ)
      abort ();
    return EIO;
  }
  return p.result;
}

/* ---- stuck bits ------------------------------------------------------ */

/* The bits the run made stuck (a few: each block's data repeats every 8
 * bytes, so a stuck bit's written value is found in the same bit of a
 * neighbouring word that no stuck bit covers).
 */
#define STUCK_RUN_MAX 4
static uint64_t read_lbs; /* the run's logical block size */
static struct {
  uint64_t byte;
  unsigned bit, value;
} stuck_bits[STUCK_RUN_MAX];
static unsigned nstuck;

static bool
stuck_at (uint64_t byte, unsigned bit)
{
  for (unsigned i = 0; i < nstuck; i++)
    if (stuck_bits[i].byte == byte && stuck_bits[i].bit == bit)
      return true;
  return false;
}

/* BUF holds LEN bytes read at OFF (LBS-byte blocks): every stuck bit in
 * it must read its value; then it is put back to what the data written
 * there holds, so that the token checks see the data as written.
 * Returns how many bits the stuck ones changed.
 */
static unsigned NO_COVERAGE
unstick (unsigned char *buf, uint64_t len, uint64_t off, uint64_t lbs)
{
  unsigned changed = 0;
  for (unsigned i = 0; i < nstuck; i++) {
    uint64_t at = stuck_bits[i].byte;
    if (at < off || at >= off + len)
      continue;
    unsigned bit = stuck_bits[i].bit;
    unsigned char *p = buf + (at - off);
    if ((*p >> bit & 1u) != stuck_bits[i].value) {
      fprintf (stderr,
               "byte %llu bit %u is stuck at %u and read %u (read of %llu "
               "bytes at %llu)\n",
               (unsigned long long) at, bit, stuck_bits[i].value,
               *p >> bit & 1u, (unsigned long long) len,
               (unsigned long long) off);
      abort ();
    }
    /* The same byte of another word in its block's 64-byte line. */
    uint64_t in_block = at % lbs, word = 8;
    while (word < 64 && stuck_at (at - in_block + (in_block ^ word), bit))
      word += 8;
    if (word == 64)
      abort (); /* four stuck bits cannot cover seven neighbours */
    uint64_t from = at - in_block + (in_block ^ word);
    if (from < off || from >= off + len)
      abort (); /* reads are whole blocks */
    unsigned char was = (unsigned char) (buf[from - off] & (1u << bit));
    changed += was != (*p & (1u << bit));
    *p = (unsigned char) ((*p & ~(1u << bit)) | was);
  }
  return changed;
}

/* ---- silent faults ---------------------------------------------------- */

enum silent_kind { FLIPS, LOST, MISDIRECTED, STUCK };

static uint64_t
silent_count (struct blkemu_disk *disk, enum silent_kind kind)
{
  /* The disk's stats and the timeline's shard (a snapshot of the whole
   * would copy every table for three counters).
   */
  struct stats *where[2] = { &disk->stats,
                             timeline ? &timeline->stats : NULL };
  uint64_t n = 0;
  for (int i = 0; i < 2 && where[i]; i++) {
    pthread_mutex_lock (&where[i]->lock);
    const struct fault_counts *f = &where[i]->faults;
    n += kind == LOST          ? f->silently_lost
         : kind == MISDIRECTED ? f->misdirected
         : kind == STUCK       ? f->stuck_reads
                               : f->bit_flips;
    pthread_mutex_unlock (&where[i]->lock);
  }
  return n;
}

static unsigned NO_COVERAGE
bits_differ (const unsigned char *a, const unsigned char *b, uint64_t len)
{
  unsigned n = 0;
  for (uint64_t i = 0; i < len; i++)
    n += (unsigned) __builtin_popcount (a[i] ^ b[i]);
  return n;
}

/* Read LEN bytes at OFF into BUF; a read the disk counts as bit-flipped
 * is read again until clean, must differ from the clean copy in exactly
 * one bit, and leaves the clean copy in BUF.  Returns the first read's
 * result, or -1 when no clean copy could be had to check BUF against
 * (every re-read flipped too, or a crash still waits for a request).
 * Stuck bits are checked and put back (unstick) in what it returns.
 */
static int
read_checked (struct blkemu_disk *disk, unsigned char *buf, uint64_t len,
              uint64_t off, uint64_t *read_bytes)
{
  static unsigned char clean[BLOCKS * 4096];
  uint64_t flips = silent_count (disk, FLIPS);
  uint64_t stuck = silent_count (disk, STUCK);
  int r = io (disk, BLKEMU_OP_READ, buf, len, off, 0);
  if (r != 0)
    return r;
  *read_bytes += len;
  uint64_t after = silent_count (disk, FLIPS);
  if (after == flips) {
    uint64_t counted = silent_count (disk, STUCK) - stuck;
    bool changed = unstick (buf, len, off, read_lbs) != 0;
    if (counted != changed && !during_next_wait) {
      fprintf (stderr,
               "a read of %llu bytes at %llu that stuck bits %s counted "
               "%llu times in faults.stuck_reads\n",
               (unsigned long long) len, (unsigned long long) off,
               changed ? "changed" : "did not change",
               (unsigned long long) counted);
      abort ();
    }
    return 0;
  }
  if (after != flips + 1)
    abort (); /* one read, at most one bit */
  for (int tries = 0; tries < 16 && !during_next_wait; tries++) {
    flips = silent_count (disk, FLIPS);
    if (io (disk, BLKEMU_OP_READ, clean, len, off, 0) != 0)
      return -1;
    *read_bytes += len;
    if (silent_count (disk, FLIPS) != flips)
      continue;
    unsigned d = bits_differ (buf, clean, len);
    if (d != 1) {
      fprintf (stderr, "a read counted as bit-flipped differs in %u bits\n",
               d);
      abort ();
    }
    memcpy (buf, clean, len);
    unstick (buf, len, off, read_lbs);
    return 0;
  }
  return -1;
}

/* ---- crashes in flight ---------------------------------------------- */

static struct blkemu_disk *crash_disk;
static bool crash_then_power_on;
static enum blkemu_crash_mode crash_mode; /* the next crash's state */
static uint64_t crash_seed;

/* Power loss in the mode and seed the input chose. */
static void
crash_now (struct blkemu_disk *disk)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_crash_report rep;
  if (blkemu_disk_crash_state (disk, crash_mode, crash_seed, &rep, err,
                               sizeof err) != 0) {
    fprintf (stderr, "crash %s: %s\n", blkemu_crash_mode_name (crash_mode),
             err);
    abort ();
  }
  if ((crash_mode == BLKEMU_CRASH_LOSE_ALL && (rep.persisted || rep.torn)) ||
      ((crash_mode == BLKEMU_CRASH_SUBSET ||
        crash_mode == BLKEMU_CRASH_PICK) &&
       rep.torn))
    abort ();
}

/* Inside a request's wait: the power goes (and maybe comes back). */
static void
crash_in_flight (void)
{
  inside_crash = 1;
  crash_now (crash_disk);
  inside_crash = 0;
  if (crash_then_power_on)
    blkemu_disk_power_on (crash_disk);
}

/* A write of version V to NB blocks from B failed because a crash struck
 * it in flight.  Its data moved before it waited: with the cache the
 * crash may have undone it (one more version the blocks may hold),
 * without one it is on the medium.
 */
static void
struck (uint64_t b, uint64_t nb, uint32_t v, bool cache, bool faults)
{
  for (uint64_t i = 0; i < nb; i++) {
    struct shadow *s = &sh[b + i];
    uint32_t t = token (b + i, v);
    if (s->marked && !s->bad) /* healed before: may be what is left */
      post_add (s, t);
    else if (s->bad) { /* it may have healed the block before it failed */
      s->bad = false;
      s->npost = -1;
    }
    if (!cache && !faults)
      s->latest = t;
    else if (!cache) { /* an injected error may have kept it out */
      s->alt = t;
      s->has_alt = true;
    }
    else if (s->ncand >= 0 && s->ncand < CAND)
      s->cand[s->ncand++] = t;
    else
      s->ncand = -1;
  }
}

/* Does a host write of LEN bytes go through the cache to the medium? */
static bool
written_through (const struct blkemu_disk *disk, uint64_t len, bool fua)
{
  uint64_t cache = disk->cfg.num[K_CACHE_SIZE] < disk->cfg.num[K_SIZE]
                     ? disk->cfg.num[K_CACHE_SIZE]
                     : disk->cfg.num[K_SIZE];
  return fua || len > cache;
}

/* A write of version V to NB blocks from B was counted as misdirected:
 * read the whole disk and find where it went.  Exactly one run of NB
 * blocks, not at B, holds its data for B, B + 1, ... in order; every
 * other block holds what it held.  The landing blocks were written
 * there as any write (DURABLE: through the cache to the medium).
 */
static void
landed (struct blkemu_disk *disk, uint64_t lbs, uint64_t b, uint64_t nb,
        uint32_t v, bool durable, uint64_t *read_bytes)
{
  static unsigned char blk[65536];
  uint64_t at = UINT64_MAX, n = 0;
  for (uint64_t j = 0; j < BLOCKS; j++) {
    if (read_checked (disk, blk, lbs, j * lbs, read_bytes) != 0)
      abort (); /* no flips, errors or crashes while these are drawn */
    uint32_t t = token_of (blk, lbs);
    if (t != 0 && t != UINT32_MAX && t / BLOCKS == v) {
      if (at == UINT64_MAX)
        at = j;
      if (j != at + n || t % BLOCKS != b + n) {
        fprintf (stderr,
                 "misdirected write of blocks %llu..%llu: block %llu holds "
                 "the data for %u\n",
                 (unsigned long long) b, (unsigned long long) (b + nb),
                 (unsigned long long) j, t % BLOCKS);
        abort ();
      }
      n++;
    }
    else if (t != sh[j].latest) {
      fprintf (stderr,
               "misdirected write of blocks %llu..%llu changed block %llu "
               "(token %u, was %u)\n",
               (unsigned long long) b, (unsigned long long) (b + nb),
               (unsigned long long) j, t, sh[j].latest);
      abort ();
    }
  }
  if (n != nb || at == b) {
    fprintf (stderr,
             "misdirected write of blocks %llu..%llu: %llu blocks of it "
             "at %llu\n",
             (unsigned long long) b, (unsigned long long) (b + nb),
             (unsigned long long) n, (unsigned long long) at);
    abort ();
  }
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr, "misdirected: blocks %llu..%llu landed at %llu\n",
             (unsigned long long) b, (unsigned long long) (b + nb),
             (unsigned long long) at);
  for (uint64_t i = 0; i < nb; i++)
    written (at + i, token (b + i, v), durable);
}

/* ---- crash views ---------------------------------------------------- */

/* Read every block one by one into TOKENS (each read checked; none may
 * fail but one the shadow marked bad: TOKEN_EIO); false when a read
 * could not be checked.
 */
static bool
read_all (struct blkemu_disk *disk, uint64_t lbs, uint32_t *tokens,
          uint64_t *read_bytes)
{
  static unsigned char blk[65536];
  for (uint64_t i = 0; i < BLOCKS; i++) {
    int r = read_checked (disk, blk, lbs, i * lbs, read_bytes);
    if (r == EIO && sh[i].marked) {
      tokens[i] = TOKEN_EIO;
      continue;
    }
    if (r != 0)
      return false;
    tokens[i] = token_of (blk, lbs);
  }
  return true;
}

/* Open the view of MODE and SEED and read every block of it into TOKENS. */
static void
view_read_all (struct blkemu_disk *disk, uint64_t lbs,
               enum blkemu_crash_mode mode, uint64_t seed, uint32_t *tokens,
               uint64_t *read_bytes)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_crash_report rep;
  if (blkemu_disk_view_open (disk, mode, seed, &rep, err, sizeof err) != 0) {
    fprintf (stderr, "views: view open: %s\n", err);
    abort ();
  }
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr,
             "views: %s seed %llu: persisted %llu lost %llu torn %llu\n",
             blkemu_crash_mode_name (mode), (unsigned long long) seed,
             (unsigned long long) rep.persisted, (unsigned long long) rep.lost,
             (unsigned long long) rep.torn);
  if (!read_all (disk, lbs, tokens, read_bytes))
    abort ();
}

static void
view_fail (const char *what, uint64_t block, uint32_t got, uint32_t want)
{
  fprintf (stderr, "views: %s: block %llu holds token %u, want %u\n", what,
           (unsigned long long) block, got, want);
  abort ();
}

/* After the views, power-on (AND_CRASH false: every block as written) or
 * the crash (every block as the views showed: FIRST), which the shadow
 * then takes.
 */
static void
views_then (struct blkemu_disk *disk, uint64_t lbs, bool cache, bool and_crash,
            const uint32_t *first, uint64_t *ok_bytes)
{
  uint32_t again[BLOCKS];
  char err[BLKEMU_ERR_MAX];
  if (!read_all (disk, lbs, again, &ok_bytes[BLKEMU_OP_READ]))
    abort ();
  for (uint64_t i = 0; i < BLOCKS; i++) {
    uint32_t want = and_crash   ? first[i]
                    : sh[i].bad ? TOKEN_EIO
                                : sh[i].latest;
    if (again[i] != want)
      view_fail (and_crash ? "the crash leaves what its view showed"
                           : "power-on after views: the disk as written",
                 i, again[i], want);
    if (and_crash && want == TOKEN_EIO) {
      /* Healed without writing: the block holds what the medium has. */
      static unsigned char blk[65536];
      if (blkemu_disk_bad_clear (disk, i * lbs, lbs, err, sizeof err) ||
          read_checked (disk, blk, lbs, i * lbs, &ok_bytes[BLKEMU_OP_READ]))
        abort ();
      want = token_of (blk, lbs);
      if (cache ? !may_hold (&sh[i], want) : want != sh[i].latest)
        view_fail ("not a legal crash state", i, want, sh[i].durable);
      if (bad_after_crash (&sh[i], want) == 0)
        view_fail ("a block the crash leaves readable reads EIO", i, TOKEN_EIO,
                   want);
    }
    if (and_crash) {
      sh[i].latest = sh[i].durable = want;
      sh[i].ncand = 0;
      bad_reset (&sh[i]);
    }
  }
}

/* Power off, open a view in MODE and SEED, check it, write into it, end
 * it, open the same view again: the same state, without those writes.
 * Then power-on (AND_CRASH false: every block as it was) or the crash
 * itself (the state the views showed).  The disk has no faults and its
 * data is checked.
 */
static void
views_after_views (struct blkemu_disk *disk, uint64_t lbs, bool cache,
                   enum blkemu_crash_mode mode, uint64_t seed, uint64_t wb,
                   uint64_t wnb, bool and_crash, uint64_t *ok_bytes)
{
  static unsigned char wbuf[BLOCKS * 4096];
  uint32_t first[BLOCKS], again[BLOCKS];
  char err[BLKEMU_ERR_MAX];
  if (mode == BLKEMU_CRASH_INTERRUPTED)
    mode = BLKEMU_CRASH_TORN; /* a view shows data, not unreadable sectors */
  if (blkemu_disk_power_off (disk, err, sizeof err) != 0) {
    fprintf (stderr, "views: power-off: %s\n", err);
    abort ();
  }
  view_read_all (disk, lbs, mode, seed, first, &ok_bytes[BLKEMU_OP_READ]);
  for (uint64_t i = 0; i < BLOCKS; i++) {
    if (first[i] == TOKEN_EIO)
      continue; /* marked bad (read_all): judged against the crash below */
    if (cache ? !may_hold (&sh[i], first[i]) : first[i] != sh[i].latest)
      view_fail ("not a legal crash state", i, first[i], sh[i].durable);
    if (bad_after_crash (&sh[i], first[i]) == 1)
      view_fail ("a block the crash leaves unreadable reads", i, first[i],
                 TOKEN_EIO);
  }
  groups_check (first, "a view");
  /* The view's own writes: served, read back, then thrown away. */
  uint32_t v = next_version++;
  for (uint64_t i = 0; i < wnb; i++)
    fill (wbuf + i * lbs, lbs, wb + i, v);
  int r = io (disk, BLKEMU_OP_WRITE, wbuf, wnb * lbs, wb * lbs, 0);
  if (r == 0) {
    ok_bytes[BLKEMU_OP_WRITE] += wnb * lbs;
    if (!read_all (disk, lbs, again, &ok_bytes[BLKEMU_OP_READ]))
      abort ();
    for (uint64_t i = 0; i < BLOCKS; i++) {
      uint32_t want = i >= wb && i < wb + wnb ? token (i, v) : first[i];
      if (again[i] != want)
        view_fail ("a view reads its own writes", i, again[i], want);
    }
  }
  else if (r != EINVAL) /* above max-transfer with oversize=error */
    abort ();
  if (blkemu_disk_view_close (disk, err, sizeof err) != 0)
    abort ();
  view_read_all (disk, lbs, mode, seed, again, &ok_bytes[BLKEMU_OP_READ]);
  for (uint64_t i = 0; i < BLOCKS; i++)
    if (again[i] != first[i])
      view_fail ("the same view again, without the first one's writes", i,
                 again[i], first[i]);
  if (blkemu_disk_view_close (disk, err, sizeof err) != 0)
    abort ();
  if (and_crash) {
    inside_crash = 1;
    crash_mode = mode;
    crash_seed = seed;
    crash_now (disk);
    inside_crash = 0;
  }
  blkemu_disk_power_on (disk);
  views_then (disk, lbs, cache, and_crash, first, ok_bytes);
  if (and_crash)
    ngroups = 0;
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr, "views: %s seed %llu, two views, then %s\n",
             blkemu_crash_mode_name (mode), (unsigned long long) seed,
             and_crash ? "the crash" : "power-on");
}

/* ---- one run: the disk ---------------------------------------------- */

/* What an input chose for its disk, and what its steps carry along.  The
 * input is read in one order, spec first, then step by step: the corpus
 * keeps its meaning only while that order does.
 */
struct run {
  struct input in;
  struct blkemu_disk *disk;
  char spec[1024];
  uint64_t lbs, mt_blocks, unit_blocks;
  unsigned policy, faults, silent, way;
  unsigned misdirect; /* percent */
  bool cache, null_backend, check_data, bad_ok, atomic_check, offline;
  enum blkemu_op last_zero_op;
  uint64_t ok_bytes[BLKEMU_OP_COUNT]; /* served, as stats must count */
};

static unsigned char iobuf[BLOCKS * 4096];

static void spec_add (struct run *run, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

static void
spec_add (struct run *run, const char *fmt, ...)
{
  size_t n = strlen (run->spec);
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (run->spec + n, sizeof run->spec - n, fmt, ap);
  va_end (ap);
}

/* The limits, model, cache, backend and timing (each chosen in the order
 * the arguments are written).
 */
static void
spec_base (struct run *run)
{
  static const char *const models[] = { "fixed", "hdd", "ssd", "array",
                                        "link" };
  static const char *const policies[] = { "error", "split", "allow" };
  struct input *in = &run->in;
  run->lbs = take (in, 2) ? 4096 : 512;
  run->mt_blocks = 1 + take (in, 64);
  run->policy = take (in, 3);
  run->cache = take (in, 2);
  run->null_backend = take (in, 8) == 0;
  run->faults = take (in, 4); /* 0: none */
  uint64_t lbs = run->lbs;
  const char *model = models[take (in, 5)];
  unsigned cache_k = 4 + take (in, 1024);
  unsigned slowdown = 1 + take (in, 8), qd = 1 + take (in, 64);
  unsigned lat_r = take (in, 2000), lat_w = take (in, 2000);
  uint64_t max_discard = take (in, 4) * 8 * lbs;
  unsigned seed = take (in, 1000);
  uint64_t atomic = lbs << take (in, 4);
  spec_add (run,
            "size=%llu,logical-block-size=%llu,max-transfer=%llu,"
            "oversize=%s,model=%s,write-cache=%s,cache-size=%uK,"
            "backend=%s,slowdown=%u,queue-depth=%u,latency-read=%uus,"
            "latency-write=%uus,max-discard=%llu,seed=%u,atomic-unit=%llu",
            (unsigned long long) (BLOCKS * lbs), (unsigned long long) lbs,
            (unsigned long long) (run->mt_blocks * lbs), policies[run->policy],
            model, run->cache ? "yes" : "no", cache_k,
            run->null_backend ? "null" : "memory", slowdown, qd, lat_r, lat_w,
            (unsigned long long) max_discard, seed,
            (unsigned long long) atomic);
}

/* Injected errors; silent faults (1: flips, 2: lost, 3: both, 4:
 * misdirected, where the harness finds where one went by reading every
 * block: not with injected errors).
 */
static void
spec_faults (struct run *run)
{
  struct input *in = &run->in;
  if (run->faults) {
    const char *op = (const char *[]){ "any",   "read", "write",
                                       "flush", "trim", "zero" }[take (in, 6)];
    uint64_t at = take (in, BLOCKS) * run->lbs;
    uint64_t len = take (in, 16) * run->lbs;
    unsigned pct = take (in, 101), after = take (in, 4);
    spec_add (run,
              ",error-mode=%s,error-op=%s,error-offset=%llu,"
              "error-length=%llu,error-probability=%u%%,error-after=%u",
              (const char *[]){ "off", "always", "once",
                                "sticky" }[run->faults],
              op, (unsigned long long) at, (unsigned long long) len, pct,
              after);
  }
  run->silent = take (in, 6);
  run->misdirect = 0;
  if (run->silent == 4 && !run->faults)
    run->misdirect = 1 + take (in, 30);
  if (run->silent >= 1 && run->silent <= 3) {
    unsigned flips = run->silent & 1 ? 1 + take (in, 20) : 0;
    unsigned lost = run->silent & 2 ? 1 + take (in, 20) : 0;
    spec_add (run, ",bit-flip-probability=%u%%,lost-write-probability=%u%%",
              flips, lost);
  }
}

/* Now and then model=ssd gets a flash translation layer and an SLC
 * cache, and any model a cloud volume's throttle in front: chosen from
 * what is left of the input, so that the corpus keeps its meaning.
 * Neither may change a byte of what is read back.
 */
static void
spec_extras (struct run *run)
{
  unsigned extra = (unsigned) (run->in.n % 7);
  uint64_t lbs = run->lbs;
  if (strstr (run->spec, "model=ssd") && extra < 3)
    spec_add (run,
              ",over-provisioning=%u%%,flash-page=%llu,flash-block=%llu,"
              "slc-cache=%lluK,latency-slc-write=5us,slc-fold-rate=1M",
              5 + 10 * extra, (unsigned long long) lbs,
              (unsigned long long) ((lbs << (2 + extra)) < 4096
                                      ? 4096
                                      : lbs << (2 + extra)),
              4ull << extra);
  else if (extra == 3 || extra == 4)
    spec_add (run,
              ",volume-iops=%u,volume-burst-iops=%u,volume-burst-credits=%u,"
              "volume-io-unit=%llu,volume-bandwidth=%uM%s",
              1000 * extra, 5000 * extra, 20 * extra,
              (unsigned long long) lbs << extra, 50 * extra,
              extra == 4 ? ",volume-burst-bandwidth=400M,volume-burst-bytes=1M"
                         : "");
}

/* Open the disk the input chose, every backend call through the
 * checking wrapper, and reset the shadow.
 */
static void
run_open (struct run *run)
{
  char err[BLKEMU_ERR_MAX];
  spec_base (run);
  spec_faults (run);
  spec_extras (run);
  /* 0: blkemu_io; 1: a timeline; 2: a timeline, source and sink. */
  run->way = take (&run->in, 3);
  if (getenv ("FUZZ_DEBUG")) /* which disk an artifact runs on */
    fprintf (stderr, "spec: %s (requests %s)\n", run->spec,
             (const char *[]){ "blocking", "on a timeline",
                               "on a timeline, taken and lent" }[run->way]);
  struct blkemu_disk *disk = run->disk =
    blkemu_disk_open_spec (run->spec, 0, NULL, err, sizeof err);
  if (!disk) {
    fprintf (stderr, "%s: %s\n", run->spec, err);
    abort ();
  }
  real_ops = disk->backend.ops;
  wrapper = *real_ops;
  wrapper.pread = w_pread;
  wrapper.pwrite = w_pwrite;
  disk->backend.ops = &wrapper;
  max_rw = run->policy == 2 ? 0 : run->mt_blocks * run->lbs;
  split_blocks = run->policy == 1 ? run->mt_blocks : 0;
  by_source = run->way == 2;
  if (by_source) {
    blkemu_disk_set_write_source (disk, take_write);
    if (blkemu_disk_lends_reads (disk))
      blkemu_disk_set_read_sink (disk, lend_read);
  }
  timeline = run->way ? blkemu_timeline_new (disk) : NULL;
  if (run->way && !timeline)
    abort ();
  memset (sh, 0, sizeof sh);
  nstuck = 0;
  read_lbs = run->lbs;
  next_version = 1;
  ngroups = 0;
  bool clean = !run->null_backend && !run->silent && !run->misdirect;
  /* Atomicity is checked where every acknowledged write is where the
   * shadow says (no silent faults) and the cache has something to undo.
   */
  run->atomic_check = run->cache && clean;
  /* Unreadable sectors where every read is checked and nothing else
   * fails a read (injected errors are off for the rest of the run once
   * error-mode=off is set).
   */
  run->bad_ok = clean;
  run->unit_blocks = disk->cfg.num[K_ATOMIC_UNIT] / run->lbs;
  run->check_data = !run->null_backend;
  run->last_zero_op = BLKEMU_OP_TRIM;
}

/* Byte accounting and latencies, the timeline's shard merged in; then
 * the disk goes.
 */
static void
run_close (struct run *run, uint64_t t_start)
{
  struct stats *st = timelines_stats_snapshot (run->disk);
  if (!st)
    abort ();
  for (int op = 0; op < BLKEMU_OP_COUNT; op++) {
    if ((op == BLKEMU_OP_READ || op == BLKEMU_OP_WRITE) &&
        st->op[op].bytes != run->ok_bytes[op]) {
      fprintf (stderr, "op %d: stats bytes %llu, served %llu\n", op,
               (unsigned long long) st->op[op].bytes,
               (unsigned long long) run->ok_bytes[op]);
      abort ();
    }
    if (st->op[op].lat_max_ns > now_ns - t_start) {
      fprintf (stderr, "op %d: latency %llu ns in a run of %llu ns\n", op,
               (unsigned long long) st->op[op].lat_max_ns,
               (unsigned long long) (now_ns - t_start));
      abort ();
    }
  }
  free (st);
  run->disk->backend.ops = real_ops;
  if (timeline)
    blkemu_timeline_free (timeline);
  timeline = NULL;
  blkemu_disk_close (run->disk);
}

/* ---- one step ------------------------------------------------------- */

struct step {
  int n;
  unsigned what; /* the switch in step_run */
  uint64_t b, nb, off, len;
  int r;
  /* The power goes while this step's request waits. */
  bool strike;
  /* A write the crash struck that may have been misdirected: its
   * version (0: none).
   */
  uint32_t struck_version;
};

/* The step's kind, its blocks and, for a strike, the crash to come. */
static void
step_choose (struct run *run, struct step *s)
{
  char err[BLKEMU_ERR_MAX];
  struct input *in = &run->in;
  s->what = take (in, 11);
  s->struck_version = 0;
  s->r = 0;
  checking = true;
  s->b = take (in, BLOCKS);
  s->nb = 1 + take (in, 24);
  if (s->b + s->nb > BLOCKS)
    s->nb = BLOCKS - s->b;
  s->off = s->b * run->lbs;
  s->len = s->nb * run->lbs;
  unsigned w = s->what;
  s->strike = w != 7 && w != 8 && w != 10 && take (in, 8) == 0;
  if (s->strike || w == 7 || w == 10) {
    crash_mode = (enum blkemu_crash_mode) take (in, BLKEMU_CRASH_MODE_COUNT);
    crash_seed = take (in, 256);
  }
  if (run->misdirect) {
    char pct[16];
    snprintf (pct, sizeof pct, "%u%%", run->faults ? 0 : run->misdirect);
    if (blkemu_disk_set (run->disk, "misdirected-write-probability", pct, err,
                         sizeof err) != 0)
      abort ();
  }
  if (s->strike) {
    crash_disk = run->disk;
    crash_then_power_on = take (in, 2);
    during_next_wait = crash_in_flight;
  }
}

/* A write, FUA when FUA; the shadow learns what it left. */
static void
step_write (struct run *run, struct step *s, bool fua)
{
  struct blkemu_disk *disk = run->disk;
  uint64_t b = s->b, nb = s->nb, lbs = run->lbs;
  uint32_t v = next_version++;
  for (uint64_t i = 0; i < nb; i++)
    fill (iobuf + i * lbs, lbs, b + i, v);
  uint64_t lost = silent_count (disk, LOST);
  uint64_t mis = silent_count (disk, MISDIRECTED);
  groups_touch (b, nb); /* whatever comes of it */
  s->r = io (disk, BLKEMU_OP_WRITE, iobuf, s->len, s->off,
             fua ? BLKEMU_FLAG_FUA : 0);
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr, "step %d: write v%u blocks %llu..%llu%s: %d\n", s->n, v,
             (unsigned long long) b, (unsigned long long) (b + nb),
             fua ? " FUA" : "", s->r);
  if (s->r == 0 && s->strike) {
    /* Done without waiting: the crash did not come (landed() must not
     * meet it either).
     */
    if (!during_next_wait)
      abort ();
    during_next_wait = NULL;
    s->strike = false;
  }
  if (s->r == 0) {
    run->ok_bytes[BLKEMU_OP_WRITE] += s->len;
    bool durable = run->cache && written_through (disk, s->len, fua);
    /* Acknowledged and lost: the blocks keep what they held. */
    bool kept = silent_count (disk, LOST) == lost;
    if (silent_count (disk, MISDIRECTED) != mis) {
      if (run->check_data)
        landed (disk, lbs, b, nb, v, durable, &run->ok_bytes[BLKEMU_OP_READ]);
      return;
    }
    for (uint64_t i = 0; kept && i < nb; i++) {
      medium_wrote (b + i, token (b + i, v), true, durable || !run->cache);
      written (b + i, token (b + i, v), durable);
    }
    if (kept && run->atomic_check)
      groups_add (b, nb, v, run->unit_blocks);
  }
  else if (s->strike && !during_next_wait) { /* lost, maybe, too */
    /* Misdirected, maybe: its own blocks may keep what they held. */
    struck (b, nb, v, run->cache,
            run->faults || run->silent & 2 || run->misdirect);
    s->struck_version = run->misdirect ? v : 0;
  }
  else if (s->r != EINVAL && s->r != EIO && !run->faults)
    abort ();
}

/* A read, compared with the shadow. */
static void
step_read (struct run *run, struct step *s)
{
  uint64_t b = s->b, nb = s->nb, lbs = run->lbs;
  bool any_bad = false;
  for (uint64_t i = 0; i < nb; i++)
    any_bad |= sh[b + i].bad;
  int r = s->r = read_checked (run->disk, iobuf, s->len, s->off,
                               &run->ok_bytes[BLKEMU_OP_READ]);
  if (any_bad && r != EIO && r != EINVAL) {
    fprintf (stderr,
             "step %d: read of blocks %llu..%llu over an unreadable one "
             "returned %d\n",
             s->n, (unsigned long long) b, (unsigned long long) (b + nb), r);
    abort ();
  }
  if (any_bad)
    return;
  if (r == -1)
    s->r = 0; /* served, not checkable */
  else if (r == 0) {
    for (uint64_t i = 0; run->check_data && i < nb; i++)
      if (token_of (iobuf + i * lbs, lbs) != sh[b + i].latest) {
        fprintf (stderr, "block %llu: read token %u, wrote %u\n",
                 (unsigned long long) (b + i), token_of (iobuf + i * lbs, lbs),
                 sh[b + i].latest);
        abort ();
      }
  }
  else if (!run->offline && !run->faults && r != EINVAL &&
           !(s->strike && !during_next_wait)) {
    fprintf (stderr, "step %d: read of blocks %llu..%llu returned %d\n", s->n,
             (unsigned long long) b, (unsigned long long) (b + nb), r);
    abort ();
  }
}

static void
step_flush (struct run *run, struct step *s)
{
  s->r = io (run->disk, BLKEMU_OP_FLUSH, NULL, 0, 0, 0);
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr, "step %d: flush: %d\n", s->n, s->r);
  if (s->r != 0)
    return;
  for (int i = 0; i < BLOCKS; i++) {
    sh[i].durable = sh[i].latest;
    sh[i].ncand = 0;
  }
  ngroups = 0;
  bad_flushed ();
}

/* Write-zeroes or trim. */
static void
step_zero (struct run *run, struct step *s)
{
  checking = false;
  run->last_zero_op = take (&run->in, 2) ? BLKEMU_OP_ZERO : BLKEMU_OP_TRIM;
  groups_touch (s->b, s->nb);
  s->r = io (run->disk, run->last_zero_op, NULL, s->len, s->off, 0);
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr, "step %d: %s blocks %llu..%llu: %d\n", s->n,
             run->last_zero_op == BLKEMU_OP_ZERO ? "write-zeroes" : "trim",
             (unsigned long long) s->b, (unsigned long long) (s->b + s->nb),
             s->r);
  if (s->r == 0)
    for (uint64_t i = 0; i < s->nb; i++) {
      medium_wrote (s->b + i, 0, run->last_zero_op == BLKEMU_OP_ZERO,
                    !run->cache);
      written (s->b + i, 0, false);
    }
  else if (s->strike && !during_next_wait)
    struck (s->b, s->nb, 0, run->cache, run->faults);
}

/* A runtime change; the harness's limits follow what took. */
static void
step_set (struct run *run)
{
  static const char *const sets[][2] = {
    { "oversize", "error" },      { "oversize", "split" },
    { "max-transfer", "64K" },    { "slowdown", "3" },
    { "slowdown", "1" },          { "cache-size", "8K" },
    { "error-mode", "off" },      { "latency-dist", "lognormal" },
    { "latency-jitter", "50us" },
  };
  char err[BLKEMU_ERR_MAX];
  unsigned k = take (&run->in, sizeof sets / sizeof sets[0]);
  if (blkemu_disk_set (run->disk, sets[k][0], sets[k][1], err, sizeof err))
    return;
  uint64_t mt = run->disk->cfg.num[K_MAX_TRANSFER];
  if (k == 0 || k == 1 || (k == 2 && max_rw))
    max_rw = mt;
  if (k == 0)
    split_blocks = 0;
  if (k == 1 || (k == 2 && split_blocks))
    split_blocks = mt / run->lbs;
  if (k == 6)
    run->faults = 0;
}

/* A stuck bit in the step's first block (or all cleared when the run's
 * table is full).
 */
static void
step_stuck (struct run *run, struct step *s)
{
  char err[BLKEMU_ERR_MAX];
  if (nstuck == STUCK_RUN_MAX) {
    blkemu_disk_stuck_clear (run->disk);
    nstuck = 0;
    if (getenv ("FUZZ_DEBUG"))
      fprintf (stderr, "step %d: stuck clear\n", s->n);
    return;
  }
  uint64_t at = s->off + take (&run->in, (unsigned) run->lbs);
  unsigned bit = take (&run->in, 8);
  unsigned value = take (&run->in, 2);
  if (blkemu_disk_stuck_add (run->disk, at, bit, value, err, sizeof err)) {
    fprintf (stderr, "stuck add: %s\n", err);
    abort ();
  }
  unsigned i = 0;
  while (i < nstuck && !(stuck_bits[i].byte == at && stuck_bits[i].bit == bit))
    i++;
  stuck_bits[i].byte = at; /* a bit stuck again takes the value */
  stuck_bits[i].bit = bit;
  stuck_bits[i].value = value;
  nstuck += i == nstuck;
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr, "step %d: stuck add byte %llu bit %u = %u\n", s->n,
             (unsigned long long) at, bit, value);
}

/* An unaligned or wild request, unreadable sectors or a stuck bit. */
static void
step_odd (struct run *run, struct step *s)
{
  char err[BLKEMU_ERR_MAX];
  unsigned kind = take (&run->in, 3);
  if (kind == 2 && run->check_data) {
    step_stuck (run, s);
    return;
  }
  if (kind == 1 && run->bad_ok && !run->faults) {
    if (blkemu_disk_bad_add (run->disk, s->off, s->len, err, sizeof err)) {
      fprintf (stderr, "bad add: %s\n", err);
      abort ();
    }
    for (uint64_t i = 0; i < s->nb; i++)
      mark_bad (s->b + i);
    if (getenv ("FUZZ_DEBUG"))
      fprintf (stderr, "step %d: bad add blocks %llu..%llu\n", s->n,
               (unsigned long long) s->b, (unsigned long long) (s->b + s->nb));
    return;
  }
  s->r = io (run->disk, BLKEMU_OP_READ, iobuf, run->lbs,
             s->off + 1 + take (&run->in, 511), 0);
  if (s->r != EINVAL)
    abort ();
}

static void
step_run (struct run *run, struct step *s)
{
  switch (s->what) {
  case 0:
  case 1:
  case 2: step_write (run, s, s->what == 2); break;
  case 3:
  case 4: step_read (run, s); break;
  case 5: step_flush (run, s); break;
  case 6: step_zero (run, s); break;
  case 7: /* crash, power on, check */
    inside_crash = 1;
    crash_now (run->disk);
    inside_crash = 0;
    break;
  case 8: step_set (run); break;
  case 10: /* views after views, then power-on or the crash */
    /* Clean data only: faults and silent ones have their own checks. */
    if (run->check_data && !run->faults && !run->silent && !run->misdirect)
      views_after_views (run->disk, run->lbs, run->cache, crash_mode,
                         crash_seed, s->b, s->nb, take (&run->in, 2),
                         run->ok_bytes);
    break;
  default: step_odd (run, s); break;
  }
}

/* ---- after a crash -------------------------------------------------- */

/* What the scan of every block after a crash knows and finds. */
struct scan {
  /* An interrupted crash leaves a struck write's (or write-zeroes')
   * blocks unreadable: [LO, HI).
   */
  uint64_t lo, hi;
  /* An injected error fails a write before it reaches the medium, and a
   * write the drive was losing never reached it.
   */
  bool maybe;
  bool interrupted;
  /* A struck write that may have been misdirected: where it landed,
   * once seen (its first unreadable block in mode interrupted, its first
   * block of data elsewhere otherwise); blocks of its data seen at home
   * and away.
   */
  uint64_t mis_at, seen_home, seen_away;
  uint32_t after[BLOCKS];
};

/* Version V read at block I after the crash: one the shadow allows, or
 * the struck write's data where it may have landed; it becomes the
 * block's shadow.
 */
static void
scan_legal (struct run *run, const struct step *s, struct scan *sc, uint64_t i,
            uint32_t v)
{
  bool legal = run->cache
                 ? may_hold (&sh[i], v)
                 : v == sh[i].latest || (sh[i].has_alt && v == sh[i].alt);
  if (s->struck_version && v != 0 && v != UINT32_MAX &&
      v / BLOCKS == s->struck_version) {
    if (v % BLOCKS == i)
      sc->seen_home++;
    else {
      /* Its data for block v % BLOCKS, NB blocks or fewer from home: one
       * landing place for all of it.
       */
      uint64_t at = i - (v % BLOCKS - s->b);
      if (sc->mis_at == UINT64_MAX)
        sc->mis_at = at;
      legal = at == sc->mis_at && at != s->b && i >= at && i < at + s->nb;
      sc->seen_away++;
    }
  }
  if (!legal) {
    fprintf (stderr,
             "block %llu after crash: token %u (durable %u, latest %u, "
             "cache %d)\n",
             (unsigned long long) i, v, sh[i].durable, sh[i].latest,
             run->cache);
    abort ();
  }
  sh[i].latest = sh[i].durable = v;
  sh[i].ncand = 0;
  sh[i].has_alt = false;
  sc->after[i] = v;
}

/* Block I after the crash: readable exactly when it should be, healed if
 * not, holding a legal version, which becomes its shadow's.
 */
static void
scan_block (struct run *run, const struct step *s, struct scan *sc, uint64_t i)
{
  char err[BLKEMU_ERR_MAX];
  uint64_t lbs = run->lbs, *rd = &run->ok_bytes[BLKEMU_OP_READ];
  /* Read block by block: every length passes max-transfer. */
  int rr = read_checked (run->disk, iobuf, lbs, i * lbs, rd);
  if (rr == -1)
    abort (); /* no crash waits here; 16 flips in a row: > 20%^16 */
  if (sc->interrupted && s->struck_version && rr == EIO && sc->hi == 0) {
    /* The head was writing here: home or the wrong place. */
    sc->lo = i;
    sc->hi = i + s->nb;
    if (sc->hi > BLOCKS)
      abort ();
    if (i != s->b)
      sc->mis_at = i;
  }
  bool unreadable = i >= sc->lo && i < sc->hi;
  if (unreadable && sc->maybe && rr == 0)
    unreadable = false;
  /* A bad mark outside the struck run: judged once the block's version is
   * read (below).
   */
  bool marked = sh[i].marked && !unreadable;
  if (marked)
    unreadable = rr == EIO;
  if (unreadable != (rr == EIO)) {
    fprintf (stderr,
             "block %llu after an interrupted crash: read returned %d "
             "(struck blocks %llu..%llu)\n",
             (unsigned long long) i, rr, (unsigned long long) sc->lo,
             (unsigned long long) sc->hi);
    abort ();
  }
  if (unreadable) {
    /* Healed without writing: the block holds what the medium has. */
    if (blkemu_disk_bad_clear (run->disk, i * lbs, lbs, err, sizeof err) ||
        read_checked (run->disk, iobuf, lbs, i * lbs, rd))
      abort ();
  }
  else if (rr != 0)
    abort ();
  uint32_t v = token_of (iobuf, lbs);
  int want_eio = marked ? bad_after_crash (&sh[i], v) : -1;
  if (want_eio >= 0 && want_eio != (rr == EIO)) {
    fprintf (stderr,
             "block %llu after the crash: version %u %s (marked bad; %s "
             "since)\n",
             (unsigned long long) i, v / BLOCKS,
             rr == EIO ? "unreadable" : "readable",
             sh[i].bad ? "not healed" : "healed by cached writes");
    abort ();
  }
  bad_reset (&sh[i]);
  scan_legal (run, s, sc, i, v);
}

/* A struck write that may have been misdirected: home or away, never
 * both; without the cache all of it where it went (its data moved before
 * it waited); in mode interrupted the unreadable run found it.
 */
static void
scan_struck (const struct run *run, const struct step *s,
             const struct scan *sc)
{
  bool away = sc->mis_at != UINT64_MAX;
  uint64_t b = s->b, nb = s->nb;
  if ((away && sc->seen_home) ||
      (!run->cache && !away && sc->seen_home != nb) ||
      (!run->cache && away && sc->seen_away != nb) ||
      (sc->interrupted && (sc->hi == 0 || (away && sc->lo != sc->mis_at)))) {
    fprintf (stderr,
             "struck write of blocks %llu..%llu (misdirected maybe): %llu "
             "blocks of it at home, %llu away (at %lld), cache %d, "
             "unreadable %llu..%llu\n",
             (unsigned long long) b, (unsigned long long) (b + nb),
             (unsigned long long) sc->seen_home,
             (unsigned long long) sc->seen_away,
             away ? (long long) sc->mis_at : -1LL, run->cache,
             (unsigned long long) sc->lo, (unsigned long long) sc->hi);
    abort ();
  }
  if (away && getenv ("FUZZ_DEBUG"))
    fprintf (stderr,
             "struck and misdirected: blocks %llu..%llu landed at %llu "
             "(%llu blocks kept)\n",
             (unsigned long long) b, (unsigned long long) (b + nb),
             (unsigned long long) sc->mis_at,
             (unsigned long long) sc->seen_away);
}

/* After the step: a struck request never reports success (it did, after
 * a crash had already rolled its data back; one refused before it waited
 * was not struck).  After a crash every block holds a legal version.
 */
static void
step_after (struct run *run, struct step *s)
{
  char err[BLKEMU_ERR_MAX];
  bool crashed = s->what == 7, powered = false;
  struct scan sc = { .mis_at = UINT64_MAX };
  sc.maybe = run->faults != 0 || (run->silent & 2);
  sc.interrupted =
    s->strike && !during_next_wait && crash_mode == BLKEMU_CRASH_INTERRUPTED &&
    (s->what <= 2 || (s->what == 6 && run->last_zero_op == BLKEMU_OP_ZERO));
  if (sc.interrupted && !s->struck_version) {
    sc.lo = s->b;
    sc.hi = s->b + s->nb;
  }
  if (s->strike && during_next_wait)
    during_next_wait = NULL;
  else if (s->strike) {
    crashed = true;
    powered = crash_then_power_on;
    if (s->r == 0 || (s->r != EIO && !run->faults)) {
      fprintf (stderr, "step %d: op %u in flight across a crash returned %d\n",
               s->n, s->what, s->r);
      abort ();
    }
  }
  if (!crashed)
    return;
  /* Offline until power-on. */
  run->offline = !powered;
  if (!powered) {
    if (io (run->disk, BLKEMU_OP_READ, iobuf, run->lbs, 0, 0) != EIO)
      abort ();
    blkemu_disk_power_on (run->disk);
  }
  run->offline = false;
  if (blkemu_disk_set (run->disk, "error-mode", "off", err, sizeof err) != 0)
    abort ();
  run->faults = 0;
  checking = true;
  for (uint64_t i = 0; run->check_data && i < BLOCKS; i++)
    scan_block (run, s, &sc, i);
  if (run->check_data)
    groups_check (sc.after, "after the crash");
  ngroups = 0;
  if (s->struck_version && run->check_data)
    scan_struck (run, s, &sc);
  /* Without data to check (backend=null) the blocks were not read and
   * healed one by one: heal them all.
   */
  if ((sc.hi > sc.lo || sc.interrupted) &&
      blkemu_disk_bad_clear (run->disk, 0, BLOCKS * run->lbs, err, sizeof err))
    abort ();
}

/* ---- one input ------------------------------------------------------ */

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static struct run run;
  memset (&run, 0, sizeof run);
  run.in = (struct input){ data, size };
  run_open (&run);
  uint64_t t_start = now_ns;
  size_t heap_base = __sanitizer_get_current_allocated_bytes ();
  heap_peak = 0;
  for (int n = 0; n < 64 && run.in.n > 0; n++) {
    heap_check (heap_base, BLOCKS * run.lbs, n);
    struct step s = { .n = n };
    step_choose (&run, &s);
    step_run (&run, &s);
    step_after (&run, &s);
  }
  heap_check (heap_base, BLOCKS * run.lbs, 64);
  if (getenv ("FUZZ_DEBUG"))
    fprintf (stderr, "heap: at most %zu bytes above the open (disk %llu)\n",
             heap_peak, (unsigned long long) (BLOCKS * run.lbs));
  run_close (&run, t_start);
  return 0;
}
