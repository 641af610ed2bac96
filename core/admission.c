/* The plain path's gate: see admission.h and disk.h. */
#include "admission.h"

#include <sched.h>

#include "clock.h"
#include "keys.h"

/* The plain path's promise: with every gated key (keys.def: a key's
 * gate) at its neutral value, admitting a request reads the
 * configuration and nothing else the disk lock guards.  The fixed model
 * at zero latency and unlimited bandwidth completes every request at its
 * arrival whatever its queue holds; the random generator is drawn by
 * nothing (seeded runs keep their sequence).
 */
_Static_assert(MODEL_FIXED == 0 && DIST_FIXED == 0 && ERROR_OFF == 0,
               "an enum key's neutral choice is its first (GATE_ZERO)");

bool
disk_is_plain (const struct blkemu_disk *disk, uint64_t now)
{
  const uint64_t *n = disk->cfg.num;
  for (int k = 0; k < K_COUNT; k++)
    if ((config_keys[k].gate == GATE_ZERO && n[k] != 0) ||
        (config_keys[k].gate == GATE_ABOVE_ONE && n[k] > 1))
      return false;
  return !zones_on (&disk->zones) && !disk->faults.offline &&
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
