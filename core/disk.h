/* The disk: configuration, model, backend, stats, trace and the
 * completion engine, tied together.  Internal to core/.
 */
#ifndef BLKEMU_DISK_H
#define BLKEMU_DISK_H

#include <pthread.h>
#include <stdbool.h>

#include "backend.h"
#include "badranges.h"
#include "stuckbits.h"
#include "config.h"
#include "dist.h"
#include "engine.h"
#include "faults.h"
#include "iowork.h"
#include "model.h"
#include "overlay.h"
#include "stats.h"
#include "trace.h"
#include "wcache.h"
#include "zones.h"

/* Who may touch what.  The fields are grouped by what guards them.
 *
 * LOCK is never held across I/O or a wait: it is taken to admit and
 * schedule a request (unless the plain path below admits it), for
 * runtime changes (admission.h's disk_change_lock), and for the zones'
 * state;
 * backend I/O, the sidecar's writes and a crash's rollback happen after
 * it is dropped.  The one lock order, where two are held:
 *
 *   power_lock -> lock -> any one of the parts' own locks (the cache's,
 *   the overlay's, the bad ranges', inflight_lock, the stats', the
 *   trace's, transport_lock, the zones' sidecar_lock)
 *
 * (check-tsan runs the concurrent tests with ThreadSanitizer, which
 * reports any two locks taken in both orders.)
 */
struct blkemu_disk {
  /* Under LOCK. */
  pthread_mutex_t lock;
  struct blkemu_config cfg;
  void *model_state;    /* the model's queue, heads, caches */
  struct rng rng;       /* latency draws and fault chances */
  struct faults faults; /* the rules, offline, drop_armed */
  struct zones zones;   /* zoned=: state under LOCK, its sidecar
                           written under its own sidecar_lock */
  bool held;            /* powered off, the cache kept for views */
  bool viewing;         /* a crash view is open (core/power.c) */

  /* Serializes crash and power-on, so that a power-on never serves
   * while a crash is still rolling the medium back (without LOCK).
   */
  pthread_mutex_t power_lock;

  /* Parts with their own lock (or none needed), any thread. */
  struct backend backend;          /* thread-safe calls, no lock */
  struct wcache wcache;            /* write-cache=yes */
  struct overlay view;             /* a crash view's state */
  struct badranges bad;            /* unreadable sectors */
  struct badranges view_bad;       /* those a crash view shows: the
                                      medium's at its start, less what
                                      the view wrote */
  struct stuckbits stuck;          /* bits that read one value */
  pthread_mutex_t inflight_lock;   /* guards INFLIGHT_WRITES */
  struct request *inflight_writes; /* writes between admission and end */
  struct stats stats;
  struct trace trace;
  struct engine engine;              /* completes blkemu_submit's requests */
  pthread_mutex_t timeline_lock;     /* guards TIMELINES */
  struct blkemu_timeline *timelines; /* frontends' own loops (timeline.c) */
  struct iowork iowork;           /* their transfers, for a blocking backend */
  pthread_mutex_t transport_lock; /* guards TRANSPORT */
  struct transport_fact {
    char *key, *value; /* VALUE: a JSON string's text, or a number's */
    bool number;
  } * transport; /* frontend facts for the stats JSON, NTRANSPORT of them */
  size_t ntransport;
  blkemu_transport_refresh_fn transport_refresh; /* before each JSON */
  void *transport_refresh_arg;

  /* The plain path (admission.h, pipeline.c).  While PLAIN is set the disk has
   * nothing a request must read or change under LOCK (disk_is_plain): no
   * model time, faults, zones, cache or view.  A request then admits
   * itself without LOCK, reading only the configuration, counted in
   * PLAIN_ACTIVE meanwhile (a slot per queue, so that queues share no
   * cache line for it; threads of the blocking API spread over them by
   * thread); a change takes LOCK through
   * disk_change_lock, which closes the path and waits for those counted
   * before it changes anything.  Atomics; PLAIN written under LOCK.
   */
  uint32_t plain;
  uint32_t plain_next; /* the slot the next timeline counts in */
#define PLAIN_SLOTS 16
  struct {
    uint64_t n;
  } __attribute__ ((aligned (64))) plain_active[PLAIN_SLOTS];

  /* Atomics. */
  uint64_t in_flight __attribute__ ((aligned (64))); /* requests between
                                                        arrival and
                                                        completion */
  uint64_t power_ons; /* blkemu_disk_power_on calls */
  uint32_t cancelled; /* futex word: blkemu_disk_cancel or
                         blkemu_disk_interrupt was called */

  /* Set at open, then only read. */
  const struct model_ops *model;          /* the link, wrapping model= */
  const struct blkemu_frontend *frontend; /* NULL: the C API itself */
  blkemu_read_sink read_sink; /* reads lent to the frontend (lends_reads) */
  blkemu_write_source write_source; /* writes' data taken from it */
  struct frontend_command {
    const char *name, *usage;
    int max_args;
    blkemu_command_fn run;
    void *arg;
  } commands[BLKEMU_COMMANDS_MAX];
  unsigned ncommands; /* stored after its entry (release): the hub reads */
  struct service *service; /* control.c's, owned by open.c's layer;
                              its fields are its thread's */
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

/* A crash in mode interrupted: every write in flight leaves its sectors
 * unreadable; *RANGES says how many were marked.
 */
void disk_interrupt_writes (struct blkemu_disk *disk, uint64_t *ranges);
/* model=ssd's flash translation layer (NULL: another model, or no
 * over-provisioning).  Under the disk lock.
 */
struct ftl *disk_ftl (struct blkemu_disk *disk);
/* The control command "precondition sequential|random [SEED]": model=ssd's
 * flash translation layer filled at once (ftl_precondition).  0, or -1
 * with ERR (no FTL, a bad mode or seed).
 */
int disk_precondition (struct blkemu_disk *disk, const char *mode,
                       const char *seed, char *err, size_t errlen);
/* timeline.c: blkemu_disk_cancel fires what they hold with ERR;
 * disk_destroy frees those a frontend left.
 */
void timelines_stop (struct blkemu_disk *disk, int err);
void timelines_destroy (struct blkemu_disk *disk);
/* The disk's stats with every timeline's shard merged in (malloc'ed;
 * NULL: no memory), and all of them cleared.
 */
struct stats *timelines_stats_snapshot (struct blkemu_disk *disk);
void timelines_stats_reset (struct blkemu_disk *disk);

/* The unit a crash keeps whole in every write, and the device cuts a
 * split request at: atomic-unit, else physical-block-size, else the
 * logical block.
 */
static inline uint64_t
disk_atomic_unit (const struct blkemu_disk *disk)
{
  const uint64_t *n = disk->cfg.num;
  return n[K_ATOMIC_UNIT]           ? n[K_ATOMIC_UNIT]
         : n[K_PHYSICAL_BLOCK_SIZE] ? n[K_PHYSICAL_BLOCK_SIZE]
                                    : n[K_LOGICAL_BLOCK_SIZE];
}

/* Human summary: iostat-style totals, latency, size histograms. */
void disk_write_summary (struct blkemu_disk *disk, FILE *fp);

#endif
