/* blkemu-ctl: talk to a running blkemu disk's control socket.
 *
 *   blkemu-ctl SOCKET get [KEY]
 *   blkemu-ctl SOCKET set KEY=VALUE...
 *   blkemu-ctl SOCKET stats | summary | reset | dump | keys | help
 *   blkemu-ctl SOCKET zones [FROM [COUNT]] | zone OP OFFSET
 *
 * Prints the reply without its "ok" and exits 0, or prints the error on
 * stderr and exits 1.  See docs/blkemu-ctl.1.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "frontends.h"

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: blkemu-ctl SOCKET COMMAND [ARGS...]\n"
    "       blkemu-ctl profiles       (or --list-profiles)\n"
    "       blkemu-ctl carriage       (or --list-carriage)\n"
    "\n"
    "Commands (sent to the disk started with control=SOCKET):\n"
    "  get [KEY]            print a key's current value (all keys without "
    "KEY)\n"
    "  set KEY=VALUE...     change runtime keys; all are applied or none\n"
    "  stats                print the stats JSON (one line; pipe to jq)\n"
    "  summary              print the human summary (iostat-style)\n"
    "  reset                clear the stats\n"
    "  dump                 write the stats= file now\n"
    "  crash                power loss: discard writes not yet flushed (with\n"
    "                       write-cache=yes) and fail every request until...\n"
    "  crash MODE [SEED]    ...or leave a crash state: lose-all (as crash),\n"
    "                       subset (each unflushed write whole or not at "
    "all),\n"
    "                       torn (or in part, cut at atomic-unit),\n"
    "                       interrupted (torn, and the writes in flight left\n"
    "                       unreadable), pick (the writes whose bits SEED\n"
    "                       sets, oldest first: seeds 0..2^W-1 enumerate W\n"
    "                       writes); the same SEED after the same writes\n"
    "                       gives the same state\n"
    "  power-on             ...the disk is powered on again\n"
    "  power-off            the power goes, unflushed writes kept for views\n"
    "  view MODE [SEED]     after power-off: serve that crash state, writes "
    "to\n"
    "                       a scratch overlay, the disk unchanged\n"
    "  view end             throw the view away (powered off again)\n"
    "  bad [add|clear OFFSET LENGTH]\n"
    "                       unreadable sectors: list, add (reads fail with\n"
    "                       EIO until written), clear\n"
    "  drop                 the next request drops the client connections\n"
    "  zones [FROM [COUNT]] a zoned disk's zones from byte FROM (default "
    "all)\n"
    "  zone OP OFFSET       zone command: open|close|finish|reset OFFSET, or\n"
    "                       reset-all\n"
    "  keys                 list the keys that can change at runtime\n"
    "  help                 list the commands the server knows\n"
    "\n"
    "profiles lists the presets for profile=NAME with a line about each\n"
    "(no socket needed).  carriage shows how far each frontend carries\n"
    "the limit keys: told (to the NBD client or the kernel above, which\n"
    "splits by it), device (the emulated device checks and counts it),\n"
    "both, or not-carried (no effect there); keys not listed are the\n"
    "device's on every frontend.\n"
    "\n"
    "Exit status: 0 on 'ok', 1 on an error reply, 2 on usage or connection\n"
    "errors.\n");
}

/* Send ARGS as one protocol line to the socket at PATH.  Returns the
 * connected descriptor, its write side shut, or -1 (said on stderr).
 */
static int
send_command (const char *path, int nargs, char **args)
{
  size_t len = 2;
  for (int i = 0; i < nargs; i++) {
    if (strchr (args[i], '\n')) {
      fprintf (stderr, "blkemu-ctl: arguments must not contain newlines\n");
      return -1;
    }
    len += strlen (args[i]) + 1;
  }
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path) {
    fprintf (stderr, "blkemu-ctl: %s: socket path too long\n", path);
    return -1;
  }
  strcpy (sa.sun_path, path);
  char *line = malloc (len);
  if (!line)
    return -1;
  line[0] = '\0';
  for (int i = 0; i < nargs; i++) {
    strcat (line, args[i]);
    strcat (line, i + 1 < nargs ? " " : "\n");
  }
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  int sent = fd != -1 &&
             connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 &&
             write (fd, line, strlen (line)) == (ssize_t) strlen (line);
  int saved_errno = errno;
  free (line);
  if (!sent) {
    fprintf (stderr, "blkemu-ctl: %s: %s\n", path, strerror (saved_errno));
    if (fd != -1)
      close (fd);
    return -1;
  }
  shutdown (fd, SHUT_WR);
  return fd;
}

/* The whole reply on FD, NUL-terminated and malloc'd; NULL without
 * memory.  Closes FD.
 */
static char *
read_reply (int fd)
{
  size_t cap = 65536, have = 0;
  char *buf = malloc (cap + 1);
  ssize_t r;
  while (buf && (r = read (fd, buf + have, cap - have)) > 0) {
    have += (size_t) r;
    if (have == cap) {
      char *nbuf = realloc (buf, cap * 2 + 1);
      if (!nbuf) {
        free (buf);
        buf = NULL;
        break;
      }
      buf = nbuf;
      cap *= 2;
    }
  }
  close (fd);
  if (buf)
    buf[have] = '\0';
  return buf;
}

/* One command: the exit status (0 ok, 1 refused, 2 not delivered). */
static int
run_command (const char *path, int nargs, char **args)
{
  int fd = send_command (path, nargs, args);
  if (fd == -1)
    return 2;
  /* Read the whole reply, then judge it by its first word. */
  char *buf = read_reply (fd);
  if (!buf)
    return 2;
  int status;
  if (!strncmp (buf, "ok", 2)) {
    const char *body = buf + 2;
    if (*body == ' ' || *body == '\n')
      body++;
    /* "summary" ends with a line holding a single dot. */
    size_t blen = strlen (body);
    if (blen >= 2 && !strcmp (body + blen - 2, ".\n"))
      blen -= 2;
    fwrite (body, 1, blen, stdout);
    status = 0;
  }
  else {
    fprintf (stderr, "blkemu-ctl: %s", buf);
    status = 1;
  }
  free (buf);
  return status;
}

int
main (int argc, char **argv)
{
  if (argc >= 2 && (!strcmp (argv[1], "--help") || !strcmp (argv[1], "-h"))) {
    usage (stdout);
    return 0;
  }
  if (argc == 2 &&
      (!strcmp (argv[1], "profiles") || !strcmp (argv[1], "--list-profiles")))
    return blkemu_profiles_print (stdout) > 0 ? 0 : 1;
  if (argc == 2 && (!strcmp (argv[1], "carriage") ||
                    !strcmp (argv[1], "--list-carriage"))) {
    const struct blkemu_frontend *const fes[] = {
      &blkemu_nbd_frontend,
      &blkemu_fuse_frontend,
      &blkemu_ublk_frontend,
      &blkemu_scsi_frontend,
    };
    blkemu_carriage_print (stdout, fes, sizeof fes / sizeof fes[0]);
    return 0;
  }
  if (argc < 3) {
    usage (stderr);
    return 2;
  }

  return run_command (argv[1], argc - 2, argv + 2);
}
