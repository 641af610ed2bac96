/* The disk spec: one table of keys drives parsing, validation, --help,
 * runtime get/set and the "config" object in stats.
 */
#ifndef BLKEMU_CONFIG_H
#define BLKEMU_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "blkemu/blkemu.h"

/* K_SIZE, K_BACKEND, ...: the key list's order (keys.def). */
enum key_id {
#define KEY(id, ...) K_##id,
#include "keys.def"
#undef KEY
  K_COUNT
};

/* The choices of the enum keys, one line each: the enum and the key's
 * choice string ("memory|file|null", index = value) both come from it,
 * so they cannot drift apart.
 */
/* clang-format off */
#define BACKEND_LIST(X) \
  X (BACKEND_MEMORY, "memory") X (BACKEND_FILE, "file") X (BACKEND_NULL, "null")
#define OVERSIZE_LIST(X) \
  X (OVERSIZE_ERROR, "error") X (OVERSIZE_SPLIT, "split") \
  X (OVERSIZE_ALLOW, "allow")
/* A new model: a line here and its ops in model.c's table. */
#define MODEL_LIST(X) \
  X (MODEL_FIXED, "fixed") X (MODEL_HDD, "hdd") X (MODEL_SSD, "ssd") \
  X (MODEL_ARRAY, "array") X (MODEL_LINK, "link")
#define DIST_LIST(X) \
  X (DIST_FIXED, "fixed") X (DIST_UNIFORM, "uniform") \
  X (DIST_NORMAL, "normal") X (DIST_LOGNORMAL, "lognormal") \
  X (DIST_PERCENTILES, "percentiles")
#define ERROR_MODE_LIST(X) \
  X (ERROR_OFF, "off") X (ERROR_ALWAYS, "always") X (ERROR_ONCE, "once") \
  X (ERROR_STICKY, "sticky")
/* error-op: which requests a fault rule matches. */
#define ERROR_OP_LIST(X) \
  X (ERROR_OP_ANY, "any") X (ERROR_OP_READ, "read") \
  X (ERROR_OP_WRITE, "write") X (ERROR_OP_FLUSH, "flush") \
  X (ERROR_OP_TRIM, "trim") X (ERROR_OP_ZERO, "zero")
#define PRECONDITION_LIST(X) \
  X (PRECONDITION_NONE, "none") X (PRECONDITION_SEQUENTIAL, "sequential") \
  X (PRECONDITION_RANDOM, "random")
#define TRACE_FORMAT_LIST(X) \
  X (TRACE_FMT_BLKEMU, "blkemu") X (TRACE_FMT_BLKTRACE, "blktrace") \
  X (TRACE_FMT_IOLOG, "iolog")

/* clang-format on */

#define CHOICE_ENUM(id, text) id,
#define CHOICE_TEXT(id, text) "|" text
/* "a|b|c": the list's texts, without the first '|'. */
#define CHOICES(LIST) (&(LIST (CHOICE_TEXT))[1])

#define CHOICE_ONE(id, text) +1
/* How many choices (not an enumerator: switches stay complete). */
#define COUNT_OF(LIST) (0 LIST (CHOICE_ONE))

enum backend_kind { BACKEND_LIST (CHOICE_ENUM) };
enum oversize_policy { OVERSIZE_LIST (CHOICE_ENUM) };
enum model_kind { MODEL_LIST (CHOICE_ENUM) };
#define MODEL_COUNT COUNT_OF (MODEL_LIST)
enum latency_dist { DIST_LIST (CHOICE_ENUM) };
enum error_mode { ERROR_MODE_LIST (CHOICE_ENUM) };
enum error_op { ERROR_OP_LIST (CHOICE_ENUM) };
enum trace_format { TRACE_FORMAT_LIST (CHOICE_ENUM) };
enum precondition { PRECONDITION_LIST (CHOICE_ENUM) };

/* Probabilities are stored in parts per billion. */
#define BLKEMU_PROB_ONE 1000000000ull

/* Limits of the emulation, also checked by the key table. */
#define BLKEMU_MAX_CHANNELS 4096
#define BLKEMU_MAX_QUEUE_DEPTH 65536
#define BLKEMU_MAX_TRANSFER (32u << 20) /* NBD's portable payload cap */
/* The largest disk: NBD, FUSE and the file backend address it with a
 * signed 64-bit offset; 2^62 leaves every offset + length sum in range.
 */
#define BLKEMU_MAX_SIZE (1ull << 62)

/* Effective settings.  Numeric keys (sizes in bytes, durations in ns,
 * rates in bytes/s, enums as their index) live in num[]; string keys in
 * str[] (NULL when unset).
 */
struct blkemu_config {
  uint64_t num[K_COUNT];
  char *str[K_COUNT];
};

/* Fill CFG from defaults, then PROFILE's file, then SPEC's explicit keys,
 * and check the cross-key rules.  Returns 0 or -1 with ERR filled.
 */
int config_build (struct blkemu_config *cfg, const struct blkemu_spec *spec,
                  char *err);
/* Store VALUE for key ID into CFG: the key's own parsing and bounds, no
 * cross-key rules.  Returns 0 or -1 with ERR filled.
 */
int config_apply_value (struct blkemu_config *cfg, int id, const char *value,
                        char *err);
/* Room for any key's canonical text (a path is the longest). */
#define CONFIG_TEXT_MAX BLKEMU_VALUE_MAX

/* Apply a profile's text (key = value lines, # comments) to CFG; PATH
 * names it in messages.  TEXT is modified.  Returns 0 or -1 with ERR.
 */
int config_apply_profile_text (struct blkemu_config *cfg, const char *path,
                               char *text, char *err);
/* Apply one runtime change to CFG (a copy); re-checks the cross-key rules. */
int config_set_runtime (struct blkemu_config *cfg, const char *key,
                        const char *value, char *err);
/* The errno an error-errno value stands for. */
int config_error_errno (const struct blkemu_config *cfg);
/* Check every cross-key rule. */
int config_validate (const struct blkemu_config *cfg, char *err);
void config_copy (struct blkemu_config *dst, const struct blkemu_config *src);
void config_free (struct blkemu_config *cfg);

int config_key_lookup (const char *key);
const char *config_key_name (int id);
/* Canonical text of a key's value ("128K", "1ms", "split", ...). */
void config_format (const struct blkemu_config *cfg, int id, char *buf,
                    size_t len);

/* Shorthands for the hot path. */
static inline uint64_t
cfg_latency_ns (const struct blkemu_config *cfg, enum blkemu_op op)
{
  switch (op) {
  case BLKEMU_OP_READ: return cfg->num[K_LATENCY_READ];
  case BLKEMU_OP_FLUSH: return cfg->num[K_LATENCY_FLUSH];
  case BLKEMU_OP_TRIM: return cfg->num[K_LATENCY_TRIM];
  default: return cfg->num[K_LATENCY_WRITE]; /* write and write-zeroes */
  }
}

static inline uint64_t
cfg_bandwidth (const struct blkemu_config *cfg, enum blkemu_op op)
{
  uint64_t bw = 0;
  if (op == BLKEMU_OP_READ)
    bw = cfg->num[K_READ_BANDWIDTH];
  else if (op == BLKEMU_OP_WRITE)
    bw = cfg->num[K_WRITE_BANDWIDTH];
  return bw ? bw : cfg->num[K_BANDWIDTH];
}

#endif
