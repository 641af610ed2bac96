/* blkemu-fuse's attribute files (MOUNTPOINT/.blkemu/NAME/): what each
 * reads back, generated at open, and what a write to it does, through
 * the same control functions as the control socket.  See
 * docs/blkemu-fuse.1.md.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse-disk.h"

const char *
attr_name (unsigned attr)
{
  switch (attr) {
  case ATTR_STATS: return "stats";
  case ATTR_SUMMARY: return "summary";
  case ATTR_RESET: return "reset";
  case ATTR_POWER: return "power";
  case ATTR_VIEW: return "view";
  case ATTR_BAD: return "bad";
  case ATTR_STUCK: return "stuck";
  default: return blkemu_key_name (attr - ATTR_KEY0);
  }
}

char *
attr_text (struct disk *dk, unsigned attr)
{
  struct blkemu_disk *emu = dk->emu;
  char v[BLKEMU_VALUE_MAX], err[BLKEMU_ERR_MAX];
  switch (attr) {
  case ATTR_STATS: return blkemu_disk_stats_json (emu, true);
  case ATTR_SUMMARY: return blkemu_disk_summary_text (emu);
  case ATTR_RESET: return strdup ("");
  case ATTR_BAD:
  case ATTR_STUCK: {
    uint64_t count;
    char *list = attr == ATTR_BAD ? blkemu_disk_bad_list (emu, &count)
                                  : blkemu_disk_stuck_list (emu, &count);
    char *t = NULL;
    if (list && asprintf (&t, "%llu%s%s\n", (unsigned long long) count,
                          *list ? " " : "", list) == -1)
      t = NULL;
    free (list);
    return t;
  }
  case ATTR_POWER:
  case ATTR_VIEW: {
    pthread_mutex_lock (&dk->said_lock);
    char *t = strdup (attr == ATTR_POWER ? dk->power_said : dk->view_said);
    pthread_mutex_unlock (&dk->said_lock);
    return t;
  }
  default:
    /* one byte kept for the newline */
    if (blkemu_disk_get (emu, attr_name (attr), v, sizeof v - 1, err,
                         sizeof err) == -1)
      return NULL;
    strcat (v, "\n");
    return strdup (v);
  }
}

/* Remember what the power or view file reads back. */
static void say (struct disk *dk, unsigned attr, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));
static void
say (struct disk *dk, unsigned attr, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  pthread_mutex_lock (&dk->said_lock);
  vsnprintf (attr == ATTR_POWER ? dk->power_said : dk->view_said,
             sizeof dk->power_said, fmt, ap);
  pthread_mutex_unlock (&dk->said_lock);
  va_end (ap);
}

/* "MODE [SEED]" of the power and view files: 0, or EINVAL said. */
static int
parse_state (const struct disk *dk, const char *file, char *words,
             const char *what, enum blkemu_crash_mode *mode, uint64_t *seed)
{
  char err[BLKEMU_ERR_MAX], *save;
  const char *m = strtok_r (words, " ", &save),
             *s = strtok_r (NULL, " ", &save);
  if (!m || strtok_r (NULL, " ", &save)) {
    fprintf (stderr,
             "blkemu-fuse: %s/%s: write '%s%slose-all|subset|torn|"
             "interrupted|pick [SEED]'\n",
             dk->name, file, what, *what ? " " : "");
    return EINVAL;
  }
  if (blkemu_crash_args (*what ? what : "view", m, s, mode, seed, err,
                         sizeof err) == -1) {
    fprintf (stderr, "blkemu-fuse: %s/%s: %s\n", dk->name, file, err);
    return EINVAL;
  }
  return 0;
}

/* power: "crash [MODE [SEED]]", "off" (cache kept, for views) or "on".
 * view: "MODE [SEED]" or "end".  Each reads back what it last did.
 */
static int
power_write (struct disk *dk, unsigned attr, char *value)
{
  struct blkemu_disk *emu = dk->emu;
  const char *file = attr_name (attr);
  char err[BLKEMU_ERR_MAX];
  struct blkemu_crash_report r = { 0 };
  enum blkemu_crash_mode mode;
  uint64_t seed;
  int res = 0;
  if (attr == ATTR_POWER && !strcmp (value, "on")) {
    blkemu_disk_power_on (emu);
    say (dk, attr, "on\n");
    return 0;
  }
  if (attr == ATTR_POWER && !strcmp (value, "off"))
    res = blkemu_disk_power_off (emu, err, sizeof err);
  else if (attr == ATTR_POWER && !strcmp (value, "crash"))
    res = blkemu_disk_crash (emu, err, sizeof err);
  else if (attr == ATTR_VIEW && !strcmp (value, "end"))
    res = blkemu_disk_view_close (emu, err, sizeof err);
  else if (attr == ATTR_POWER && !strncmp (value, "crash ", 6)) {
    if (parse_state (dk, file, value + 6, "crash", &mode, &seed))
      return EINVAL;
    res = blkemu_disk_crash_state (emu, mode, seed, &r, err, sizeof err);
  }
  else if (attr == ATTR_VIEW) {
    if (parse_state (dk, file, value, "", &mode, &seed))
      return EINVAL;
    res = blkemu_disk_view_open (emu, mode, seed, &r, err, sizeof err);
  }
  else {
    fprintf (stderr,
             "blkemu-fuse: %s/power: write 'crash [MODE [SEED]]', "
             "'off' or 'on', not '%s'\n",
             dk->name, value);
    return EINVAL;
  }
  if (res == -1) {
    fprintf (stderr, "blkemu-fuse: %s: %s\n", dk->name, err);
    return EIO;
  }
  if (strchr (value, ' ') || attr == ATTR_VIEW)
    say (dk, attr,
         strcmp (value, "end") ? "mode=%s seed=%llu persisted=%llu "
                                 "lost=%llu torn=%llu\n"
                               : "end\n",
         blkemu_crash_mode_name (r.mode), (unsigned long long) r.seed,
         (unsigned long long) r.persisted, (unsigned long long) r.lost,
         (unsigned long long) r.torn);
  else
    say (dk, attr, "%s\n", value);
  return 0;
}

/* bad: "add OFFSET LENGTH" or "clear OFFSET LENGTH"; reads back the
 * unreadable ranges ("N OFFSET+LENGTH ...").
 */
static int
bad_write (struct disk *dk, char *value)
{
  char err[BLKEMU_ERR_MAX], *save;
  const char *what = strtok_r (value, " ", &save);
  const char *off = strtok_r (NULL, " ", &save);
  const char *len = strtok_r (NULL, " ", &save);
  if (strtok_r (NULL, " ", &save))
    len = NULL; /* too many words: the usage */
  if (blkemu_disk_bad_args (dk->emu, what, off, len, err, sizeof err) == -1) {
    fprintf (stderr, "blkemu-fuse: %s/bad: %s\n", dk->name, err);
    return EINVAL;
  }
  return 0;
}

/* stuck: "add OFFSET BIT 0|1" or "clear"; reads back the stuck bits
 * ("N OFFSET:BIT=VALUE ...").
 */
static int
stuck_write (struct disk *dk, char *value)
{
  char err[BLKEMU_ERR_MAX], *save;
  const char *what = strtok_r (value, " ", &save);
  const char *off = strtok_r (NULL, " ", &save);
  const char *bit = strtok_r (NULL, " ", &save);
  const char *v = strtok_r (NULL, " ", &save);
  if (strtok_r (NULL, " ", &save))
    what = "(too many words)"; /* the usage */
  if (blkemu_disk_stuck_args (dk->emu, what, off, bit, v, err, sizeof err) ==
      -1) {
    fprintf (stderr, "blkemu-fuse: %s/stuck: %s\n", dk->name, err);
    return EINVAL;
  }
  return 0;
}

/* A write to an attribute file: the whole value in one write. */
int
attr_write (struct disk *dk, unsigned attr, const char *data, size_t size)
{
  char value[256], err[BLKEMU_ERR_MAX];
  if (size >= sizeof value)
    return EINVAL;
  memcpy (value, data, size);
  value[size] = '\0';
  while (size && (value[size - 1] == '\n' || value[size - 1] == ' '))
    value[--size] = '\0';
  if (attr == ATTR_RESET) {
    if (strcmp (value, "1") != 0) {
      fprintf (stderr, "blkemu-fuse: %s/reset: write 1 to reset, not '%s'\n",
               dk->name, value);
      return EINVAL;
    }
    blkemu_disk_reset_stats (dk->emu);
    return 0;
  }
  if (attr == ATTR_POWER || attr == ATTR_VIEW)
    return power_write (dk, attr, value);
  if (attr == ATTR_BAD)
    return bad_write (dk, value);
  if (attr == ATTR_STUCK)
    return stuck_write (dk, value);
  if (attr < ATTR_KEY0) {
    fprintf (stderr, "blkemu-fuse: %s/%s is read-only\n", dk->name,
             attr_name (attr));
    return EINVAL;
  }
  if (blkemu_disk_set (dk->emu, attr_name (attr), value, err, sizeof err) ==
      -1) {
    fprintf (stderr, "blkemu-fuse: %s: %s\n", dk->name, err);
    return EINVAL;
  }
  return 0;
}
