/* Admission without the disk lock: the plain path's gate (disk.h's
 * PLAIN and PLAIN_ACTIVE).  Internal to core/.
 */
#ifndef BLKEMU_ADMISSION_H
#define BLKEMU_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include "disk.h"

/* LOCK for a change to anything a request reads: the plain path closed
 * and drained first, reopened by the unlock if the disk is still plain.
 * Reads of the state take LOCK itself.
 */
void disk_change_lock (struct blkemu_disk *disk);
void disk_change_unlock (struct blkemu_disk *disk);
/* Under LOCK: may requests take the plain path now? */
bool disk_is_plain (const struct blkemu_disk *disk, uint64_t now);

/* A request's way in and out of the plain path: false when it is closed
 * (take LOCK instead).
 */
static inline bool
disk_plain_enter (struct blkemu_disk *disk, unsigned slot)
{
  uint64_t *active = &disk->plain_active[slot % PLAIN_SLOTS].n;
  if (!__atomic_load_n (&disk->plain, __ATOMIC_RELAXED))
    return false;
  __atomic_add_fetch (active, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n (&disk->plain, __ATOMIC_SEQ_CST))
    return true;
  __atomic_sub_fetch (active, 1, __ATOMIC_RELEASE);
  return false;
}
static inline void
disk_plain_leave (struct blkemu_disk *disk, unsigned slot)
{
  __atomic_sub_fetch (&disk->plain_active[slot % PLAIN_SLOTS].n, 1,
                      __ATOMIC_RELEASE);
}
/* A slot for a new queue or thread. */
static inline unsigned
disk_plain_slot (struct blkemu_disk *disk)
{
  return __atomic_fetch_add (&disk->plain_next, 1, __ATOMIC_RELAXED) %
         PLAIN_SLOTS;
}

/* Under LOCK, on the locked path: open the gate again if what closed
 * it has passed (a stall's end).
 */
void disk_plain_recheck (struct blkemu_disk *disk);

#endif
