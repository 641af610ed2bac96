/* The key table and the raw spec, shared by spec.c (parsing), profile.c
 * and validate.c.  Internal to core/.
 */
#ifndef BLKEMU_KEYS_H
#define BLKEMU_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

enum key_type {
  T_SIZE,
  T_DURATION,
  T_RATE,
  T_UINT,
  T_ENUM,
  T_BOOL,
  T_STRING,
  T_PROB,
  T_MODE
};

/* Does a key's value keep the disk off the lock-free path (admission.c)?
 * A key whose value changes a request's time or fate from the fixed,
 * instant device's must say so here, or the plain path ignores it.
 */
enum plain_gate {
  GATE_NONE,     /* never: limits, identity, outputs, other models' keys */
  GATE_ZERO,     /* any value but 0 (for an enum: but its first choice) */
  GATE_ABOVE_ONE /* a value above 1 (slowdown) */
};

/* Every entry of config_keys names its gate: a new key must decide (clang's
 * -Wmissing-field-initializers in the fuzz build holds it). */
struct key_def {
  const char *name;
  enum key_type type;
  const char *def;     /* default, in the key's own syntax; NULL: unset */
  const char *choices; /* T_ENUM: '|'-separated names, index = value */
  uint64_t min, max;   /* numeric bounds, inclusive (max 0: none) */
  bool runtime;        /* changeable through control */
  const char *help;
  enum plain_gate gate;
};

#define NOMAX 0 /* key_def.max: no upper bound */

extern const struct key_def config_keys[K_COUNT];

struct blkemu_spec {
  char *val[K_COUNT];
};

/* Load profile=NAME into CFG (defaults already set).  0 or -1 with ERR. */
int load_profile (struct blkemu_config *cfg, const char *name, char *err);

#endif
