/* The disk: configuration, model, backend, stats, trace and the service
 * thread, tied together.  Internal to core/.
 */
#ifndef BLKEMU_DISK_H
#define BLKEMU_DISK_H

#include <pthread.h>
#include <stdbool.h>

#include "backend.h"
#include "config.h"
#include "model.h"
#include "stats.h"
#include "trace.h"

#define TRANSPORT_MAX 8

struct blkemu_disk {
  /* Guards cfg and the model's state: held for the scheduling of each
   * request and for runtime changes, never across I/O or waits.
   */
  pthread_mutex_t lock;
  struct blkemu_config cfg;
  const struct model_ops *model;
  void *model_state;

  const struct backend_ops *backend;
  void *backend_state;

  struct stats stats;
  struct trace trace;
  uint64_t in_flight;           /* requests between arrival and completion */

  struct {
    char *key, *value;
  } transport[TRANSPORT_MAX];   /* frontend facts for the stats JSON */
  pthread_mutex_t transport_lock;

  struct service *service;      /* control socket + SIGUSR1; may be NULL */
};

/* Human summary: iostat-style totals, latency, size histograms. */
void disk_write_summary (struct blkemu_disk *disk, FILE *fp);

/* The service thread (control.c). */
int service_start (struct blkemu_disk *disk, char *err);
void service_stop (struct blkemu_disk *disk);

#endif
