/* The completion engine: one thread per disk fires each submitted
 * request's completion at its deadline, in deadline order (submission
 * order among equal deadlines).  It knows nothing of disks: an entry is
 * a deadline embedded in the caller's request, and FIRE is called with
 * the entry and 0 (on time) or the cancel error (engine_stop).
 */
#ifndef BLKEMU_ENGINE_H
#define BLKEMU_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engine_entry {
  uint64_t deadline_ns;
  uint64_t seq; /* set by engine_add: ties in arrival order */
};

typedef void (*engine_fire_fn) (struct engine_entry *entry, int cancel_err);

struct engine {
  pthread_mutex_t lock;
  pthread_cond_t wake;        /* a new earliest deadline, or stop */
  struct engine_entry **heap; /* min-heap on (deadline, seq) */
  size_t n, cap;
  uint64_t next_seq;
  uint64_t head_ns; /* heap[0]'s deadline, read while spinning */
  engine_fire_fn fire;
  int stop_err; /* non-zero once stopped */
  bool started; /* the thread starts with the first entry */
  bool driven;  /* no thread: its owner calls engine_run_due */
  pthread_t thread;
  uint64_t fired; /* completions fired, on time or not */
};

void engine_init (struct engine *e, engine_fire_fn fire);
/* An engine without a thread, for an owner with an event loop of its own
 * (a frontend's io_uring): the owner waits until engine_head and calls
 * engine_run_due, which fires what is due on the owner's thread.
 */
void engine_init_driven (struct engine *e, engine_fire_fn fire);
/* The earliest deadline queued (UINT64_MAX: none); any thread. */
uint64_t engine_head (struct engine *e);
/* Fire every entry due at NOW, outside the lock; returns how many. */
size_t engine_run_due (struct engine *e, uint64_t now);
/* Queue ENTRY.  Returns 0, or an errno without queueing it (the engine
 * is stopped: the stop error; the thread could not start; no memory).
 */
int engine_add (struct engine *e, struct engine_entry *entry);
/* Fire every queued entry now with ERR (non-zero), refuse later adds
 * with it, and end the thread.  Returns when the thread has exited.
 */
void engine_stop (struct engine *e, int err);
void engine_destroy (struct engine *e);
/* Fire now with ERR (non-zero) every queued entry MATCH accepts, from
 * the caller's thread, outside the lock (MATCH runs under it: no calls
 * back into the engine).  Returns how many.  The engine goes on.
 */
size_t engine_take_if (struct engine *e,
                       bool (*match) (const struct engine_entry *entry,
                                      void *arg),
                       void *arg, int err);
/* Entries queued now (for the tests and stats). */
size_t engine_pending (struct engine *e);

#endif
