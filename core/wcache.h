/* The volatile write cache's data side (write-cache=yes): what a power
 * loss would take away.  Writes go to the backend at once, but the data
 * they overwrote is kept in an undo log until a flush; `crash` rolls the
 * log back, newest first, so the disk holds exactly what was flushed,
 * FUA'd or destaged (crash mode lose-all), or lets a seeded choice of
 * the logged writes, or of their atomic units, reach the medium (subset,
 * torn).
 *
 * Bounds: the log keeps at most cache-size bytes of old data (older
 * writes count as destaged, as on a drive whose cache filled).  A FUA
 * write (or one larger than the cache) is durable at once: it cuts its
 * range out of the older entries instead of adding one, so the log holds
 * only data that a crash would restore — its memory and a crash's work
 * are bounded by cache-size, whatever the mix of writes.
 *
 * Locking: LOCK guards everything below it and is held across the backend
 * I/O of a cached write (a write and its undo data are one step).  Any
 * thread may call any function.  GENERATION is written atomically by
 * wcache_crash and read by flushes, with or without LOCK (see
 * wcache_flush_end).
 */
#ifndef BLKEMU_WCACHE_H
#define BLKEMU_WCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "badranges.h"
#include "blkemu/blkemu.h"

struct undo;

struct wcache {
  const struct backend *backend;
  /* The medium's unreadable ranges (NULL: none kept): an entry remembers
   * which of the sectors it saved were unreadable, so that a crash
   * putting them back makes them unreadable again.
   */
  struct badranges *bad;
  pthread_mutex_t lock;
  struct undo *newest, *oldest;
  uint64_t bytes; /* old data held, bytes */
  uint64_t entries;
  uint64_t next_seq;   /* stamped on each entry, increasing */
  uint64_t generation; /* crashes so far (atomic) */
  bool frozen;         /* powered off with the log kept: nothing may
                          change it (crash views borrow its bytes) */
  /* A crash state's working arrays, kept from one crash or view to the
   * next (fresh pages cost page faults every time; a run of views reuses
   * them).  They grow to the largest log seen, about 60 bytes an entry.
   */
  struct {
    void *p;
    size_t size;
  } scratch[4];
};

void wcache_init (struct wcache *w, const struct backend *backend,
                  struct badranges *bad);
void wcache_destroy (struct wcache *w);

/* Serve a write, write-zeroes or trim (or one piece of one) through the
 * cache: saves the old contents unless WRITE_THROUGH, then does the I/O,
 * keeping at most LIMIT bytes of old data.  The caller decides
 * WRITE_THROUGH for the whole host request (FUA, or larger than the
 * cache), so the pieces of a split request are durable together; cached,
 * each is a write of its own in a crash state (the caller cuts them at
 * atomic-unit multiples).  Returns 0 or an errno.
 */
int wcache_write (struct wcache *w, enum blkemu_op op, void *buf, uint64_t len,
                  uint64_t offset, unsigned flags, bool write_through,
                  uint64_t limit);

/* [OFFSET, OFFSET + LEN) is settled on the medium, whatever the log
 * holds for it: a zone finish (its writes made durable) or reset (its
 * data gone for good).  A crash restores nothing there.
 */
void wcache_settle (struct wcache *w, uint64_t offset, uint64_t len);

/* A flush: wcache_generation at the request's arrival, then
 * wcache_flush_run does the backend flush and makes everything logged
 * before it durable.  It fails with EIO, and makes nothing durable, when
 * a crash came after the flush arrived: a flush that returns 0 means its
 * data survives every later crash.
 */
uint64_t wcache_generation (struct wcache *w);
int wcache_flush_run (struct wcache *w, uint64_t generation_at_arrival);

/* Power loss: the log's writes reach the medium as MODE says (see
 * blkemu_crash_mode), then the log is empty.  Returns 0 or an errno
 * (ENOMEM: a state could not be made without breaking its promises).
 */
struct wcache_crash {
  enum blkemu_crash_mode mode;
  uint64_t seed;
  uint64_t unit; /* torn: the largest write never torn */
  /* Ordered regions, a zoned disk's sequential zones (NULL: none):
   * REGION names the one holding OFFSET, or UINT64_MAX for none.  A
   * region's writes reach the medium in the order they came, so a state
   * keeps a prefix of them: the first one the mode does not keep whole
   * is lost, or kept up to a unit boundary (torn), and every later one
   * is lost.
   */
  uint64_t (*region) (void *region_arg, uint64_t offset);
  void *region_arg;
  /* Told each range put back (NULL: not told). */
  void (*undone) (void *arg, uint64_t offset, uint64_t len);
  /* Told each write's fate, newest first (NULL: not told). */
  void (*fate) (void *fate_arg, uint64_t offset, uint64_t len,
                enum blkemu_crash_fate fate);
  void *arg, *fate_arg;
  /* Where put-back data goes (NULL: the medium).  DATA NULL: zeros.
   * Called in increasing order of OFFSET, the ranges disjoint; DATA
   * points into the log.  Returns 0 or an errno.
   */
  int (*sink) (void *arg, uint64_t offset, uint64_t len, const void *data);
  void *sink_arg;
  /* Where sectors put back unreadable become so again (the medium's
   * ranges at a crash, a view's own copy; NULL: nowhere).
   */
  struct badranges *unreadable;
  /* Out: writes by fate, and the bytes put back. */
  uint64_t persisted, lost, torn, lost_bytes;
};
int wcache_crash (struct wcache *w, struct wcache_crash *c);
/* The same state told to C->sink, with the log and the medium left as
 * they are (a crash view).
 */
int wcache_crash_state (struct wcache *w, struct wcache_crash *c);
/* The power goes, the log kept (for crash views): requests and flushes in
 * flight fail as at a crash, and the log is frozen -- a write still on its
 * way fails with EIO without reaching the medium -- until wcache_thaw or
 * wcache_crash.
 */
void wcache_power_cut (struct wcache *w);
void wcache_thaw (struct wcache *w);

/* Entries and bytes held now (tests, stats). */
void wcache_usage (struct wcache *w, uint64_t *entries, uint64_t *bytes);

#endif
