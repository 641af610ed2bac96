/* Unreadable ranges of the medium: see badranges.h. */
#include "badranges.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void
badranges_init (struct badranges *b)
{
  memset (b, 0, sizeof *b);
  pthread_mutex_init (&b->lock, NULL);
}

void
badranges_destroy (struct badranges *b)
{
  free (b->r);
  pthread_mutex_destroy (&b->lock);
}

/* The first range ending after OFFSET (LOCK held). */
static size_t
first_after (const struct badranges *b, uint64_t offset)
{
  size_t lo = 0, hi = b->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->r[mid].end <= offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void
set_count (struct badranges *b, size_t n)
{
  __atomic_store_n (&b->count, n, __ATOMIC_RELEASE);
}

/* Replace ranges [I, J) by the N in NEW (LOCK held).  0 or ENOMEM. */
static int
splice (struct badranges *b, size_t i, size_t j, const struct bad_range *new,
        size_t n)
{
  size_t count = b->count - (j - i) + n;
  if (count > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 16;
    cap = cap < count ? count : cap;
    struct bad_range *r = realloc (b->r, cap * sizeof *r);
    if (!r)
      return ENOMEM;
    b->r = r;
    b->cap = cap;
  }
  memmove (b->r + i + n, b->r + j, (b->count - j) * sizeof *b->r);
  memcpy (b->r + i, new, n * sizeof *new);
  set_count (b, count);
  return 0;
}

int
badranges_add (struct badranges *b, uint64_t offset, uint64_t len)
{
  if (len == 0)
    return 0;
  struct bad_range n = { offset, offset + len };
  pthread_mutex_lock (&b->lock);
  /* Merge with every range it touches (or abuts). */
  size_t i = first_after (b, offset ? offset - 1 : 0), j = i;
  while (j < b->count && b->r[j].start <= n.end) {
    n.start = b->r[j].start < n.start ? b->r[j].start : n.start;
    n.end = b->r[j].end > n.end ? b->r[j].end : n.end;
    j++;
  }
  int err = splice (b, i, j, &n, 1);
  pthread_mutex_unlock (&b->lock);
  return err;
}

int
badranges_clear (struct badranges *b, uint64_t offset, uint64_t len)
{
  if (__atomic_load_n (&b->count, __ATOMIC_ACQUIRE) == 0 || len == 0)
    return 0;
  uint64_t end = offset + len;
  pthread_mutex_lock (&b->lock);
  size_t i = first_after (b, offset), j = i;
  while (j < b->count && b->r[j].start < end)
    j++;
  /* What is left of the first and the last range it cuts. */
  struct bad_range keep[2];
  size_t n = 0;
  if (i < j && b->r[i].start < offset)
    keep[n++] = (struct bad_range){ b->r[i].start, offset };
  if (i < j && b->r[j - 1].end > end)
    keep[n++] = (struct bad_range){ end, b->r[j - 1].end };
  int err = i < j ? splice (b, i, j, keep, n) : 0;
  pthread_mutex_unlock (&b->lock);
  return err;
}

void
badranges_clear_all (struct badranges *b)
{
  pthread_mutex_lock (&b->lock);
  set_count (b, 0);
  pthread_mutex_unlock (&b->lock);
}

bool
badranges_hit (struct badranges *b, uint64_t offset, uint64_t len)
{
  if (__atomic_load_n (&b->count, __ATOMIC_ACQUIRE) == 0)
    return false;
  pthread_mutex_lock (&b->lock);
  size_t i = first_after (b, offset);
  bool hit = i < b->count && b->r[i].start < offset + len;
  pthread_mutex_unlock (&b->lock);
  return hit;
}

bool
badranges_first (struct badranges *b, uint64_t offset, uint64_t len,
                 uint64_t *first)
{
  if (__atomic_load_n (&b->count, __ATOMIC_ACQUIRE) == 0)
    return false;
  pthread_mutex_lock (&b->lock);
  size_t i = first_after (b, offset);
  bool hit = i < b->count && b->r[i].start < offset + len;
  if (hit)
    *first = b->r[i].start > offset ? b->r[i].start : offset;
  pthread_mutex_unlock (&b->lock);
  return hit;
}

size_t
badranges_list (struct badranges *b, uint64_t from, struct bad_range *out,
                size_t max, size_t *total)
{
  pthread_mutex_lock (&b->lock);
  size_t i = first_after (b, from), n = 0;
  for (; i < b->count && n < max; i++)
    out[n++] = b->r[i];
  if (total)
    *total = b->count;
  pthread_mutex_unlock (&b->lock);
  return n;
}
