/* What the request harnesses share: a virtual clock in place of the
 * core's clock.o (include it in one file of a harness linked without
 * clock.o), so every model runs at full speed and a run is
 * deterministic; and the reader that draws numbers from the input.
 */
#ifndef BLKEMU_FUZZ_VIRTUAL_CLOCK_H
#define BLKEMU_FUZZ_VIRTUAL_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"

/* ---- the virtual clock ---------------------------------------------- */

static uint64_t now_ns = 1000000000;

uint64_t
clock_now_ns (void)
{
  return now_ns += 100; /* time moves a little with every look */
}

static void
clock_wait_until (uint64_t deadline_ns)
{
  if (deadline_ns > now_ns)
    now_ns = deadline_ns;
}

/* The rest of clock.h on the same clock: no sleeping, nothing to learn;
 * blkemu_io's cancellable wait is the plain one unless cancelled.
 */
/* Set by a harness: run once inside the next blocking wait, while the
 * request that waits is in flight (a crash striking it, say).
 */
static void (*during_next_wait) (void);

int
clock_wait_until_or_cancel (uint64_t deadline_ns, uint32_t *cancel)
{
  void (*hook) (void) = during_next_wait;
  during_next_wait = NULL;
  if (hook)
    hook ();
  if (*cancel)
    return -1;
  clock_wait_until (deadline_ns);
  return 0;
}

void
clock_cancel (uint32_t *cancel)
{
  *cancel = 1;
}

/* A virtual sleep is never late: a timeline wakes at its deadline. */
uint64_t
clock_sleep_target (uint64_t deadline_ns, uint64_t now)
{
  (void) now;
  return deadline_ns;
}

void
clock_learn_wake (uint64_t target_ns, uint64_t woke_ns)
{
  (void) target_ns;
  (void) woke_ns;
}

void
clock_thread_init (void)
{}

uint64_t
clock_spin_step (uint64_t now)
{
  (void) now;
  return clock_now_ns ();
}

/* ---- the input ------------------------------------------------------ */

struct input {
  const uint8_t *p;
  size_t n;
};

static unsigned
take (struct input *in, unsigned range)
{
  unsigned v = 0;
  if (in->n >= 2) {
    v = (unsigned) in->p[0] << 8 | in->p[1];
    in->p += 2;
    in->n -= 2;
  }
  else if (in->n == 1) {
    v = in->p[0];
    in->p++;
    in->n--;
  }
  return range ? v % range : 0;
}

#endif
