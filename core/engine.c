/* The completion engine: see engine.h.  The thread sleeps on a condition
 * variable (CLOCK_MONOTONIC) until shortly before the earliest deadline,
 * spins the rest, and fires every entry that is due as one batch, outside
 * the lock: eight requests due at once cost one wake-up, not eight.
 */
#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"

static bool
earlier (const struct engine_entry *a, const struct engine_entry *b)
{
  return a->deadline_ns != b->deadline_ns ? a->deadline_ns < b->deadline_ns
                                          : a->seq < b->seq;
}

/* Put X at I, or above it while it is earlier than its parent. */
static void
sift_up (struct engine *e, size_t i, struct engine_entry *x)
{
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!earlier (x, e->heap[parent]))
      break;
    e->heap[i] = e->heap[parent];
    i = parent;
  }
  e->heap[i] = x;
}

/* Put X at I, or below it while a child is earlier. */
static void
sift_down (struct engine *e, size_t i, struct engine_entry *x)
{
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= e->n)
      break;
    if (child + 1 < e->n && earlier (e->heap[child + 1], e->heap[child]))
      child++;
    if (!earlier (e->heap[child], x))
      break;
    e->heap[i] = e->heap[child];
    i = child;
  }
  e->heap[i] = x;
}

static void
heap_push (struct engine *e, struct engine_entry *x)
{
  sift_up (e, e->n++, x);
}

/* Take heap[I] out. */
static struct engine_entry *
heap_remove (struct engine *e, size_t i)
{
  struct engine_entry *x = e->heap[i];
  struct engine_entry *last = e->heap[--e->n];
  if (i < e->n) {
    if (i > 0 && earlier (last, e->heap[(i - 1) / 2]))
      sift_up (e, i, last);
    else
      sift_down (e, i, last);
  }
  return x;
}

static struct engine_entry *
heap_pop (struct engine *e)
{
  return heap_remove (e, 0);
}

static void
update_head (struct engine *e)
{
  __atomic_store_n (&e->head_ns, e->n ? e->heap[0]->deadline_ns : UINT64_MAX,
                    __ATOMIC_RELEASE);
}

void
engine_init (struct engine *e, engine_fire_fn fire)
{
  *e = (struct engine){ .fire = fire, .head_ns = UINT64_MAX };
  pthread_mutex_init (&e->lock, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init (&attr);
  pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
  pthread_cond_init (&e->wake, &attr);
  pthread_condattr_destroy (&attr);
}

void
engine_init_driven (struct engine *e, engine_fire_fn fire)
{
  engine_init (e, fire);
  e->driven = true;
}

uint64_t
engine_head (struct engine *e)
{
  return __atomic_load_n (&e->head_ns, __ATOMIC_ACQUIRE);
}

/* Fire, outside the lock, the entries taken off the heap. */
static void
fire_batch (struct engine *e, struct engine_entry **batch, size_t n, int err)
{
  for (size_t i = 0; i < n; i++)
    e->fire (batch[i], err);
}

#define BATCH 64

/* Take off the heap, LOCK held, up to BATCH entries due at NOW (all of
 * them, in order, with NOW = UINT64_MAX); returns how many.
 */
static size_t
take_due (struct engine *e, uint64_t now, struct engine_entry **batch)
{
  size_t n = 0;
  while (n < BATCH && e->n && e->heap[0]->deadline_ns <= now)
    batch[n++] = heap_pop (e);
  update_head (e);
  e->fired += n;
  return n;
}

static void *
engine_thread (void *arg)
{
  struct engine *e = arg;
  struct engine_entry *batch[BATCH];
  clock_thread_init ();
  pthread_mutex_lock (&e->lock);
  while (!e->stop_err) {
    if (e->n == 0) {
      pthread_cond_wait (&e->wake, &e->lock);
      continue;
    }
    uint64_t now = clock_now_ns ();
    uint64_t head = e->heap[0]->deadline_ns;
    if (head <= now) {
      size_t n = take_due (e, now, batch);
      pthread_mutex_unlock (&e->lock);
      fire_batch (e, batch, n, 0);
      pthread_mutex_lock (&e->lock);
      continue;
    }
    uint64_t target = clock_sleep_target (head, now);
    if (target) {
      struct timespec ts = { .tv_sec = (time_t) (target / 1000000000u),
                             .tv_nsec = (long) (target % 1000000000u) };
      if (pthread_cond_timedwait (&e->wake, &e->lock, &ts) == ETIMEDOUT)
        clock_learn_wake (target, clock_now_ns ());
      continue;
    }
    /* The last microseconds: spin without the lock, towards whatever is
     * earliest by then (an add may bring the head forward).
     */
    pthread_mutex_unlock (&e->lock);
    for (uint64_t t = clock_now_ns ();
         t < __atomic_load_n (&e->head_ns, __ATOMIC_ACQUIRE) &&
         !__atomic_load_n (&e->stop_err, __ATOMIC_RELAXED);
         t = clock_spin_step (t))
      ;
    pthread_mutex_lock (&e->lock);
  }
  pthread_mutex_unlock (&e->lock);
  return NULL;
}

size_t
engine_run_due (struct engine *e, uint64_t now)
{
  struct engine_entry *batch[BATCH];
  size_t total = 0, n;
  do {
    pthread_mutex_lock (&e->lock);
    n = take_due (e, now, batch);
    pthread_mutex_unlock (&e->lock);
    fire_batch (e, batch, n, 0);
    total += n;
  } while (n == BATCH);
  return total;
}

int
engine_add (struct engine *e, struct engine_entry *entry)
{
  int r = 0;
  pthread_mutex_lock (&e->lock);
  if (e->stop_err) {
    r = e->stop_err;
    goto out;
  }
  if (!e->started && !e->driven) {
    if ((r = pthread_create (&e->thread, NULL, engine_thread, e)) != 0)
      goto out;
    pthread_setname_np (e->thread, "blkemu-engine");
    e->started = true;
  }
  if (e->n == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 64;
    struct engine_entry **heap = realloc (e->heap, cap * sizeof *heap);
    if (!heap) {
      r = ENOMEM;
      goto out;
    }
    e->heap = heap;
    e->cap = cap;
  }
  entry->seq = e->next_seq++;
  heap_push (e, entry);
  if (e->heap[0] == entry) {
    update_head (e);
    pthread_cond_signal (&e->wake);
  }
out:
  pthread_mutex_unlock (&e->lock);
  return r;
}

void
engine_stop (struct engine *e, int err)
{
  pthread_mutex_lock (&e->lock);
  if (e->stop_err) {
    pthread_mutex_unlock (&e->lock);
    return;
  }
  __atomic_store_n (&e->stop_err, err, __ATOMIC_RELAXED);
  pthread_cond_signal (&e->wake);
  bool started = e->started;
  pthread_mutex_unlock (&e->lock);
  if (started)
    pthread_join (e->thread, NULL);
  /* No thread and no adds any more: fire what is left, earliest first,
   * taken under the lock (a driven engine's owner may be running
   * engine_run_due meanwhile).
   */
  struct engine_entry *batch[BATCH];
  size_t n;
  do {
    pthread_mutex_lock (&e->lock);
    n = take_due (e, UINT64_MAX, batch);
    pthread_mutex_unlock (&e->lock);
    fire_batch (e, batch, n, err);
  } while (n == BATCH);
}

size_t
engine_take_if (struct engine *e,
                bool (*match) (const struct engine_entry *entry, void *arg),
                void *arg, int err)
{
  struct engine_entry *batch[BATCH];
  size_t total = 0, n;
  do {
    n = 0;
    pthread_mutex_lock (&e->lock);
    /* A removal moves the last entry, up or down: scan again from the
     * top (aborts are rare, the heap holds one disk's requests).
     */
    for (size_t i = 0; i < e->n && n < BATCH;)
      if (match (e->heap[i], arg)) {
        batch[n++] = heap_remove (e, i);
        i = 0;
      }
      else
        i++;
    update_head (e);
    e->fired += n;
    pthread_mutex_unlock (&e->lock);
    fire_batch (e, batch, n, err);
    total += n;
  } while (n == BATCH);
  return total;
}

size_t
engine_pending (struct engine *e)
{
  pthread_mutex_lock (&e->lock);
  size_t n = e->n;
  pthread_mutex_unlock (&e->lock);
  return n;
}

void
engine_destroy (struct engine *e)
{
  engine_stop (e, ECANCELED);
  free (e->heap);
  pthread_cond_destroy (&e->wake);
  pthread_mutex_destroy (&e->lock);
}
