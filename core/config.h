/* The disk spec: one table of keys drives parsing, validation, --help,
 * runtime get/set and the "config" object in stats.
 */
#ifndef BLKEMU_CONFIG_H
#define BLKEMU_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "blkemu/blkemu.h"

enum key_id {
  K_SIZE, K_BACKEND, K_FILE, K_NAME,
  K_LOGICAL_BLOCK_SIZE, K_PHYSICAL_BLOCK_SIZE, K_MIN_IO, K_OPT_IO,
  K_MAX_TRANSFER, K_MAX_DISCARD, K_MAX_WRITE_ZEROES, K_OVERSIZE,
  K_LATENCY_READ, K_LATENCY_WRITE, K_LATENCY_FLUSH, K_LATENCY_TRIM,
  K_BANDWIDTH, K_READ_BANDWIDTH, K_WRITE_BANDWIDTH,
  K_QUEUE_DEPTH, K_CHANNELS, K_MODEL, K_ROTATIONAL,
  K_PROFILE, K_STATS, K_TRACE, K_CONTROL, K_SUMMARY,
  K_COUNT
};

enum backend_kind { BACKEND_MEMORY, BACKEND_FILE, BACKEND_NULL };
enum oversize_policy { OVERSIZE_ERROR, OVERSIZE_SPLIT, OVERSIZE_ALLOW };
enum model_kind { MODEL_FIXED };

/* Limits of the emulation, also checked by the key table. */
#define BLKEMU_MAX_CHANNELS    4096
#define BLKEMU_MAX_QUEUE_DEPTH 65536
#define BLKEMU_MAX_TRANSFER    (32u << 20) /* NBD's portable payload cap */

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
/* Apply one runtime change to CFG (a copy); re-checks the cross-key rules. */
int config_set_runtime (struct blkemu_config *cfg, const char *key,
                        const char *value, char *err);
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
