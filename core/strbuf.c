#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void
sb_printf (struct strbuf *sb, const char *fmt, ...)
{
  va_list ap;
  if (sb->oom)
    return;
  for (;;) {
    size_t room = sb->cap - sb->len;
    va_start (ap, fmt);
    int n = vsnprintf (sb->s ? sb->s + sb->len : NULL, room, fmt, ap);
    va_end (ap);
    if (n < 0) {
      sb->oom = true;
      return;
    }
    if ((size_t) n < room) {
      sb->len += (size_t) n;
      return;
    }
    size_t cap = sb->cap ? sb->cap * 2 : 4096;
    while (cap - sb->len <= (size_t) n)
      cap *= 2;
    char *s = realloc (sb->s, cap);
    if (!s) {
      sb->oom = true;
      return;
    }
    sb->s = s;
    sb->cap = cap;
  }
}

void
sb_json_string (struct strbuf *sb, const char *s)
{
  sb_printf (sb, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char) *s;
    if (c == '"' || c == '\\')
      sb_printf (sb, "\\%c", c);
    else if (c < 0x20)
      sb_printf (sb, "\\u%04x", c);
    else
      sb_printf (sb, "%c", c);
  }
  sb_printf (sb, "\"");
}

char *
sb_take (struct strbuf *sb)
{
  char *s = sb->oom ? NULL : sb->s;
  if (sb->oom)
    free (sb->s);
  sb->s = NULL;
  sb->len = sb->cap = 0;
  sb->oom = false;
  return s;
}
