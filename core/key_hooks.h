/* What a runtime change of a key does beyond its value, by key: the
 * hooks null_blk gives its configfs attributes.  disk_set_pairs runs a
 * set key's hooks, and nothing decides by a key's name elsewhere.
 */
#ifndef BLKEMU_KEY_HOOKS_H
#define BLKEMU_KEY_HOOKS_H

#include <stdint.h>

#include "config.h"

struct blkemu_disk;

struct key_hook {
  /* May the change to TRIAL's value be made now?  0, or -1 with ERR.
   * Under the disk's lock, before anything is applied.
   */
  int (*check) (struct blkemu_disk *disk, const struct blkemu_config *trial,
                char *err);
  /* The new value is in: start what it starts.  Under the disk's lock. */
  void (*apply) (struct blkemu_disk *disk, uint64_t now);
  /* After the lock is let go (it may wait on I/O): OLD was the value
   * before.  0, or -1 with ERR (the value stays set).
   */
  int (*after) (struct blkemu_disk *disk, uint64_t old, char *err);
};

/* Indexed by key id; keys without a hook have none of the three. */
extern const struct key_hook key_hooks[K_COUNT];

#endif
