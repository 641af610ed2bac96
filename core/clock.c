/* Deadline waiting: see clock.h. */
#include "clock.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Estimated wake-up lateness of a sleep, in ns: an exponential
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

void
clock_thread_init (void)
{
  pthread_once (&slack_once, slack_key_create);
  if (pthread_getspecific (slack_key))
    return;
  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  pthread_setspecific (slack_key, &slack_key);
}

/* The last stretch of a wait is spun, yielding: sched_yield lets our own
 * threads run meanwhile and, with a CPU free, returns in a microsecond.
 * When other processes keep every CPU busy, a yield hands one of them
 * the rest of its timeslice and the spinner comes back milliseconds late
 * (a 1 ms latency served 3.7 ms beside two CPU-bound processes; a plain
 * sleeper was 0.1-0.25 ms late).  Yields that take longer than
 * YIELD_LOST_NS, LOSSES_TO_TRIP of them within LOSS_WINDOW_NS, show it:
 * for the next NO_YIELD_NS waiters sleep right up to their deadlines (a
 * waking sleeper is scheduled ahead of busy processes) and spin in place
 * for whatever is left.  Measured on 2 cores: beside two busy loops,
 * lost yields took 1-8 ms, hundreds a second; our own threads at QD8
 * made a yield take 0.25-1 ms a few times a second, and one such yield
 * tripping the switch (as a single 200 us loss did) served QD8 85 us
 * late instead of 15 us.
 */
#define YIELD_LOST_NS 1000000
#define LOSS_WINDOW_NS 20000000
#define LOSSES_TO_TRIP 4
#define NO_YIELD_NS 1000000000ull
static uint64_t no_yield_until_ns;
static uint64_t last_loss_ns;
static unsigned recent_losses;

/* A yield came back late at NOW_NS.  Racy counting is harmless: it only
 * decides when to stop yielding.
 */
static void
yield_lost (uint64_t now_ns)
{
  uint64_t last =
    __atomic_exchange_n (&last_loss_ns, now_ns, __ATOMIC_RELAXED);
  unsigned n = 1;
  if (now_ns - last < LOSS_WINDOW_NS)
    n = __atomic_add_fetch (&recent_losses, 1, __ATOMIC_RELAXED);
  else
    __atomic_store_n (&recent_losses, 1, __ATOMIC_RELAXED);
  if (n < LOSSES_TO_TRIP)
    return;
  __atomic_store_n (&recent_losses, 0, __ATOMIC_RELAXED);
  __atomic_store_n (&no_yield_until_ns, now_ns + NO_YIELD_NS,
                    __ATOMIC_RELAXED);
}

static bool
contended (uint64_t now_ns)
{
  return now_ns < __atomic_load_n (&no_yield_until_ns, __ATOMIC_RELAXED);
}

uint64_t
clock_sleep_target (uint64_t deadline_ns, uint64_t now_ns)
{
  uint64_t margin = __atomic_load_n (&wake_late_ns, __ATOMIC_RELAXED);
  if (margin > SPIN_MAX_NS)
    margin = SPIN_MAX_NS;
  if (contended (now_ns))
    margin = 0;
  return deadline_ns > now_ns && deadline_ns - now_ns > margin
           ? deadline_ns - margin
           : 0;
}

void
clock_learn_wake (uint64_t target_ns, uint64_t woke_ns)
{
  /* 1/8 weight to the new sample, aiming a little above the mean so
   * that most wake-ups land before the deadline and the rest is spun.
   */
  uint64_t margin = __atomic_load_n (&wake_late_ns, __ATOMIC_RELAXED);
  uint64_t late = woke_ns > target_ns ? woke_ns - target_ns : 0;
  uint64_t est = (margin * 7 + late * 3 / 2) / 8;
  if (est < 2000)
    est = 2000;
  __atomic_store_n (&wake_late_ns, est, __ATOMIC_RELAXED);
}

/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout. */
static void
futex_wait_abs (uint32_t *word, uint64_t t_ns)
{
  struct timespec ts = { .tv_sec = (time_t) (t_ns / 1000000000u),
                         .tv_nsec = (long) (t_ns % 1000000000u) };
  syscall (SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0u, &ts,
           NULL, FUTEX_BITSET_MATCH_ANY);
}

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

uint64_t
clock_spin_step (uint64_t now_ns)
{
  if (contended (now_ns)) {
    cpu_relax ();
    return clock_now_ns ();
  }
  sched_yield ();
  uint64_t after = clock_now_ns ();
  if (after - now_ns > YIELD_LOST_NS)
    yield_lost (after);
  return after;
}

int
clock_wait_until_or_cancel (uint64_t deadline_ns, uint32_t *cancel)
{
  for (;;) {
    if (__atomic_load_n (cancel, __ATOMIC_ACQUIRE))
      return -1;
    uint64_t target = clock_sleep_target (deadline_ns, clock_now_ns ());
    if (!target)
      break;
    clock_thread_init ();
    /* Returns at the target, on a wake-up, or spuriously: look again. */
    futex_wait_abs (cancel, target);
    uint64_t woke = clock_now_ns ();
    if (woke >= target) {
      clock_learn_wake (target, woke);
      break;
    }
  }
  for (uint64_t now = clock_now_ns (); now < deadline_ns;
       now = clock_spin_step (now))
    if (__atomic_load_n (cancel, __ATOMIC_ACQUIRE))
      return -1;
  return 0;
}

void
clock_cancel (uint32_t *cancel)
{
  __atomic_store_n (cancel, 1, __ATOMIC_RELEASE);
  syscall (SYS_futex, cancel, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT32_MAX, NULL,
           NULL, 0);
}
