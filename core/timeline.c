/* Timelines (blkemu.h): completion engines without a thread, driven by a
 * frontend's event loop, so a request completes on the thread that will
 * answer it.  The disk keeps a list of them for blkemu_disk_cancel.
 */
#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "disk.h"
#include "engine.h"
#include "pipeline.h"

struct blkemu_timeline {
  struct blkemu_disk *disk;
  struct engine engine;         /* driven by the owner's loop */
  uint64_t armed_ns;            /* the wake-up last asked for */
  struct blkemu_timeline *next; /* the disk's list */
};

struct blkemu_timeline *
blkemu_timeline_new (struct blkemu_disk *disk)
{
  struct blkemu_timeline *tl = calloc (1, sizeof *tl);
  if (!tl)
    return NULL;
  tl->disk = disk;
  engine_init_driven (&tl->engine, pipeline_fire);
  /* A timeline made after a cancel refuses its requests as the disk
   * would.
   */
  if (__atomic_load_n (&disk->cancelled, __ATOMIC_ACQUIRE))
    engine_stop (&tl->engine, ESHUTDOWN);
  pthread_mutex_lock (&disk->timeline_lock);
  tl->next = disk->timelines;
  disk->timelines = tl;
  pthread_mutex_unlock (&disk->timeline_lock);
  return tl;
}

void
blkemu_timeline_free (struct blkemu_timeline *tl)
{
  if (!tl)
    return;
  struct blkemu_disk *disk = tl->disk;
  pthread_mutex_lock (&disk->timeline_lock);
  for (struct blkemu_timeline **p = &disk->timelines; *p; p = &(*p)->next)
    if (*p == tl) {
      *p = tl->next;
      break;
    }
  pthread_mutex_unlock (&disk->timeline_lock);
  engine_destroy (&tl->engine); /* fires what is left with ECANCELED */
  free (tl);
}

void
blkemu_timeline_submit (struct blkemu_timeline *tl, enum blkemu_op op,
                        void *buf, uint64_t len, uint64_t offset,
                        unsigned flags, blkemu_done_cb done, void *cookie)
{
  pipeline_submit_on (tl->disk, &tl->engine, op, buf, len, offset, flags, done,
                      cookie);
}

uint64_t
blkemu_timeline_wake_at (struct blkemu_timeline *tl)
{
  uint64_t head = engine_head (&tl->engine);
  if (head == UINT64_MAX)
    return UINT64_MAX;
  uint64_t now = clock_now_ns ();
  if (head <= now)
    return 0;
  /* 0: too close to sleep for (the wake-up would be late): poll. */
  uint64_t target = clock_sleep_target (head, now);
  if (!target)
    return 0;
  tl->armed_ns = target;
  return target;
}

unsigned
blkemu_timeline_run (struct blkemu_timeline *tl)
{
  uint64_t now = clock_now_ns ();
  /* Woken for the wake-up asked for: how late it was teaches the next. */
  if (tl->armed_ns && now >= tl->armed_ns) {
    clock_learn_wake (tl->armed_ns, now);
    tl->armed_ns = 0;
  }
  return (unsigned) engine_run_due (&tl->engine, now);
}

void
timelines_stop (struct blkemu_disk *disk, int err)
{
  pthread_mutex_lock (&disk->timeline_lock);
  for (struct blkemu_timeline *tl = disk->timelines; tl; tl = tl->next)
    engine_stop (&tl->engine, err);
  pthread_mutex_unlock (&disk->timeline_lock);
}

void
timelines_destroy (struct blkemu_disk *disk)
{
  while (disk->timelines)
    blkemu_timeline_free (disk->timelines);
  pthread_mutex_destroy (&disk->timeline_lock);
}
