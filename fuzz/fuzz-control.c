/* Fuzz the control command interpreter (the code behind the control
 * socket and blkemu-ctl) on a write-cached memory disk: each input line is
 * one command.  Every reply is one "ok"/"error:" line (summary: ending
 * with "."), and the disk still serves a read afterwards.
 */
#include <stdbool.h>
#include <stdint.h>
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

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = fuzz_text (data, size, 8192);
  if (!text)
    return 0;
  char err[BLKEMU_ERR_MAX];
  struct blkemu_disk *disk =
    blkemu_disk_open_spec ("size=16M,write-cache=yes,cache-size=1M", 0, err,
                           sizeof err);
  if (!disk)
    abort ();
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
    struct strbuf sb = { 0 };
    control_run_command (disk, line, &sb);
    char *out = sb_take (&sb);
    if (!out || (strncmp (out, "ok", 2) != 0 && strncmp (out, "error: ", 7)))
      abort ();
    free (out);
  }
  free (text);
  /* Still serving (offline after a crash is an answer too).  One 512
   * byte block: no max-transfer the input may set is below it.
   */
  char buf[512];
  blkemu_disk_set (disk, "error-mode", "off", err, sizeof err);
  int r = blkemu_io (disk, BLKEMU_OP_READ, buf, sizeof buf, 0, 0);
  if (r != 0 && r != EIO && r != BLKEMU_ERR_DROP)
    abort ();
  blkemu_disk_close (disk);
  return 0;
}
