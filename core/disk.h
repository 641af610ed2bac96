/* The disk: configuration, model, backend, stats, trace and the
 * completion engine, tied together.  Internal to core/.
 */
#ifndef BLKEMU_DISK_H
#define BLKEMU_DISK_H

#include <pthread.h>
#include <stdbool.h>

#include "backend.h"
#include "config.h"
#include "dist.h"
#include "engine.h"
#include "faults.h"
#include "iowork.h"
#include "model.h"
#include "stats.h"
#include "trace.h"
#include "wcache.h"
#include "zones.h"

#define TRANSPORT_MAX 8

struct blkemu_disk {
  /* Guards cfg and the model's state: held for the scheduling of each
   * request and for runtime changes, never across I/O or waits.
   */
  pthread_mutex_t lock;
  struct blkemu_config cfg;
  const struct model_ops *model;  /* the link, wrapping model= */
  void *model_state;
  struct rng rng;                 /* latency draws and fault chances */
  struct faults faults;

  struct backend backend;

  struct wcache wcache;          /* write-cache=yes: the undo log */
  struct zones zones;            /* zoned=: under LOCK */

  struct stats stats;
  struct trace trace;
  uint64_t in_flight;           /* requests between arrival and completion */

  struct engine engine;         /* completes blkemu_submit's requests */
  struct iowork iowork;         /* their transfers, for a blocking backend */
  uint32_t cancelled;           /* futex word: blkemu_disk_cancel or
                                   blkemu_disk_interrupt was called */

  struct {
    char *key, *value;
  } transport[TRANSPORT_MAX];   /* frontend facts for the stats JSON */
  pthread_mutex_t transport_lock;

  struct service *service;      /* control.c's, owned by open.c's layer */
};

/* The disk without its service (open.c adds it): validate, open the
 * backend, model, cache and trace.  NULL with ERR filled.
 */
struct blkemu_disk *disk_create (const struct blkemu_spec *spec, char *err);
void disk_destroy (struct blkemu_disk *disk);

/* Runtime changes, all or nothing: NPAIRS (at most DISK_SET_MAX)
 * "key=value" strings, split in place.  Returns 0 or -1 with ERR filled.
 */
#define DISK_SET_MAX 64
int disk_set_pairs (struct blkemu_disk *disk, char **pairs, int npairs,
                    char *err);


/* Human summary: iostat-style totals, latency, size histograms. */
void disk_write_summary (struct blkemu_disk *disk, FILE *fp);


#endif
