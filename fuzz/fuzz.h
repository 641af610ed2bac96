/* What the harnesses share. */
#ifndef BLKEMU_FUZZ_H
#define BLKEMU_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated string the harness owns (free it), or
 * NULL when it is longer than MAX bytes: the targets read text.
 */
static inline char *
fuzz_text (const uint8_t *data, size_t size, size_t max)
{
  if (size > max)
    return NULL;
  char *text = malloc (size + 1);
  if (text) {
    memcpy (text, data, size);
    text[size] = '\0';
  }
  return text;
}

#endif
