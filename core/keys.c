/* The key table: every spec key's name, type, default, bounds, whether
 * it changes at runtime, and its help line.  Which frontends carry a
 * key is the carriage table's (blkemu-ctl carriage, each frontend's
 * descriptor), never a help line's.  `nbdkit blkemu --help`, the
 * frontends' --list-keys and the man pages' tables come from here.
 */
#include "keys.h"

#define MAX_LAT 60000000000ull /* 60 s: the longest latency key */
/* keys.def's order of arguments puts the gate, a short word, before the
 * help line; key_def's fields have it last.
 */
#define KEY(id, name, type, def, choices, min, max, runtime, gate, help)      \
  [K_##id] = { name, type, def, choices, min, max, runtime, help, gate },
const struct key_def config_keys[K_COUNT] = {
#include "keys.def"
};
#undef KEY
