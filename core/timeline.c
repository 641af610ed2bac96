/* Timelines (blkemu.h): completion engines without a thread, driven by a
 * frontend's event loop, so a request completes on the thread that will
 * answer it.  The disk keeps a list of them for blkemu_disk_cancel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission.h"
#include "clock.h"
#include "disk.h"
#include "engine.h"
#include "pipeline.h"
#include "timeline.h"

struct blkemu_timeline *
blkemu_timeline_new (struct blkemu_disk *disk)
{
  struct blkemu_timeline *tl = calloc (1, sizeof *tl);
  if (!tl)
    return NULL;
  tl->disk = disk;
  tl->plain_slot = disk_plain_slot (disk);
  stats_init (&tl->stats);
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
  engine_destroy (&tl->engine); /* fires what is left with ECANCELED */
  /* A file disk's I/O worker may still hold a transfer: it completes the
   * request, then gives it back to the pool.
   */
  while (__atomic_load_n (&tl->outstanding, __ATOMIC_ACQUIRE))
    nanosleep (&(struct timespec){ .tv_nsec = 100000 }, NULL);
  pipeline_pool_free (tl);
  /* Its counts stay the disk's: off the list and into the disk's stats
   * under the list's lock, so that no snapshot counts them twice or not
   * at all.
   */
  pthread_mutex_lock (&disk->timeline_lock);
  for (struct blkemu_timeline **p = &disk->timelines; *p; p = &(*p)->next)
    if (*p == tl) {
      *p = tl->next;
      break;
    }
  pthread_mutex_lock (&disk->stats.lock);
  stats_merge (&disk->stats, &tl->stats);
  pthread_mutex_unlock (&disk->stats.lock);
  pthread_mutex_unlock (&disk->timeline_lock);
  stats_destroy (&tl->stats);
  free (tl);
}

int
blkemu_timeline_submit (struct blkemu_timeline *tl, enum blkemu_op op,
                        void *buf, uint64_t len, uint64_t offset,
                        unsigned flags, blkemu_done_cb done, void *cookie)
{
  /* The thread that submits owns the pool's local list. */
  __atomic_store_n (&tl->owner, pthread_self (), __ATOMIC_RELAXED);
  return pipeline_submit_on (tl, op, buf, len, offset, flags, done, cookie);
}

int
blkemu_timeline_append (struct blkemu_timeline *tl, const void *buf,
                        uint64_t len, uint64_t zone_offset, unsigned flags,
                        uint64_t *written_at, blkemu_done_cb done,
                        void *cookie)
{
  __atomic_store_n (&tl->owner, pthread_self (), __ATOMIC_RELAXED);
  return pipeline_append_on (tl->disk, tl, buf, len, zone_offset, flags,
                             written_at, done, cookie);
}

int
blkemu_timeline_zone_submit (struct blkemu_timeline *tl,
                             enum blkemu_zone_op op, uint64_t offset,
                             blkemu_done_cb done, void *cookie)
{
  __atomic_store_n (&tl->owner, pthread_self (), __ATOMIC_RELAXED);
  return pipeline_zone_submit_on (tl->disk, tl, op, offset, done, cookie);
}

size_t
blkemu_timeline_abort (struct blkemu_timeline *tl, void *cookie)
{
  return engine_take_if (&tl->engine, pipeline_abortable, cookie, ECANCELED);
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

struct stats *
timelines_stats_snapshot (struct blkemu_disk *disk)
{
  struct stats *snap = malloc (sizeof *snap);
  if (!snap)
    return NULL;
  pthread_mutex_lock (&disk->timeline_lock);
  pthread_mutex_lock (&disk->stats.lock);
  memcpy (snap, &disk->stats, sizeof *snap);
  pthread_mutex_unlock (&disk->stats.lock);
  for (struct blkemu_timeline *tl = disk->timelines; tl; tl = tl->next) {
    pthread_mutex_lock (&tl->stats.lock);
    stats_merge (snap, &tl->stats);
    pthread_mutex_unlock (&tl->stats.lock);
  }
  pthread_mutex_unlock (&disk->timeline_lock);
  return snap;
}

void
timelines_stats_reset (struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->timeline_lock);
  stats_reset (&disk->stats);
  for (struct blkemu_timeline *tl = disk->timelines; tl; tl = tl->next)
    stats_reset (&tl->stats);
  pthread_mutex_unlock (&disk->timeline_lock);
}

void
timelines_destroy (struct blkemu_disk *disk)
{
  while (disk->timelines)
    blkemu_timeline_free (disk->timelines);
  pthread_mutex_destroy (&disk->timeline_lock);
}
