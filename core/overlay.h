/* A sparse overlay of byte ranges over the medium: what a crash view
 * shows instead of the medium (the crash state's put-back data) and what
 * is written while it is open.  Ranges are disjoint, each with its data
 * or all zeros; a newer put replaces what it covers.  Two layers: the
 * base, the crash state's put-back data, a sorted array whose bytes are
 * borrowed from the cache's log; over it the view's writes, copied, in a
 * tree.  Memory: 24 bytes a base range plus the writes (BYTES), nothing
 * per disk byte.
 *
 * Locking: LOCK guards everything; any thread may call in.  Each reset
 * begins a new epoch, and a put names the epoch its request was admitted
 * in: it fails with EIO once the overlay is closed or reset since, so a
 * request still in flight when its view ends cannot write into that
 * view's successor, open by then or not.
 */
#ifndef BLKEMU_OVERLAY_H
#define BLKEMU_OVERLAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct overlay_base;

struct overlay {
  pthread_mutex_t lock;
  /* The state itself: sorted, disjoint, its data borrowed. */
  struct overlay_base *base;
  size_t nbase, base_cap;
  void *root; /* what was written over it: a tsearch tree */
  bool open;
  uint64_t epoch; /* resets so far: the opening a put belongs to */
  uint64_t ranges, bytes;
};

void overlay_init (struct overlay *o);
void overlay_destroy (struct overlay *o);
/* Empty, and taking puts (open) or refusing them (closed); a new epoch. */
void overlay_reset (struct overlay *o, bool open);
/* The epoch now: what a request admitted into the open overlay puts with. */
uint64_t overlay_epoch (struct overlay *o);
/* A write of epoch EPOCH: [OFFSET, OFFSET + LEN) now reads a copy of DATA
 * (NULL: zeros), over the base and earlier writes.  0, EIO when the
 * overlay is closed or no longer in EPOCH, or another errno.
 */
int overlay_put (struct overlay *o, uint64_t epoch, uint64_t offset,
                 uint64_t len, const void *data);
/* The state under the writes: [OFFSET, OFFSET + LEN) reads DATA (NULL:
 * zeros), borrowed: the bytes must stay until overlay_reset (the cache's
 * log, frozen while the disk is powered off).  Calls come in increasing
 * order of OFFSET, without overlap, before any overlay_put; EINVAL
 * otherwise.  0 or an errno.
 */
int overlay_base_add (struct overlay *o, uint64_t offset, uint64_t len,
                      const void *data);
/* BUF holds the medium's [OFFSET, OFFSET + LEN): lay the overlay on it.
 * Returns 0 or ENOMEM (BUF then part patched: fail the read).
 */
int overlay_patch (struct overlay *o, void *buf, uint64_t offset,
                   uint64_t len);
void overlay_usage (struct overlay *o, uint64_t *ranges, uint64_t *bytes);

#endif
