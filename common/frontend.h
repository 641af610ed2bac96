/* What blkemu-fuse, blkemu-ublk and blkemu-scsi share: opening their
 * --disk specs, the options every frontend has (and the servers' whole
 * command line, ready file and stop signals) and the mapping of core
 * results to errnos.  Built on include/blkemu/blkemu.h only.
 */
#ifndef BLKEMU_FRONTEND_H
#define BLKEMU_FRONTEND_H

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
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

/* ---- the block-device servers' command line (blkemu-ublk, blkemu-scsi) */

/* What a server frontend is, for the shared parts of its command line:
 * --disk SPEC (repeatable, at most MAX_DISKS), --ready-file PATH,
 * --delete-stale and the options of frontend_print_common_options.
 * Its own options are EXTRA (ended by a zero entry; NULL: none; their
 * values other than 'd', 'r', 's', 'k', 'p', 'h', 'V'), handed to
 * TAKE_EXTRA, which returns -1 to go on or an exit status.
 */
struct frontend_cli {
  const char *prog;
  size_t max_disks;
  void (*usage) (FILE *fp);
  const struct option *extra;
  int (*take_extra) (int opt, const char *arg);
};
struct frontend_args {
  char **specs; /* max_disks entries, freed by frontend_args_free */
  size_t nspecs;
  const char *ready_file;
  bool delete_stale;
};
/* Returns -1 to go on with A filled, else the exit status (--help,
 * --version, a bad option: said on stderr).
 */
int frontend_parse_args (const struct frontend_cli *cli, int argc, char **argv,
                         struct frontend_args *a);
void frontend_args_free (struct frontend_args *a);

/* The ready file: "NAME DEVICE" a line for each disk, added as each
 * comes up, then written on standard output and, atomically, to PATH
 * (NULL: none) once all are.  Both return 0 or -1 (said on stderr).
 */
struct frontend_ready {
  char *text;
  size_t len;
};
int frontend_ready_add (const char *prog, struct frontend_ready *r,
                        const char *name, const char *device);
int frontend_ready_write (const char *prog, const char *path,
                          struct frontend_ready *r);

/* SIGINT, SIGTERM and SIGHUP blocked in this thread and in the threads
 * it starts afterwards, so that frontend_wait_stop alone takes them.
 */
void frontend_block_stop (sigset_t *set);
/* Wait for one of them; "PROG: SIGNAL: WHAT" on stderr. */
void frontend_wait_stop (const char *prog, const sigset_t *set,
                         const char *what);

/* A block-device server's disks as an ops table over the one serving
 * loop (ublksrv's targets over its library): START brings disk I up (its
 * device made and served, a line on stderr) and names it in NAME and
 * DEVICE; STOP takes disk I down, whether or not it came up, and returns
 * -1 when its stats= could not be written.
 */
struct frontend_server {
  const char *prog;     /* "blkemu-scsi", in messages */
  const char *stopping; /* what a stop signal does: "removing the disks" */
  size_t ndisks;
  void *ctx;
  int (*start) (void *ctx, size_t i, const char **name, char *device,
                size_t device_len);
  int (*stop) (void *ctx, size_t i);
};
/* Start every disk in order, write the ready file (READY_FILE, NULL:
 * none) once all are up, wait for a signal in STOP (frontend_block_stop,
 * called before the servers' threads started), then stop every disk,
 * last first, and remove the ready file.  Returns the exit status: 0, or
 * 1 when a disk did not start or stats= was not written.
 */
int frontend_serve (const struct frontend_server *s, const char *ready_file,
                    const sigset_t *stop);

/* A core result as an errno, for a frontend with no connection to drop
 * (the drop fault becomes a failed request) and no medium error of its
 * own to report.
 */
static inline int
frontend_errno (int result)
{
  return result == BLKEMU_ERR_DROP || result == BLKEMU_ERR_MEDIUM ? EIO
                                                                  : result;
}

#endif
