/* Timelines on the public API: a loop of the test's own (a
 * clock_nanosleep to blkemu_timeline_wake_at, then blkemu_timeline_run,
 * as ublk's queue thread does with an io_uring timeout) completes the
 * requests, on its own thread, never before their deadlines; with
 * nothing pending it is told to sleep forever; a cancel from another
 * thread completes what the timeline holds with ESHUTDOWN, and later
 * requests are refused.  Each timeline counts its requests in a stats
 * shard of its own: the disk's stats JSON merges them while they live,
 * a reset clears them, and a freed timeline's counts stay the disk's;
 * requests completed on the I/O worker's thread (a file disk) go back
 * to their timeline's pool from there.  A read of an unreadable sector
 * completes with BLKEMU_ERR_MEDIUM (blkemu_io: EIO); an injected EIO,
 * or one the power went under, stays EIO.  An abort, zone commands and
 * zone append have timeline forms that complete on the owner's thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "check.h"
#include "helpers.h"

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

/* OP's FIELD in the stats (ops.OP.FIELD). */
static long long
op_field (struct blkemu_disk *d, const char *op, const char *field)
{
  char path[64];
  snprintf (path, sizeof path, "ops.%s.%s", op, field);
  return (long long) test_stat (d, path);
}

struct queue {
  struct blkemu_disk *d;
  struct blkemu_timeline *tl;
  enum blkemu_op op;
  uint64_t len;
  unsigned n;
};

/* A queue thread: its own timeline, N requests of LEN at once, run to
 * completion (those the I/O worker completes come back on its thread).
 */
static void *
queue_run (void *arg)
{
  struct queue *q = arg;
  struct req *rs = calloc (q->n, sizeof *rs);
  char *buf = calloc (q->n, q->len);
  if (!rs || !buf)
    abort ();
  if (!q->tl)
    q->tl = blkemu_timeline_new (q->d);
  for (unsigned i = 0; i < q->n; i++)
    test_answered (blkemu_timeline_submit (q->tl, q->op,
                                           buf + (size_t) i * q->len, q->len,
                                           (uint64_t) i * q->len, 0, done,
                                           &rs[i]),
                   done, &rs[i]);
  uint64_t end = now_ns () + 5000000000u;
  while (count_done (rs, q->n) < q->n && now_ns () < end)
    blkemu_timeline_run (q->tl);
  for (unsigned i = 0; i < q->n; i++)
    CHECK (rs[i].done && rs[i].result == 0, "queue request %u: %s", i,
           rs[i].done ? strerror (rs[i].result) : "not done");
  free (rs);
  free (buf);
  return NULL;
}

static void
run_queues (struct queue *qs, unsigned n)
{
  pthread_t t[2];
  for (unsigned i = 0; i < n; i++)
    pthread_create (&t[i], NULL, queue_run, &qs[i]);
  for (unsigned i = 0; i < n; i++)
    pthread_join (t[i], NULL);
}

/* Two queues on a file disk: shards merged, reset, kept after a free. */
static void
stats_shards (void)
{
  char path[] = "/tmp/test-timeline-XXXXXX", spec[128];
  int fd = mkstemp (path);
  CHECK (fd >= 0 && ftruncate (fd, 16 << 20) == 0, "a 16M file");
  close (fd);
  snprintf (spec, sizeof spec, "name=s,size=16M,backend=file,file=%s", path);
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d =
    blkemu_disk_open_spec (spec, 0, NULL, err, sizeof err);
  CHECK (d, "open %s: %s", spec, err);
  if (!d)
    return;
  struct queue qs[2] = {
    { .d = d, .op = BLKEMU_OP_READ, .len = 4096, .n = 200 },
    { .d = d, .op = BLKEMU_OP_WRITE, .len = 8192, .n = 300 },
  };
  /* One read on the disk's own stats (no timeline) besides. */
  static char one[4096];
  CHECK (blkemu_io (d, BLKEMU_OP_READ, one, sizeof one, 0, 0) == 0, "a read");
  run_queues (qs, 2);
  CHECK (op_field (d, "read", "requests") == 201 &&
           op_field (d, "write", "requests") == 300,
         "merged while the queues live: %lld reads, %lld writes (201, 300)",
         op_field (d, "read", "requests"), op_field (d, "write", "requests"));
  CHECK (op_field (d, "read", "sizes.4096") == 201 &&
           op_field (d, "write", "sizes.8192") == 300,
         "merged size tables: %lld x 4096, %lld x 8192",
         op_field (d, "read", "sizes.4096"),
         op_field (d, "write", "sizes.8192"));
  blkemu_disk_reset_stats (d);
  CHECK (op_field (d, "read", "requests") == 0 &&
           op_field (d, "write", "requests") == 0,
         "a reset clears every queue's shard: %lld reads, %lld writes",
         op_field (d, "read", "requests"), op_field (d, "write", "requests"));
  qs[0].n = 10;
  qs[1].n = 20;
  run_queues (qs, 2);
  blkemu_timeline_free (qs[0].tl);
  blkemu_timeline_free (qs[1].tl);
  CHECK (op_field (d, "read", "requests") == 10 &&
           op_field (d, "write", "requests") == 20,
         "kept after the queues went: %lld reads, %lld writes (10, 20)",
         op_field (d, "read", "requests"), op_field (d, "write", "requests"));
  CHECK (blkemu_disk_close (d) == 0, "close the file disk");
  unlink (path);
  printf ("ok: queue stats merged, reset and kept after a timeline's end\n");
}

static char buf[NREQ][4096];

/* Reads and writes at once: each completes at its own deadline, on the
 * timeline's owner's thread, and the wake-up it asks for is right.
 */
static void
test_deadlines (struct blkemu_timeline *tl)
{
  struct req rs[NREQ] = { 0 };
  for (unsigned i = 0; i < NREQ; i++) {
    rs[i].submitted = now_ns ();
    test_answered (blkemu_timeline_submit (tl,
                                           i % 2 ? BLKEMU_OP_WRITE
                                                 : BLKEMU_OP_READ,
                                           buf[i], sizeof buf[i],
                                           (uint64_t) i * 4096, 0, done,
                                           &rs[i]),
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
}

/* A cancel from another thread ends what the timeline holds. */
static void
test_cancel (struct blkemu_disk *d, struct blkemu_timeline *tl)
{
  char err[BLKEMU_ERR_MAX] = "";
  CHECK (blkemu_disk_set (d, "latency-read", "10s", err, sizeof err) == 0,
         "latency-read=10s: %s", err);
  struct req slow[4] = { 0 };
  for (unsigned i = 0; i < 4; i++)
    test_answered (blkemu_timeline_submit (tl, BLKEMU_OP_READ, buf[i], 4096, 0,
                                           0, done, &slow[i]),
                   done, &slow[i]);
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
  int r = blkemu_timeline_submit (tl, BLKEMU_OP_READ, buf[0], 4096, 0, 0, done,
                                  &late);
  CHECK (r == ESHUTDOWN && !late.done,
         "after the cancel a request is handed back refused (%s)",
         r == BLKEMU_QUEUED ? "queued" : strerror (r));
  printf ("ok: a cancel ends the timeline's requests with ESHUTDOWN\n");
}

/* One read of LEN bytes at OFF on TL, driven to its end: its result. */
static int
read_one (struct blkemu_timeline *tl, uint64_t len, uint64_t off)
{
  static char data[16384];
  struct req r = { 0 };
  test_answered (blkemu_timeline_submit (tl, BLKEMU_OP_READ, data, len, off, 0,
                                         done, &r),
                 done, &r);
  drive (tl, &r, 1, 3000000000u);
  return r.done ? r.result : -1;
}

static void
set_key (struct blkemu_disk *d, const char *key, const char *value)
{
  char err[BLKEMU_ERR_MAX] = "";
  CHECK (blkemu_disk_set (d, key, value, err, sizeof err) == 0, "%s=%s: %s",
         key, value, err);
}

/* A started disk of SPEC and a timeline on it (NULL, said, on failure). */
static struct blkemu_timeline *
open_timeline (const char *spec, struct blkemu_disk **dp)
{
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d =
    blkemu_disk_open_spec (spec, 0, NULL, err, sizeof err);
  CHECK (d && blkemu_disk_start (d, err, sizeof err) == 0, "open %s: %s", spec,
         err);
  *dp = d;
  return d ? blkemu_timeline_new (d) : NULL;
}

static void
test_medium (void)
{
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d;
  struct blkemu_timeline *tl =
    open_timeline ("name=m,size=1M,latency-read=1ms", &d);
  if (!tl)
    return;
  CHECK (blkemu_disk_bad_add (d, 8192, 4096, err, sizeof err) == 0,
         "bad add: %s", err);
  int r = read_one (tl, 16384, 0);
  CHECK (r == BLKEMU_ERR_MEDIUM, "a read over a bad range: %#x", r);
  r = read_one (tl, 4096, 65536);
  CHECK (r == 0, "a read beside it: %d", r);
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf[0], 4096, 8192, 0) == EIO,
         "blkemu_io over the bad range: EIO");
  set_key (d, "error-op", "read");
  set_key (d, "error-offset", "65536");
  set_key (d, "error-length", "4096");
  set_key (d, "error-mode", "always");
  r = read_one (tl, 4096, 65536);
  CHECK (r == EIO, "an injected error: %d, not a medium error", r);
  set_key (d, "error-mode", "off");
  /* The power goes while a medium read waits: the crash's EIO. */
  set_key (d, "latency-read", "200ms");
  struct req slow = { 0 };
  test_answered (blkemu_timeline_submit (tl, BLKEMU_OP_READ, buf[0], 4096,
                                         8192, 0, done, &slow),
                 done, &slow);
  CHECK (blkemu_disk_power_off (d, err, sizeof err) == 0, "power-off: %s",
         err);
  drive (tl, &slow, 1, 3000000000u);
  CHECK (slow.done && slow.result == EIO,
         "a bad read in flight at the power cut: %d", slow.result);
  blkemu_disk_power_on (d);
  blkemu_timeline_free (tl);
  CHECK (blkemu_disk_close (d) == 0, "close");
  printf ("ok: a medium error is BLKEMU_ERR_MEDIUM on a timeline, EIO in "
          "blkemu_io, and an injected or crashed EIO stays EIO\n");
}

/* An abort on a timeline ends the request it names at once, on the
 * caller's thread, and leaves the others to their deadlines; counted.
 */
static void
test_abort (void)
{
  struct blkemu_disk *d;
  struct blkemu_timeline *tl =
    open_timeline ("name=a,size=1M,latency-read=200ms", &d);
  if (!tl)
    return;
  struct req rs[2] = { { 0 } };
  for (unsigned i = 0; i < 2; i++)
    test_answered (blkemu_timeline_submit (tl, BLKEMU_OP_READ, buf[i], 4096,
                                           4096 * i, 0, done, &rs[i]),
                   done, &rs[i]);
  uint64_t t0 = now_ns ();
  CHECK (blkemu_timeline_abort (tl, &rs[0]) == 1, "one request aborted");
  CHECK (rs[0].done && rs[0].result == ECANCELED &&
           pthread_equal (rs[0].thread, pthread_self ()) &&
           rs[0].done_at - t0 < 50000000,
         "the aborted one ends at once, ECANCELED, on this thread (%d)",
         rs[0].result);
  CHECK (!rs[1].done, "the other still waits");
  CHECK (blkemu_timeline_abort (tl, &rs[0]) == 0, "nothing left to abort");
  drive (tl, &rs[1], 1, 3000000000u);
  CHECK (rs[1].done && rs[1].result == 0 && rs[1].done_at - t0 >= 200000000,
         "the other at its deadline: %d", rs[1].result);
  CHECK (test_stat (d, "aborted") == 1, "stats: aborted 1");
  blkemu_timeline_free (tl);
  CHECK (blkemu_disk_close (d) == 0, "close");
  printf ("ok: blkemu_timeline_abort ends the one it names, on its thread\n");
}

/* Zone commands and zone append through a timeline complete on its
 * owner's thread, at their deadlines.
 */
static void
test_zones (void)
{
  struct blkemu_disk *d;
  struct blkemu_timeline *tl =
    open_timeline ("name=z,size=4M,zoned=host-managed,zone-size=1M,"
                   "latency-zone=20ms,"
                   "latency-write=20ms",
                   &d);
  if (!tl)
    return;
  struct req rs[3] = { { 0 } };
  uint64_t at = UINT64_MAX, t0 = now_ns ();
  test_answered (blkemu_timeline_zone_submit (tl, BLKEMU_ZONE_OPEN, 1 << 20,
                                              done, &rs[0]),
                 done, &rs[0]);
  test_answered (blkemu_timeline_append (tl, buf[0], 4096, 1 << 20, 0, &at,
                                         done, &rs[1]),
                 done, &rs[1]);
  CHECK (!rs[0].done && !rs[1].done, "neither ends before its deadline");
  drive (tl, rs, 2, 3000000000u);
  for (unsigned i = 0; i < 2; i++)
    CHECK (rs[i].done && rs[i].result == 0 &&
             pthread_equal (rs[i].thread, pthread_self ()) &&
             rs[i].done_at - t0 >= 20000000,
           "zone request %u: %d, on the owner's thread, after 20 ms", i,
           rs[i].result);
  CHECK (at == 1 << 20, "the append went to the write pointer: %llu",
         (unsigned long long) at);
  int r =
    blkemu_timeline_zone_submit (tl, BLKEMU_ZONE_RESET, 12345, done, &rs[2]);
  CHECK (r == EINVAL && !rs[2].done,
         "not a zone start: handed back EINVAL, DONE not called (%d)", r);
  blkemu_timeline_free (tl);
  CHECK (blkemu_disk_close (d) == 0, "close");
  printf ("ok: zone commands and zone append on a timeline\n");
}

int
main (void)
{
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d = test_disk ("name=t,size=16M,latency-"
                                     "read=2ms,latency-write=3ms",
                                     NULL);
  if (!d)
    return 1;
  CHECK (blkemu_disk_start (d, err, sizeof err) == 0, "start: %s", err);
  struct blkemu_timeline *tl = blkemu_timeline_new (d);
  CHECK (tl, "a timeline");
  CHECK (blkemu_timeline_wake_at (tl) == UINT64_MAX,
         "nothing pending: no wake-up");
  test_deadlines (tl);
  test_cancel (d, tl);
  blkemu_timeline_free (tl);
  CHECK (blkemu_disk_close (d) == 0, "close");
  stats_shards ();
  test_medium ();
  test_abort ();
  test_zones ();
  printf ("%s\n", failures ? "FAILED" : "ok: timeline");
  return failures ? 1 : 0;
}
