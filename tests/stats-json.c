/* stats-json SPEC: open a disk from SPEC through the public API (no
 * frontend: every key the core knows, zones included), write 64 KiB at
 * 0, read it back, crash it (lose-all) and power it on, and print the
 * stats JSON, pretty (faults.last_crash filled in).  For
 * test-stats-doc, which holds blkemu-stats(5) against it.  Exit 0, or 1
 * with the error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"

int
main (int argc, char **argv)
{
  char err[BLKEMU_ERR_MAX];
  static char buf[65536];
  if (argc != 2) {
    fprintf (stderr, "usage: stats-json SPEC\n");
    return 1;
  }
  struct blkemu_disk *disk =
    blkemu_disk_open_spec (argv[1], 0, NULL, err, sizeof err);
  if (!disk) {
    fprintf (stderr, "stats-json: %s\n", err);
    return 1;
  }
  memset (buf, 7, sizeof buf);
  if (blkemu_io (disk, BLKEMU_OP_WRITE, buf, sizeof buf, 0, 0) != 0 ||
      blkemu_io (disk, BLKEMU_OP_READ, buf, sizeof buf, 0, 0) != 0) {
    fprintf (stderr, "stats-json: a request failed\n");
    return 1;
  }
  struct blkemu_crash_report rep;
  if (blkemu_disk_crash_state (disk, BLKEMU_CRASH_LOSE_ALL, 0, &rep, err,
                               sizeof err) != 0) {
    fprintf (stderr, "stats-json: crash: %s\n", err);
    return 1;
  }
  blkemu_disk_power_on (disk);
  char *json = blkemu_disk_stats_json (disk, true);
  if (!json)
    return 1;
  fputs (json, stdout);
  free (json);
  blkemu_disk_close (disk);
  return 0;
}
