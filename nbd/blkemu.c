/* nbdkit-blkemu-plugin: an emulated disk with programmable limits and
 * timing, served over NBD.  A thin translation to core/: every request
 * goes to blkemu_io(), which enforces limits, waits out the modelled
 * service time and records stats.  See nbdkit-blkemu-plugin(1)
 * (docs/nbdkit-blkemu-plugin.1.md).
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "blkemu/blkemu.h"
#include "config-help.h"
#include "device.h"
#include "frontends.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* Keys collected from the command line by .config. */
static struct blkemu_spec *spec;
/* The disk, built in .config_complete and shared by all connections. */
static struct blkemu_disk *disk;
/* Its geometry, fixed at start-up: what every client is told. */
static struct blkemu_geometry geo;
/* controller=: the client is qemu presenting the disk as one of its own
 * controllers (blkemu-vm --frontend), whose descriptor then says what is
 * carried; qemu-device=: where to write that controller's -device.
 */
static const struct blkemu_frontend *frontend = &blkemu_nbd_frontend;
static char *qemu_device_path;

/* The plugin's own parameters, before the key table in --help. */
#define PLUGIN_PARAMS_HELP                                                    \
  "controller=nvme|sata|virtio-blk  the disk is qemu's controller over "      \
  "NBD\n"                                                                     \
  "qemu-device=PATH  write that controller's -device there\n"

/* nbdkit stops on these (its handlers set its quit flag).  Ours, put in
 * front of them once nbdkit has installed them, first ends every wait in
 * the disk, so a stall=3600s does not hold the shutdown for an hour.
 * Waiting in nbdkit_nanosleep instead asserted under a captive --run
 * (see core/disk.c, wait_deadline).
 */
static const int stop_signals[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };
static struct sigaction nbdkit_handler[NSIG];
static bool signals_chained;

static void
on_stop_signal (int sig, siginfo_t *info, void *context)
{
  int saved_errno = errno;
  struct blkemu_disk *d = __atomic_load_n (&disk, __ATOMIC_SEQ_CST);
  if (d)
    blkemu_disk_interrupt (d);
  const struct sigaction *next = &nbdkit_handler[sig];
  if (next->sa_flags & SA_SIGINFO)
    next->sa_sigaction (sig, info, context);
  else if (next->sa_handler == SIG_DFL) {
    signal (sig, SIG_DFL);
    raise (sig);
  }
  else if (next->sa_handler != SIG_IGN)
    next->sa_handler (sig);
  errno = saved_errno;
}

static int
chain_stop_signals (void)
{
  for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
    int sig = stop_signals[i];
    struct sigaction sa = { .sa_sigaction = on_stop_signal,
                            .sa_flags = SA_SIGINFO | SA_RESTART };
    sigfillset (&sa.sa_mask);
    if (sigaction (sig, NULL, &nbdkit_handler[sig]) == -1 ||
        sigaction (sig, &sa, NULL) == -1) {
      nbdkit_error ("sigaction: %m");
      return -1;
    }
  }
  signals_chained = true;
  return 0;
}

static void
plugin_load (void)
{
  spec = blkemu_spec_new ();
  if (!spec) {
    fprintf (stderr, "nbdkit-blkemu-plugin: out of memory\n");
    exit (EXIT_FAILURE);
  }
}

static void
plugin_unload (void)
{
  /* nbdkit's handlers back first: ours must not reach a closed disk. */
  if (signals_chained)
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
      sigaction (stop_signals[i], &nbdkit_handler[stop_signals[i]], NULL);
  struct blkemu_disk *d = disk;
  __atomic_store_n (&disk, NULL, __ATOMIC_SEQ_CST);
  blkemu_disk_close (d);
  blkemu_spec_free (spec);
  free (qemu_device_path);
}

static int
plugin_config (const char *key, const char *value)
{
  char err[BLKEMU_ERR_MAX];
  if (!strcmp (key, "controller")) {
    frontend = qemu_controller (value);
    if (!frontend) {
      nbdkit_error ("controller=%s: must be nvme, sata or virtio-blk", value);
      return -1;
    }
    return 0;
  }
  if (!strcmp (key, "qemu-device")) {
    free (qemu_device_path);
    qemu_device_path = strdup (value);
    return qemu_device_path ? 0 : -1;
  }
  if (blkemu_spec_set (spec, key, value, err, sizeof err) == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }
  return 0;
}

/* nbdkit exits without unloading the plugin when it fails after
 * .config_complete (its -U path in use, say): the control socket bound
 * there would be left behind.  A destructor, not atexit: it runs at that
 * exit and at the dlclose of a clean stop (where unload has cleared
 * DISK and it does nothing), and the sanitizers' atexit interceptors
 * would call an atexit handler after the dlclose, into unmapped code.
 */
__attribute__ ((destructor)) static void
abandon_disk_at_exit (void)
{
  if (disk)
    blkemu_disk_abandon (disk);
}

static int
plugin_config_complete (void)
{
  char err[BLKEMU_ERR_MAX];
  if (qemu_device_path && frontend == &blkemu_nbd_frontend) {
    nbdkit_error ("qemu-device=%s: needs controller=nvme|sata|virtio-blk",
                  qemu_device_path);
    return -1;
  }
  disk = blkemu_disk_open (spec, frontend, err, sizeof err);
  if (!disk) {
    nbdkit_error ("%s", err);
    return -1;
  }
  blkemu_disk_geometry (disk, &geo);
  if (qemu_device_path) {
    char dev[1024];
    if (qemu_device_string (frontend, disk, dev, sizeof dev - 1, err,
                            sizeof err) == -1) {
      nbdkit_error ("%s", err);
      return -1;
    }
    strcat (dev, "\n");
    if (blkemu_write_file_atomic (qemu_device_path, dev) == -1) {
      nbdkit_error ("qemu-device=%s: %m", qemu_device_path);
      return -1;
    }
  }
  return 0;
}

/* Threads start after nbdkit has forked into the background. */
static int
plugin_after_fork (void)
{
  char err[BLKEMU_ERR_MAX];
  if (blkemu_disk_start (disk, err, sizeof err) == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }
  return chain_stop_signals ();
}

static void
plugin_dump_plugin (void)
{
  printf ("blkemu_version=%s\n", BLKEMU_VERSION);
  printf ("blkemu_keys=");
  for (size_t i = 0; blkemu_key_name (i); i++)
    printf ("%s%s", i ? "," : "", blkemu_key_name (i));
  printf ("\n");
}

static void *
plugin_open (int readonly)
{
  (void) readonly;
  return disk;
}

static int64_t
plugin_get_size (void *handle)
{
  (void) handle;
  return (int64_t) geo.size_bytes;
}

static int
largest_pow2_at_most (uint32_t v)
{
  uint32_t p = 1;
  while (p <= v / 2)
    p *= 2;
  return (int) p;
}

static int
plugin_block_size (void *handle, uint32_t *minimum, uint32_t *preferred,
                   uint32_t *maximum)
{
  (void) handle;
  uint32_t pref = geo.physical_block_size;
  if (geo.opt_io_bytes > pref)
    pref = geo.opt_io_bytes;
  /* NBD wants preferred a power of two in [512, 32M] and <= maximum. */
  pref = (uint32_t) largest_pow2_at_most (pref);
  if (pref > geo.max_transfer_bytes)
    pref = (uint32_t) largest_pow2_at_most (geo.max_transfer_bytes);
  *minimum = geo.logical_block_size;
  *preferred = pref < *minimum ? *minimum : pref;
  *maximum = geo.max_transfer_bytes;
  return 0;
}

static int
plugin_can_write (void *handle)
{
  (void) handle;
  return 1;
}
static int
plugin_can_flush (void *handle)
{
  (void) handle;
  return geo.can_flush;
}
static int
plugin_can_trim (void *handle)
{
  (void) handle;
  return geo.can_trim;
}
static int
plugin_can_zero (void *handle)
{
  (void) handle;
  return geo.can_zero;
}
static int
plugin_can_extents (void *handle)
{
  (void) handle;
  return geo.can_extents;
}
static int
plugin_is_rotational (void *handle)
{
  (void) handle;
  return geo.rotational;
}
static int
plugin_can_multi_conn (void *handle)
{
  (void) handle;
  return geo.can_multi_conn;
}
static int
plugin_can_fua (void *handle)
{
  (void) handle;
  return geo.can_fua ? NBDKIT_FUA_NATIVE : NBDKIT_FUA_NONE;
}

/* The drop fault: a network outage.  nbdkit 1.32 has no call to close
 * one connection, so shut down the receiving side of every connected
 * client socket in the process (listening sockets and the control socket
 * stay): nbdkit sends this request's error, reads end-of-file next, ends
 * those connections and keeps accepting new ones.  (Shutting both sides
 * makes nbdkit log a failed reply, and that logging can deadlock at exit
 * under a preloaded ASan.)
 */
static void
drop_client_connections (void *handle)
{
  char control[4096] = "", err[BLKEMU_ERR_MAX];
  blkemu_disk_get (handle, "control", control, sizeof control, err,
                   sizeof err);
  DIR *dir = opendir ("/proc/self/fd");
  if (!dir)
    return;
  struct dirent *d;
  while ((d = readdir (dir)) != NULL) {
    int fd = atoi (d->d_name), listening = 0, type = 0;
    socklen_t len = sizeof listening;
    struct stat st;
    if (fd <= 2 || fd == dirfd (dir) || fstat (fd, &st) == -1 ||
        !S_ISSOCK (st.st_mode) ||
        getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == -1 ||
        listening)
      continue;
    len = sizeof type;
    if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
        type != SOCK_STREAM)
      continue;
    struct sockaddr_un local;
    socklen_t alen = sizeof local;
    if (getsockname (fd, (struct sockaddr *) &local, &alen) == 0 &&
        local.sun_family == AF_UNIX && *control &&
        strcmp (local.sun_path, control) == 0)
      continue;
    shutdown (fd, SHUT_RD);
  }
  closedir (dir);
  nbdkit_debug ("blkemu: drop fault: client connections shut down");
}

/* Map a core result (0 or errno) to nbdkit's convention. */
static int
result (void *handle, int err)
{
  if (err == 0)
    return 0;
  if (err == BLKEMU_ERR_DROP) {
    drop_client_connections (handle);
    err = ESHUTDOWN;
  }
  nbdkit_set_error (err);
  return -1;
}

static unsigned
core_flags (uint32_t flags)
{
  return (flags & NBDKIT_FLAG_FUA ? BLKEMU_FLAG_FUA : 0) |
         (flags & NBDKIT_FLAG_MAY_TRIM ? BLKEMU_FLAG_MAY_TRIM : 0);
}

static int
plugin_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
              uint32_t flags)
{
  return result (handle, blkemu_io (handle, BLKEMU_OP_READ, buf, count, offset,
                                    core_flags (flags)));
}

static int
plugin_pwrite (void *handle, const void *buf, uint32_t count, uint64_t offset,
               uint32_t flags)
{
  return result (handle, blkemu_io (handle, BLKEMU_OP_WRITE, (void *) buf,
                                    count, offset, core_flags (flags)));
}

static int
plugin_flush (void *handle, uint32_t flags)
{
  return result (handle, blkemu_io (handle, BLKEMU_OP_FLUSH, NULL, 0, 0,
                                    core_flags (flags)));
}

static int
plugin_trim (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  return result (handle, blkemu_io (handle, BLKEMU_OP_TRIM, NULL, count,
                                    offset, core_flags (flags)));
}

static int
plugin_zero (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  return result (handle, blkemu_io (handle, BLKEMU_OP_ZERO, NULL, count,
                                    offset, core_flags (flags)));
}

struct extent_ctx {
  struct nbdkit_extents *extents;
  bool req_one;
  bool failed;
};

static int
add_extent (void *opaque, uint64_t offset, uint64_t length, bool hole)
{
  struct extent_ctx *ctx = opaque;
  uint32_t type = hole ? NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO : 0;
  if (nbdkit_add_extent (ctx->extents, offset, length, type) == -1) {
    ctx->failed = true;
    return -1;
  }
  return ctx->req_one ? -1 : 0;
}

static int
plugin_extents (void *handle, uint32_t count, uint64_t offset, uint32_t flags,
                struct nbdkit_extents *extents)
{
  struct extent_ctx ctx = { extents, flags & NBDKIT_FLAG_REQ_ONE, false };
  int r = blkemu_extents ((struct blkemu_disk *) handle, offset, count,
                          add_extent, &ctx);
  if (r)
    return result (handle, r);
  return ctx.failed ? -1 : 0;
}

static struct nbdkit_plugin plugin = {
  .name = "blkemu",
  .longname = "blkemu emulated disk",
  .version = BLKEMU_VERSION,
  .description = "emulated disk with programmable limits, timing and stats",
  .load = plugin_load,
  .unload = plugin_unload,
  .config = plugin_config,
  .config_complete = plugin_config_complete,
  .magic_config_key = "size",
  .after_fork = plugin_after_fork,
  .dump_plugin = plugin_dump_plugin,
  .open = plugin_open,
  .get_size = plugin_get_size,
  .block_size = plugin_block_size,
  .can_write = plugin_can_write,
  .can_flush = plugin_can_flush,
  .can_trim = plugin_can_trim,
  .can_zero = plugin_can_zero,
  .can_fua = plugin_can_fua,
  .can_extents = plugin_can_extents,
  .can_multi_conn = plugin_can_multi_conn,
  .is_rotational = plugin_is_rotational,
  .pread = plugin_pread,
  .pwrite = plugin_pwrite,
  .flush = plugin_flush,
  .trim = plugin_trim,
  .zero = plugin_zero,
  .extents = plugin_extents,
  .errno_is_preserved = 0,
  .config_help = PLUGIN_PARAMS_HELP BLKEMU_CONFIG_HELP,
};

NBDKIT_REGISTER_PLUGIN (plugin)
