/* Reading blkemu's text trace: the rules in blkemu.h (one reader for
 * blkemu-plot and blkemu-trace-convert; the two used to disagree).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"
#include "error.h"
#include "trace.h"

struct blkemu_trace_reader {
  FILE *in;
  char *name;
  size_t lineno;
  bool header;
  uint64_t zone_size;
  char line[BLKEMU_TRACE_LINE_MAX + 1];
};

struct blkemu_trace_reader *
blkemu_trace_reader_new (FILE *in, const char *name)
{
  struct blkemu_trace_reader *r = calloc (1, sizeof *r);
  if (!r)
    return NULL;
  r->in = in;
  r->name = strdup (name ? name : "-");
  if (!r->name) {
    free (r);
    return NULL;
  }
  return r;
}

void
blkemu_trace_reader_free (struct blkemu_trace_reader *r)
{
  if (!r)
    return;
  free (r->name);
  free (r);
}

bool
blkemu_trace_has_header (const struct blkemu_trace_reader *r)
{
  return r->header;
}

uint64_t
blkemu_trace_zone_size (const struct blkemu_trace_reader *r)
{
  return r->zone_size;
}

size_t
blkemu_trace_line (const struct blkemu_trace_reader *r)
{
  return r->lineno;
}

/* One line into R->line, without its newline.  Returns its length, -1 at
 * the end, or -2 when it is longer than the limit (the rest of it is
 * consumed, so the next line is the next line).
 */
static long
read_line (struct blkemu_trace_reader *r)
{
  size_t n = 0;
  int c;
  bool any = false, long_line = false;
  while ((c = getc (r->in)) != EOF) {
    any = true;
    if (c == '\n')
      break;
    if (n < BLKEMU_TRACE_LINE_MAX)
      r->line[n++] = (char) c;
    else
      long_line = true;
  }
  r->line[n] = '\0';
  if (!any)
    return -1;
  r->lineno++;
  return long_line ? -2 : (long) n;
}

/* LINE quoted for a message: at most 60 characters, bytes that are not
 * printable ASCII as \xNN, so binary input never reaches a terminal.
 */
static void
quote (const char *line, size_t len, char *out, size_t outlen)
{
  size_t o = 0;
  for (size_t i = 0; i < len && i < 60 && o + 5 < outlen; i++) {
    unsigned char c = (unsigned char) line[i];
    if (c >= 0x20 && c < 0x7f)
      out[o++] = (char) c;
    else
      o += (size_t) snprintf (out + o, outlen - o, "\\x%02x", c);
  }
  out[o] = '\0';
  if (len > 60 && o + 4 < outlen)
    strcpy (out + o, "...");
}

/* *V = *V * 10 + the digit C; false if that does not fit. */
static bool
append_digit (uint64_t *v, char c)
{
  unsigned d = (unsigned) (c - '0');
  if (*v > UINT64_MAX / 10 || (*v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
    return false;
  *v = *v * 10 + d;
  return true;
}

/* "DIGITS[.DIGITS]" (at most 9 after the point) times 10^SCALE, in
 * *OUT: seconds to ns with SCALE 9, microseconds to ns with 3 (digits
 * past the nanosecond are dropped).  False if not such a number or too
 * large.
 */
static bool
parse_decimal (const char *s, unsigned scale, uint64_t *out)
{
  uint64_t whole = 0, frac = 0;
  unsigned fdigits = 0;
  const char *p = s;
  if (*p < '0' || *p > '9')
    return false;
  for (; *p >= '0' && *p <= '9'; p++)
    if (!append_digit (&whole, *p))
      return false;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return false;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (++fdigits > 9)
        return false;
      if (fdigits <= scale)
        frac = frac * 10 + (uint64_t) (*p - '0');
    }
  }
  if (*p)
    return false;
  for (unsigned d = fdigits < scale ? fdigits : scale; d < scale; d++)
    frac *= 10;
  uint64_t mul = 1;
  for (unsigned d = 0; d < scale; d++)
    mul *= 10;
  if (whole > (UINT64_MAX - frac) / mul)
    return false;
  *out = whole * mul + frac;
  return true;
}

static bool
parse_u64 (const char *s, uint64_t *out)
{
  if (*s < '0' || *s > '9')
    return false;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    if (!append_digit (&v, *s))
      return false;
  *out = v;
  return *s == '\0';
}

static int
errno_from_name (const char *s)
{
  for (int e = 1; e < 134; e++) {
    const char *n = strerrorname_np (e);
    if (n && strcmp (n, s) == 0)
      return e;
  }
  return EIO;
}

/* Why a request line is not one, or NULL with *REC filled.  LINE is
 * split in place.
 */
static const char *
parse_request (char *line, struct blkemu_trace_rec *rec)
{
  char *field[9];
  int n = 0;
  for (char *save, *tok = strtok_r (line, " \t\r", &save); tok;
       tok = strtok_r (NULL, " \t\r", &save)) {
    if (n == 9)
      return "more than 8 fields";
    field[n++] = tok;
  }
  if (n < 7)
    return "fewer than 7 fields";
  *rec = (struct blkemu_trace_rec){ 0 };
  if (!parse_decimal (field[0], 9, &rec->arrival_ns))
    return "time_s is not a decimal number of seconds";
  int op = -1;
  for (int i = 0; i < BLKEMU_OP_COUNT; i++)
    if (field[1][0] == trace_op_letter[i] && field[1][1] == '\0')
      op = i;
  if (op < 0)
    return "op is not one of R W F T Z";
  rec->op = (enum blkemu_op) op;
  if (!parse_u64 (field[2], &rec->offset))
    return "offset is not a whole number";
  if (!parse_u64 (field[3], &rec->len))
    return "length is not a whole number";
  if (!parse_decimal (field[4], 3, &rec->latency_ns))
    return "latency_us is not a decimal number of microseconds";
  if (!parse_u64 (field[5], &rec->qd))
    return "qd is not a whole number";
  if (strcmp (field[6], "ok") == 0)
    rec->err = 0;
  else if (field[6][0] == 'E' && field[6][1])
    rec->err = errno_from_name (field[6]);
  else
    return "result is neither ok nor an errno name";
  if (n == 8 && strcmp (field[7], "-") != 0) {
    for (char *save, *m = strtok_r (field[7], ",", &save); m;
         m = strtok_r (NULL, ",", &save)) {
      unsigned i = 0;
      while (blkemu_trace_mark_name (i) &&
             strcmp (blkemu_trace_mark_name (i), m) != 0)
        i++;
      if (!blkemu_trace_mark_name (i))
        return "unknown mark";
      rec->marks |= 1u << i;
    }
  }
  return NULL;
}

int
blkemu_trace_read (struct blkemu_trace_reader *r, struct blkemu_trace_rec *rec,
                   char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX], q[320];
  for (;;) {
    long len = read_line (r);
    if (len == -1) {
      if (ferror (r->in)) {
        set_err (e, "%s: %s", r->name, strerrordesc_np (errno));
        return err_result (-1, e, err, errlen);
      }
      return 0;
    }
    if (len == -2) {
      quote (r->line, BLKEMU_TRACE_LINE_MAX, q, sizeof q);
      set_err (e, "%s:%zu: longer than %d characters: %s", r->name, r->lineno,
               BLKEMU_TRACE_LINE_MAX, q);
      return err_result (-1, e, err, errlen);
    }
    if (len == 0)
      continue;
    if (r->line[0] == '#') {
      r->header |= strncmp (r->line, "# blkemu trace", 14) == 0;
      if (strncmp (r->line, "# zone_size ", 12) == 0) {
        uint64_t zs;
        if (!parse_u64 (r->line + 12, &zs) || zs < 4096 || zs > (1ull << 40)) {
          quote (r->line, (size_t) len, q, sizeof q);
          set_err (e,
                   "%s:%zu: zone_size is not a whole number of bytes "
                   "from 4096 to 1T: %s",
                   r->name, r->lineno, q);
          return err_result (-1, e, err, errlen);
        }
        r->zone_size = zs;
      }
      continue;
    }
    for (long i = 0; i < len; i++) {
      unsigned char c = (unsigned char) r->line[i];
      if ((c < 0x20 && c != '\t' && c != '\r') || c >= 0x7f) {
        quote (r->line, (size_t) len, q, sizeof q);
        set_err (e, "%s:%zu: not text (byte 0x%02x at column %ld): %s",
                 r->name, r->lineno, c, i + 1, q);
        return err_result (-1, e, err, errlen);
      }
    }
    quote (r->line, (size_t) len, q, sizeof q);
    const char *why = parse_request (r->line, rec);
    if (why) {
      set_err (e,
               "%s:%zu: not a blkemu trace line (%s; want: time_s op "
               "offset length latency_us qd result [marks]): %s",
               r->name, r->lineno, why, q);
      return err_result (-1, e, err, errlen);
    }
    return 1;
  }
}
