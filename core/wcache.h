/* The volatile write cache's data side (write-cache=yes): what a power
 * loss would take away.  Writes go to the backend at once, but the data
 * they overwrote is kept in an undo log until a flush; `crash` rolls the
 * log back, newest first, so the disk holds exactly what was flushed,
 * FUA'd or destaged.  The log keeps at most cache-size bytes: older
 * writes count as destaged (durable), as on a drive whose cache filled.
 */
#ifndef BLKEMU_WCACHE_H
#define BLKEMU_WCACHE_H

#include <pthread.h>
#include <stdint.h>

#include "blkemu/blkemu.h"

struct blkemu_disk;
struct undo;

struct wcache {
  pthread_mutex_t lock;    /* serialises cached writes with their undo */
  struct undo *newest, *oldest;
  uint64_t bytes;          /* bytes of unflushed writes logged */
  uint64_t entries;
};

void wcache_init (struct wcache *w);
void wcache_destroy (struct wcache *w);

/* Serve a write, write-zeroes or trim through the cache: saves the old
 * contents (unless FUA or larger than the cache), then does the I/O with
 * DO_IO.  Returns 0 or an errno.
 */
int wcache_write (struct wcache *w, struct blkemu_disk *disk,
                  enum blkemu_op op, void *buf, uint64_t len,
                  uint64_t offset, unsigned flags, uint64_t limit);
/* A flush reached the media: everything logged is durable. */
void wcache_flushed (struct wcache *w);
/* Power loss: undo every logged write.  Returns 0 or an errno; *WRITES and
 * *BYTES count what was discarded.
 */
int wcache_crash (struct wcache *w, struct blkemu_disk *disk,
                  uint64_t *writes, uint64_t *bytes);

#endif
