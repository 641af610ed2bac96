/* A sparse overlay of byte ranges over the medium: what a crash view
 * shows instead of the medium (the crash state's put-back data) and what
 * is written while it is open.  Ranges are disjoint, each with its data
 * or all zeros; a newer put replaces what it covers.  Memory is the
 * data it holds, nothing per disk byte.
 *
 * Locking: LOCK guards everything; any thread may call in.  Puts fail
 * with EIO once the overlay is closed, so a request still in flight
 * when its view ends cannot write into the next one.
 */
#ifndef BLKEMU_OVERLAY_H
#define BLKEMU_OVERLAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct overlay {
  pthread_mutex_t lock;
  void *root;          /* tsearch tree of ranges */
  bool open;
  uint64_t ranges, bytes;
};

void overlay_init (struct overlay *o);
void overlay_destroy (struct overlay *o);
/* Empty, and taking puts (open) or refusing them (closed). */
void overlay_reset (struct overlay *o, bool open);
/* [OFFSET, OFFSET + LEN) now reads DATA (NULL: zeros).  0 or an errno. */
int overlay_put (struct overlay *o, uint64_t offset, uint64_t len,
                 const void *data);
/* BUF holds the medium's [OFFSET, OFFSET + LEN): lay the overlay on it.
 * Returns 0 or ENOMEM (BUF then part patched: fail the read).
 */
int overlay_patch (struct overlay *o, void *buf, uint64_t offset,
                    uint64_t len);
void overlay_usage (struct overlay *o, uint64_t *ranges, uint64_t *bytes);

#endif
