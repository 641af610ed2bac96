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
