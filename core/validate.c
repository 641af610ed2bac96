/* Building the effective configuration from a spec (defaults, profile,
 * keys) and validating it: each key's rule and the cross-key rules.
 */
#include "keys.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "ftl.h"
#include "model.h"
#include "units.h"
#include "zones.h"

#define RULE_MAX 160 /* one rule's text */

/* Errors for the cross-key rules quote the value as the user wrote it. */
static void
rule_err (char *err, const struct blkemu_config *cfg, int id, const char *rule)
{
  char v[64];
  config_format (cfg, id, v, sizeof v);
  set_err (err, "%s=%s: %s", config_keys[id].name, v, rule);
}

/* Block sizes and the sizes that must be multiples of the logical one. */
static int
validate_blocks (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  uint64_t lbs = n[K_LOGICAL_BLOCK_SIZE];
  char rule[RULE_MAX];

  if (!is_pow2 (lbs)) {
    rule_err (err, cfg, K_LOGICAL_BLOCK_SIZE,
              "must be a power of two between 512 and 64K");
    return -1;
  }
  if (n[K_PHYSICAL_BLOCK_SIZE] && (!is_pow2 (n[K_PHYSICAL_BLOCK_SIZE]) ||
                                   n[K_PHYSICAL_BLOCK_SIZE] < lbs)) {
    rule_err (err, cfg, K_PHYSICAL_BLOCK_SIZE,
              "must be a power of two >= logical-block-size");
    return -1;
  }
  if (n[K_ATOMIC_UNIT] &&
      (!is_pow2 (n[K_ATOMIC_UNIT]) || n[K_ATOMIC_UNIT] < lbs)) {
    rule_err (err, cfg, K_ATOMIC_UNIT,
              "must be a power of two >= logical-block-size (0: "
              "physical-block-size)");
    return -1;
  }
  if (n[K_MAX_TRANSFER] < lbs) {
    snprintf (rule, sizeof rule, "must be at least logical-block-size (%llu)",
              (unsigned long long) lbs);
    rule_err (err, cfg, K_MAX_TRANSFER, rule);
    return -1;
  }
  snprintf (rule, sizeof rule,
            "must be a multiple of logical-block-size (%llu)",
            (unsigned long long) lbs);
  static const int multiples[] = { K_SIZE,        K_MIN_IO,
                                   K_OPT_IO,      K_MAX_TRANSFER,
                                   K_MAX_DISCARD, K_MAX_WRITE_ZEROES,
                                   K_BOUNDARY };
  for (size_t i = 0; i < sizeof multiples / sizeof multiples[0]; i++)
    if (n[multiples[i]] % lbs != 0) {
      rule_err (err, cfg, multiples[i], rule);
      return -1;
    }
  return 0;
}

/* The kernel's other queue limits: the rules blk_validate_limits() and
 * ublk_drv apply, checked here so the spec fails with a message instead
 * of the device failing to start.
 */
static int
validate_queue_limits (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  uint64_t lbs = n[K_LOGICAL_BLOCK_SIZE];
  uint64_t pbs = n[K_PHYSICAL_BLOCK_SIZE] ? n[K_PHYSICAL_BLOCK_SIZE] : lbs;
  uint64_t gran = n[K_DISCARD_GRANULARITY];
  char rule[RULE_MAX];

  static const int pow2_4k[] = { K_VIRT_BOUNDARY, K_SEGMENT_BOUNDARY };
  for (size_t i = 0; i < sizeof pow2_4k / sizeof pow2_4k[0]; i++) {
    uint64_t v = n[pow2_4k[i]];
    if (v && (!is_pow2 (v) || v < 4096)) {
      rule_err (err, cfg, pow2_4k[i],
                "must be a power of two >= 4K (0: none)");
      return -1;
    }
  }
  if (n[K_DMA_ALIGNMENT] && !is_pow2 (n[K_DMA_ALIGNMENT])) {
    rule_err (err, cfg, K_DMA_ALIGNMENT,
              "must be a power of two <= 4K (0: the default)");
    return -1;
  }
  if (n[K_MAX_SEGMENT_SIZE] && n[K_MAX_SEGMENT_SIZE] < 4096) {
    rule_err (err, cfg, K_MAX_SEGMENT_SIZE, "must be at least 4K (0: none)");
    return -1;
  }
  if (n[K_MAX_SEGMENT_SIZE] && n[K_VIRT_BOUNDARY]) {
    rule_err (err, cfg, K_MAX_SEGMENT_SIZE,
              "cannot be combined with virt-boundary (the kernel leaves "
              "segment sizes unlimited under a virtual boundary)");
    return -1;
  }
  if (n[K_MAX_SEGMENT_SIZE] && n[K_SEGMENT_BOUNDARY] &&
      n[K_MAX_SEGMENT_SIZE] > n[K_SEGMENT_BOUNDARY]) {
    rule_err (err, cfg, K_MAX_SEGMENT_SIZE,
              "must be at most segment-boundary (no segment crosses it)");
    return -1;
  }
  if (gran && (gran % lbs || gran < pbs)) {
    snprintf (rule, sizeof rule,
              "must be a multiple of logical-block-size (%llu) and at least "
              "the physical block (%llu)",
              (unsigned long long) lbs, (unsigned long long) pbs);
    rule_err (err, cfg, K_DISCARD_GRANULARITY, rule);
    return -1;
  }
  uint64_t align = n[K_DISCARD_ALIGNMENT];
  if (align && (align % lbs || align >= (gran ? gran : pbs))) {
    snprintf (rule, sizeof rule,
              "must be a multiple of logical-block-size (%llu) below "
              "discard-granularity (%llu)",
              (unsigned long long) lbs,
              (unsigned long long) (gran ? gran : pbs));
    rule_err (err, cfg, K_DISCARD_ALIGNMENT, rule);
    return -1;
  }
  return 0;
}

static int
validate_backend (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  if (n[K_BACKEND] == BACKEND_FILE && !cfg->str[K_FILE]) {
    set_err (err, "backend=file: needs file=PATH");
    return -1;
  }
  if (n[K_BACKEND] != BACKEND_FILE && cfg->str[K_FILE]) {
    rule_err (err, cfg, K_BACKEND, "file= is only used with backend=file");
    return -1;
  }
  if (n[K_BACKEND] != BACKEND_FILE && n[K_SIZE] == 0) {
    set_err (err, "size: you must specify size=SIZE (e.g. size=1G)");
    return -1;
  }
  return 0;
}

static int
validate_latency_dist (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  if (n[K_LATENCY_DIST] != DIST_PERCENTILES)
    return 0;
  if (n[K_LATENCY_READ] == 0) {
    rule_err (err, cfg, K_LATENCY_READ,
              "latency-dist=percentiles needs a non-zero latency-read "
              "(the p50 the tail is scaled from)");
    return -1;
  }
  if (n[K_LATENCY_P99] < n[K_LATENCY_READ]) {
    rule_err (err, cfg, K_LATENCY_P99,
              "must be at least latency-read (the p50)");
    return -1;
  }
  if (n[K_LATENCY_P999] < n[K_LATENCY_P99]) {
    rule_err (err, cfg, K_LATENCY_P999, "must be at least latency-p99");
    return -1;
  }
  return 0;
}

/* The models' own cross-key rules. */
static int
validate_model (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  char rule[RULE_MAX];
  if (n[K_MODEL] == MODEL_HDD) {
    uint64_t tr = n[K_SEEK_TRACK], avg = n[K_SEEK_AVG], full = n[K_SEEK_FULL];
    if (tr > full) {
      rule_err (err, cfg, K_SEEK_TRACK, "must be at most seek-full");
      return -1;
    }
    /* seek(d) = track + a*sqrt(d) + b*d over uniform random positions
     * averages track + 8a/15 + b/3; a, b >= 0 bounds the average.
     */
    uint64_t lo = tr + (full - tr) / 3, hi = tr + (full - tr) * 8 / 15;
    if (avg < lo || avg > hi) {
      char l[32], h[32];
      blkemu_format_duration (lo, l, sizeof l);
      blkemu_format_duration (hi, h, sizeof h);
      snprintf (rule, sizeof rule,
                "must lie between %s and %s for this seek-track and "
                "seek-full (a monotone seek curve)",
                l, h);
      rule_err (err, cfg, K_SEEK_AVG, rule);
      return -1;
    }
    if (n[K_ZONE_RATE_INNER] > n[K_ZONE_RATE_OUTER]) {
      rule_err (err, cfg, K_ZONE_RATE_INNER,
                "must be at most zone-rate-outer (outer tracks are faster)");
      return -1;
    }
  }
  if (n[K_MODEL] == MODEL_SSD) {
    uint64_t ch = n[K_CHANNELS] ? n[K_CHANNELS] : 1;
    if (ch * n[K_DIES] > BLKEMU_MAX_CHANNELS) {
      snprintf (rule, sizeof rule, "channels x dies must be at most %d",
                BLKEMU_MAX_CHANNELS);
      rule_err (err, cfg, K_DIES, rule);
      return -1;
    }
  }
  return 0;
}

/* The throttle's and the flash's cross-key rules (model_volume.c, ftl.c,
 * model_ssd.c's SLC cache).
 */
static int
validate_volume_flash (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  char rule[RULE_MAX];
  if (n[K_VOLUME_BURST_IOPS] &&
      (!n[K_VOLUME_BURST_CREDITS] ||
       !(n[K_VOLUME_IOPS] || n[K_VOLUME_IOPS_PER_GIB]))) {
    rule_err (err, cfg, K_VOLUME_BURST_IOPS,
              "needs volume-burst-credits (the bucket) and a baseline "
              "(volume-iops or volume-iops-per-gib) to refill it");
    return -1;
  }
  if (n[K_VOLUME_BURST_BANDWIDTH] &&
      (!n[K_VOLUME_BURST_BYTES] || !n[K_VOLUME_BANDWIDTH] ||
       n[K_VOLUME_BURST_BANDWIDTH] <= n[K_VOLUME_BANDWIDTH])) {
    rule_err (err, cfg, K_VOLUME_BURST_BANDWIDTH,
              "needs volume-burst-bytes (the bucket) and a volume-bandwidth "
              "below it (the baseline that refills it)");
    return -1;
  }
  if (n[K_OVER_PROVISIONING] && n[K_MODEL] != MODEL_SSD) {
    rule_err (err, cfg, K_OVER_PROVISIONING,
              "only model=ssd has a flash translation layer");
    return -1;
  }
  if (ssd_slc_on (cfg) && n[K_MODEL] != MODEL_SSD) {
    rule_err (err, cfg, n[K_SLC_CACHE] ? K_SLC_CACHE : K_SLC_DYNAMIC,
              "only model=ssd has an SLC cache");
    return -1;
  }
  if (n[K_SLC_DYNAMIC] && !n[K_OVER_PROVISIONING]) {
    rule_err (err, cfg, K_SLC_DYNAMIC,
              "needs over-provisioning (the flash translation layer knows "
              "what is free)");
    return -1;
  }
  if (n[K_OVER_PROVISIONING]) {
    uint64_t fp = n[K_FLASH_PAGE];
    if (!is_pow2 (fp) || fp < n[K_LOGICAL_BLOCK_SIZE]) {
      rule_err (err, cfg, K_FLASH_PAGE,
                "must be a power of two >= logical-block-size");
      return -1;
    }
    if (n[K_FLASH_BLOCK] % fp || n[K_FLASH_BLOCK] / fp < 2) {
      rule_err (err, cfg, K_FLASH_BLOCK,
                "must be a multiple of flash-page, two pages at least");
      return -1;
    }
    if ((n[K_SIZE] + fp - 1) / fp > FTL_MAX_PAGES) {
      snprintf (rule, sizeof rule,
                "size / flash-page must be at most %u pages (the mapping "
                "table is held in memory): a larger flash-page",
                FTL_MAX_PAGES);
      rule_err (err, cfg, K_FLASH_PAGE, rule);
      return -1;
    }
  }
  return 0;
}

/* Atomic writes as SBC-4's Block Limits page states them. */
static int
validate_atomic_writes (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  uint64_t lbs = n[K_LOGICAL_BLOCK_SIZE], max = n[K_ATOMIC_WRITE_MAX];
  uint64_t gran = n[K_ATOMIC_WRITE_GRANULARITY];
  if (max % lbs || max > n[K_MAX_TRANSFER]) {
    rule_err (err, cfg, K_ATOMIC_WRITE_MAX,
              "must be a multiple of logical-block-size, <= max-transfer");
    return -1;
  }
  if (gran &&
      (!is_pow2 (gran) || gran < lbs || !max || gran > max || max % gran)) {
    rule_err (err, cfg, K_ATOMIC_WRITE_GRANULARITY,
              "must be a power of two >= logical-block-size dividing "
              "atomic-write-max (which must be set)");
    return -1;
  }
  return 0;
}

/* Protection information is the metadata's last 8 bytes. */
static int
validate_metadata (const struct blkemu_config *cfg, char *err)
{
  if (cfg->num[K_PROTECTION] && cfg->num[K_METADATA_SIZE] < 8) {
    rule_err (err, cfg, K_PROTECTION,
              "needs metadata-size >= 8 (the protection information's 8 "
              "bytes live in the metadata)");
    return -1;
  }
  return 0;
}

int
config_validate (const struct blkemu_config *cfg, char *err)
{
  if (validate_blocks (cfg, err) == -1 ||
      validate_queue_limits (cfg, err) == -1 ||
      validate_backend (cfg, err) == -1 ||
      validate_latency_dist (cfg, err) == -1 ||
      validate_model (cfg, err) == -1 ||
      validate_volume_flash (cfg, err) == -1 ||
      zones_validate (cfg, cfg->num[K_SIZE], err) == -1)
    return -1;
  if (validate_atomic_writes (cfg, err) == -1 ||
      validate_metadata (cfg, err) == -1)
    return -1;
  if (cfg->num[K_ERROR_OFFSET] > cfg->num[K_SIZE]) {
    rule_err (err, cfg, K_ERROR_OFFSET, "must lie inside the disk (<= size)");
    return -1;
  }
  return 0;
}

int
config_error_errno (const struct blkemu_config *cfg)
{
  static const int codes[] = { EIO,    ENOSPC,    EPERM,   ENOMEM,
                               EINVAL, EOVERFLOW, ENOTSUP, ESHUTDOWN };
  uint64_t i = cfg->num[K_ERROR_ERRNO];
  return i < sizeof codes / sizeof codes[0] ? codes[i] : EIO;
}

int
config_build (struct blkemu_config *cfg, const struct blkemu_spec *spec,
              char *err)
{
  memset (cfg, 0, sizeof *cfg);
  for (int i = 0; i < K_COUNT; i++)
    if (config_keys[i].def &&
        config_apply_value (cfg, i, config_keys[i].def, err) == -1)
      goto fail;
  /* file= alone implies backend=file. */
  if (spec->val[K_FILE] && !spec->val[K_BACKEND])
    cfg->num[K_BACKEND] = BACKEND_FILE;
  if (spec->val[K_PROFILE] && load_profile (cfg, spec->val[K_PROFILE], err))
    goto fail;
  for (int i = 0; i < K_COUNT; i++)
    if (spec->val[i] && config_apply_value (cfg, i, spec->val[i], err) == -1)
      goto fail;
  if (config_validate (cfg, err) == -1)
    goto fail;
  return 0;
fail:
  config_free (cfg);
  return -1;
}

int
config_set_runtime (struct blkemu_config *cfg, const char *key,
                    const char *value, char *err)
{
  int id = config_key_lookup (key);
  if (id < 0) {
    set_err (err, "unknown key '%s'", key);
    return -1;
  }
  if (!config_keys[id].runtime) {
    set_err (err, "%s=%s: cannot be changed at runtime", key, value);
    return -1;
  }
  uint64_t old = cfg->num[id];
  if (config_apply_value (cfg, id, value, err) == -1)
    return -1;
  if (config_validate (cfg, err) == -1) {
    cfg->num[id] = old;
    return -1;
  }
  return 0;
}
