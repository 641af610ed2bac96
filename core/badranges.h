/* Unreadable ranges of the medium: sectors a read fails on with a medium
 * error (EIO) until a write covers them again -- a drive's latent sector
 * errors, and what an interrupted write leaves (crash mode interrupted).
 * A sorted array of disjoint ranges.
 *
 * Locking: LOCK guards everything; COUNT is also read without it (atomic)
 * so that the read path of a disk with none costs one load.
 */
#ifndef BLKEMU_BADRANGES_H
#define BLKEMU_BADRANGES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bad_range {
  uint64_t start, end;
};

struct badranges {
  pthread_mutex_t lock;
  struct bad_range *r;
  size_t count, cap;
};

void badranges_init (struct badranges *b);
void badranges_destroy (struct badranges *b);
/* [OFFSET, OFFSET + LEN) becomes unreadable.  0 or ENOMEM. */
int badranges_add (struct badranges *b, uint64_t offset, uint64_t len);
/* A write covered [OFFSET, OFFSET + LEN): readable again.  0 or ENOMEM. */
int badranges_clear (struct badranges *b, uint64_t offset, uint64_t len);
void badranges_clear_all (struct badranges *b);
/* Does [OFFSET, OFFSET + LEN) touch an unreadable range? */
bool badranges_hit (struct badranges *b, uint64_t offset, uint64_t len);
/* Like badranges_hit, and *FIRST: the first unreadable byte in it. */
bool badranges_first (struct badranges *b, uint64_t offset, uint64_t len,
                      uint64_t *first);
/* Up to MAX ranges from the first one ending after FROM, into OUT;
 * returns how many.  *TOTAL (if not NULL): how many there are.
 */
size_t badranges_list (struct badranges *b, uint64_t from,
                       struct bad_range *out, size_t max, size_t *total);

#endif
