/* Fuzz the control command interpreter (the code behind the control
 * socket and blkemu-ctl) on a write-cached memory disk, zoned when the
 * input's length is odd (so `zones` and `zone` meet zones to report,
 * open, finish and reset): each input line is one command.  Every reply
 * begins "ok" or "error: ", and the disk still serves a read afterwards.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"
#include "fuzz.h"
#include "control.h"
#include "disk.h"

/* Commands whose cost is a whole report of the disk (the stats JSON
 * copies ~300 KB of histograms).  Inputs grown to thousands of them
 * spent four fifths of the time re-rendering one disk; a few per input
 * keep every interleaving with state changes and leave the time to the
 * rest of the interpreter.
 */
#define REPORTS_PER_INPUT 4

static bool
is_report (const char *line)
{
  line += strspn (line, " \t");
  static const char *const reports[] = { "stats", "summary", "keys", "dump" };
  for (size_t i = 0; i < sizeof reports / sizeof reports[0]; i++) {
    size_t n = strlen (reports[i]);
    if (!strncmp (line, reports[i], n) &&
        (line[n] == '\0' || line[n] == ' ' || line[n] == '\t'))
      return true;
  }
  return false;
}

/* Whatever the commands did, the zones keep the device's promises:
 * no more open or active than the limits, write pointers where their
 * conditions put them.
 */
static void
check_zones (struct blkemu_disk *disk)
{
  struct blkemu_zoned zg;
  blkemu_disk_zoned (disk, &zg);
  struct blkemu_zone z[16];
  if (zg.nr_zones == 0)
    return;
  if (zg.nr_zones > 16 || blkemu_zone_report (disk, 0, z, 16) != zg.nr_zones)
    abort ();
  unsigned open = 0, closed = 0;
  for (unsigned i = zg.nr_conventional; i < zg.nr_zones; i++) {
    unsigned c = z[i].cond;
    open += c == BLKEMU_ZONE_COND_IMP_OPEN || c == BLKEMU_ZONE_COND_EXP_OPEN;
    closed += c == BLKEMU_ZONE_COND_CLOSED;
    if ((c == BLKEMU_ZONE_COND_EMPTY && z[i].wp != z[i].start) ||
        (c == BLKEMU_ZONE_COND_FULL &&
         z[i].wp != z[i].start + z[i].capacity) ||
        z[i].wp < z[i].start || z[i].wp > z[i].start + z[i].capacity)
      abort ();
  }
  if (open > zg.max_open || open + closed > zg.max_active)
    abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = fuzz_text (data, size, 8192);
  if (!text)
    return 0;
  char err[BLKEMU_ERR_MAX];
  static const char *const specs[2] = {
    "size=16M,write-cache=yes,cache-size=1M",
    "size=16M,write-cache=yes,cache-size=1M,zoned=host-managed,"
    "zone-size=1M,conventional-zones=2,max-open-zones=3,max-active-zones=5",
  };
  struct blkemu_disk *disk =
    blkemu_disk_open_spec (specs[size % 2], 0, NULL, err, sizeof err);
  if (!disk)
    abort ();
  static int echo = -1;
  if (echo < 0)
    echo = getenv ("FUZZ_ECHO") != NULL;
  unsigned reports = 0;
  for (char *line = text, *next; line; line = next) {
    next = strchr (line, '\n');
    if (next)
      *next++ = '\0';
    /* A stall or latency set by the input would make the read below
     * wait in real time: the interpreter is the target, not the clock.
     */
    if (strstr (line, "stall") || strstr (line, "latency") ||
        strstr (line, "bandwidth") || strstr (line, "spike") ||
        strstr (line, "link") || strstr (line, "seek") ||
        strstr (line, "overhead") || strstr (line, "rate"))
      continue;
    if (is_report (line) && ++reports > REPORTS_PER_INPUT)
      continue;
    if (echo) /* FUZZ_ECHO=1: see a crash's dialogue */
      fprintf (stderr, "> %s\n", line);
    struct strbuf sb = { 0 };
    control_run_command (disk, line, &sb);
    char *out = sb_take (&sb);
    if (echo)
      fprintf (stderr, "%s", out ? out : "(no memory)\n");
    if (!out || (strncmp (out, "ok", 2) != 0 && strncmp (out, "error: ", 7)))
      abort ();
    free (out);
  }
  free (text);
  check_zones (disk);
  /* Still serving (offline after a crash is an answer too).  One 512
   * byte block: no max-transfer the input may set is below it; in a
   * conventional zone on the zoned disk.
   */
  char buf[512];
  blkemu_disk_set (disk, "error-mode", "off", err, sizeof err);
  int r = blkemu_io (disk, BLKEMU_OP_READ, buf, sizeof buf, 0, 0);
  if (r != 0 && r != EIO && r != BLKEMU_ERR_DROP)
    abort ();
  blkemu_disk_close (disk);
  return 0;
}
