/* The plain path's gate: see admission.h and disk.h. */
#include "admission.h"

#include <sched.h>

#include "clock.h"

/* The plain path's promise: with none of these, admitting a request
 * reads the configuration and nothing else the disk lock guards.  The
 * fixed model at zero latency and unlimited bandwidth completes every
 * request at its arrival whatever its queue holds; the random generator
 * is drawn by nothing (seeded runs keep their sequence).
 */
bool
disk_is_plain (const struct blkemu_disk *disk, uint64_t now)
{
  const uint64_t *n = disk->cfg.num;
  static const int zero[] = {
    K_LATENCY_READ,
    K_LATENCY_WRITE,
    K_LATENCY_FLUSH,
    K_LATENCY_TRIM,
    K_BANDWIDTH,
    K_READ_BANDWIDTH,
    K_WRITE_BANDWIDTH,
    K_LINK_BANDWIDTH,
    K_LINK_RTT,
    K_VOLUME_IOPS,
    K_VOLUME_IOPS_PER_GIB,
    K_VOLUME_BANDWIDTH,
    K_WRITE_CACHE,
    K_ZONED,
    K_SPIKE_PROBABILITY,
    K_BIT_FLIP_PROBABILITY,
    K_LOST_WRITE_PROBABILITY,
    K_MISDIRECTED_WRITE_PROBABILITY,
  };
  for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
    if (n[zero[i]])
      return false;
  return n[K_MODEL] == MODEL_FIXED && n[K_LATENCY_DIST] == DIST_FIXED &&
         n[K_SLOWDOWN] <= 1 && n[K_ERROR_MODE] == ERROR_OFF &&
         !zones_on (&disk->zones) && !disk->faults.offline &&
         !disk->faults.drop_armed && disk->faults.stall_until_ns <= now &&
         !disk->held && !disk->viewing;
}

void
disk_change_lock (struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->lock);
  /* Closed already: whoever closed it waited for those inside. */
  if (!__atomic_exchange_n (&disk->plain, 0, __ATOMIC_SEQ_CST))
    return;
  /* Those inside admit themselves in a few hundred nanoseconds and never
   * wait on anything.
   */
  for (unsigned i = 0; i < PLAIN_SLOTS; i++)
    while (__atomic_load_n (&disk->plain_active[i].n, __ATOMIC_SEQ_CST))
      sched_yield ();
}

void
disk_change_unlock (struct blkemu_disk *disk)
{
  __atomic_store_n (&disk->plain, disk_is_plain (disk, clock_now_ns ()),
                    __ATOMIC_SEQ_CST);
  pthread_mutex_unlock (&disk->lock);
}

void
disk_plain_recheck (struct blkemu_disk *disk)
{
  if (!__atomic_load_n (&disk->plain, __ATOMIC_RELAXED) &&
      disk->faults.stall_until_ns && disk_is_plain (disk, clock_now_ns ()))
    __atomic_store_n (&disk->plain, 1, __ATOMIC_SEQ_CST);
}
