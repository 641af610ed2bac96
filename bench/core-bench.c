/* core-bench: the core's own cost per request, with no kernel and no
 * frontend in the way.  THREADS threads, each with a timeline on one
 * shared disk (as blkemu-ublk's queue threads), keep DEPTH requests in
 * flight: a completion resubmits from the timeline's thread.  Printed:
 * requests per second, ns of CPU per request, and the merged stats'
 * request count (which must equal what the threads completed).
 *
 *   core-bench [--no-check] [--seconds S] [--depth D] [--size BYTES] [SPEC]
 *
 * SPEC: the disk (default backend=null,size=1G); each run is 1 thread
 * then 2.  Built against an older libblkemu (the timeline API is all it
 * needs), it gives the before of a before-and-after.
 *
 * Target (issue 23): two queues on one disk complete at least as many
 * requests per second as one (nothing they share serializes them into
 * less); exits 1 when missed (--no-check: 0).  A stats count that differs
 * from the completions is a bug: exit 1 always.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blkemu/blkemu.h"

static struct blkemu_disk *disk;
static double seconds = 2;
static unsigned depth = 32;
static uint64_t req_size = 4096;
static uint64_t disk_size;

struct worker {
  pthread_t thread;
  struct blkemu_timeline *tl;
  unsigned char *bufs;
  uint64_t rng, done, errors, submitted;
  struct slot **ready; /* completed, to resubmit from the loop */
  unsigned nready;
};

struct slot {
  struct worker *w;
  unsigned idx;
};

static uint64_t
next (uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double
clock_s (clockid_t id)
{
  struct timespec ts;
  clock_gettime (id, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
done_cb (void *cookie, int result)
{
  struct slot *s = cookie;
  s->w->done++;
  if (result < 0 || (result > 0 && result != BLKEMU_READ_ZEROES &&
                     result != BLKEMU_READ_SENT))
    s->w->errors++;
  /* Not resubmitted here: a request with no latency completes inside
   * its submit, as ublk's queue thread batches its commits.
   */
  s->w->ready[s->w->nready++] = s;
}

static void
submit_one (struct slot *s)
{
  struct worker *w = s->w;
  uint64_t blocks = disk_size / req_size;
  uint64_t off = (next (&w->rng) % blocks) * req_size;
  w->submitted++;
  int r = blkemu_timeline_submit (w->tl, BLKEMU_OP_READ,
                                  w->bufs + (size_t) s->idx * req_size,
                                  req_size, off, 0, done_cb, s);
  if (r != BLKEMU_QUEUED)
    done_cb (s, r);
}

static void *
run (void *arg)
{
  struct worker *w = arg;
  struct slot *slots = calloc (depth, sizeof *slots);
  w->bufs = malloc ((size_t) depth * req_size);
  w->ready = calloc (depth, sizeof *w->ready);
  struct slot **batch = calloc (depth, sizeof *batch);
  if (!slots || !w->bufs || !w->ready || !batch)
    abort ();
  double end = clock_s (CLOCK_MONOTONIC) + seconds;
  for (unsigned i = 0; i < depth; i++) {
    slots[i] = (struct slot){ .w = w, .idx = i };
    submit_one (&slots[i]);
  }
  for (unsigned n = 0;; n++) {
    blkemu_timeline_run (w->tl);
    if ((n & 63) == 0 && clock_s (CLOCK_MONOTONIC) >= end)
      break;
    /* This batch only: those that complete inline wait for the next. */
    unsigned n = w->nready;
    memcpy (batch, w->ready, n * sizeof *batch);
    w->nready = 0;
    for (unsigned i = 0; i < n; i++)
      submit_one (batch[i]);
  }
  while (w->done < w->submitted)
    blkemu_timeline_run (w->tl);
  free (batch);
  free (w->ready);
  free (slots);
  free (w->bufs);
  return NULL;
}

/* Reads the merged "requests" of the read op from the stats JSON. */
static uint64_t
stats_reads (void)
{
  char *json = blkemu_disk_stats_json (disk, false);
  const char *p = json ? strstr (json, "\"read\"") : NULL;
  p = p ? strstr (p, "\"requests\":") : NULL;
  uint64_t n = p ? strtoull (p + 11, NULL, 10) : 0;
  free (json);
  return n;
}

static double
bench (unsigned threads)
{
  struct worker w[2];
  memset (w, 0, sizeof w);
  blkemu_disk_reset_stats (disk);
  for (unsigned t = 0; t < threads; t++) {
    w[t].rng = 0x9e3779b97f4a7c15ull * (t + 1);
    if (!(w[t].tl = blkemu_timeline_new (disk)))
      abort ();
  }
  double c0 = clock_s (CLOCK_PROCESS_CPUTIME_ID),
         t0 = clock_s (CLOCK_MONOTONIC);
  for (unsigned t = 0; t < threads; t++)
    pthread_create (&w[t].thread, NULL, run, &w[t]);
  uint64_t done = 0, errors = 0;
  for (unsigned t = 0; t < threads; t++) {
    pthread_join (w[t].thread, NULL);
    done += w[t].done;
    errors += w[t].errors;
  }
  double wall = clock_s (CLOCK_MONOTONIC) - t0;
  double cpu = clock_s (CLOCK_PROCESS_CPUTIME_ID) - c0;
  for (unsigned t = 0; t < threads; t++)
    blkemu_timeline_free (w[t].tl);
  uint64_t counted = stats_reads ();
  printf ("%7u %5u %12.0f %10.0f %12" PRIu64 " %12" PRIu64 " %6" PRIu64 "\n",
          threads, depth, (double) done / wall, cpu * 1e9 / (double) done,
          done, counted, errors);
  if (counted != done || errors) {
    fprintf (stderr,
             "core-bench: %" PRIu64 " completed, stats count %" PRIu64
             ", %" PRIu64 " errors\n",
             done, counted, errors);
    exit (1);
  }
  return (double) done / wall;
}

int
main (int argc, char **argv)
{
  const char *spec = "backend=null,size=1G";
  bool check = true;
  for (int a = 1; a < argc; a++) {
    if (!strcmp (argv[a], "--no-check"))
      check = false;
    else if (!strcmp (argv[a], "--seconds") && a + 1 < argc)
      seconds = strtod (argv[++a], NULL);
    else if (!strcmp (argv[a], "--depth") && a + 1 < argc)
      depth = (unsigned) strtoul (argv[++a], NULL, 10);
    else if (!strcmp (argv[a], "--size") && a + 1 < argc)
      req_size = strtoull (argv[++a], NULL, 10);
    else if (argv[a][0] != '-')
      spec = argv[a];
    else {
      fprintf (stderr, "usage: core-bench [--no-check] [--seconds S] "
                       "[--depth D] "
                       "[--size BYTES] [SPEC]\n");
      return 2;
    }
  }
  if (seconds <= 0 || depth == 0 || req_size == 0 || req_size % 512) {
    fprintf (stderr, "core-bench: --seconds > 0, --depth > 0 and --size a "
                     "multiple of 512\n");
    return 2;
  }
  char err[BLKEMU_ERR_MAX];
  disk = blkemu_disk_open_spec (spec, 0, NULL, err, sizeof err);
  if (!disk) {
    fprintf (stderr, "core-bench: %s: %s\n", spec, err);
    return 2;
  }
  char size[BLKEMU_VALUE_MAX];
  if (blkemu_disk_get (disk, "size", size, sizeof size, err, sizeof err)) {
    fprintf (stderr, "core-bench: size: %s\n", err);
    return 2;
  }
  /* The value as given ("1G"): the bench only needs whole units. */
  char *unit;
  disk_size = strtoull (size, &unit, 10);
  const char *units = "KMGTP", *u = *unit ? strchr (units, *unit) : NULL;
  for (long i = 0; u && i <= u - units; i++)
    disk_size <<= 10;
  printf ("core-bench: %s, %" PRIu64 "-byte random reads, %.1f s each\n\n",
          spec, req_size, seconds);
  printf ("%7s %5s %12s %10s %12s %12s %6s\n", "threads", "depth", "req/s",
          "cpu ns/req", "completed", "in stats", "errors");
  double one = bench (1);
  double two = bench (2);
  blkemu_disk_close (disk);
  printf ("\ntwo queues: %.2f x one\n", two / one);
  if (check && two < one) {
    printf ("core-bench: target missed: two queues slower than one\n");
    return 1;
  }
  return 0;
}
