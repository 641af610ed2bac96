/* Timelines on the public API: a loop of the test's own (a
 * clock_nanosleep to blkemu_timeline_wake_at, then blkemu_timeline_run,
 * as ublk's queue thread does with an io_uring timeout) completes the
 * requests, on its own thread, never before their deadlines; with
 * nothing pending it is told to sleep forever; a cancel from another
 * thread completes what the timeline holds with ESHUTDOWN, and later
 * requests are refused.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blkemu/blkemu.h"
#include "check.h"

#define NREQ 16

struct req {
  uint64_t submitted, returned, done_at;
  int result;
  bool done;
  pthread_t thread;
};

static uint64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void
done (void *cookie, int result)
{
  struct req *r = cookie;
  r->done_at = now_ns ();
  r->result = result;
  r->thread = pthread_self ();
  __atomic_store_n (&r->done, true, __ATOMIC_RELEASE);
}

static unsigned
count_done (struct req *rs, unsigned n)
{
  unsigned k = 0;
  for (unsigned i = 0; i < n; i++)
    k += __atomic_load_n (&rs[i].done, __ATOMIC_ACQUIRE);
  return k;
}

/* The owner's loop: sleep to the wake-up time (20 ms at most), run,
 * until N are done or LIMIT_NS passes.
 */
static void
drive (struct blkemu_timeline *tl, struct req *rs, unsigned n,
       uint64_t limit_ns)
{
  uint64_t end = now_ns () + limit_ns;
  while (count_done (rs, n) < n && now_ns () < end) {
    uint64_t at = blkemu_timeline_wake_at (tl);
    if (at == UINT64_MAX)
      break;
    /* A cancel completes requests from its own thread: a real loop is
     * woken by the callback (ublk's eventfd); this one looks every 20 ms.
     */
    uint64_t soon = now_ns () + 20000000;
    if (at > soon)
      at = soon;
    if (at) {
      struct timespec ts = { .tv_sec = (time_t) (at / 1000000000u),
                             .tv_nsec = (long) (at % 1000000000u) };
      clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    blkemu_timeline_run (tl);
  }
}

static void *
cancel_later (void *arg)
{
  struct timespec ts = { .tv_nsec = 50000000 };
  nanosleep (&ts, NULL);
  blkemu_disk_cancel (arg);
  return NULL;
}

int
main (void)
{
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d = blkemu_disk_open_spec ("name=t,size=16M,latency-"
                                                 "read=2ms,latency-write=3ms",
                                                 0, NULL, err, sizeof err);
  CHECK (d, "open: %s", err);
  if (!d)
    return 1;
  CHECK (blkemu_disk_start (d, err, sizeof err) == 0, "start: %s", err);
  struct blkemu_timeline *tl = blkemu_timeline_new (d);
  CHECK (tl, "a timeline");
  CHECK (blkemu_timeline_wake_at (tl) == UINT64_MAX,
         "nothing pending: no wake-up");

  /* Reads and writes at once: each completes at its own deadline. */
  static char buf[NREQ][4096];
  struct req rs[NREQ] = { 0 };
  for (unsigned i = 0; i < NREQ; i++) {
    rs[i].submitted = now_ns ();
    blkemu_timeline_submit (tl, i % 2 ? BLKEMU_OP_WRITE : BLKEMU_OP_READ,
                            buf[i], sizeof buf[i], (uint64_t) i * 4096, 0,
                            done, &rs[i]);
    rs[i].returned = now_ns ();
  }
  /* Nothing completes before its deadline; a slow submitter (a loaded
   * machine, TSan on CI) may see the first ones due and completed inline.
   * The wake-up is for the earliest pending deadline, or 0 ("run now")
   * once that is within the longest spin (200 us).  The core stamps each
   * deadline between SUBMITTED and RETURNED.
   */
  uint64_t asked = now_ns ();
  uint64_t at = blkemu_timeline_wake_at (tl);
  uint64_t answered = now_ns ();
  uint64_t first_lo = UINT64_MAX, first_hi = UINT64_MAX;
  for (unsigned i = 0; i < NREQ; i++) {
    uint64_t want = i % 2 ? 3000000 : 2000000;
    if (__atomic_load_n (&rs[i].done, __ATOMIC_ACQUIRE)) {
      CHECK (rs[i].done_at >= rs[i].submitted + want,
             "request %u completed %llu ns early", i,
             (unsigned long long) (rs[i].submitted + want - rs[i].done_at));
      continue;
    }
    if (rs[i].submitted + want < first_lo)
      first_lo = rs[i].submitted + want;
    if (rs[i].returned + want < first_hi)
      first_hi = rs[i].returned + want;
  }
  CHECK (count_done (rs, NREQ) == NREQ || at != UINT64_MAX,
         "a wake-up with requests pending");
  if (at == 0)
    CHECK (answered + 200000 >= first_lo,
           "\"run now\" %llu ns before the first pending deadline",
           (unsigned long long) (first_lo - answered));
  else if (at != UINT64_MAX)
    CHECK (at > asked && at <= first_hi,
           "the wake-up (+%lld ns) after the first pending deadline (+%lld)",
           (long long) (at - asked), (long long) (first_hi - asked));
  drive (tl, rs, NREQ, 5000000000u);
  CHECK (count_done (rs, NREQ) == NREQ, "%u of %u completed",
         count_done (rs, NREQ), NREQ);
  for (unsigned i = 0; i < NREQ; i++) {
    uint64_t want = i % 2 ? 3000000 : 2000000;
    uint64_t took = rs[i].done_at - rs[i].submitted;
    CHECK (rs[i].result == 0, "request %u: %s", i, strerror (rs[i].result));
    CHECK (took >= want, "request %u done after %llu ns, before its %llu", i,
           (unsigned long long) took, (unsigned long long) want);
    CHECK (pthread_equal (rs[i].thread, pthread_self ()),
           "request %u completed on another thread", i);
  }
  CHECK (blkemu_timeline_wake_at (tl) == UINT64_MAX, "all done: no wake-up");
  printf ("ok: %u requests completed on the owner's thread, none early\n",
          NREQ);

  /* A cancel from another thread ends what the timeline holds. */
  CHECK (blkemu_disk_set (d, "latency-read", "10s", err, sizeof err) == 0,
         "latency-read=10s: %s", err);
  struct req slow[4] = { 0 };
  for (unsigned i = 0; i < 4; i++)
    blkemu_timeline_submit (tl, BLKEMU_OP_READ, buf[i], 4096, 0, 0, done,
                            &slow[i]);
  pthread_t canceller;
  pthread_create (&canceller, NULL, cancel_later, d);
  drive (tl, slow, 4, 3000000000u);
  pthread_join (canceller, NULL);
  CHECK (count_done (slow, 4) == 4, "%u of 4 ended by the cancel",
         count_done (slow, 4));
  for (unsigned i = 0; i < 4; i++)
    CHECK (slow[i].result == ESHUTDOWN, "cancelled request %u: %s", i,
           strerror (slow[i].result));
  struct req late = { 0 };
  blkemu_timeline_submit (tl, BLKEMU_OP_READ, buf[0], 4096, 0, 0, done, &late);
  CHECK (late.done && late.result == ESHUTDOWN,
         "after the cancel a request is refused at once (%s)",
         late.done ? strerror (late.result) : "pending");
  printf ("ok: a cancel ends the timeline's requests with ESHUTDOWN\n");

  blkemu_timeline_free (tl);
  CHECK (blkemu_disk_close (d) == 0, "close");
  printf ("%s\n", failures ? "FAILED" : "ok: timeline");
  return failures ? 1 : 0;
}
