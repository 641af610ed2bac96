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

#endif
