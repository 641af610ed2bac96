/* Host-managed zones (zoned=host-managed): a write pointer and a
 * condition per sequential zone, the open/active limits, and the rules a
 * ZBC or ZNS device applies to writes and zone commands.  Conventional
 * zones (the first conventional-zones) take any write.
 *
 * Errors are the ones Linux maps from the standards' sense codes: EIO for
 * a write off the write pointer, across the zone's capacity or into a
 * full zone, and for a zone command in a condition that does not take it;
 * ETOOMANYREFS when no zone can be opened (BLK_STS_ZONE_OPEN_RESOURCE)
 * and EOVERFLOW when no zone can become active (ZONE_ACTIVE_RESOURCE).
 *
 * With backend=file the state lives in a sidecar, FILE.zones, one record
 * per zone rewritten as it changes: it survives SIGKILL and restarts.
 * A power loss (`crash`) rolls each write pointer back to the first byte
 * whose write the volatile cache lost (zones_rollback).
 *
 * Locking: the caller's (the disk lock) for everything but
 * zones_sidecar_sync, which the caller runs after dropping that lock: it
 * takes it back only to collect the changed records, and writes them
 * under SIDECAR_LOCK alone (the disk lock is never held across I/O).
 */
#ifndef BLKEMU_ZONES_H
#define BLKEMU_ZONES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "blkemu/blkemu.h"
#include "config.h"

struct zone {
  uint64_t wp;  /* absolute byte offset */
  uint8_t cond; /* BLKEMU_ZONE_COND_* */
  bool queued;  /* its sidecar record is in DIRTY */
};

struct zones {
  uint64_t zone_size, capacity, nr, nr_conv;
  uint64_t max_open, max_active; /* 0: no limit */
  uint64_t max_append;           /* bytes */
  struct zone *z;
  uint64_t imp_open, exp_open, closed;
  /* A crash view's zones are a copy: the live ones wait here. */
  struct zone *live;
  uint64_t live_imp_open, live_exp_open, live_closed;
  /* The live count too: a view's power cycle is the view's, and its
   * excursions leave with it.
   */
  uint64_t live_excursions;
  bool viewing;
  int sidecar_fd;               /* -1: none (backend=memory, null) */
  uint64_t *dirty, ndirty;      /* zones whose record must be written */
  pthread_mutex_t sidecar_lock; /* one writer of the sidecar at a time */
  /* counters for stats */
  uint64_t open_peak, active_peak;
  uint64_t wp_violations, boundary_violations, full_violations;
  uint64_t open_refused, active_refused, cond_refused;
  uint64_t appends, cmds[BLKEMU_ZONE_OP_COUNT];
  uint64_t excursions; /* zones finished by a power cycle */
  uint64_t writes_seq, writes_conv;
};

/* The cross-key rules of the zoned keys, for a disk of SIZE bytes (0:
 * not known yet, the size rules wait).  Returns 0 or -1 with ERR.
 */
int zones_validate (const struct blkemu_config *cfg, uint64_t size, char *err);

/* Set up Z for CFG (zoned=none: Z->nr stays 0).  FILE is the backing
 * file of backend=file (its sidecar is FILE.zones), or NULL.  Returns 0
 * or -1 with ERR.
 */
int zones_init (struct zones *z, const struct blkemu_config *cfg,
                const char *file, char *err);
void zones_destroy (struct zones *z);

static inline bool
zones_on (const struct zones *z)
{
  return z->nr != 0;
}

/* Where the conventional zones end (they come first; constant). */
static inline uint64_t
zones_conventional_end (const struct zones *z)
{
  return z->nr_conv * z->zone_size;
}

/* A write, write-zeroes or zone append of LEN bytes at *OFFSET arriving:
 * checks the zone's rules and moves its write pointer.  For an append
 * (APPEND), *OFFSET is the zone's start on entry and where the data goes
 * on return.  Returns 0 or an errno (nothing changed).
 */
int zones_write (struct zones *z, uint64_t *offset, uint64_t len, bool append);
/* A trim: refused (EINVAL) in sequential zones, whose blocks only a
 * reset frees.
 */
int zones_trim (struct zones *z, uint64_t offset, uint64_t len);
/* What a zone command changed on the medium: the zones [lo, hi) whose
 * blocks are now settled, and from `unwritten` to hi what reads as never
 * written (a reset: all of it; a finish: past the old write pointer).
 * Empty (lo == hi) for open and close.
 */
struct zone_span {
  uint64_t lo, hi, unwritten;
};
/* A zone command on the zone holding OFFSET (ignored by reset-all);
 * fills *SPAN on success.
 */
int zones_command (struct zones *z, enum blkemu_zone_op op, uint64_t offset,
                   struct zone_span *span);
/* A read of LEN bytes at OFFSET: EIO when it touches an offline zone. */
int zones_read (struct zones *z, uint64_t offset, uint64_t len);
/* Make the sequential zone starting at OFFSET read-only or offline, or
 * (COND empty) bring it back empty.  Returns 0 or EINVAL.
 */
int zones_set_condition (struct zones *z, uint64_t offset, uint8_t cond);
/* The zones a read of LEN bytes at OFFSET touches, in order: where each
 * ends (ZONE_END) and where its data ends (DATA_END: the write pointer
 * of a sequential zone, past which it reads zeroes; a conventional
 * zone's end).  Returns how many, or 0 when more than MAX.
 */
unsigned zones_read_limits (const struct zones *z, uint64_t offset,
                            uint64_t len, uint64_t *zone_end,
                            uint64_t *data_end, unsigned max);
/* Zero what BUF (LEN bytes read at OFFSET) holds past write pointers. */
void zones_mask_read (const struct zones *z, void *buf, uint64_t len,
                      uint64_t offset);
/* Up to NR zones from the one holding OFFSET; returns how many. */
unsigned zones_report (const struct zones *z, uint64_t offset,
                       struct blkemu_zone *out, unsigned nr);
/* Power loss: the write at [OFFSET, OFFSET + LEN) was undone. */
void zones_rollback (struct zones *z, uint64_t offset, uint64_t len);
/* Power loss done: open zones are closed, as after a power cycle.  If
 * the rollback left more zones active than max-active-zones, the last
 * ones are finished (ZNS's zone active excursion), FINISHED(ARG, FROM,
 * LEN) told the range that now reads zeroes.  Returns how many.
 */
unsigned zones_power_cycle (struct zones *z,
                            void (*finished) (void *arg, uint64_t from,
                                              uint64_t len),
                            void *arg);
/* A crash view (core/power.c) changes a copy of the zone state: the
 * live state is kept aside, and no record reaches the sidecar (the live
 * disk's) until zones_view_end brings it back.  Returns 0 or ENOMEM.
 */
int zones_view_begin (struct zones *z);
void zones_view_end (struct zones *z);
/* Write the changed zones' records to the sidecar (backend=file), with
 * STATE_LOCK (the caller's, not held on entry; NULL: single-threaded)
 * taken only to collect them.  A request that changed a zone calls it
 * after dropping the lock and before its data moves.
 */
void zones_sidecar_sync (struct zones *z, pthread_mutex_t *state_lock);
/* Zero the counters (not the state): the stats' reset.  The peaks
 * restart from what is open and active now.
 */
void zones_reset_counters (struct zones *z);
/* Zones by condition (index BLKEMU_ZONE_COND_*, 16 entries). */
void zones_count (const struct zones *z, uint64_t by_cond[16]);

#endif
