/* The paths blkemu writes to (trace=, stats=) and serves from (file=):
 * what is refused before anything is opened for writing, so that a
 * FIFO with no reader cannot hang start-up and a kernel interface
 * (/proc, /sys) is never written with records.  Internal to core/.
 */
#ifndef BLKEMU_PATHS_H
#define BLKEMU_PATHS_H

#include <stdbool.h>

/* Is the file system under FD, or under PATH (or, if PATH does not exist,
 * its directory) a kernel interface: proc, sysfs, debugfs, tracefs,
 * securityfs, cgroup, configfs?
 */
bool path_fd_is_kernel_interface (int fd);
bool path_is_kernel_interface (const char *path);

/* KEY=PATH will be written as a regular file: PATH is one (or, with
 * CHAR_DEV, a character device such as /dev/null) or does not exist yet
 * (its directory writable), and is not a kernel interface.
 * Returns 0, or -1 with ERR naming the key, the path and the rule.
 */
int path_check_output (const char *key, const char *path, bool char_dev,
                       char *err);

/* Create or truncate KEY=PATH for writing, after path_check_output, and
 * without blocking on whatever might have replaced it since (a FIFO).
 * Returns the descriptor (blocking, close-on-exec) or -1 with ERR.
 */
int path_open_output (const char *key, const char *path, bool char_dev,
                      char *err);

#endif
