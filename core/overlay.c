/* A sparse overlay of byte ranges: see overlay.h. */
#include "overlay.h"

#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

/* The data a written range reads: its own copy, shared by the pieces
 * it is cut into (no copy when a later write cuts it).
 */
struct blob {
  uint64_t refs;
  unsigned char bytes[];
};

struct range {
  uint64_t start, end;
  const unsigned char *data; /* NULL: zeros */
  struct blob *owner;        /* NULL: zeros */
};

struct overlay_base {
  uint64_t start, end;
  const unsigned char *data; /* NULL: zeros */
};

/* Overlapping ranges compare equal: a lookup finds any overlap. */
static int
range_cmp (const void *a, const void *b)
{
  const struct range *x = a, *y = b;
  if (x->end <= y->start)
    return -1;
  if (y->end <= x->start)
    return 1;
  return 0;
}

static void
free_range (void *p)
{
  struct range *r = p;
  if (r->owner && --r->owner->refs == 0)
    free (r->owner);
  free (r);
}

void
overlay_init (struct overlay *o)
{
  memset (o, 0, sizeof *o);
  pthread_mutex_init (&o->lock, NULL);
}

static void
clear (struct overlay *o)
{
  tdestroy (o->root, free_range);
  o->root = NULL;
  o->ranges = o->bytes = 0;
  free (o->base);
  o->base = NULL;
  o->nbase = o->base_cap = 0;
}

int
overlay_base_add (struct overlay *o, uint64_t offset, uint64_t len,
                  const void *data)
{
  int err = 0;
  pthread_mutex_lock (&o->lock);
  if (!o->open || o->root || (o->nbase && o->base[o->nbase - 1].end > offset))
    err = EINVAL;
  else if (o->nbase == o->base_cap) {
    size_t cap = o->base_cap ? o->base_cap * 2 : 256;
    struct overlay_base *b = realloc (o->base, cap * sizeof *b);
    if (b) {
      o->base = b;
      o->base_cap = cap;
    }
    else
      err = ENOMEM;
  }
  if (!err)
    o->base[o->nbase++] = (struct overlay_base){ offset, offset + len, data };
  pthread_mutex_unlock (&o->lock);
  return err;
}

/* Lay the base ranges over [OFFSET, OFFSET + LEN) of BUF. */
static void
patch_base (const struct overlay *o, unsigned char *buf, uint64_t offset,
            uint64_t len)
{
  uint64_t end = offset + len;
  size_t lo = 0, hi = o->nbase;
  while (lo < hi) { /* the first range ending past OFFSET */
    size_t mid = lo + (hi - lo) / 2;
    if (o->base[mid].end <= offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i < o->nbase && o->base[i].start < end; i++) {
    const struct overlay_base *b = &o->base[i];
    uint64_t a = b->start > offset ? b->start : offset;
    uint64_t z = b->end < end ? b->end : end;
    if (b->data)
      memcpy (buf + (a - offset), b->data + (a - b->start), z - a);
    else
      memset (buf + (a - offset), 0, z - a);
  }
}

void
overlay_destroy (struct overlay *o)
{
  clear (o);
  pthread_mutex_destroy (&o->lock);
}

void
overlay_reset (struct overlay *o, bool open)
{
  pthread_mutex_lock (&o->lock);
  clear (o);
  o->open = open;
  o->epoch++;
  pthread_mutex_unlock (&o->lock);
}

uint64_t
overlay_epoch (struct overlay *o)
{
  pthread_mutex_lock (&o->lock);
  uint64_t e = o->epoch;
  pthread_mutex_unlock (&o->lock);
  return e;
}

/* A new range [START, END) reading DATA (NULL: zeros), held by OWNER. */
static struct range *
new_range (uint64_t start, uint64_t end, const unsigned char *data,
           struct blob *owner)
{
  struct range *r = malloc (sizeof *r);
  if (!r)
    return NULL;
  *r = (struct range){ start, end, data, owner };
  if (owner)
    owner->refs++;
  return r;
}

static int
insert (struct overlay *o, struct range *r)
{
  if (!tsearch (r, &o->root, range_cmp)) {
    free_range (r);
    return ENOMEM;
  }
  o->ranges++;
  o->bytes += r->owner ? r->end - r->start : 0;
  return 0;
}

int
overlay_put (struct overlay *o, uint64_t epoch, uint64_t offset, uint64_t len,
             const void *data)
{
  if (len == 0)
    return 0;
  uint64_t start = offset, end = offset + len;
  struct range key = { start, end, NULL, NULL };
  /* Allocated first: a failure changes nothing. */
  struct blob *copy = NULL;
  if (data) {
    copy = malloc (sizeof *copy + len);
    if (!copy)
      return ENOMEM;
    copy->refs = 0;
    memcpy (copy->bytes, data, len);
    data = copy->bytes;
  }
  struct range *r = new_range (start, end, data, copy);
  if (!r) {
    free (copy);
    return ENOMEM;
  }
  pthread_mutex_lock (&o->lock);
  if (!o->open || o->epoch != epoch) {
    pthread_mutex_unlock (&o->lock);
    free_range (r);
    return EIO;
  }
  /* Most puts overlap nothing: one walk down the tree inserts them. */
  void **found = tsearch (r, &o->root, range_cmp);
  if (found && *found == r) {
    o->ranges++;
    o->bytes += r->owner ? r->end - r->start : 0;
    pthread_mutex_unlock (&o->lock);
    return 0;
  }
  int err = found ? 0 : ENOMEM;
  /* Cut every range it overlaps, keeping the parts outside it (they
   * share its data: no copy).
   */
  while (err == 0 && (found = tfind (&key, &o->root, range_cmp)) != NULL) {
    struct range *old = *found;
    tdelete (old, &o->root, range_cmp);
    o->ranges--;
    o->bytes -= old->owner ? old->end - old->start : 0;
    struct range *head = NULL, *tail = NULL;
    if (old->start < start)
      head = new_range (old->start, start, old->data, old->owner);
    if (end < old->end)
      tail = new_range (end, old->end,
                        old->data ? old->data + (end - old->start) : NULL,
                        old->owner);
    if ((old->start < start && !head) || (end < old->end && !tail))
      err = ENOMEM; /* that part reads the medium now: not silent */
    if (head && insert (o, head))
      err = ENOMEM;
    if (tail && insert (o, tail))
      err = ENOMEM;
    free_range (old);
  }
  if (err == 0)
    err = insert (o, r);
  else
    free_range (r);
  pthread_mutex_unlock (&o->lock);
  return err;
}

/* Push [START, END) on the pending stack, growing it off the C stack
 * when needed.  False when out of memory.
 */
static bool
push (struct range **todo, size_t *n, size_t *cap, struct range *inline_buf,
      uint64_t start, uint64_t end)
{
  if (*n == *cap) {
    size_t ncap = *cap * 2;
    struct range *t = *todo == inline_buf ? malloc (ncap * sizeof *t)
                                          : realloc (*todo, ncap * sizeof *t);
    if (!t)
      return false;
    if (*todo == inline_buf)
      memcpy (t, inline_buf, *n * sizeof *t);
    *todo = t;
    *cap = ncap;
  }
  (*todo)[(*n)++] = (struct range){ start, end, NULL, NULL };
  return true;
}

int
overlay_patch (struct overlay *o, void *buf, uint64_t offset, uint64_t len)
{
  int err = 0;
  /* Ranges of BUF still to look at; each lookup finds one overlap and
   * leaves the parts on either side.
   */
  struct range inline_buf[32], *todo = inline_buf;
  size_t n = 0, cap = 32;
  push (&todo, &n, &cap, inline_buf, offset, offset + len);
  pthread_mutex_lock (&o->lock);
  patch_base (o, buf, offset, len);
  while (n && !err) {
    struct range q = todo[--n];
    void **found = tfind (&q, &o->root, range_cmp);
    if (!found)
      continue;
    const struct range *r = *found;
    uint64_t a = q.start > r->start ? q.start : r->start;
    uint64_t b = q.end < r->end ? q.end : r->end;
    unsigned char *dst = (unsigned char *) buf + (a - offset);
    if (r->data)
      memcpy (dst, r->data + (a - r->start), b - a);
    else
      memset (dst, 0, b - a);
    if ((q.start < a && !push (&todo, &n, &cap, inline_buf, q.start, a)) ||
        (b < q.end && !push (&todo, &n, &cap, inline_buf, b, q.end)))
      err = ENOMEM;
  }
  pthread_mutex_unlock (&o->lock);
  if (todo != inline_buf)
    free (todo);
  return err;
}

void
overlay_usage (struct overlay *o, uint64_t *ranges, uint64_t *bytes)
{
  pthread_mutex_lock (&o->lock);
  *ranges = o->ranges;
  *bytes = o->bytes;
  pthread_mutex_unlock (&o->lock);
}
