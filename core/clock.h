/* CLOCK_MONOTONIC in nanoseconds, and waiting for an absolute deadline. */
#ifndef BLKEMU_CLOCK_H
#define BLKEMU_CLOCK_H

#include <stdint.h>

uint64_t clock_now_ns (void);

/* Block until CLOCK_MONOTONIC reaches DEADLINE_NS, or until *CANCEL is
 * non-zero: returns 0 at the deadline, -1 if cancelled.  Sleeps on a futex
 * with an absolute timeout and 1 ns timer slack (the default 50 us slack
 * is most of the overshoot of relative sleeps); spins the last stretch,
 * whose length adapts to the wake-up lateness this machine shows, unless
 * busy processes have lately made spinning cost timeslices (then it
 * sleeps to the deadline: clock.c).
 * clock_cancel sets the word and wakes every thread waiting on it (no
 * lock, no condition variable).
 */
int clock_wait_until_or_cancel (uint64_t deadline_ns, uint32_t *cancel);
void clock_cancel (uint32_t *cancel);

/* The pieces, for waiters with their own sleep (the completion engine's
 * condition variable, nbdkit_nanosleep): when to wake for DEADLINE_NS
 * (0: too close, spin), what a wake-up at WOKE_NS for TARGET_NS teaches
 * about lateness, and the thread's 1 ns timer slack.
 */
uint64_t clock_sleep_target (uint64_t deadline_ns, uint64_t now_ns);
void clock_learn_wake (uint64_t target_ns, uint64_t woke_ns);
void clock_thread_init (void);
/* One step of a spin towards a deadline, NOW_NS the time before it:
 * yields the CPU unless yields have lately been costing timeslices, then
 * spins in place.  Returns the time after it.
 */
uint64_t clock_spin_step (uint64_t now_ns);

#endif
