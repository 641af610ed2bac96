/* CLOCK_MONOTONIC in nanoseconds, and waiting for an absolute deadline. */
#ifndef BLKEMU_CLOCK_H
#define BLKEMU_CLOCK_H

#include <stdint.h>

uint64_t clock_now_ns (void);

/* Block until CLOCK_MONOTONIC reaches DEADLINE_NS.  Sleeps with an absolute
 * clock_nanosleep and 1 ns timer slack (the default 50 us slack is most of
 * the overshoot of relative sleeps); spins the last stretch, whose length
 * adapts to the wake-up lateness this machine shows.
 */
void clock_wait_until (uint64_t deadline_ns);

#endif
