/* The device models' own stats in the JSON and the summary
 * (report_devices.c).  Internal to core/.
 */
#ifndef BLKEMU_REPORT_DEVICES_H
#define BLKEMU_REPORT_DEVICES_H

#include "strbuf.h"

struct blkemu_disk;

/* "volume", "ftl" and "slc" (each null when the disk has none), a line
 * each, IN1 before and NL after, each ending with a comma.
 */
void report_devices_json (struct strbuf *sb, const char *in1, const char *nl,
                          struct blkemu_disk *disk);
/* Their summary lines, for the models the disk has. */
void report_devices_summary (struct strbuf *sb, struct blkemu_disk *disk);

#endif
