/* Stuck bits: cells of the medium that read one value whatever was
 * written there, a defect no write repairs (unlike an unreadable sector,
 * badranges.h): a read covering one returns it so, silently.  A sorted
 * array of at most STUCK_MAX.
 *
 * Locking: LOCK guards everything; COUNT is also read without it
 * (atomic) so that the read path of a disk with none costs one load.
 */
#ifndef BLKEMU_STUCKBITS_H
#define BLKEMU_STUCKBITS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STUCK_MAX 4096

struct stuck_bit {
  uint64_t byte;
  uint8_t bit, value; /* bit 0: the least significant */
};

struct stuckbits {
  pthread_mutex_t lock;
  struct stuck_bit *s;
  size_t count, cap;
};

void stuckbits_init (struct stuckbits *b);
void stuckbits_destroy (struct stuckbits *b);
/* Bit BIT of byte BYTE reads VALUE from now on (a bit already stuck
 * takes the new value).  0, ENOSPC (STUCK_MAX reached) or ENOMEM.
 */
int stuckbits_add (struct stuckbits *b, uint64_t byte, unsigned bit,
                   unsigned value);
void stuckbits_clear (struct stuckbits *b);

static inline bool
stuckbits_any (struct stuckbits *b)
{
  return __atomic_load_n (&b->count, __ATOMIC_ACQUIRE) != 0;
}

/* BUF holds LEN bytes read at OFFSET: force the stuck bits in it.
 * Returns how many bits that changed.
 */
unsigned stuckbits_apply (struct stuckbits *b, unsigned char *buf,
                          uint64_t offset, uint64_t len);
/* Up to MAX stuck bits, in order, into OUT; returns how many.  *TOTAL:
 * how many there are.
 */
size_t stuckbits_list (struct stuckbits *b, struct stuck_bit *out, size_t max,
                       size_t *total);

#endif
