/* What blkemu-fuse's two files share: a disk as the mount serves it,
 * and its attribute files under .blkemu/NAME/ (attrs.c: what each reads
 * back and what a write to it does).
 */
#ifndef BLKEMU_FUSE_DISK_H
#define BLKEMU_FUSE_DISK_H

#include <pthread.h>
#include <stddef.h>

#include "blkemu/blkemu.h"

/* Attribute files: the fixed ones, then one per spec key. */
enum {
  ATTR_DIR,
  ATTR_STATS,
  ATTR_SUMMARY,
  ATTR_RESET,
  ATTR_POWER,
  ATTR_VIEW,
  ATTR_BAD,
  ATTR_STUCK,
  ATTR_KEY0
};

struct disk {
  const char *name; /* the disk's name=, owned by the disk */
  struct blkemu_disk *emu;
  struct blkemu_geometry geo;
  /* What the power and view files read back: the last thing each did. */
  pthread_mutex_t said_lock;
  char power_said[160], view_said[160];
};

/* The file of ATTR: "stats", ..., or a spec key's name. */
const char *attr_name (unsigned attr);
/* What ATTR reads back now (malloc'd), or NULL without memory. */
char *attr_text (struct disk *dk, unsigned attr);
/* A write of DATA (the whole value) to ATTR: 0 or an errno, the reason
 * said on stderr.
 */
int attr_write (struct disk *dk, unsigned attr, const char *data, size_t size);

#endif
