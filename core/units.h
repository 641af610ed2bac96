/* Parsing and printing of sizes, durations and rates: the one conversion
 * point for units.  Sizes and rates take K/M/G/T (powers of 1024), durations
 * ns/us/ms/s.  Each parser returns 0, or -1 with a rule in *why.
 */
#ifndef BLKEMU_UNITS_H
#define BLKEMU_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool
is_pow2 (uint64_t v)
{
  return v && (v & (v - 1)) == 0;
}

int blkemu_parse_size (const char *s, uint64_t *bytes, const char **why);
int blkemu_parse_duration (const char *s, uint64_t *ns, const char **why);
int blkemu_parse_rate (const char *s, uint64_t *bytes_per_s, const char **why);
int blkemu_parse_uint (const char *s, uint64_t *n, const char **why);
/* A probability "0.01" or "1%", in parts per billion (1e9 = certain). */
int blkemu_parse_fraction (const char *s, uint64_t *ppb, const char **why);
void blkemu_format_fraction (uint64_t ppb, char *buf, size_t len);

/* blkemu_format_size and blkemu_format_duration are public. */
#include "blkemu/blkemu.h"

#endif
