/* The volatile write cache's undo log: see wcache.h. */
#include "wcache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct undo {
  struct undo *newer, *older;
  uint64_t offset, len; /* the range this entry would restore */
  uint64_t seq;
  bool zeros;    /* the old contents were all zero: no data */
  bool atomic;   /* an atomic write's: a crash keeps it whole or loses it */
  uint32_t nbad; /* the saved sectors that were unreadable */
  struct bad_range *bad; /* (rare: NULL when none) */
  unsigned char data[];
};

void
wcache_init (struct wcache *w, const struct backend *backend,
             struct badranges *bad)
{
  memset (w, 0, sizeof *w);
  w->backend = backend;
  w->bad = bad;
  pthread_mutex_init (&w->lock, NULL);
}

static void
unlink_entry (struct wcache *w, struct undo *u)
{
  if (u->newer)
    u->newer->older = u->older;
  else
    w->newest = u->older;
  if (u->older)
    u->older->newer = u->newer;
  else
    w->oldest = u->newer;
  w->bytes -= u->len;
  w->entries--;
  free (u->bad);
  free (u);
}

/* Which of [OFFSET, OFFSET + LEN) was unreadable when U saved it: into
 * U->bad (left empty when none, or if it cannot allocate: then a crash
 * puts back readable data, as before).
 */
static void
note_unreadable (struct wcache *w, struct undo *u)
{
  uint64_t end = u->offset + u->len;
  if (!w->bad || !badranges_hit (w->bad, u->offset, u->len))
    return;
  size_t total = 0;
  struct bad_range one;
  badranges_list (w->bad, u->offset, &one, 1, &total);
  struct bad_range *r = calloc (total ? total : 1, sizeof *r);
  if (!r)
    return;
  size_t n = badranges_list (w->bad, u->offset, r, total, NULL), k = 0;
  for (size_t i = 0; i < n && r[i].start < end; i++) {
    uint64_t s = r[i].start > u->offset ? r[i].start : u->offset;
    uint64_t e = r[i].end < end ? r[i].end : end;
    if (s < e)
      r[k++] = (struct bad_range){ s, e };
  }
  if (k == 0) {
    free (r);
    return;
  }
  u->bad = r;
  u->nbad = (uint32_t) k;
}

/* A copy of U's unreadable ranges for a piece cut from it (NULL, 0 when
 * none or out of memory).
 */
static void
copy_unreadable (const struct undo *u, struct undo *to)
{
  to->bad = NULL;
  to->nbad = 0;
  if (!u->nbad || !(to->bad = malloc (u->nbad * sizeof *u->bad)))
    return;
  memcpy (to->bad, u->bad, u->nbad * sizeof *u->bad);
  to->nbad = u->nbad;
}

static void
drop_older_than (struct wcache *w, uint64_t seq)
{
  while (w->oldest && w->oldest->seq < seq)
    unlink_entry (w, w->oldest);
}

void
wcache_destroy (struct wcache *w)
{
  drop_older_than (w, UINT64_MAX);
  for (size_t i = 0; i < sizeof w->scratch / sizeof w->scratch[0]; i++)
    free (w->scratch[i].p);
  pthread_mutex_destroy (&w->lock);
}

static void
push (struct wcache *w, struct undo *u)
{
  u->seq = w->next_seq++;
  u->older = w->newest;
  u->newer = NULL;
  if (w->newest)
    w->newest->newer = u;
  else
    w->oldest = u;
  w->newest = u;
  w->entries++;
  w->bytes += u->len;
}

/* Destage the oldest entries until the log fits LIMIT bytes.  A write
 * whose entry a FUA write cut in pieces (make_durable: same seq, next
 * to each other) is destaged whole: destaging one piece would leave the
 * write half on the medium while a crash called it lost (and an atomic
 * one torn).
 */
static void
trim_to (struct wcache *w, uint64_t limit)
{
  while (w->oldest && w->bytes > limit) {
    uint64_t seq = w->oldest->seq;
    while (w->oldest && w->oldest->seq == seq)
      unlink_entry (w, w->oldest);
  }
}

/* U's data now holds only U->len bytes: give the rest back (a FUA
 * write inside a large cached one would otherwise keep every piece's
 * old allocation, without bound).  Returns U where it now lives.
 */
static struct undo *
shrink_entry (struct wcache *w, struct undo *u)
{
  if (u->zeros)
    return u;
  struct undo *n = realloc (u, sizeof *u + u->len);
  if (!n || n == u)
    return u;
  if (n->newer)
    n->newer->older = n;
  else
    w->newest = n;
  if (n->older)
    n->older->newer = n;
  else
    w->oldest = n;
  return n;
}

/* [START, END) reached the media: no entry may restore it any more.
 * Entries are cut at the range; one that holds it strictly inside is
 * split in two (same age).  If the split cannot allocate, its tail is
 * treated as destaged: less is lost by a crash, nothing durable is.
 */
static void
make_durable (struct wcache *w, uint64_t start, uint64_t end)
{
  struct undo *u = w->newest;
  while (u) {
    struct undo *older = u->older;
    uint64_t a = u->offset, b = u->offset + u->len;
    if (end <= a || b <= start) {
      u = older;
      continue;
    }
    if (start <= a && b <= end) { /* all of it */
      unlink_entry (w, u);
      u = older;
      continue;
    }
    if (a < start && end < b) { /* the middle: split */
      struct undo *tail = malloc (sizeof *tail + (u->zeros ? 0 : b - end));
      if (tail) {
        *tail = (struct undo){ .offset = end,
                               .len = b - end,
                               .seq = u->seq,
                               .zeros = u->zeros,
                               .atomic = u->atomic };
        copy_unreadable (u, tail);
        if (!u->zeros)
          memcpy (tail->data, u->data + (end - a), b - end);
        tail->newer = u->newer;
        tail->older = u;
        if (u->newer)
          u->newer->older = tail;
        else
          w->newest = tail;
        u->newer = tail;
        w->entries++;
      }
      else
        w->bytes -= b - end;
      u->len = start - a;
      w->bytes -= end - start;
      shrink_entry (w, u);
    }
    else if (a < start) { /* its tail */
      w->bytes -= b - start;
      u->len = start - a;
      shrink_entry (w, u);
    }
    else { /* its head */
      if (!u->zeros)
        memmove (u->data, u->data + (end - a), b - end);
      w->bytes -= end - a;
      u->offset = end;
      u->len = b - end;
      shrink_entry (w, u);
    }
    u = older;
  }
}

static bool
all_zero (const unsigned char *p, uint64_t len)
{
  return len == 0 || (p[0] == 0 && memcmp (p, p + 1, len - 1) == 0);
}

int
wcache_write (struct wcache *w, enum blkemu_op op, void *buf, uint64_t len,
              uint64_t offset, unsigned flags, bool write_through,
              uint64_t limit)
{
  bool durable = write_through || len > limit;
  struct undo *u = NULL;
  if (!durable) {
    u = malloc (sizeof *u + len);
    if (!u)
      return ENOMEM;
    *u = (struct undo){ .offset = offset,
                        .len = len,
                        .atomic = flags & BLKEMU_FLAG_ATOMIC };
  }

  pthread_mutex_lock (&w->lock);
  int err = w->frozen ? EIO : 0;
  if (u && err == 0) {
    err = backend_io (w->backend, BLKEMU_OP_READ, u->data, len, offset, 0);
    if (err == 0)
      note_unreadable (w, u);
    if (err == 0 && all_zero (u->data, len)) {
      struct undo *small = realloc (u, sizeof *u);
      u = small ? small : u;
      u->zeros = true;
    }
  }
  if (err == 0)
    err = backend_io (w->backend, op, buf, len, offset, flags);
  if (err == 0 && durable)
    make_durable (w, offset, offset + len);
  else if (err == 0) {
    push (w, u);
    u = NULL;
    trim_to (w, limit);
  }
  pthread_mutex_unlock (&w->lock);
  free (u);
  return err;
}

void
wcache_settle (struct wcache *w, uint64_t offset, uint64_t len)
{
  pthread_mutex_lock (&w->lock);
  make_durable (w, offset, offset + len);
  pthread_mutex_unlock (&w->lock);
}

uint64_t
wcache_generation (struct wcache *w)
{
  return __atomic_load_n (&w->generation, __ATOMIC_ACQUIRE);
}

int
wcache_flush_run (struct wcache *w, uint64_t generation_at_arrival)
{
  /* Everything logged before the backend flush starts is covered by it. */
  pthread_mutex_lock (&w->lock);
  uint64_t covered = w->next_seq;
  pthread_mutex_unlock (&w->lock);

  int err = backend_io (w->backend, BLKEMU_OP_FLUSH, NULL, 0, 0, 0);

  pthread_mutex_lock (&w->lock);
  /* A crash since arrival rolled back (or is about to roll back) what
   * this flush was to make durable: it did not complete before the
   * power went.  wcache_crash bumps the generation before it takes the
   * lock, so a flush that sees the old one here finishes first.
   */
  if (err == 0 && wcache_generation (w) != generation_at_arrival)
    err = EIO;
  if (err == 0)
    drop_older_than (w, covered);
  pthread_mutex_unlock (&w->lock);
  return err;
}

/* ---- crash states ----------------------------------------------------
 * Each block ends up holding the version written by the newest write
 * that persisted there, or its flushed version when none did.  In the
 * undo log's terms, with the entries numbered newest first (0 = newest):
 * a block covered by a kept piece with the smallest number K takes the
 * old data of the oldest lost piece newer than K -- the largest number
 * below K -- or stays as it is when there is none.  lose-all keeps
 * nothing; subset keeps each write whole or not at all; torn may keep
 * only some of a write's atomic units.  Decisions are a hash of (seed,
 * the write's sequence number, the unit's index), so one seed on one
 * history gives one state; every decision is known before the walk, so
 * the state is computed offline: one sort and a sweep over the pieces,
 * with two Fenwick trees over the entry numbers for "first kept" and
 * "last lost below it" -- arrays, no allocation per piece.
 */

static uint64_t
mix64 (uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t
draw (uint64_t seed, uint64_t seq, uint64_t unit)
{
  return mix64 (mix64 (seed ^ mix64 (seq)) ^ unit);
}

enum fate { FATE_LOST, FATE_KEPT, FATE_TORN };

/* What becomes of write SEQ, the INDEXth cached one (oldest first), as a
 * whole (torn: decided per unit).
 */
static enum fate
write_fate (const struct wcache_crash *c, uint64_t seq, uint64_t index,
            bool tearable)
{
  uint64_t d = draw (c->seed, seq, UINT64_MAX);
  switch (c->mode) {
  case BLKEMU_CRASH_SUBSET: return d & 1 ? FATE_KEPT : FATE_LOST;
  case BLKEMU_CRASH_PICK:
    return index < 64 && (c->seed >> index & 1) ? FATE_KEPT : FATE_LOST;
  case BLKEMU_CRASH_TORN:
  case BLKEMU_CRASH_INTERRUPTED:
    if (tearable && d % 3 == 2)
      return FATE_TORN;
    return d % 3 == 1 || (!tearable && d % 3 == 2) ? FATE_KEPT : FATE_LOST;
  default: return FATE_LOST;
  }
}

/* A piece of an entry that reached the medium (KEEP) or not. */
struct piece {
  uint64_t start, end;
  uint32_t entry; /* its entry's number, 0 = newest */
  bool keep;
};

/* A Fenwick tree over entry numbers: which are active at the sweep's
 * position, with "the first" and "the last below K" in O(log n).
 */
struct fenwick {
  uint32_t *t;
  uint32_t n, top; /* TOP: the highest power of two <= N */
};

static void
fw_add (struct fenwick *f, uint32_t i, int32_t d)
{
  for (i++; i <= f->n; i += i & -i)
    f->t[i] += (uint32_t) d;
}

static uint32_t
fw_prefix (const struct fenwick *f, uint32_t k) /* active in [0, k) */
{
  uint32_t s = 0;
  for (; k; k -= k & -k)
    s += f->t[k];
  return s;
}

/* The active number with S active at or below it (S >= 1). */
static uint32_t
fw_find (const struct fenwick *f, uint32_t s)
{
  uint32_t pos = 0;
  for (uint32_t step = f->top; step; step >>= 1)
    if (pos + step <= f->n && f->t[pos + step] < s) {
      pos += step;
      s -= f->t[pos];
    }
  return pos; /* 0-based: the (pos+1)-th slot */
}

static int
piece_by_start (const void *a, const void *b)
{
  const struct piece *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* An ordered region's cut: its writes below AT reach the medium, the
 * rest do not.
 */
struct cut {
  uint64_t region, at;
};

struct walk {
  struct wcache *w;
  struct wcache_crash *c;
  const struct undo **entry; /* by number, newest first */
  struct piece *p;
  size_t np, cap;
  struct cut *cuts; /* by region, one each: the regions that lose some */
  size_t ncuts;
  uint64_t write_index; /* the current write's, oldest first */
  int err;
};

/* Scratch array I of the cache, at least SIZE bytes (LOCK held). */
static void *
scratch (struct wcache *w, int i, size_t size)
{
  if (w->scratch[i].size < size) {
    size_t want = size + size / 2;
    void *p = realloc (w->scratch[i].p, want);
    if (!p)
      return NULL;
    w->scratch[i].p = p;
    w->scratch[i].size = want;
  }
  return w->scratch[i].p;
}

enum { SCRATCH_ENTRIES, SCRATCH_PIECES, SCRATCH_SWEEP, SCRATCH_CUTS };

static bool
add_piece (struct walk *wk, uint64_t start, uint64_t end, uint32_t entry,
           bool keep)
{
  if (wk->np == wk->cap) {
    size_t cap = wk->cap ? wk->cap * 2 : 1024;
    struct piece *p = scratch (wk->w, SCRATCH_PIECES, cap * sizeof *p);
    if (!p)
      return false;
    wk->p = p;
    wk->cap = cap;
  }
  wk->p[wk->np++] = (struct piece){ start, end, entry, keep };
  return true;
}

/* Put back entry U's old contents over [START, END): on the medium, or
 * into the caller's sink (a crash view).
 */
static void
restore (struct walk *wk, const struct undo *u, uint64_t start, uint64_t end)
{
  const struct backend *b = wk->w->backend;
  struct wcache_crash *c = wk->c;
  const void *data = u->zeros ? NULL : u->data + (start - u->offset);
  int r;
  if (c->sink)
    r = c->sink (c->sink_arg, start, end - start, data);
  else if (!data)
    r = backend_io (b, BLKEMU_OP_ZERO, NULL, end - start, start, 0);
  else
    r = backend_io (b, BLKEMU_OP_WRITE, (void *) data, end - start, start, 0);
  if (r && !wk->err)
    wk->err = r;
  c->lost_bytes += end - start;
  if (c->undone)
    c->undone (c->arg, start, end - start);
}

/* What was unreadable when lost write U came is unreadable again over
 * [START, END): the write that healed it never reached the medium.
 */
static void
unheal (struct walk *wk, const struct undo *u, uint64_t start, uint64_t end)
{
  struct wcache_crash *c = wk->c;
  for (uint32_t i = 0; c->unreadable && i < u->nbad; i++) {
    uint64_t s = u->bad[i].start > start ? u->bad[i].start : start;
    uint64_t e = u->bad[i].end < end ? u->bad[i].end : end;
    if (s < e)
      badranges_add (c->unreadable, s, e - s);
  }
}

static bool
tearable (const struct undo *u, uint64_t unit)
{
  return !u->atomic && u->offset / unit != (u->offset + u->len - 1) / unit;
}

static int
cut_by_region (const void *a, const void *b)
{
  const struct cut *x = a, *y = b;
  if (x->region != y->region)
    return x->region < y->region ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Each ordered region's cut: the start of its oldest write the mode does
 * not keep whole, or the unit boundary a torn one is cut at.  In a
 * sequential zone a later write lies higher (a reset or finish empties
 * the log of the zone), so the oldest is the lowest.  Returns 0 or
 * ENOMEM.
 */
static int
region_cuts (struct walk *wk, uint64_t nwrites)
{
  struct wcache *w = wk->w;
  const struct wcache_crash *c = wk->c;
  uint64_t unit = c->unit ? c->unit : 1;
  struct cut *cuts =
    scratch (w, SCRATCH_CUTS, (w->entries ? w->entries : 1) * sizeof *cuts);
  if (!cuts)
    return ENOMEM;
  size_t n = 0;
  uint64_t newer_writes = 0, index = 0;
  for (struct undo *u = w->newest; u; u = u->older) {
    if (!u->newer || u->newer->seq != u->seq)
      index = nwrites - 1 - newer_writes++;
    uint64_t r = c->region (c->region_arg, u->offset);
    if (r == UINT64_MAX)
      continue;
    enum fate f = write_fate (c, u->seq, index, tearable (u, unit));
    if (f == FATE_KEPT)
      continue;
    uint64_t at = u->offset;
    if (f == FATE_TORN) {
      /* Kept up to one of the unit boundaries inside it. */
      uint64_t first = u->offset / unit + 1;
      uint64_t inner = (u->offset + u->len - 1) / unit - u->offset / unit;
      at = (first + draw (c->seed, u->seq, u->offset) % inner) * unit;
    }
    cuts[n++] = (struct cut){ r, at };
  }
  qsort (cuts, n, sizeof *cuts, cut_by_region);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (k == 0 || cuts[k - 1].region != cuts[i].region)
      cuts[k++] = cuts[i];
  wk->cuts = cuts;
  wk->ncuts = k;
  return 0;
}

/* Entry U of an ordered region REGION: kept below the region's cut. */
static bool
ordered_pieces (struct walk *wk, uint32_t i, const struct undo *u,
                uint64_t region, bool *any_kept, bool *any_lost)
{
  uint64_t start = u->offset, end = u->offset + u->len, at = end;
  struct cut key = { region, 0 };
  const struct cut *found = NULL;
  for (size_t lo = 0, hi = wk->ncuts; lo < hi && !found;) {
    size_t mid = lo + (hi - lo) / 2;
    if (wk->cuts[mid].region == region)
      found = &wk->cuts[mid];
    else if (cut_by_region (&key, &wk->cuts[mid]) < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (found)
    at = found->at < start ? start : found->at < end ? found->at : end;
  if (at > start) {
    *any_kept = true;
    if (!add_piece (wk, start, at, i, true))
      return false;
  }
  if (at < end) {
    *any_lost = true;
    if (!add_piece (wk, at, end, i, false))
      return false;
  }
  return true;
}

/* Entry number I, U: its pieces, and whether any was kept or lost. */
static bool
entry_pieces (struct walk *wk, uint32_t i, const struct undo *u,
              bool *any_kept, bool *any_lost)
{
  const struct wcache_crash *c = wk->c;
  uint64_t start = u->offset, end = u->offset + u->len;
  uint64_t unit = c->unit ? c->unit : 1;
  if (c->region) {
    uint64_t r = c->region (c->region_arg, start);
    if (r != UINT64_MAX)
      return ordered_pieces (wk, i, u, r, any_kept, any_lost);
  }
  enum fate f = write_fate (c, u->seq, wk->write_index, tearable (u, unit));
  if (f != FATE_TORN) {
    *(f == FATE_KEPT ? any_kept : any_lost) = true;
    return add_piece (wk, start, end, i, f == FATE_KEPT);
  }
  for (uint64_t a = start; a < end;) {
    uint64_t b = (a / unit + 1) * unit;
    b = b < end ? b : end;
    bool keep = draw (c->seed, u->seq, a / unit) & 1;
    *(keep ? any_kept : any_lost) = true;
    /* Neighbouring units with one fate are one piece. */
    if (wk->np && wk->p[wk->np - 1].entry == i && wk->p[wk->np - 1].end == a &&
        wk->p[wk->np - 1].keep == keep)
      wk->p[wk->np - 1].end = b;
    else if (!add_piece (wk, a, b, i, keep))
      return false;
    a = b;
  }
  return true;
}

static int
piece_by_end (const void *a, const void *b)
{
  const struct piece *x = *(struct piece *const *) a;
  const struct piece *y = *(struct piece *const *) b;
  return x->end < y->end ? -1 : x->end > y->end;
}

static uint32_t
highest_pow2 (uint32_t n)
{
  uint32_t t = 1;
  while (t <= n / 2)
    t *= 2;
  return t;
}

/* The sweep: at each stretch between two piece boundaries, the first
 * kept entry K and the last lost one below it decide what is put back
 * (neighbouring stretches of one entry are put back at once), and every
 * lost entry below K that healed unreadable sectors puts them back.
 */
static int
sweep (struct walk *wk, uint32_t nentries)
{
  size_t n = wk->np;
  struct piece *p = wk->p;
  /* One block: BYEND, then ACTIVE[e] (entry e's piece at the position:
   * an entry's pieces never overlap each other; the trees count exactly
   * these), then the three trees (kept, lost, lost that healed).
   */
  size_t ptrs = n + nentries, words = 3 * ((size_t) nentries + 1);
  char *block = scratch (wk->w, SCRATCH_SWEEP,
                         ptrs * sizeof (void *) + words * sizeof (uint32_t));
  if (!block)
    return ENOMEM;
  memset (block + n * sizeof (void *), 0,
          nentries * sizeof (void *) + words * sizeof (uint32_t));
  struct piece **byend = (struct piece **) block;
  const struct piece **active = (const struct piece **) (byend + n);
  uint32_t *t = (uint32_t *) (active + nentries);
  struct fenwick kept = { t, nentries, highest_pow2 (nentries) };
  struct fenwick lost = { t + nentries + 1, nentries, kept.top };
  /* The lost ones that healed unreadable sectors (few: NBAD > 0). */
  struct fenwick healers = { t + 2 * (nentries + 1), nentries, kept.top };
  qsort (p, n, sizeof *p, piece_by_start);
  for (size_t i = 0; i < n; i++)
    byend[i] = &p[i];
  qsort (byend, n, sizeof *byend, piece_by_end);

  size_t si = 0, ei = 0;
  const struct undo *run = NULL; /* the stretch being put back */
  uint64_t run_start = 0, run_end = 0;
  while (ei < n) {
    uint64_t pos =
      si < n && p[si].start < byend[ei]->end ? p[si].start : byend[ei]->end;
    for (; ei < n && byend[ei]->end == pos; ei++) {
      const struct piece *q = byend[ei];
      if (active[q->entry] == q) {
        fw_add (q->keep ? &kept : &lost, q->entry, -1);
        if (!q->keep && wk->entry[q->entry]->nbad)
          fw_add (&healers, q->entry, -1);
        active[q->entry] = NULL;
      }
    }
    for (; si < n && p[si].start == pos; si++) {
      active[p[si].entry] = &p[si];
      fw_add (p[si].keep ? &kept : &lost, p[si].entry, 1);
      if (!p[si].keep && wk->entry[p[si].entry]->nbad)
        fw_add (&healers, p[si].entry, 1);
    }
    if (ei == n)
      break;
    uint64_t next =
      si < n && p[si].start < byend[ei]->end ? p[si].start : byend[ei]->end;
    /* Over [pos, next): the first kept entry, and the last lost below. */
    uint32_t k = fw_prefix (&kept, nentries) ? fw_find (&kept, 1) : nentries;
    uint32_t below = fw_prefix (&lost, k);
    const struct undo *win = below ? wk->entry[fw_find (&lost, below)] : NULL;
    /* Every lost write newer than the kept one is undone here, not only
     * the one whose old data is put back: if any of them healed an
     * unreadable sector, that sector is unreadable again (it was, on the
     * medium, until a write that never got there).
     */
    for (uint32_t j = 1, nh = fw_prefix (&healers, k); j <= nh; j++)
      unheal (wk, wk->entry[fw_find (&healers, j)], pos, next);
    if (win && win == run && run_end == pos) {
      run_end = next;
      continue;
    }
    if (run)
      restore (wk, run, run_start, run_end);
    run = win;
    run_start = pos;
    run_end = next;
  }
  if (run)
    restore (wk, run, run_start, run_end);
  return 0;
}

/* The state, LOCK held.  Returns 0 or an errno. */
static int
crash_walk (struct wcache *w, struct wcache_crash *c)
{
  struct walk wk = { .w = w, .c = c };
  c->persisted = c->lost = c->torn = c->lost_bytes = 0;
  uint32_t n = (uint32_t) w->entries;
  wk.entry = scratch (w, SCRATCH_ENTRIES, (n ? n : 1) * sizeof *wk.entry);
  if (!wk.entry)
    return ENOMEM;
  /* The writes (runs of entries with one seq), for PICK's oldest-first
   * numbering.
   */
  uint64_t nwrites = 0, newer_writes = 0;
  for (struct undo *u = w->newest; u; u = u->older)
    nwrites += !u->newer || u->newer->seq != u->seq;
  if (c->region && region_cuts (&wk, nwrites) != 0)
    return ENOMEM;
  /* Newest first.  The pieces of a split entry are neighbours with one
   * seq: one write, one fate, counted once.
   */
  bool any_kept = false, any_lost = false;
  uint64_t w_start = 0, w_end = 0;
  uint32_t i = 0;
  int err = 0;
  for (struct undo *u = w->newest; u && !err; u = u->older, i++) {
    wk.entry[i] = u;
    if (!u->newer || u->newer->seq != u->seq)
      wk.write_index = nwrites - 1 - newer_writes++;
    if (!entry_pieces (&wk, i, u, &any_kept, &any_lost))
      err = ENOMEM;
    uint64_t end = u->offset + u->len;
    if (!u->newer || u->newer->seq != u->seq) {
      w_start = u->offset;
      w_end = end;
    }
    else {
      w_start = u->offset < w_start ? u->offset : w_start;
      w_end = end > w_end ? end : w_end;
    }
    if (!u->older || u->older->seq != u->seq) {
      enum blkemu_crash_fate f = any_kept && any_lost ? BLKEMU_FATE_TORN
                                 : any_kept           ? BLKEMU_FATE_PERSISTED
                                                      : BLKEMU_FATE_LOST;
      (*(f == BLKEMU_FATE_TORN        ? &c->torn
         : f == BLKEMU_FATE_PERSISTED ? &c->persisted
                                      : &c->lost))++;
      if (c->fate)
        c->fate (c->fate_arg, w_start, w_end - w_start, f);
      any_kept = any_lost = false;
    }
  }
  if (!err && wk.np)
    err = sweep (&wk, i);
  return err ? err : wk.err;
}

int
wcache_crash (struct wcache *w, struct wcache_crash *c)
{
  __atomic_add_fetch (&w->generation, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock (&w->lock);
  int err = crash_walk (w, c);
  drop_older_than (w, UINT64_MAX);
  w->frozen = false;
  pthread_mutex_unlock (&w->lock);
  if (err == 0 && !c->sink)
    err = backend_io (w->backend, BLKEMU_OP_FLUSH, NULL, 0, 0, 0);
  return err;
}

int
wcache_crash_state (struct wcache *w, struct wcache_crash *c)
{
  pthread_mutex_lock (&w->lock);
  int err = crash_walk (w, c);
  pthread_mutex_unlock (&w->lock);
  return err;
}

void
wcache_power_cut (struct wcache *w)
{
  __atomic_add_fetch (&w->generation, 1, __ATOMIC_ACQ_REL);
  /* A flush that saw the old generation finishes first (see
   * wcache_flush_run); later ones fail.
   */
  pthread_mutex_lock (&w->lock);
  w->frozen = true;
  pthread_mutex_unlock (&w->lock);
}

void
wcache_thaw (struct wcache *w)
{
  pthread_mutex_lock (&w->lock);
  w->frozen = false;
  pthread_mutex_unlock (&w->lock);
}

void
wcache_usage (struct wcache *w, uint64_t *entries, uint64_t *bytes)
{
  pthread_mutex_lock (&w->lock);
  *entries = w->entries;
  *bytes = w->bytes;
  pthread_mutex_unlock (&w->lock);
}
