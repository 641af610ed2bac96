/* Deadline waiting: see clock.h. */
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <time.h>

/* Estimated wake-up lateness of clock_nanosleep, in ns: an exponential
 * moving average shared by all threads (racy updates are harmless).
 */
static uint64_t wake_late_ns = 20000;
#define SPIN_MAX_NS 200000

uint64_t
clock_now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void
sleep_abs (uint64_t t_ns)
{
  struct timespec ts = { .tv_sec = (time_t) (t_ns / 1000000000u),
                         .tv_nsec = (long) (t_ns % 1000000000u) };
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* 1 ns timer slack, set once per thread that sleeps.  The "done" flag
 * is a pthread key, not a __thread variable: the plugin is dlopen'ed,
 * and its dynamic TLS, freed when a thread exits, made ThreadSanitizer
 * report a race in glibc's TLS release.
 */
static pthread_key_t slack_key;
static pthread_once_t slack_once = PTHREAD_ONCE_INIT;

static void
slack_key_create (void)
{
  pthread_key_create (&slack_key, NULL);
}

static void
set_timer_slack (void)
{
  pthread_once (&slack_once, slack_key_create);
  if (pthread_getspecific (slack_key))
    return;
  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  pthread_setspecific (slack_key, &slack_key);
}

void
clock_wait_until (uint64_t deadline_ns)
{
  uint64_t now = clock_now_ns ();
  if (now >= deadline_ns)
    return;
  uint64_t margin = __atomic_load_n (&wake_late_ns, __ATOMIC_RELAXED);
  if (margin > SPIN_MAX_NS)
    margin = SPIN_MAX_NS;
  if (deadline_ns - now > margin) {
    uint64_t target = deadline_ns - margin;
    set_timer_slack ();
    sleep_abs (target);
    uint64_t woke = clock_now_ns ();
    /* Learn how late wake-ups are: 1/8 weight to the new sample, aiming
     * a little above the mean so that most wake-ups land before the
     * deadline and the rest is spun.
     */
    uint64_t late = woke > target ? woke - target : 0;
    uint64_t est = (margin * 7 + late * 3 / 2) / 8;
    if (est < 2000)
      est = 2000;
    __atomic_store_n (&wake_late_ns, est, __ATOMIC_RELAXED);
  }
  while (clock_now_ns () < deadline_ns)
    sched_yield ();
}
