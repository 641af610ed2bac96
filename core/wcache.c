/* The volatile write cache's undo log: see wcache.h. */
#include "wcache.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"

struct undo {
  struct undo *newer, *older;
  uint64_t offset, len;
  bool durable;            /* a FUA write: a marker, no data */
  bool zeros;              /* the old contents were all zero: no data */
  unsigned char data[];
};

void
wcache_init (struct wcache *w)
{
  memset (w, 0, sizeof *w);
  pthread_mutex_init (&w->lock, NULL);
}

static void
drop_all (struct wcache *w)
{
  struct undo *u = w->newest;
  while (u) {
    struct undo *older = u->older;
    free (u);
    u = older;
  }
  w->newest = w->oldest = NULL;
  w->bytes = w->entries = 0;
}

void
wcache_destroy (struct wcache *w)
{
  drop_all (w);
  pthread_mutex_destroy (&w->lock);
}

static void
push (struct wcache *w, struct undo *u)
{
  u->older = w->newest;
  u->newer = NULL;
  if (w->newest)
    w->newest->newer = u;
  else
    w->oldest = u;
  w->newest = u;
  w->entries++;
  w->bytes += u->durable ? 0 : u->len;
}

/* Destage the oldest entries until the log fits LIMIT bytes. */
static void
trim_to (struct wcache *w, uint64_t limit)
{
  while (w->oldest && w->bytes > limit) {
    struct undo *u = w->oldest;
    w->oldest = u->newer;
    if (w->oldest)
      w->oldest->older = NULL;
    else
      w->newest = NULL;
    w->bytes -= u->durable ? 0 : u->len;
    w->entries--;
    free (u);
  }
}

static bool
all_zero (const unsigned char *p, uint64_t len)
{
  return len == 0 || (p[0] == 0 && memcmp (p, p + 1, len - 1) == 0);
}

int
wcache_write (struct wcache *w, struct blkemu_disk *disk, enum blkemu_op op,
              void *buf, uint64_t len, uint64_t offset, unsigned flags,
              uint64_t limit)
{
  bool durable = (flags & BLKEMU_FLAG_FUA) || len > limit;
  struct undo *u = malloc (sizeof *u + (durable ? 0 : len));
  if (!u)
    return ENOMEM;
  *u = (struct undo) { .offset = offset, .len = len, .durable = durable };

  pthread_mutex_lock (&w->lock);
  int err = 0;
  if (!durable) {
    err = disk_backend_io (disk, BLKEMU_OP_READ, u->data, len, offset, 0);
    if (err == 0 && all_zero (u->data, len)) {
      struct undo *small = realloc (u, sizeof *u);
      u = small ? small : u;
      u->zeros = true;
    }
  }
  if (err == 0)
    err = disk_backend_io (disk, op, buf, len, offset, flags);
  /* A durable write only matters if older undo data could cover it. */
  if (err == 0 && (!durable || w->newest)) {
    push (w, u);
    u = NULL;
    trim_to (w, limit);
  }
  pthread_mutex_unlock (&w->lock);
  free (u);
  return err;
}

void
wcache_flushed (struct wcache *w)
{
  pthread_mutex_lock (&w->lock);
  drop_all (w);
  pthread_mutex_unlock (&w->lock);
}

struct range {
  uint64_t start, end;
};

static bool
covered (const struct range *r, size_t n, uint64_t start, uint64_t end)
{
  for (size_t i = 0; i < n; i++)
    if (r[i].start <= start && end <= r[i].end)
      return true;
  return false;
}

/* Put back [start, end) of U's old contents. */
static int
restore (struct blkemu_disk *disk, const struct undo *u, uint64_t start,
         uint64_t end)
{
  if (start >= end)
    return 0;
  if (u->zeros)
    return disk_backend_io (disk, BLKEMU_OP_ZERO, NULL, end - start, start, 0);
  return disk_backend_io (disk, BLKEMU_OP_WRITE,
                          (void *) (u->data + (start - u->offset)),
                          end - start, start, 0);
}

int
wcache_crash (struct wcache *w, struct blkemu_disk *disk, uint64_t *writes,
              uint64_t *bytes)
{
  uint64_t lbs = disk->cfg.num[K_LOGICAL_BLOCK_SIZE];
  struct range *durable = NULL;
  size_t ndurable = 0;
  int err = 0;

  *writes = *bytes = 0;
  pthread_mutex_lock (&w->lock);
  durable = calloc (w->entries + 1, sizeof *durable);
  if (!durable) {
    pthread_mutex_unlock (&w->lock);
    return ENOMEM;
  }
  /* Newest first: a FUA write protects its blocks from older undo data. */
  for (struct undo *u = w->newest; u && err == 0; u = u->older) {
    if (u->durable) {
      durable[ndurable++] = (struct range) { u->offset, u->offset + u->len };
      continue;
    }
    uint64_t run = u->offset;
    for (uint64_t b = u->offset; b < u->offset + u->len; b += lbs)
      if (covered (durable, ndurable, b, b + lbs)) {
        err = err ? err : restore (disk, u, run, b);
        run = b + lbs;
      }
    err = err ? err : restore (disk, u, run, u->offset + u->len);
    (*writes)++;
    *bytes += u->len;
  }
  drop_all (w);
  pthread_mutex_unlock (&w->lock);
  free (durable);
  if (err == 0)
    err = disk_backend_io (disk, BLKEMU_OP_FLUSH, NULL, 0, 0, 0);
  return err;
}
