/* Backends move the data; they know nothing of limits or timing.  One ops
 * table per backend.  Every call returns 0 or a positive errno.
 */
#ifndef BLKEMU_BACKEND_H
#define BLKEMU_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct backend_ops {
  const char *name;
  bool persistent; /* data outlives the process */
  bool blocking;   /* calls may sleep (I/O): blkemu_submit defers them */
  bool can_trim, can_zero, can_extents;
  /* May set cfg->num[K_SIZE] when it was left 0 (file: the file's size). */
  int (*open) (struct blkemu_config *cfg, void **state, char *err);
  void (*close) (void *state);
  int (*pread) (void *state, void *buf, uint64_t len, uint64_t offset);
  int (*pwrite) (void *state, const void *buf, uint64_t len, uint64_t offset,
                 bool fua);
  int (*flush) (void *state);
  int (*trim) (void *state, uint64_t len, uint64_t offset);
  int (*zero) (void *state, uint64_t len, uint64_t offset, bool may_trim);
  int (*extents) (void *state, uint64_t offset, uint64_t len,
                  blkemu_extent_cb cb, void *opaque);
  /* A blocking backend's read or write that does not sleep (data in the
   * page cache): 0, an errno, or EAGAIN where it would block (part may
   * have moved; the caller does it all again).  NULL: always EAGAIN.
   */
  int (*try_rw) (void *state, bool write, void *buf, uint64_t len,
                 uint64_t offset);
  /* True when a read of the range returns only zeroes, so that its data
   * need not be moved (null; memory's holes).  NULL: never known.
   */
  bool (*reads_zero) (void *state, uint64_t len, uint64_t offset);
  /* Lend a read's data instead of copying it: SINK(ARG, OFFSET, DATA,
   * LEN) for each piece in order, under the lock that keeps the piece
   * whole (DATA NULL: zeroes).  Stops at the first non-zero return and
   * returns it.  NULL: the backend copies (pread) only.
   */
  int (*read_to) (void *state, uint64_t len, uint64_t offset,
                  int (*sink) (void *arg, uint64_t offset, const void *data,
                               uint64_t len),
                  void *arg);
  /* Take a write's data from where it lies instead of a buffer:
   * SOURCE(ARG, OFFSET, DST, LEN) fills each piece of the store in order,
   * under the lock that keeps the piece whole.  Stops at the first
   * non-zero return and returns it (the piece may hold part of the new
   * data, as a write that failed midway leaves it).  NULL: pwrite only.
   */
  int (*write_from) (void *state, uint64_t len, uint64_t offset,
                     int (*source) (void *arg, uint64_t offset, void *dst,
                                    uint64_t len),
                     void *arg);
};

/* An open backend: its ops and their state. */
struct backend {
  const struct backend_ops *ops;
  void *state;
};

/* Move data for OP (flags: BLKEMU_FLAG_*), no limits or timing.  Safe
 * from any thread: backends do their own locking.
 */
int backend_io (const struct backend *b, enum blkemu_op op, void *buf,
                uint64_t len, uint64_t offset, unsigned flags);
/* backend_io without sleeping, for reads and plain writes: EAGAIN where
 * it would block or cannot tell (flush, trim, zero, FUA).
 */
int backend_try_io (const struct backend *b, enum blkemu_op op, void *buf,
                    uint64_t len, uint64_t offset, unsigned flags);

/* What a read of the range would return is known to be all zeroes. */
static inline bool
backend_reads_zero (const struct backend *b, uint64_t len, uint64_t offset)
{
  return b->ops->reads_zero && b->ops->reads_zero (b->state, len, offset);
}

extern const struct backend_ops backend_memory_ops;
extern const struct backend_ops backend_file_ops;
extern const struct backend_ops backend_null_ops;

#endif
