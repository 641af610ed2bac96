/* Errors carry context upward as one message, "key=value: rule", in a
 * caller's buffer of BLKEMU_ERR_MAX bytes.
 *
 * Messages use strerrordesc_np(), not strerror(): it is untranslated and
 * takes no locale lock (strerror under the preloaded ASan runtime of the
 * sanitizer build left nbdkit deadlocked in exit).
 */
#ifndef BLKEMU_ERROR_H
#define BLKEMU_ERROR_H

void set_err (char *err, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));

/* The public API takes the caller's buffer with its size: the core fills
 * one of BLKEMU_ERR_MAX (E) and these copy it out, cut to ERRLEN.
 * err_result returns R; err_result_ptr returns P.
 */
#include <stddef.h>
int err_result (int r, const char *e, char *err, size_t errlen);
void *err_result_ptr (void *p, const char *e, char *err, size_t errlen);

#endif
