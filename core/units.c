/* Units: see units.h. */
#include "units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Parse "123" or "1.25" into a value scaled by SCALE (so "1.5" with scale
 * 1000 is 1500).  Accepts no sign.  Sets *end past the number.
 */
static int
parse_decimal (const char *s, uint64_t scale, uint64_t *out, const char **end,
               const char **why)
{
  uint64_t whole = 0, frac = 0, frac_div = 1;
  const char *p = s;

  if (!isdigit ((unsigned char) *p)) {
    *why = *p == '-' ? "must not be negative" : "must start with a number";
    return -1;
  }
  for (; isdigit ((unsigned char) *p); p++) {
    if (whole > (UINT64_MAX - 9) / 10) {
      *why = "is too large";
      return -1;
    }
    whole = whole * 10 + (uint64_t) (*p - '0');
  }
  if (*p == '.') {
    p++;
    if (!isdigit ((unsigned char) *p)) {
      *why = "has a malformed fraction";
      return -1;
    }
    for (; isdigit ((unsigned char) *p); p++) {
      if (frac_div < 1000000000) {
        frac = frac * 10 + (uint64_t) (*p - '0');
        frac_div *= 10;
      }
      else if (*p != '0') {
        *why = "is not a whole number of the base unit";
        return -1;
      }
    }
  }
  if (whole > UINT64_MAX / scale) {
    *why = "is too large";
    return -1;
  }
  uint64_t frac_scaled =
    (uint64_t) ((unsigned __int128) frac * scale / frac_div);
  if ((unsigned __int128) frac * scale % frac_div != 0) {
    *why = "is not a whole number of the base unit";
    return -1;
  }
  /* whole * scale fits (checked above); the fraction can still carry it
   * past the top (18446744073.9s).
   */
  if (whole * scale > UINT64_MAX - frac_scaled) {
    *why = "is too large";
    return -1;
  }
  *out = whole * scale + frac_scaled;
  *end = p;
  return 0;
}

static int
suffix_scale (const char *suffix, uint64_t *scale)
{
  static const struct {
    const char *name;
    uint64_t scale;
  } table[] = {
    { "", 1 },
    { "B", 1 },
    { "K", 1ull << 10 },
    { "k", 1ull << 10 },
    { "KiB", 1ull << 10 },
    { "M", 1ull << 20 },
    { "MiB", 1ull << 20 },
    { "G", 1ull << 30 },
    { "GiB", 1ull << 30 },
    { "T", 1ull << 40 },
    { "TiB", 1ull << 40 },
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp (suffix, table[i].name) == 0) {
      *scale = table[i].scale;
      return 0;
    }
  return -1;
}

int
blkemu_parse_size (const char *s, uint64_t *bytes, const char **why)
{
  const char *end;
  uint64_t scale, v;
  size_t n = strlen (s);
  /* Find where the digits end to pick the suffix first. */
  const char *sfx = s;
  while (*sfx && (isdigit ((unsigned char) *sfx) || *sfx == '.'))
    sfx++;
  if (suffix_scale (sfx, &scale) == -1) {
    *why = n == 0      ? "must not be empty"
           : *s == '-' ? "must not be negative"
                       : "takes a number with an optional K, M, G or T suffix";
    return -1;
  }
  if (parse_decimal (s, scale, &v, &end, why) == -1)
    return -1;
  if (end != sfx) { /* "1.5.5G": a second dot */
    *why = "takes a number with an optional K, M, G or T suffix";
    return -1;
  }
  *bytes = v;
  return 0;
}

int
blkemu_parse_rate (const char *s, uint64_t *bytes_per_s, const char **why)
{
  char buf[64];
  size_t n = strlen (s);
  /* Accept an optional "/s" after the size. */
  if (n >= 2 && n < sizeof buf && strcmp (s + n - 2, "/s") == 0) {
    memcpy (buf, s, n - 2);
    buf[n - 2] = '\0';
    s = buf;
  }
  return blkemu_parse_size (s, bytes_per_s, why);
}

int
blkemu_parse_duration (const char *s, uint64_t *ns, const char **why)
{
  static const struct {
    const char *name;
    uint64_t ns;
  } table[] = {
    { "ns", 1 },
    { "us", 1000 },
    { "ms", 1000000 },
    { "s", 1000000000 },
  };
  const char *sfx = s, *end;
  while (*sfx && (isdigit ((unsigned char) *sfx) || *sfx == '.'))
    sfx++;
  if (*sfx == '\0' && strcmp (s, "0") == 0) {
    *ns = 0;
    return 0;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp (sfx, table[i].name) == 0) {
      if (parse_decimal (s, table[i].ns, ns, &end, why) == -1)
        return -1;
      if (end != sfx) { /* "2.5.999ms": a second dot */
        *why = "takes a number with a unit: ns, us, ms or s (e.g. 1ms)";
        return -1;
      }
      return 0;
    }
  *why = *s == '-' ? "must not be negative"
         : *s == '\0'
           ? "must not be empty"
           : "takes a number with a unit: ns, us, ms or s (e.g. 1ms)";
  return -1;
}

int
blkemu_parse_uint (const char *s, uint64_t *n, const char **why)
{
  const char *end;
  if (parse_decimal (s, 1, n, &end, why) == -1)
    return -1;
  if (*end != '\0') {
    *why = "must be a whole number";
    return -1;
  }
  return 0;
}

int
blkemu_parse_fraction (const char *s, uint64_t *ppb, const char **why)
{
  const char *end;
  if (parse_decimal (s, 1000000000u, ppb, &end, why) == -1)
    return -1;
  if (*end == '%' && end[1] == '\0')
    *ppb /= 100;
  else if (*end != '\0') {
    *why = "must be a number between 0 and 1, or a percentage like 5%";
    return -1;
  }
  if (*ppb > 1000000000u) {
    *why = "must be between 0 and 1 (or 0% and 100%)";
    return -1;
  }
  return 0;
}

void
blkemu_format_fraction (uint64_t ppb, char *buf, size_t len)
{
  char tmp[32];
  snprintf (tmp, sizeof tmp, "%llu.%09llu",
            (unsigned long long) (ppb / 1000000000u),
            (unsigned long long) (ppb % 1000000000u));
  /* Trim trailing zeros: 0.010000000 -> 0.01, 1.000000000 -> 1. */
  char *e = tmp + strlen (tmp) - 1;
  while (*e == '0')
    *e-- = '\0';
  if (*e == '.')
    *e = '\0';
  snprintf (buf, len, "%s", tmp);
}

void
blkemu_format_size (uint64_t bytes, char *buf, size_t len)
{
  static const char sfx[] = "KMGT";
  int i = -1;
  while (bytes != 0 && bytes % 1024 == 0 && i < 3) {
    bytes /= 1024;
    i++;
  }
  if (i < 0)
    snprintf (buf, len, "%llu", (unsigned long long) bytes);
  else
    snprintf (buf, len, "%llu%c", (unsigned long long) bytes, sfx[i]);
}

void
blkemu_format_duration (uint64_t ns, char *buf, size_t len)
{
  if (ns == 0)
    snprintf (buf, len, "0");
  else if (ns % 1000000000 == 0)
    snprintf (buf, len, "%llus", (unsigned long long) (ns / 1000000000));
  else if (ns % 1000000 == 0)
    snprintf (buf, len, "%llums", (unsigned long long) (ns / 1000000));
  else if (ns % 1000 == 0)
    snprintf (buf, len, "%lluus", (unsigned long long) (ns / 1000));
  else
    snprintf (buf, len, "%lluns", (unsigned long long) ns);
}
