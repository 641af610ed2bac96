/* blkemu-scsi: emulated disks as SCSI disks, through LIO's TCMU.
 *
 *   blkemu-scsi --disk 'name=d0,size=1G,max-transfer=1M,...' [--disk ...]
 *
 * Each disk becomes a TCMU backstore (target_core_user) exported through
 * tcm_loop (or LIO's iSCSI target: --iscsi), so the kernel's sd driver and
 * SCSI midlayer see a local SCSI disk (/dev/sdX): it reads the disk's limits
 * from the Block Limits VPD page, its size and block sizes from READ
 * CAPACITY(16), its cache from the caching mode page, as it does from a real
 * array.  One thread per disk reads its command ring, hands the I/O to
 * the core through its timeline and answers each request on the same
 * thread at its deadline.  See docs/blkemu-scsi.8.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend.h"
#include "frontends.h"
#include "scsi.h"

static struct sdisk disks[MAX_DISKS];
static size_t ndisks;
static unsigned npaths = 1;
static char iscsi_portal[80]; /* --iscsi: "ADDRESS:PORT"; empty: tcm_loop */
static struct iscsi_auth iscsi_auth; /* --iscsi-auth FILE */
static bool have_auth;

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: blkemu-scsi [options] --disk SPEC [--disk SPEC ...]\n"
    "       blkemu-scsi --delete-stale\n"
    "\n"
    "Serves each disk as a SCSI disk (/dev/sdX) through LIO's TCMU and\n"
    "tcm_loop, until SIGINT, SIGTERM or SIGHUP; then the disks are removed\n"
    "and stats= written.  The sd driver reads the disk's limits from the\n"
    "Block Limits VPD page (max-transfer, opt-io, min-io, the unmap limits),\n"
    "its blocks from READ CAPACITY(16), its cache from the caching page.\n"
    "Needs root and the target_core_user and tcm_loop modules.\n"
    "\n"
    "SPEC is name=NAME,key=value,... with the keys below (the same as the\n"
    "nbdkit plugin's); name= defaults to d0, d1, ...\n"
    "\n"
    "Options:\n"
    "  --disk SPEC          add a disk (repeatable, at most %d)\n"
    "  --ready-file PATH    when every disk is live, write one line per\n"
    "                       disk, 'NAME /dev/sdX', to PATH (atomically;\n"
    "                       with --paths, every path's disk: 'NAME /dev/sdX\n"
    "                       /dev/sdY ...')\n"
    "  --paths N            export each disk through N tcm_loop targets\n"
    "                       (1 to %d, default 1): N SCSI disks with one\n"
    "                       WWID, for dm-multipath; the control command\n"
    "                       'path I down|up' cuts path I (0..N-1) and\n"
    "                       restores it.  With --iscsi: N portal groups of\n"
    "                       the disk's target, path I on PORT + I, and\n"
    "                       'path I down' disables its group (sessions\n"
    "                       dropped, logins refused until 'up')\n"
    "  --iscsi ADDRESS[:PORT]\n"
    "                       export each disk through LIO's iSCSI target\n"
    "                       instead (iscsi_target_mod), listening on\n"
    "                       ADDRESS (IPv4, or [IPv6]), PORT default 3260:\n"
    "                       target iqn.2026-12.org.blkemu:NAME, LUN 0, any\n"
    "                       initiator, no authentication; no local disk is\n"
    "                       made (log in with iscsiadm); the ready file's\n"
    "                       lines are 'NAME IQN ADDRESS:PORT ...', one\n"
    "                       portal per path\n"
    "  --iscsi-auth FILE    with --iscsi: who may log in, from FILE (kept\n"
    "                       out of ps), one directive per line, '#'\n"
    "                       comments: 'initiator IQN' (repeatable, at most\n"
    "                       16: only those get in; none: any initiator),\n"
    "                       'chap USER SECRET' (the initiator must log in\n"
    "                       with them), 'mutual-chap USER SECRET' (and the\n"
    "                       target answers with these)\n"
    "  --delete-stale       remove the backstores and exports a killed\n"
    "                       blkemu-scsi left in configfs, and exit\n",
    MAX_DISKS, MAX_PATHS);
  frontend_print_common_options (fp);
  fputs ("\nDisk keys:\n", fp);
  blkemu_spec_print_help (fp, "  ");
}

/* Stats' transport.scsi_paths, "sdb up, sdc down", and
 * scsi_path_commands, "sdb 1200, sdc 310" (what each path carried, by
 * LIO's count), as of now: before every stats JSON (the core's refresh
 * hook), at each 'path' command and at the end.  Once the ports are gone
 * (stopping) the counts are kept as last read.
 */
static void
report_paths (void *arg)
{
  struct sdisk *d = arg;
  char v[MAX_PATHS * 80] = "", c[MAX_PATHS * 80] = "";
  size_t used = 0, cused = 0;
  bool counted = true;
  for (unsigned i = 0; i < d->npaths && used < sizeof v && cused < sizeof c;
       i++) {
    used +=
      (size_t) snprintf (v + used, sizeof v - used, "%s%s %s", i ? ", " : "",
                         d->device[i], d->path_down[i] ? "down" : "up");
    long long n = tcmu_path_commands (d, i);
    counted = counted && n >= 0;
    cused += (size_t) snprintf (c + cused, sizeof c - cused, "%s%s %lld",
                                i ? ", " : "", d->device[i], n);
  }
  blkemu_disk_set_transport (d->emu, "scsi_paths", v);
  if (counted)
    blkemu_disk_set_transport (d->emu, "scsi_path_commands", c);
}

/* The control command 'path': the paths and their states, or 'path I
 * down|up' (on the control thread).
 */
static void
path_command (void *arg, int argc, char *const *argv, char *reply, size_t len)
{
  struct sdisk *d = arg;
  if (argc == 0) {
    size_t used = (size_t) snprintf (reply, len, "ok");
    for (unsigned i = 0; i < d->npaths && used < len; i++)
      used += (size_t) snprintf (reply + used, len - used, " %u:%s:%s:%lld", i,
                                 d->device[i], d->path_down[i] ? "down" : "up",
                                 tcmu_path_commands (d, i));
    report_paths (d);
    return;
  }
  char *end;
  unsigned long i = strtoul (argv[0], &end, 10);
  bool up = argc == 2 && !strcmp (argv[1], "up");
  if (argc != 2 || (!up && strcmp (argv[1], "down"))) {
    snprintf (reply, len, "error: path: usage: path [I down|up]");
    return;
  }
  if (*end || end == argv[0] || argv[0][0] == '-' || i >= d->npaths) {
    snprintf (reply, len,
              "error: path %s: I must be a path of this disk, 0 to %u "
              "(--paths %u)",
              argv[0], d->npaths - 1, d->npaths);
    return;
  }
  int r = tcmu_set_path (d, (unsigned) i, up);
  if (r) {
    snprintf (reply, len, "error: path %lu %s: %s", i, argv[1], strerror (r));
    return;
  }
  d->path_down[i] = !up;
  report_paths (d);
  snprintf (reply, len, "ok %s %s", d->device[i], up ? "up" : "down");
}

static int
start_disk (struct sdisk *d)
{
  if (tcmu_create (d) == -1 || ring_start (d) == -1 || tcmu_export (d) == -1)
    return -1;
  char v[80];
  if (d->iscsi_portal) {
    blkemu_disk_set_transport (d->emu, "device", d->iqn);
    blkemu_disk_set_transport (d->emu, "scsi_iscsi_portal", d->iscsi_portal);
  }
  else {
    snprintf (v, sizeof v, "/dev/%s", d->device[0]);
    blkemu_disk_set_transport (d->emu, "device", v);
  }
  if (d->npaths > 1) {
    report_paths (d);
    blkemu_disk_set_transport_refresh (d->emu, report_paths, d);
  }
  snprintf (v, sizeof v, "naa.%016llx", (unsigned long long) d->naa);
  blkemu_disk_set_transport (d->emu, "scsi_naa", v);
  if (d->tmr_notify) { /* counted from here on (ring.c) */
    blkemu_disk_set_transport_count (d->emu, "scsi_aborted_commands", 0);
    blkemu_disk_set_transport_count (d->emu, "scsi_aborts_ended", 0);
    blkemu_disk_set_transport_count (d->emu, "scsi_resets", 0);
  }
  return 0;
}

/* Every waiting request ends (ESHUTDOWN, answered NOT READY) so that
 * the kernel can let the LUN go; then the ring, then the backstore.
 */
static void
stop_disk (struct sdisk *d)
{
  blkemu_disk_cancel (d->emu);
  blkemu_disk_set_transport_count (d->emu, "scsi_task_set_full",
                                   __atomic_load_n (&d->task_set_full,
                                                    __ATOMIC_RELAXED));
  blkemu_disk_set_transport_count (d->emu, "scsi_atomic_writes",
                                   __atomic_load_n (&d->atomic_writes,
                                                    __ATOMIC_RELAXED));
  if (d->npaths > 1)
    report_paths (d); /* the paths' last counts, before they go */
  tcmu_unexport (d);
  ring_stop (d);
  tcmu_destroy (d);
}

/* frontend_server's START: the core's disk (its engine), then LIO's
 * backstore, its ring and its export.
 */
static int
serve_start (void *ctx, size_t i, const char **name, char *device,
             size_t device_len)
{
  struct sdisk *d = &((struct sdisk *) ctx)[i];
  char err[BLKEMU_ERR_MAX];
  if (blkemu_disk_start (d->emu, err, sizeof err) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: %s\n", d->name, err);
    return -1;
  }
  if (start_disk (d) == -1)
    return -1;
  *name = d->name;
  if (d->iscsi_portal) {
    fprintf (stderr,
             "blkemu-scsi: %s: iSCSI target %s on %s, %llu bytes, %u-byte "
             "blocks, transfers up to %u bytes\n",
             d->name, d->iqn, d->device[0],
             (unsigned long long) d->geo.size_bytes, d->geo.logical_block_size,
             d->geo.max_transfer_bytes);
    size_t used = (size_t) snprintf (device, device_len, "%s", d->iqn);
    for (unsigned p = 0; p < d->npaths && used < device_len; p++) {
      if (p > 0)
        fprintf (stderr, "blkemu-scsi: %s: path %u: portal %s\n", d->name, p,
                 d->device[p]);
      used += (size_t) snprintf (device + used, device_len - used, " %s",
                                 d->device[p]);
    }
    return 0;
  }
  fprintf (stderr,
           "blkemu-scsi: %s: /dev/%s, %llu bytes, %u-byte blocks, "
           "transfers up to %u bytes\n",
           d->name, d->device[0], (unsigned long long) d->geo.size_bytes,
           d->geo.logical_block_size, d->geo.max_transfer_bytes);
  size_t used = 0;
  for (unsigned p = 0; p < d->npaths && used < device_len; p++) {
    if (p > 0)
      fprintf (stderr, "blkemu-scsi: %s: path %u: /dev/%s\n", d->name, p,
               d->device[p]);
    used += (size_t) snprintf (device + used, device_len - used, "%s/dev/%s",
                               p ? " " : "", d->device[p]);
  }
  *name = d->name;
  return 0;
}

/* frontend_server's STOP; the disks are closed after (their stats). */
static int
serve_stop (void *ctx, size_t i)
{
  stop_disk (&((struct sdisk *) ctx)[i]);
  return 0;
}

enum { OPT_PATHS = 0x100, OPT_ISCSI, OPT_ISCSI_AUTH };

/* --iscsi ADDRESS[:PORT]: LIO's name for the portal, ADDRESS:PORT. */
static int
take_portal (const char *arg)
{
  char addr[64];
  const char *port = NULL;
  const char *close = arg[0] == '[' ? strchr (arg, ']') : NULL;
  const char *colon =
    close ? (close[1] == ':' ? close + 1 : NULL) : strrchr (arg, ':');
  size_t alen = colon ? (size_t) (colon - arg) : strlen (arg);
  if (colon)
    port = colon + 1;
  unsigned char bin[16];
  bool ok =
    alen > 0 && alen < sizeof addr && (!close || close + 1 == arg + alen);
  if (ok) {
    memcpy (addr, arg, alen);
    addr[alen] = 0;
    if (close) {
      char inner[64];
      snprintf (inner, sizeof inner, "%.*s", (int) (alen - 2), addr + 1);
      ok = inet_pton (AF_INET6, inner, bin) == 1;
    }
    else
      ok = inet_pton (AF_INET, addr, bin) == 1;
  }
  char *end = NULL;
  unsigned long p = port ? strtoul (port, &end, 10) : 3260;
  if (!ok || (port &&
              (*end || end == port || port[0] == '-' || p < 1 || p > 65535))) {
    fprintf (stderr,
             "blkemu-scsi: --iscsi %s: ADDRESS[:PORT], an IPv4 address or "
             "[an IPv6 one] and a port 1 to 65535 (default 3260)\n",
             arg);
    return 1;
  }
  snprintf (iscsi_portal, sizeof iscsi_portal, "%s:%lu", addr, p);
  return -1;
}

/* --paths N, --iscsi ADDRESS[:PORT], --iscsi-auth FILE */
static int
take_option (int opt, const char *arg)
{
  if (opt == OPT_ISCSI)
    return take_portal (arg);
  if (opt == OPT_ISCSI_AUTH) {
    if (iscsi_auth_load (arg, &iscsi_auth) == -1)
      return 1;
    have_auth = true;
    return -1;
  }
  if (opt != OPT_PATHS)
    return 1;
  char *end;
  unsigned long n = strtoul (arg, &end, 10);
  if (*end || end == arg || arg[0] == '-' || n < 1 || n > MAX_PATHS) {
    fprintf (stderr,
             "blkemu-scsi: --paths %s: the number of paths per disk, 1 to "
             "%d\n",
             arg, MAX_PATHS);
    return 1;
  }
  npaths = (unsigned) n;
  return -1;
}

/* --iscsi-auth and --paths as --iscsi takes them: 0, or -1 said. */
static int
iscsi_options_check (void)
{
  if (have_auth && !iscsi_portal[0]) {
    fprintf (stderr, "blkemu-scsi: --iscsi-auth: only with --iscsi (a "
                     "tcm_loop disk is local: no login to guard)\n");
    return -1;
  }
  /* Path I listens on the portal's port + I. */
  unsigned long last_port =
    iscsi_portal[0]
      ? strtoul (strrchr (iscsi_portal, ':') + 1, NULL, 10) + npaths - 1
      : 0;
  if (last_port > 65535) {
    fprintf (stderr,
             "blkemu-scsi: --iscsi %s with --paths %u: path I listens on "
             "the port + I, and the last port, %lu, is above 65535\n",
             iscsi_portal, npaths, last_port);
    return -1;
  }
  return 0;
}

int
main (int argc, char **argv)
{
  static const struct option options[] = {
    { "paths", required_argument, NULL, OPT_PATHS },
    { "iscsi", required_argument, NULL, OPT_ISCSI },
    { "iscsi-auth", required_argument, NULL, OPT_ISCSI_AUTH },
    { NULL, 0, NULL, 0 },
  };
  const struct frontend_cli cli = {
    .prog = "blkemu-scsi",
    .max_disks = MAX_DISKS,
    .usage = usage,
    .extra = options,
    .take_extra = take_option,
  };
  struct frontend_args o;
  int r = frontend_parse_args (&cli, argc, argv, &o);
  if (r != -1)
    return r;
  if (iscsi_options_check () == -1) {
    frontend_args_free (&o);
    return 1;
  }
  if (o.delete_stale) {
    frontend_args_free (&o);
    return tcmu_delete_stale ();
  }
  struct blkemu_disk *emu[MAX_DISKS];
  r = frontend_open_disks ("blkemu-scsi", &blkemu_scsi_frontend, o.specs,
                           o.nspecs, NULL, emu);
  size_t n = o.nspecs;
  frontend_args_free (&o);
  if (r == -1)
    return 1;
  for (; ndisks < n; ndisks++) {
    struct sdisk *d = &disks[ndisks];
    d->emu = emu[ndisks];
    d->name = blkemu_disk_name (d->emu);
    d->uio_fd = d->stop_fd = -1;
    d->unit_attention = true; /* as a disk just powered on */
    d->npaths = npaths;
    d->iscsi_portal = iscsi_portal[0] ? iscsi_portal : NULL;
    d->iscsi_auth = have_auth ? &iscsi_auth : NULL;
    blkemu_disk_geometry (d->emu, &d->geo);
    scsi_identity (d);
    char err[BLKEMU_ERR_MAX];
    if (npaths > 1 &&
        blkemu_disk_add_command (d->emu, "path", 2, "path [I down|up]",
                                 path_command, d, err, sizeof err) == -1) {
      fprintf (stderr, "blkemu-scsi: %s: %s\n", d->name, err);
      frontend_close_disks (emu, n);
      return 1;
    }
  }

  sigset_t stop;
  frontend_block_stop (&stop);
  const struct frontend_server server = {
    .prog = "blkemu-scsi",
    .stopping = "removing the disks",
    .ndisks = ndisks,
    .ctx = disks,
    .start = serve_start,
    .stop = serve_stop,
  };
  int status = frontend_serve (&server, o.ready_file, &stop);
  if (frontend_close_disks (emu, ndisks) == -1)
    status = 1;
  return status;
}
