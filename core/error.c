#include "error.h"

#include <stdarg.h>
#include <stdio.h>

#include "blkemu/blkemu.h"

void
set_err (char *err, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (err, BLKEMU_ERR_MAX, fmt, ap);
  va_end (ap);
}

int
err_result (int r, const char *e, char *err, size_t errlen)
{
  if (r == -1 && err && errlen)
    snprintf (err, errlen, "%s", e);
  return r;
}

void *
err_result_ptr (void *p, const char *e, char *err, size_t errlen)
{
  if (!p && err && errlen)
    snprintf (err, errlen, "%s", e);
  return p;
}
