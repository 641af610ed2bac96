/* blkemu-ctl: talk to a running blkemu disk's control socket.
 *
 *   blkemu-ctl SOCKET get [KEY]
 *   blkemu-ctl SOCKET set KEY=VALUE...
 *   blkemu-ctl SOCKET stats [PATH...] | summary | reset | dump | keys | help
 *   blkemu-ctl SOCKET zones [FROM [COUNT]] | zone OP OFFSET
 *
 * Prints the reply without its "ok" and exits 0, or prints the error on
 * stderr and exits 1.  See docs/blkemu-ctl.1.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "frontends.h"
#include "jsonpath.h"

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: blkemu-ctl SOCKET COMMAND [ARGS...]\n"
    "       blkemu-ctl profiles       (or --list-profiles)\n"
    "       blkemu-ctl carriage       (or --list-carriage)\n"
    "       blkemu-ctl frontends      (or --list-frontends)\n"
    "\n"
    "Commands (sent to the disk started with control=SOCKET):\n"
    "  get [KEY]            print a key's current value (all keys without "
    "KEY)\n"
    "  set KEY=VALUE...     change runtime keys; all are applied or none\n"
    "  stats                print the stats JSON (one line; pipe to jq)\n"
    "  stats PATH...        print the value at each PATH of it, one a line,\n"
    "                       as jq -r PATH would: .ops.write.bytes,\n"
    "                       .ops.write.sizes[\"4096\"], .list[0]; null when\n"
    "                       absent (no jq needed)\n"
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
    "SOCKET may also be a character device: a virtio-serial port that\n"
    "blkemu-vm bridges to a host disk's socket ($BLKEMU_CTL_<NAME> in the\n"
    "guest), one exchange at a time under a lock on it.\n"
    "\n"
    "profiles lists the presets for profile=NAME with a line about each\n"
    "(no socket needed).  carriage shows how far each frontend carries\n"
    "the limit keys: told (to the NBD client or the kernel above, which\n"
    "splits by it), device (the emulated device checks and counts it),\n"
    "both, or not-carried (no effect there); keys not listed are the\n"
    "device's on every frontend.  frontends lists them: id, program,\n"
    "largest payload, the operations beyond read/write/flush/trim/zero,\n"
    "and how many keys each tells the layer above.\n"
    "\n"
    "Exit status: 0 on 'ok', 1 on an error reply, 2 on usage or connection\n"
    "errors.\n");
}

/* ARGS as one protocol line, malloc'd; NULL (said on stderr) when an
 * argument holds a newline or without memory.
 */
static char *
command_line (int nargs, char **args)
{
  size_t len = 2;
  for (int i = 0; i < nargs; i++) {
    if (strchr (args[i], '\n')) {
      fprintf (stderr, "blkemu-ctl: arguments must not contain newlines\n");
      return NULL;
    }
    len += strlen (args[i]) + 1;
  }
  char *line = malloc (len);
  if (!line)
    return NULL;
  line[0] = '\0';
  for (int i = 0; i < nargs; i++) {
    strcat (line, args[i]);
    strcat (line, i + 1 < nargs ? " " : "\n");
  }
  return line;
}

/* Send LINE to the socket at PATH.  Returns the connected descriptor,
 * its write side shut, or -1 (said on stderr).
 */
static int
send_command (const char *path, const char *line)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path) {
    fprintf (stderr, "blkemu-ctl: %s: socket path too long\n", path);
    return -1;
  }
  strcpy (sa.sun_path, path);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  int sent = fd != -1 &&
             connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 &&
             write (fd, line, strlen (line)) == (ssize_t) strlen (line);
  if (!sent) {
    fprintf (stderr, "blkemu-ctl: %s: %s\n", path, strerror (errno));
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

/* How long a reply may take on a port: a zone command is timed by
 * latency-zone, up to a minute.
 */
#define PORT_REPLY_MS (120 * 1000)

/* A control socket bridged into a VM as a virtio-serial port (blkemu-vm
 * --frontend nvme|sata|virtio-blk): one connection that stays open, so
 * a reply ends where the protocol says, not at EOF: at its first line,
 * or for the replies that run to a "." line (summary, zones) there.
 * The port is locked for the exchange; what an interrupted exchange
 * left unread is drained first.  Returns the reply as read_reply does,
 * or NULL (said on stderr).
 */
static char *
port_exchange (const char *path, const char *line)
{
  int fd = open (path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd == -1 || flock (fd, LOCK_EX) == -1) {
    fprintf (stderr, "blkemu-ctl: %s: %s\n", path, strerror (errno));
    if (fd != -1)
      close (fd);
    return NULL;
  }
  size_t cap = 65536, have = 0;
  char *buf = malloc (cap + 1);
  while (buf && read (fd, buf, cap) > 0)
    ;
  const char *first = line + strspn (line, " ");
  bool dotted = !strncmp (first, "summary", 7) || !strncmp (first, "zones", 5);
  const char *fail = NULL;
  size_t len = strlen (line);
  for (size_t off = 0; buf && !fail && off < len;) {
    ssize_t w = write (fd, line + off, len - off);
    if (w > 0)
      off += (size_t) w;
    else if (w == -1 && errno != EAGAIN && errno != EINTR)
      fail = strerror (errno);
    else {
      struct pollfd p = { .fd = fd, .events = POLLOUT };
      if (poll (&p, 1, PORT_REPLY_MS) == 0)
        fail = "the host does not take the command (timed out)";
    }
  }
  /* Read until the reply's end: the first line unless it is a dotted
   * reply's "ok", then a line holding a single dot.
   */
  bool done = false;
  while (buf && !fail && !done) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int n = poll (&p, 1, PORT_REPLY_MS);
    if (n == 0) {
      fail = "no reply from the host (timed out)";
      break;
    }
    ssize_t r = read (fd, buf + have, cap - have);
    if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR)) {
      fail = r == 0 ? "the host closed the port" : strerror (errno);
      break;
    }
    if (r > 0)
      have += (size_t) r;
    buf[have] = '\0';
    char *nl = strchr (buf, '\n');
    if (nl)
      done = !dotted || strncmp (buf, "ok\n", 3) ||
             (have >= 3 && !strcmp (buf + have - 3, "\n.\n"));
    if (!done && have == cap) {
      char *nbuf = realloc (buf, cap * 2 + 1);
      if (!nbuf)
        break;
      buf = nbuf;
      cap *= 2;
    }
  }
  close (fd);
  if (fail || !done) {
    fprintf (stderr, "blkemu-ctl: %s: %s\n", path,
             fail ? fail : "out of memory");
    free (buf);
    return NULL;
  }
  return buf;
}

/* BODY, a stats reply, at each of the NPATHS PATHS; 2 for a bad path. */
static int
print_paths (const char *body, int npaths, char **paths)
{
  for (int i = 0; i < npaths; i++) {
    const char *why = NULL;
    if (jsonpath_print (stdout, body, paths[i], &why) == -1) {
      fprintf (stderr, "blkemu-ctl: stats %s: %s\n", paths[i], why);
      return 2;
    }
  }
  return 0;
}

/* One command: the exit status (0 ok, 1 refused, 2 not delivered).
 * "stats PATH..." asks for the stats and prints what the paths select.
 */
static int
run_command (const char *path, int nargs, char **args)
{
  int npaths = 0;
  if (!strcmp (args[0], "stats") && nargs > 1) {
    npaths = nargs - 1;
    nargs = 1;
  }
  for (int i = 0; i < npaths; i++) {
    const char *why = NULL;
    if (jsonpath_check (args[1 + i], &why) == -1) {
      fprintf (stderr, "blkemu-ctl: stats %s: %s\n", args[1 + i], why);
      return 2;
    }
  }
  char *line = command_line (nargs, args);
  if (!line)
    return 2;
  /* Read the whole reply, then judge it by its first word. */
  struct stat st;
  char *buf = NULL;
  if (stat (path, &st) == 0 && S_ISCHR (st.st_mode))
    buf = port_exchange (path, line);
  else {
    int fd = send_command (path, line);
    if (fd != -1)
      buf = read_reply (fd);
  }
  free (line);
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
    if (npaths)
      status = print_paths (body, npaths, args + 1);
    else {
      fwrite (body, 1, blen, stdout);
      status = 0;
    }
  }
  else {
    fprintf (stderr, "blkemu-ctl: %s", buf);
    status = 1;
  }
  free (buf);
  return status;
}

/* blkemu-ctl frontends: one line each, from the descriptors themselves. */
static void
frontends_print (FILE *fp, const struct blkemu_frontend *const *fes, size_t n)
{
  fprintf (fp, "%-11s %-22s %-9s %-28s %s\n", "id", "program", "max-xfer",
           "also", "keys told");
  for (size_t i = 0; i < n; i++) {
    const struct blkemu_frontend *fe = fes[i];
    char xfer[32] = "any", also[64] = "";
    unsigned told = 0;
    if (fe->max_transfer_bytes)
      snprintf (xfer, sizeof xfer, "%uK", fe->max_transfer_bytes / 1024);
    snprintf (also, sizeof also, "%s%s%s",
              fe->ops & BLKEMU_FE_ZONES ? "zones " : "",
              fe->ops & BLKEMU_FE_MULTI_DISCARD ? "multi-discard " : "",
              fe->ops & BLKEMU_FE_ZERO_READS ? "zero-reads" : "");
    for (const struct blkemu_carry *c = fe->carries; c && c->key; c++)
      told += (c->how & BLKEMU_CARRY_TOLD) != 0;
    fprintf (fp, "%-11s %-22s %-9s %-28s %u\n", fe->id, fe->prog, xfer,
             also[0] ? also : "-", told);
  }
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
    const struct blkemu_frontend *const fes[] = { BLKEMU_ALL_FRONTENDS };
    blkemu_carriage_print (stdout, fes, sizeof fes / sizeof fes[0]);
    return 0;
  }
  if (argc == 2 && (!strcmp (argv[1], "frontends") ||
                    !strcmp (argv[1], "--list-frontends"))) {
    const struct blkemu_frontend *const fes[] = { BLKEMU_ALL_FRONTENDS };
    frontends_print (stdout, fes, sizeof fes / sizeof fes[0]);
    return 0;
  }
  if (argc < 3) {
    usage (stderr);
    return 2;
  }

  return run_command (argv[1], argc - 2, argv + 2);
}
