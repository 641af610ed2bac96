/* The C tests' shared helpers: see helpers.h. */
#include "helpers.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int test_failures;

struct blkemu_disk *
test_disk (const char *spec, const struct blkemu_frontend *fe)
{
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d = blkemu_disk_open_spec (spec, 0, fe, err, sizeof err);
  CHECK (d, "open %s: %s", spec, err);
  if (d && blkemu_disk_start (d, err, sizeof err) == -1) {
    CHECK (false, "start %s: %s", spec, err);
    blkemu_disk_close (d);
    d = NULL;
  }
  return d;
}

void
test_done (void *cookie, int result)
{
  struct test_done *rec = cookie;
  rec->result = result;
  __atomic_store_n (&rec->done, true, __ATOMIC_RELEASE);
}

int
test_wait (struct test_done *rec, unsigned seconds)
{
  for (unsigned ms = 0; ms < seconds * 1000u; ms++) {
    if (__atomic_load_n (&rec->done, __ATOMIC_ACQUIRE))
      return rec->result;
    usleep (1000);
  }
  return __atomic_load_n (&rec->done, __ATOMIC_ACQUIRE) ? rec->result
                                                        : ETIMEDOUT;
}

/* The end of the JSON value at P: past its closing bracket, quote or
 * last character.
 */
static const char *
value_end (const char *p)
{
  int depth = 0;
  bool str = false;
  for (; *p; p++) {
    if (str) {
      if (*p == '\\' && p[1])
        p++;
      else if (*p == '"')
        str = false;
      if (!str && depth == 0)
        return p + 1;
      continue;
    }
    if (*p == '"')
      str = true;
    else if (*p == '{' || *p == '[')
      depth++;
    else if (*p == '}' || *p == ']') {
      if (depth == 0)
        return p;
      if (--depth == 0)
        return p + 1;
    }
    else if (*p == ',' && depth == 0)
      return p;
  }
  return p;
}

/* In the object at OBJ (its '{'), the value of member NAME, or NULL. */
static const char *
member (const char *obj, const char *name, size_t len)
{
  const char *p = obj + 1;
  while (*p) {
    while (*p == ' ' || *p == '\n' || *p == ',')
      p++;
    if (*p != '"')
      return NULL;
    const char *key = p + 1, *q = strchr (key, '"');
    if (!q)
      return NULL;
    p = q + 1;
    while (*p == ' ' || *p == ':')
      p++;
    if ((size_t) (q - key) == len && !strncmp (key, name, len))
      return p;
    p = value_end (p);
  }
  return NULL;
}

double
test_stat (struct blkemu_disk *disk, const char *path)
{
  char *json = blkemu_disk_stats_json (disk, false);
  const char *v = json, *part = path;
  while (v && *part) {
    size_t len = strcspn (part, ".");
    v = *v == '{' ? member (v, part, len) : NULL;
    part += len + (part[len] == '.');
  }
  char *end = NULL;
  double x = v ? strtod (v, &end) : NAN;
  CHECK (v && end != v, "stats: no number at %s", path);
  free (json);
  return v && end != v ? x : NAN;
}

void
test_skip (const char *why)
{
  printf ("SKIP: %s\n", why);
  fflush (stdout);
  exit (77);
}

void
test_answered (int r, blkemu_done_cb done, void *cookie)
{
  if (r != BLKEMU_QUEUED)
    done (cookie, r);
}
