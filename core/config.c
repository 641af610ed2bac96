/* The effective configuration as a value: copy, free, and each key's
 * canonical text.  The bottom of the config layer: parsing (spec.c),
 * validation (validate.c) and every reader of a setting build on it.
 */
#include "keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

void
config_free (struct blkemu_config *cfg)
{
  for (int i = 0; i < K_COUNT; i++) {
    free (cfg->str[i]);
    cfg->str[i] = NULL;
  }
}

void
config_copy (struct blkemu_config *dst, const struct blkemu_config *src)
{
  memcpy (dst->num, src->num, sizeof dst->num);
  for (int i = 0; i < K_COUNT; i++)
    dst->str[i] = src->str[i] ? strdup (src->str[i]) : NULL;
}

void
config_format (const struct blkemu_config *cfg, int id, char *buf, size_t len)
{
  const struct key_def *k = &config_keys[id];
  uint64_t v = cfg->num[id];
  switch (k->type) {
  case T_SIZE:
  case T_RATE: blkemu_format_size (v, buf, len); break;
  case T_DURATION: blkemu_format_duration (v, buf, len); break;
  case T_UINT: snprintf (buf, len, "%llu", (unsigned long long) v); break;
  case T_PROB: blkemu_format_fraction (v, buf, len); break;
  case T_BOOL: snprintf (buf, len, "%s", v ? "yes" : "no"); break;
  case T_MODE: snprintf (buf, len, "%04llo", (unsigned long long) v); break;
  case T_ENUM: {
    const char *p = k->choices;
    for (uint64_t i = 0; i < v && p; i++) {
      p = strchr (p, '|');
      if (p)
        p++;
    }
    size_t n = p ? strcspn (p, "|") : 0;
    snprintf (buf, len, "%.*s", (int) n, p ? p : "");
    break;
  }
  case T_STRING:
    snprintf (buf, len, "%s", cfg->str[id] ? cfg->str[id] : "");
    break;
  }
}
