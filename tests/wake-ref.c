/* wake-ref: how late this host wakes a thread, measured without blkemu.
 *
 * The timing tests hold blkemu's delivered latency against what the
 * host itself adds to a wake-up, measured here in the same conditions
 * (same load, same moment) by a program that shares no code with
 * blkemu: PAIRS pairs of threads; in each, a sleeper waits for absolute
 * deadlines PERIOD apart on CLOCK_MONOTONIC (timer slack 1 ns, as
 * blkemu's engine sets it) and, on waking, writes to a pipe that its
 * partner blocks on.  Two figures come out, each as mean, p50, p90 and
 * max in microseconds:
 *   timer_late_us    the sleeper's lateness past its deadline
 *   handoff_late_us  the partner's: the timer plus one cross-thread
 *                    wake-up (what a request that waits pays twice: the
 *                    device's deadline, then the thread that replies)
 *
 *   wake-ref [--pairs N] [--period-us P] [--seconds S]
 *
 * Prints one JSON object; exits 2 on bad arguments, 1 on a system error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAIRS 64

struct pair {
  int pipe[2];
  uint64_t period_ns, end_ns;
  uint64_t *timer_late, *handoff_late; /* ns, one a wake-up */
  size_t n, cap;
  int err;
};

static uint64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* The sleeper: wakes at each deadline and hands the deadline over. */
static void *
sleeper (void *arg)
{
  struct pair *p = arg;
  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  uint64_t deadline = now_ns () + p->period_ns;
  while (deadline < p->end_ns && p->n < p->cap) {
    struct timespec ts = { .tv_sec = (time_t) (deadline / 1000000000u),
                           .tv_nsec = (long) (deadline % 1000000000u) };
    while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
           EINTR)
      ;
    uint64_t woke = now_ns ();
    p->timer_late[p->n++] = woke - deadline;
    if (write (p->pipe[1], &deadline, sizeof deadline) != sizeof deadline) {
      p->err = errno;
      break;
    }
    /* The next deadline from now, not from the last one: a late wake-up
     * must not make the next sleep zero (that would measure no wait).
     */
    deadline = woke + p->period_ns;
  }
  close (p->pipe[1]);
  return NULL;
}

/* The partner: blocked on the pipe, as a replying thread is. */
static void *
waiter (void *arg)
{
  struct pair *p = arg;
  uint64_t deadline;
  size_t i = 0;
  while (read (p->pipe[0], &deadline, sizeof deadline) == sizeof deadline)
    if (i < p->cap)
      p->handoff_late[i++] = now_ns () - deadline;
  return NULL;
}

static int
cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

static void
print_figures (const char *name, uint64_t *v, size_t n)
{
  qsort (v, n, sizeof *v, cmp_u64);
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += (double) v[i];
  printf ("  \"%s\": { \"samples\": %zu, \"mean\": %.1f, \"p50\": %.1f, "
          "\"p90\": %.1f, "
          "\"max\": %.1f }",
          name, n, n ? sum / (double) n / 1000 : 0,
          n ? (double) v[n / 2] / 1000 : 0,
          n ? (double) v[n * 9 / 10] / 1000 : 0,
          n ? (double) v[n - 1] / 1000 : 0);
}

static long
number (const char *opt, const char *s, long lo, long hi)
{
  char *end;
  errno = 0;
  long v = strtol (s ? s : "", &end, 10);
  if (!s || errno || *end || end == s || v < lo || v > hi) {
    fprintf (stderr, "wake-ref: %s %s: must be an integer from %ld to %ld\n",
             opt, s ? s : "(missing)", lo, hi);
    exit (2);
  }
  return v;
}

int
main (int argc, char **argv)
{
  long pairs = 1, period_us = 1000, seconds = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--pairs"))
      pairs = number ("--pairs", argv[++i < argc ? i : 0], 1, MAX_PAIRS);
    else if (!strcmp (argv[i], "--period-us"))
      period_us =
        number ("--period-us", argv[++i < argc ? i : 0], 10, 1000000);
    else if (!strcmp (argv[i], "--seconds"))
      seconds = number ("--seconds", argv[++i < argc ? i : 0], 1, 600);
    else {
      fprintf (stderr,
               "usage: wake-ref [--pairs N] [--period-us P] [--seconds S]\n");
      return 2;
    }
  }
  struct pair p[MAX_PAIRS];
  pthread_t ts[MAX_PAIRS], tw[MAX_PAIRS];
  uint64_t end = now_ns () + (uint64_t) seconds * 1000000000u;
  size_t cap = (size_t) (seconds * 1000000 / period_us) + 1;
  for (long i = 0; i < pairs; i++) {
    memset (&p[i], 0, sizeof p[i]);
    p[i].period_ns = (uint64_t) period_us * 1000u;
    p[i].end_ns = end;
    p[i].cap = cap;
    p[i].timer_late = calloc (cap, sizeof (uint64_t));
    p[i].handoff_late = calloc (cap, sizeof (uint64_t));
    if (!p[i].timer_late || !p[i].handoff_late || pipe (p[i].pipe) == -1) {
      perror ("wake-ref");
      return 1;
    }
    if (pthread_create (&tw[i], NULL, waiter, &p[i]) ||
        pthread_create (&ts[i], NULL, sleeper, &p[i])) {
      fprintf (stderr, "wake-ref: cannot start threads\n");
      return 1;
    }
  }
  size_t total = 0;
  for (long i = 0; i < pairs; i++) {
    pthread_join (ts[i], NULL);
    pthread_join (tw[i], NULL);
    if (p[i].err) {
      fprintf (stderr, "wake-ref: pipe: %s\n", strerror (p[i].err));
      return 1;
    }
    total += p[i].n;
  }
  /* All pairs' samples in one list a figure. */
  uint64_t *timer = calloc (total + 1, sizeof *timer),
           *handoff = calloc (total + 1, sizeof *handoff);
  if (!timer || !handoff) {
    perror ("wake-ref");
    return 1;
  }
  size_t k = 0;
  for (long i = 0; i < pairs; i++) {
    memcpy (timer + k, p[i].timer_late, p[i].n * sizeof *timer);
    memcpy (handoff + k, p[i].handoff_late, p[i].n * sizeof *handoff);
    k += p[i].n;
  }
  printf ("{\n  \"pairs\": %ld, \"period_us\": %ld, \"seconds\": %ld,\n",
          pairs, period_us, seconds);
  print_figures ("timer_late_us", timer, total);
  printf (",\n");
  print_figures ("handoff_late_us", handoff, total);
  printf ("\n}\n");
  for (long i = 0; i < pairs; i++) {
    free (p[i].timer_late);
    free (p[i].handoff_late);
    close (p[i].pipe[0]);
  }
  free (timer);
  free (handoff);
  return 0;
}
