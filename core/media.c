/* The medium's unreadable sectors and stuck bits, through the public
 * API: validation and the text lists (the sets themselves are
 * core/badranges.c and core/stuckbits.c, the read and write paths
 * consult them in pipeline.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"
#include "error.h"
#include "units.h"

/* OFFSET and LEN name whole logical blocks of the disk: 0, or -1 with E. */
static int
check_range (struct blkemu_disk *disk, const char *what, uint64_t offset,
             uint64_t len, char *e)
{
  pthread_mutex_lock (&disk->lock);
  uint64_t lbs = disk->cfg.num[K_LOGICAL_BLOCK_SIZE];
  uint64_t size = disk->cfg.num[K_SIZE];
  pthread_mutex_unlock (&disk->lock);
  if (len == 0 || offset % lbs || len % lbs) {
    set_err (e,
             "%s %" PRIu64 " %" PRIu64 ": OFFSET and LENGTH must be "
             "multiples of the logical block (%" PRIu64 "), LENGTH > 0",
             what, offset, len, lbs);
    return -1;
  }
  if (offset > size || len > size - offset) {
    set_err (e,
             "%s %" PRIu64 " %" PRIu64 ": beyond the end of the disk "
             "(%" PRIu64 " bytes)",
             what, offset, len, size);
    return -1;
  }
  return 0;
}

/* bad add or bad clear (ADD false) of a checked range. */
static int
bad_change (struct blkemu_disk *disk, bool add, uint64_t offset, uint64_t len,
            char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  const char *what = add ? "bad add" : "bad clear";
  int r = check_range (disk, what, offset, len, e);
  if (r == 0 &&
      (add ? badranges_add : badranges_clear) (&disk->bad, offset, len)) {
    set_err (e, "%s: out of memory", what);
    r = -1;
  }
  return err_result (r, e, err, errlen);
}

int
blkemu_disk_bad_add (struct blkemu_disk *disk, uint64_t offset, uint64_t len,
                     char *err, size_t errlen)
{
  return bad_change (disk, true, offset, len, err, errlen);
}

int
blkemu_disk_bad_clear (struct blkemu_disk *disk, uint64_t offset, uint64_t len,
                       char *err, size_t errlen)
{
  return bad_change (disk, false, offset, len, err, errlen);
}

char *
blkemu_disk_bad_list (struct blkemu_disk *disk, uint64_t *count)
{
  enum { SHOWN = 128 };
  struct bad_range r[SHOWN];
  size_t total;
  size_t n = badranges_list (&disk->bad, 0, r, SHOWN, &total);
  size_t cap = n * 44 + 8, used = 0;
  char *s = malloc (cap);
  if (!s)
    return NULL;
  s[0] = '\0';
  for (size_t i = 0; i < n; i++)
    used +=
      (size_t) snprintf (s + used, cap - used, "%s%" PRIu64 "+%" PRIu64,
                         i ? " " : "", r[i].start, r[i].end - r[i].start);
  if (total > n)
    snprintf (s + used, cap - used, " ...");
  *count = total;
  return s;
}

int
blkemu_disk_bad_args (struct blkemu_disk *disk, const char *what,
                      const char *offset, const char *length, char *err,
                      size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  bool add = what && !strcmp (what, "add");
  if (!what || (!add && strcmp (what, "clear")) || !offset || !length) {
    set_err (e, "bad %s: usage: bad [add|clear OFFSET LENGTH]",
             what ? what : "");
    return err_result (-1, e, err, errlen);
  }
  uint64_t off, len;
  const char *why = NULL;
  if (blkemu_parse_size (offset, &off, &why) == -1 ||
      blkemu_parse_size (length, &len, &why) == -1) {
    set_err (e, "bad %s %s %s: %s", what, offset, length, why);
    return err_result (-1, e, err, errlen);
  }
  return (add ? blkemu_disk_bad_add : blkemu_disk_bad_clear) (disk, off, len,
                                                              err, errlen);
}

uint64_t
blkemu_disk_error_at (struct blkemu_disk *disk, uint64_t offset, uint64_t len)
{
  uint64_t first;
  if (badranges_first (&disk->bad, offset, len, &first))
    return first;
  /* An error-offset rule: the first block of its range in the request. */
  pthread_mutex_lock (&disk->lock);
  uint64_t start = disk->cfg.num[K_ERROR_OFFSET];
  bool ruled = disk->cfg.num[K_ERROR_MODE] != ERROR_OFF;
  pthread_mutex_unlock (&disk->lock);
  return ruled && start > offset && start < offset + len ? start : offset;
}

int
blkemu_disk_stuck_add (struct blkemu_disk *disk, uint64_t offset, unsigned bit,
                       unsigned value, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  pthread_mutex_lock (&disk->lock);
  uint64_t size = disk->cfg.num[K_SIZE];
  pthread_mutex_unlock (&disk->lock);
  int r = -1;
  if (offset >= size)
    set_err (e,
             "stuck add %" PRIu64 ": beyond the end of the disk (%" PRIu64
             " bytes)",
             offset, size);
  else if (bit > 7 || value > 1)
    set_err (e,
             "stuck add %" PRIu64 " %u %u: BIT is 0 (the least significant) "
             "to 7, VALUE 0 or 1",
             offset, bit, value);
  else if ((r = stuckbits_add (&disk->stuck, offset, bit, value)) != 0) {
    if (r == ENOSPC)
      set_err (e, "stuck add: the disk has %d stuck bits, the most it takes",
               STUCK_MAX);
    else
      set_err (e, "stuck add: out of memory");
    r = -1;
  }
  return err_result (r, e, err, errlen);
}

void
blkemu_disk_stuck_clear (struct blkemu_disk *disk)
{
  stuckbits_clear (&disk->stuck);
}

char *
blkemu_disk_stuck_list (struct blkemu_disk *disk, uint64_t *count)
{
  enum { SHOWN = 128 };
  struct stuck_bit b[SHOWN];
  size_t total;
  size_t n = stuckbits_list (&disk->stuck, b, SHOWN, &total);
  size_t cap = n * 28 + 8, used = 0;
  char *s = malloc (cap);
  if (!s)
    return NULL;
  s[0] = '\0';
  for (size_t i = 0; i < n; i++)
    used += (size_t) snprintf (s + used, cap - used, "%s%" PRIu64 ":%u=%u",
                               i ? " " : "", b[i].byte, b[i].bit, b[i].value);
  if (total > n)
    snprintf (s + used, cap - used, " ...");
  *count = total;
  return s;
}

int
blkemu_disk_stuck_args (struct blkemu_disk *disk, const char *what,
                        const char *offset, const char *bit, const char *value,
                        char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  bool add = what && !strcmp (what, "add");
  bool clear = what && !strcmp (what, "clear");
  if (clear && !offset) {
    blkemu_disk_stuck_clear (disk);
    return 0;
  }
  if (!add || !offset || !bit || !value) {
    set_err (e, "stuck %s: usage: stuck [add OFFSET BIT 0|1 | clear]",
             what ? what : "");
    return err_result (-1, e, err, errlen);
  }
  uint64_t off;
  const char *why = NULL;
  if (blkemu_parse_size (offset, &off, &why) == -1) {
    set_err (e, "stuck add %s: %s", offset, why);
    return err_result (-1, e, err, errlen);
  }
  char *end;
  unsigned long b = strtoul (bit, &end, 10);
  bool bit_ok = *end == 0 && end != bit && bit[0] != '-';
  unsigned long v = strtoul (value, &end, 10);
  bool value_ok = *end == 0 && end != value && value[0] != '-';
  if (!bit_ok || !value_ok || b > 7 || v > 1) {
    set_err (e,
             "stuck add %s %s %s: BIT is 0 (the least significant) to 7, "
             "VALUE 0 or 1",
             offset, bit, value);
    return err_result (-1, e, err, errlen);
  }
  return blkemu_disk_stuck_add (disk, off, (unsigned) b, (unsigned) v, err,
                                errlen);
}
