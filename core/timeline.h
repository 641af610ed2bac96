/* A timeline's insides (blkemu.h has the contract): what the pipeline
 * reaches through a request submitted on one.  Internal to core/.
 */
#ifndef BLKEMU_TIMELINE_H
#define BLKEMU_TIMELINE_H

#include <pthread.h>
#include <stdint.h>

#include "engine.h"
#include "stats.h"

struct request;

struct blkemu_timeline {
  struct blkemu_disk *disk;
  struct engine engine;         /* driven by the owner's loop */
  uint64_t armed_ns;            /* the wake-up last asked for */
  struct blkemu_timeline *next; /* the disk's list */
  pthread_t owner;              /* the thread that submits (set by each) */
  unsigned plain_slot;          /* its count on the plain path (disk.h) */
  /* Requests to reuse: no malloc per request.  The owner takes from
   * FREE_LOCAL and puts back there what completes on its own thread;
   * other threads (the I/O worker, a cancel) push onto FREE_REMOTE, which
   * the owner takes whole when FREE_LOCAL runs dry.
   */
  struct request *free_local;
  struct request *free_remote; /* atomic */
  uint64_t outstanding;        /* taken, not yet back: atomic */
  /* This queue's share of the disk's stats: recorded without the disk's
   * stats lock, merged when read (stats_snapshot), added to the disk's
   * when the timeline goes.  Last: large, mostly untouched pages.
   */
  struct stats stats;
};

#endif
