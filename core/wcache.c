/* The volatile write cache's undo log: see wcache.h. */
#include "wcache.h"

#include <errno.h>
#include <search.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct undo {
  struct undo *newer, *older;
  uint64_t offset, len;    /* the range this entry would restore */
  uint64_t seq;
  bool zeros;              /* the old contents were all zero: no data */
  unsigned char data[];
};

void
wcache_init (struct wcache *w, const struct backend *backend)
{
  memset (w, 0, sizeof *w);
  w->backend = backend;
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
  free (u);
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

/* Destage the oldest entries until the log fits LIMIT bytes. */
static void
trim_to (struct wcache *w, uint64_t limit)
{
  while (w->oldest && w->bytes > limit)
    unlink_entry (w, w->oldest);
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
    if (start <= a && b <= end) {          /* all of it */
      unlink_entry (w, u);
      u = older;
      continue;
    }
    if (a < start && end < b) {            /* the middle: split */
      struct undo *tail = malloc (sizeof *tail + (u->zeros ? 0 : b - end));
      if (tail) {
        *tail = (struct undo) { .offset = end, .len = b - end, .seq = u->seq,
                                .zeros = u->zeros };
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
    }
    else if (a < start) {                  /* its tail */
      w->bytes -= b - start;
      u->len = start - a;
    }
    else {                                 /* its head */
      if (!u->zeros)
        memmove (u->data, u->data + (end - a), b - end);
      w->bytes -= end - a;
      u->offset = end;
      u->len = b - end;
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
    *u = (struct undo) { .offset = offset, .len = len };
  }

  pthread_mutex_lock (&w->lock);
  int err = 0;
  if (u) {
    err = backend_io (w->backend, BLKEMU_OP_READ, u->data, len, offset, 0);
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
 * Walking the log newest first, each block ends up holding the version
 * written by the newest write that persisted there, or its flushed
 * version when none did: a lost write puts back its old contents except
 * where a newer persisted write already decided the block (KEPT).  One
 * walk gives every crash mode: lose-all keeps nothing; subset keeps each
 * write whole or not at all; torn may keep only some of a write's atomic
 * units.  Decisions are a hash of (seed, the write's sequence number,
 * the unit's index), so one seed on one history gives one state,
 * whatever order the walk takes.
 */

/* KEPT: disjoint ranges of blocks a persisted write decided, in a tree
 * (tsearch) whose comparison calls overlapping ranges equal.
 */
struct span {
  uint64_t start, end;
};

static int
span_cmp (const void *a, const void *b)
{
  const struct span *x = a, *y = b;
  if (x->end <= y->start)
    return -1;
  if (y->end <= x->start)
    return 1;
  return 0;
}

struct crash_walk {
  struct wcache *w;
  struct wcache_crash *c;
  void *kept;                 /* tree of struct span */
  struct span *stack;         /* restore_unkept's pending ranges */
  size_t nstack, stack_cap;
  int err;
};

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

static void
note_err (struct crash_walk *cw, int r)
{
  if (r && !cw->err)
    cw->err = r;
}

/* [START, END) of U persisted: no older write may put it back. */
static void
keep (struct crash_walk *cw, uint64_t start, uint64_t end)
{
  struct span key = { start, end };
  void **found;
  /* Absorb every kept range it overlaps, then add the union. */
  while ((found = tfind (&key, &cw->kept, span_cmp)) != NULL) {
    struct span *old = *found;
    key.start = key.start < old->start ? key.start : old->start;
    key.end = key.end > old->end ? key.end : old->end;
    tdelete (old, &cw->kept, span_cmp);
    free (old);
  }
  struct span *n = malloc (sizeof *n);
  if (n)
    *n = key;
  if (!n || !tsearch (n, &cw->kept, span_cmp)) {
    /* Without the record an older lost write could put back data over a
     * persisted one: refuse the state rather than produce an illegal one.
     */
    free (n);
    note_err (cw, ENOMEM);
  }
}

/* Put back U's old contents over [START, END): on the medium, or into
 * the caller's sink (a crash view).
 */
static void
restore (struct crash_walk *cw, const struct undo *u, uint64_t start,
         uint64_t end)
{
  const struct backend *b = cw->w->backend;
  int r;
  if (cw->c->sink)
    r = cw->c->sink (cw->c->sink_arg, start, end - start,
                     u->zeros ? NULL : u->data + (start - u->offset));
  else if (u->zeros)
    r = backend_io (b, BLKEMU_OP_ZERO, NULL, end - start, start, 0);
  else
    r = backend_io (b, BLKEMU_OP_WRITE, (void *) (u->data + (start - u->offset)),
                    end - start, start, 0);
  note_err (cw, r);
  cw->c->lost_bytes += end - start;
  if (cw->c->undone)
    cw->c->undone (cw->c->arg, start, end - start);
}

static bool
push_range (struct crash_walk *cw, uint64_t start, uint64_t end)
{
  if (cw->nstack == cw->stack_cap) {
    size_t cap = cw->stack_cap ? cw->stack_cap * 2 : 16;
    struct span *s = realloc (cw->stack, cap * sizeof *s);
    if (!s) {
      note_err (cw, ENOMEM);
      return false;
    }
    cw->stack = s;
    cw->stack_cap = cap;
  }
  cw->stack[cw->nstack++] = (struct span) { start, end };
  return true;
}

/* U lost [START, END): put back its old contents where no newer
 * persisted write decided the blocks.
 */
static void
restore_unkept (struct crash_walk *cw, const struct undo *u, uint64_t start,
                uint64_t end)
{
  if (!cw->kept) {                  /* lose-all, or nothing kept yet */
    restore (cw, u, start, end);
    return;
  }
  cw->nstack = 0;
  if (!push_range (cw, start, end))
    return;
  while (cw->nstack) {
    struct span r = cw->stack[--cw->nstack];
    void **found = tfind (&r, &cw->kept, span_cmp);
    if (!found) {
      restore (cw, u, r.start, r.end);
      continue;
    }
    const struct span *k = *found;
    if (r.start < k->start && !push_range (cw, r.start, k->start))
      return;
    if (k->end < r.end && !push_range (cw, k->end, r.end))
      return;
  }
}

enum fate { FATE_LOST, FATE_KEPT, FATE_TORN };

/* What becomes of write SEQ as a whole (torn: decided per unit). */
static enum fate
write_fate (const struct wcache_crash *c, uint64_t seq, bool tearable)
{
  uint64_t d = draw (c->seed, seq, UINT64_MAX);
  switch (c->mode) {
  case BLKEMU_CRASH_SUBSET:
    return d & 1 ? FATE_KEPT : FATE_LOST;
  case BLKEMU_CRASH_TORN:
    if (tearable && d % 3 == 2)
      return FATE_TORN;
    return d % 3 == 1 || (!tearable && d % 3 == 2) ? FATE_KEPT : FATE_LOST;
  default:
    return FATE_LOST;
  }
}

/* One entry (a write, or a piece of one: pieces share SEQ).  Sets
 * *ANY_KEPT and *ANY_LOST by what reached the medium.
 */
static void
crash_entry (struct crash_walk *cw, const struct undo *u, bool *any_kept,
             bool *any_lost)
{
  const struct wcache_crash *c = cw->c;
  uint64_t start = u->offset, end = u->offset + u->len;
  uint64_t unit = c->unit ? c->unit : 1;
  bool tearable = start / unit != (end - 1) / unit;
  enum fate f = write_fate (c, u->seq, tearable);
  if (f != FATE_TORN) {
    if (f == FATE_KEPT)
      keep (cw, start, end);
    else
      restore_unkept (cw, u, start, end);
    *(f == FATE_KEPT ? any_kept : any_lost) = true;
    return;
  }
  /* Torn: each atomic unit it touches reached the medium or not. */
  for (uint64_t a = start; a < end;) {
    uint64_t b = (a / unit + 1) * unit;
    b = b < end ? b : end;
    if (draw (c->seed, u->seq, a / unit) & 1) {
      keep (cw, a, b);
      *any_kept = true;
    }
    else {
      restore_unkept (cw, u, a, b);
      *any_lost = true;
    }
    a = b;
  }
}

static void
free_span (void *p)
{
  free (p);
}

/* The walk, LOCK held.  Returns 0 or an errno. */
static int
crash_walk (struct wcache *w, struct wcache_crash *c)
{
  struct crash_walk cw = { .w = w, .c = c };
  c->persisted = c->lost = c->torn = c->lost_bytes = 0;
  /* Newest first.  The pieces of a split entry are neighbours with one
   * seq: one write, one fate, counted once.
   */
  bool any_kept = false, any_lost = false;
  uint64_t w_start = 0, w_end = 0;
  for (struct undo *u = w->newest; u; u = u->older) {
    crash_entry (&cw, u, &any_kept, &any_lost);
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
                                 : any_kept ? BLKEMU_FATE_PERSISTED
                                 : BLKEMU_FATE_LOST;
      (*(f == BLKEMU_FATE_TORN ? &c->torn
         : f == BLKEMU_FATE_PERSISTED ? &c->persisted : &c->lost))++;
      if (c->fate)
        c->fate (c->fate_arg, w_start, w_end - w_start, f);
      any_kept = any_lost = false;
    }
  }
  tdestroy (cw.kept, free_span);
  free (cw.stack);
  return cw.err;
}

int
wcache_crash (struct wcache *w, struct wcache_crash *c)
{
  __atomic_add_fetch (&w->generation, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock (&w->lock);
  int err = crash_walk (w, c);
  drop_older_than (w, UINT64_MAX);
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
