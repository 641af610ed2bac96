/* The volatile write cache's undo log: see wcache.h. */
#include "wcache.h"

#include <errno.h>
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

/* Put back U's old contents. */
static int
restore (struct wcache *w, const struct undo *u)
{
  if (u->zeros)
    return backend_io (w->backend, BLKEMU_OP_ZERO, NULL, u->len, u->offset,
                       0);
  return backend_io (w->backend, BLKEMU_OP_WRITE, (void *) u->data, u->len,
                     u->offset, 0);
}

int
wcache_crash (struct wcache *w, uint64_t *writes, uint64_t *bytes,
              void (*undone) (void *arg, uint64_t offset, uint64_t len),
              void *arg)
{
  int err = 0;
  *writes = *bytes = 0;
  __atomic_add_fetch (&w->generation, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock (&w->lock);
  /* Newest first: each entry puts back what the one before it wrote. */
  for (struct undo *u = w->newest; u; u = u->older) {
    int r = restore (w, u);
    err = err ? err : r;
    if (undone)
      undone (arg, u->offset, u->len);
    /* The pieces of a split entry are neighbours with one seq. */
    if (!u->newer || u->newer->seq != u->seq)
      (*writes)++;
    *bytes += u->len;
  }
  drop_older_than (w, UINT64_MAX);
  pthread_mutex_unlock (&w->lock);
  if (err == 0)
    err = backend_io (w->backend, BLKEMU_OP_FLUSH, NULL, 0, 0, 0);
  return err;
}

void
wcache_usage (struct wcache *w, uint64_t *entries, uint64_t *bytes)
{
  pthread_mutex_lock (&w->lock);
  *entries = w->entries;
  *bytes = w->bytes;
  pthread_mutex_unlock (&w->lock);
}
