/* What blkemu-fuse and blkemu-ublk share: opening their --disk specs,
 * the options every frontend has and the mapping of core results to
 * errnos.  Built on include/blkemu/blkemu.h only.
 */
#ifndef BLKEMU_FRONTEND_H
#define BLKEMU_FRONTEND_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "blkemu/blkemu.h"

/* Open every --disk SPEC in order (name= defaulting to d0, d1, ...),
 * for frontend FE (which refuses what it cannot serve and warns about
 * what it does not carry), refusing two disks with one name and the
 * name RESERVED (NULL: none).  Errors go to stderr as
 * "PROG: ...".  Returns 0 with DISKS[0..N) open, or -1 with none left
 * open.
 */
int frontend_open_disks (const char *prog, const struct blkemu_frontend *fe,
                         char *const *specs, size_t n, const char *reserved,
                         struct blkemu_disk **disks);
/* Close them all; -1 if any stats= could not be written. */
int frontend_close_disks (struct blkemu_disk **disks, size_t n);

/* The options every frontend takes, for its --help. */
void frontend_print_common_options (FILE *fp);
/* --list-keys, --list-profiles, --version: print and give the exit
 * status.  EXTRA follows the version (a library's), may be NULL.
 */
int frontend_list_keys (void);
int frontend_list_profiles (void);
int frontend_print_version (const char *prog, const char *extra);

/* A core result for a frontend with no connection to drop: the drop
 * fault becomes a failed request.
 */
static inline int
frontend_errno (int result)
{
  return result == BLKEMU_ERR_DROP ? EIO : result;
}

#endif
