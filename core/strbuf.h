/* A growable string for building JSON and replies. */
#ifndef BLKEMU_STRBUF_H
#define BLKEMU_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
  char *s;
  size_t len, cap;
  bool oom; /* an allocation failed; s holds what fit */
};

void sb_printf (struct strbuf *sb, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));
/* Append S as a JSON string literal, quotes included. */
void sb_json_string (struct strbuf *sb, const char *s);
/* Take the string (NULL after an allocation failure); SB is emptied. */
char *sb_take (struct strbuf *sb);

#endif
