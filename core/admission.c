/* The plain path's gate: see admission.h and disk.h. */
#include "admission.h"
#include "request.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>

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

/* A blocking caller's slot on the plain path, kept per thread in a
 * pthread key rather than a __thread variable: the plugin is dlopen'ed,
 * its dynamic TLS is freed by glibc when a thread exits, and
 * ThreadSanitizer reported the next thread's first use of that memory
 * as a race with the free (as clock.c's timer-slack flag did).
 */
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

static void
slot_key_create (void)
{
  pthread_key_create (&slot_key, NULL);
}

/* Where REQ counts on the plain path: its queue's slot, or its
 * thread's (blocking callers: nbdkit's and FUSE's threads).
 */
static unsigned
plain_slot (const struct request *req)
{
  if (req->tl)
    return req->tl->plain_slot;
  pthread_once (&slot_once, slot_key_create);
  uintptr_t slot = (uintptr_t) pthread_getspecific (slot_key); /* 1 + slot */
  if (!slot) {
    slot = 1 + disk_plain_slot (req->disk);
    pthread_setspecific (slot_key, (void *) slot);
  }
  return (unsigned) (slot - 1);
}

/* Admission's way in: the plain path where the disk has nothing for a
 * request to read under its lock (disk.h), else the lock.  The gate may
 * have been closed for a stall that has since ended: the lock's holder
 * opens it again.  Returns whether the path is plain.
 */
bool
request_enter (const struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  if (disk_plain_enter (disk, plain_slot (req)))
    return true;
  pthread_mutex_lock (&disk->lock);
  disk_plain_recheck (disk);
  return false;
}

void
request_leave (const struct request *req, bool plain)
{
  if (plain)
    disk_plain_leave (req->disk, plain_slot (req));
  else
    pthread_mutex_unlock (&req->disk->lock);
}
