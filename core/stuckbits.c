/* Stuck bits of the medium: see stuckbits.h. */
#include "stuckbits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void
stuckbits_init (struct stuckbits *b)
{
  memset (b, 0, sizeof *b);
  pthread_mutex_init (&b->lock, NULL);
}

void
stuckbits_destroy (struct stuckbits *b)
{
  free (b->s);
  pthread_mutex_destroy (&b->lock);
}

static uint64_t
key (uint64_t byte, unsigned bit)
{
  return byte * 8 + bit;
}

/* The first stuck bit at or after KEY K (LOCK held). */
static size_t
first_from (const struct stuckbits *b, uint64_t k)
{
  size_t lo = 0, hi = b->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key (b->s[mid].byte, b->s[mid].bit) < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int
stuckbits_add (struct stuckbits *b, uint64_t byte, unsigned bit,
               unsigned value)
{
  int r = 0;
  pthread_mutex_lock (&b->lock);
  size_t i = first_from (b, key (byte, bit));
  if (i < b->count && b->s[i].byte == byte && b->s[i].bit == bit) {
    b->s[i].value = (uint8_t) value;
    goto out;
  }
  if (b->count == STUCK_MAX) {
    r = ENOSPC;
    goto out;
  }
  if (b->count == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 16;
    struct stuck_bit *s = realloc (b->s, cap * sizeof *s);
    if (!s) {
      r = ENOMEM;
      goto out;
    }
    b->s = s;
    b->cap = cap;
  }
  memmove (&b->s[i + 1], &b->s[i], (b->count - i) * sizeof *b->s);
  b->s[i] = (struct stuck_bit){ byte, (uint8_t) bit, (uint8_t) value };
  __atomic_store_n (&b->count, b->count + 1, __ATOMIC_RELEASE);
out:
  pthread_mutex_unlock (&b->lock);
  return r;
}

void
stuckbits_clear (struct stuckbits *b)
{
  pthread_mutex_lock (&b->lock);
  __atomic_store_n (&b->count, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&b->lock);
}

unsigned
stuckbits_apply (struct stuckbits *b, unsigned char *buf, uint64_t offset,
                 uint64_t len)
{
  unsigned changed = 0;
  pthread_mutex_lock (&b->lock);
  for (size_t i = first_from (b, key (offset, 0));
       i < b->count && b->s[i].byte < offset + len; i++) {
    unsigned char *p = &buf[b->s[i].byte - offset];
    unsigned char m = (unsigned char) (1u << b->s[i].bit);
    unsigned char want = b->s[i].value ? m : 0;
    if ((*p & m) != want) {
      *p = (unsigned char) ((*p & ~m) | want);
      changed++;
    }
  }
  pthread_mutex_unlock (&b->lock);
  return changed;
}

size_t
stuckbits_list (struct stuckbits *b, struct stuck_bit *out, size_t max,
                size_t *total)
{
  pthread_mutex_lock (&b->lock);
  size_t n = b->count < max ? b->count : max;
  if (n)
    memcpy (out, b->s, n * sizeof *out);
  *total = b->count;
  pthread_mutex_unlock (&b->lock);
  return n;
}
