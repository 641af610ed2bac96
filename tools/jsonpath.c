/* jsonpath.c: see jsonpath.h.  The walker skips what it does not need
 * without building anything: strings with their escapes, nested objects
 * and arrays by depth.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jsonpath.h"

static const char *
skip_ws (const char *p)
{
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
    p++;
  return p;
}

/* The end of the string whose opening quote is at P, or NULL. */
static const char *
skip_string (const char *p)
{
  for (p++; *p && *p != '"'; p++)
    if (*p == '\\' && !*++p)
      return NULL;
  return *p ? p + 1 : NULL;
}

/* The end of the value at P, or NULL when it is malformed. */
static const char *
skip_value (const char *p)
{
  if (*p == '"')
    return skip_string (p);
  if (*p != '{' && *p != '[') {
    const char *q = p;
    while (*q && !strchr (",}] \t\r\n", *q))
      q++;
    return q > p ? q : NULL;
  }
  int depth = 0;
  do {
    if (*p == '"') {
      if (!(p = skip_string (p)))
        return NULL;
      continue;
    }
    if (*p == '{' || *p == '[')
      depth++;
    else if (*p == '}' || *p == ']')
      depth--;
    else if (!*p)
      return NULL;
    p++;
  } while (depth > 0);
  return p;
}

/* In the object or array at P, the value of member KEY (KLEN bytes; no
 * escapes in it) or of element INDEX (KEY NULL).  NULL when it has none;
 * *BAD set when the text is malformed.
 */
static const char *
child (const char *p, const char *key, size_t klen, unsigned long index,
       bool *bad)
{
  char open = key ? '{' : '[', close = key ? '}' : ']';
  if (*p != open)
    return NULL;
  p = skip_ws (p + 1);
  for (unsigned long i = 0; *p != close; i++) {
    const char *name = NULL, *end;
    if (key) {
      if (*p != '"' || !(end = skip_string (p)))
        break;
      name = p + 1;
      p = skip_ws (end);
      if (*p++ != ':')
        break;
      p = skip_ws (p);
      if ((size_t) (end - 1 - name) == klen && !memcmp (name, key, klen))
        return p;
    }
    else if (i == index)
      return p;
    if (!(end = skip_value (p)))
      break;
    p = skip_ws (end);
    if (*p == ',')
      p = skip_ws (p + 1);
    else if (*p != close)
      break;
  }
  *bad = *p != close;
  return NULL;
}

/* One step of PATH at *PATH: a member's name and length, or an index
 * (*KEY NULL).  Advances *PATH; false when the step is not one.
 */
static bool
next_step (const char **path, const char **key, size_t *klen,
           unsigned long *index)
{
  const char *s = *path;
  if (s[0] == '.' && s[1] != '[') {
    size_t n = 0;
    while (isalnum ((unsigned char) s[1 + n]) || s[1 + n] == '_')
      n++;
    *key = s + 1, *klen = n;
    *path = s + 1 + n;
    return n > 0;
  }
  if (s[0] == '.')
    s++;
  if (s[0] != '[')
    return false;
  if (s[1] == '"') {
    const char *end = strchr (s + 2, '"');
    if (!end || end[1] != ']')
      return false;
    *key = s + 2, *klen = (size_t) (end - s - 2);
    *path = end + 2;
    return true;
  }
  char *end;
  if (!isdigit ((unsigned char) s[1]))
    return false;
  *index = strtoul (s + 1, &end, 10);
  *key = NULL;
  *path = end + 1;
  return *end == ']';
}

/* The string at P (its quotes included) unescaped to FP. */
static void
print_string (FILE *fp, const char *p, const char *end)
{
  for (p++, end--; p < end; p++) {
    if (*p != '\\') {
      fputc (*p, fp);
      continue;
    }
    char c = *++p;
    const char *map = strchr ("n\nt\tr\rb\bf\f", c);
    if (c == 'u' && end - p > 4) { /* ASCII only: blkemu writes no more */
      fputc ((int) strtoul ((char[]){ p[1], p[2], p[3], p[4], 0 }, NULL, 16),
             fp);
      p += 4;
    }
    else
      fputc (map && (map - "n\nt\tr\rb\bf\f") % 2 == 0 ? map[1] : c, fp);
  }
}

int
jsonpath_check (const char *path, const char **why)
{
  if (path[0] != '.') {
    *why = "a path starts with '.'";
    return -1;
  }
  while (path[0] && !(path[0] == '.' && !path[1])) {
    const char *key;
    size_t klen;
    unsigned long index;
    if (!next_step (&path, &key, &klen, &index)) {
      *why = "a path is .name, [\"name\"] or [N] steps";
      return -1;
    }
  }
  return 0;
}

/* A number as jq prints it: the shortest form that reads back the same
 * (0.000 is 0, 1.500 is 1.5).
 */
static void
print_number (FILE *fp, const char *p, const char *end)
{
  char text[64], *stop;
  size_t n = (size_t) (end - p);
  if (n >= sizeof text || !strpbrk (memcpy (text, p, n), ".eE")) {
    fwrite (p, 1, n, fp);
    return;
  }
  text[n] = '\0';
  double v = strtod (text, &stop);
  if (*stop) {
    fwrite (p, 1, n, fp);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf (text, sizeof text, "%.*g", prec, v);
    if (strtod (text, NULL) == v)
      break;
  }
  fputs (text, fp);
}

/* An object or array as jq -c prints it: no space outside strings. */
static void
print_compact (FILE *fp, const char *p, const char *end)
{
  bool in_string = false;
  for (; p < end; p++) {
    if (in_string && *p == '\\') {
      fputc (*p++, fp);
      fputc (*p, fp);
      continue;
    }
    if (*p == '"')
      in_string = !in_string;
    if (in_string || !strchr (" \t\r\n", *p))
      fputc (*p, fp);
  }
}

int
jsonpath_print (FILE *fp, const char *json, const char *path, const char **why)
{
  if (jsonpath_check (path, why) == -1)
    return -1;
  const char *p = skip_ws (json);
  bool bad = false;
  while (p && path[0] && !(path[0] == '.' && !path[1])) {
    const char *key = NULL;
    size_t klen = 0;
    unsigned long index = 0;
    next_step (&path, &key, &klen, &index);
    p = child (p, key, klen, index, &bad);
    if (bad) {
      *why = "the JSON is malformed";
      return -1;
    }
  }
  const char *end = p ? skip_value (p) : NULL;
  if (!end)
    fputs ("null", fp);
  else if (*p == '"')
    print_string (fp, p, end);
  else if (*p == '-' || isdigit ((unsigned char) *p))
    print_number (fp, p, end);
  else if (*p == '{' || *p == '[')
    print_compact (fp, p, end);
  else
    fwrite (p, 1, (size_t) (end - p), fp);
  fputc ('\n', fp);
  return 0;
}
