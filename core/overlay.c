/* A sparse overlay of byte ranges: see overlay.h. */
#include "overlay.h"

#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

struct range {
  uint64_t start, end;
  unsigned char *data;       /* NULL: zeros */
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
  free (r->data);
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
  pthread_mutex_unlock (&o->lock);
}

/* A new range [START, END) with DATA's bytes from START (NULL: zeros). */
static struct range *
new_range (uint64_t start, uint64_t end, const unsigned char *data)
{
  struct range *r = malloc (sizeof *r);
  if (!r)
    return NULL;
  *r = (struct range) { start, end, NULL };
  if (data) {
    r->data = malloc (end - start);
    if (!r->data) {
      free (r);
      return NULL;
    }
    memcpy (r->data, data, end - start);
  }
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
  o->bytes += r->data ? r->end - r->start : 0;
  return 0;
}

int
overlay_put (struct overlay *o, uint64_t offset, uint64_t len,
             const void *data)
{
  if (len == 0)
    return 0;
  uint64_t start = offset, end = offset + len;
  struct range key = { start, end, NULL };
  /* Allocated first: a failure changes nothing. */
  struct range *r = new_range (start, end, data);
  if (!r)
    return ENOMEM;
  pthread_mutex_lock (&o->lock);
  if (!o->open) {
    pthread_mutex_unlock (&o->lock);
    free_range (r);
    return EIO;
  }
  int err = 0;
  void **found;
  /* Cut every range it overlaps, keeping the parts outside it. */
  while (err == 0 && (found = tfind (&key, &o->root, range_cmp)) != NULL) {
    struct range *old = *found;
    tdelete (old, &o->root, range_cmp);
    o->ranges--;
    o->bytes -= old->data ? old->end - old->start : 0;
    struct range *head = NULL, *tail = NULL;
    if (old->start < start)
      head = new_range (old->start, start, old->data);
    if (end < old->end)
      tail = new_range (end, old->end,
                        old->data ? old->data + (end - old->start) : NULL);
    if ((old->start < start && !head) || (end < old->end && !tail))
      err = ENOMEM;    /* that part reads the medium now: not silent */
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
  (*todo)[(*n)++] = (struct range) { start, end, NULL };
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
