/* blkemu-ublk: emulated disks as real block devices, through ublk.
 *
 *   blkemu-ublk --disk 'name=d0,size=1G,max-transfer=127K,...' [--disk ...]
 *
 * Each disk becomes /dev/ublkbN.  Unlike nbd and loop, ublk lets the server
 * set the queue limits, so the kernel sees the disk's own: max_hw_sectors
 * from max-transfer, the block sizes, io_min/io_opt, the discard and
 * write-zeroes limits, rotational, a volatile cache, and a tag set of
 * queue-depth requests (the rest wait in the kernel, as they would for
 * real hardware).  md, dm and filesystems stacked on top inherit them.
 *
 * A thin frontend, the shape of ublksrv: per hardware queue (--queues,
 * default 1) one thread owns the io_uring the driver talks through (ublk
 * wants every command of a queue from one task).  It hands each request
 * to blkemu_submit(), which returns at once; the core's completion thread
 * calls back at the request's deadline, and the queue thread commits the
 * answer.  No thread per tag: a queue of 4096 tags is one thread.  See
 * docs/blkemu-ublk.8.md.
 */
#include "frontends.h"
#include "ublk.h"

static struct udisk disks[MAX_DISKS];
static size_t ndisks;

/* ---- a disk's life: add, set limits, start, stop, delete --------------- */

/* ADD_DEV: the driver may grant fewer queues, tags or buffer than asked. */
static int
add_device (struct udisk *d)
{
  struct ublksrv_ctrl_dev_info info = {
    .nr_hw_queues = (uint16_t) d->nqueues,
    .queue_depth = (uint16_t) d->depth,
    .max_io_buf_bytes = (uint32_t) d->buf_bytes,
    .dev_id = (uint32_t) -1,
    .ublksrv_pid = getpid (),
    /* ublk_drv takes zoned devices only with the user-copy data path;
     * a disk that lends its reads (backend=memory) asks for it too: a
     * read then moves once, from the store into the request's pages
     * (a driver without it clears the flag: the tag buffers serve).
     */
    .flags = (d->zoned.nr_zones ? F_ZONED | F_USER_COPY : 0) |
             (d->lend_reads ? F_USER_COPY : 0) |
             (d->recoverable ? F_RECOVERY : 0),
  };
  int r = ctrl_cmd (UBLK_CMD_ADD_DEV, (uint32_t) -1, &info, sizeof info, 0);
  if (r < 0 && d->zoned.nr_zones && r == -EINVAL) {
    fprintf (stderr,
             "blkemu-ublk: %s: zoned=host-managed: the kernel "
             "refused a zoned ublk device (%s): it needs "
             "CONFIG_BLK_DEV_ZONED\n",
             d->name, strerror (-r));
    return -1;
  }
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: adding the device: %s\n", d->name,
             strerror (-r));
    return -1;
  }
  d->dev_id = (int) info.dev_id;
  d->added = true;
  /* An older driver clears the flags it does not know. */
  if (d->zoned.nr_zones &&
      (info.flags & (F_ZONED | F_USER_COPY)) != (F_ZONED | F_USER_COPY)) {
    struct utsname u;
    if (uname (&u) == -1)
      strcpy (u.release, "?");
    fprintf (stderr,
             "blkemu-ublk: %s: zoned=host-managed: Linux %s's "
             "ublk_drv does not take UBLK_F_ZONED with UBLK_F_USER_COPY "
             "(Linux 6.6 and later do)\n",
             d->name, u.release);
    return -1;
  }
  if (d->recoverable && (info.flags & F_RECOVERY) != F_RECOVERY) {
    fprintf (stderr,
             "blkemu-ublk: %s: --recoverable: this ublk_drv does not "
             "offer user recovery with reissue (see --features)\n",
             d->name);
    return -1;
  }
  d->user_copy = (info.flags & F_USER_COPY) != 0;
  d->flags = info.flags;
  /* The driver may grant less than asked; that is the transport's cap. */
  if (info.max_io_buf_bytes < d->buf_bytes) {
    fprintf (stderr,
             "blkemu-ublk: %s: the driver caps requests at %u bytes; "
             "max-transfer=%u is split by the kernel first\n",
             d->name, info.max_io_buf_bytes, d->max_bytes);
    d->buf_bytes = info.max_io_buf_bytes;
    d->max_bytes = info.max_io_buf_bytes;
  }
  if (info.nr_hw_queues < d->nqueues)
    fprintf (stderr,
             "blkemu-ublk: %s: %u hardware queues (one per CPU at "
             "most), not %u\n",
             d->name, info.nr_hw_queues, d->nqueues);
  d->depth = info.queue_depth;
  d->nqueues = info.nr_hw_queues;
  return 0;
}

/* Open /dev/ublkcN and start one thread per hardware queue. */
static int
start_queues (struct udisk *d)
{
  char path[64];
  snprintf (path, sizeof path, "/dev/ublkc%d", d->dev_id);
  for (int tries = 0; (d->cdev_fd = open (path, O_RDWR | O_CLOEXEC)) == -1 &&
                      errno == ENOENT && tries < 100;
       tries++)
    usleep (10000); /* udev may still be creating the node */
  if (d->cdev_fd == -1) {
    fprintf (stderr, "blkemu-ublk: %s: %s: %s\n", d->name, path,
             strerror (errno));
    return -1;
  }
  d->queues = calloc (d->nqueues, sizeof *d->queues);
  if (!d->queues) {
    fprintf (stderr, "blkemu-ublk: %s: out of memory\n", d->name);
    return -1;
  }
  for (unsigned i = 0; i < d->nqueues; i++) {
    struct uqueue *q = &d->queues[i];
    q->d = d;
    q->id = (uint16_t) i;
    q->efd = -1;
    pthread_mutex_init (&q->lock, NULL);
    pthread_cond_init (&q->fetched, NULL);
  }
  d->started = true; /* from here on, stopping means STOP_DEV */
  for (unsigned i = 0; i < d->nqueues; i++)
    if (start_queue (&d->queues[i]) == -1)
      return -1;
  return 0;
}

/* What the disk got from the driver, in stats "transport". */
static void
report_transport (const struct udisk *d)
{
  char v[32];
  snprintf (v, sizeof v, "/dev/ublkb%d", d->dev_id);
  blkemu_disk_set_transport (d->emu, "device", v);
  blkemu_disk_set_transport_count (d->emu, "ublk_queues", d->nqueues);
  blkemu_disk_set_transport_count (d->emu, "ublk_queue_depth", d->depth);
  blkemu_disk_set_transport_count (d->emu, "ublk_max_request", d->max_bytes);
  char names[256];
  feature_names (d->flags, names, sizeof names);
  blkemu_disk_set_transport (d->emu, "ublk_features", names);
}

/* A new device: ADD_DEV, its limits, its queues, START_DEV.  With
 * --recover, the device a killed server left, quiesced: its queues on new
 * threads, then END_USER_RECOVERY, and the requests it held (those the
 * dead server had, reissued) flow again.
 */
static int
start_disk (struct udisk *d)
{
  if (d->recover_id >= 0) {
    if (start_recovery (d, d->recover_id) == -1)
      return -1;
  }
  else {
    if (add_device (d) == -1)
      return -1;
    int r = set_params (d);
    if (r < 0) {
      fprintf (stderr, "blkemu-ublk: %s: setting the queue limits: %s\n",
               d->name, strerror (-r));
      return -1;
    }
  }
  if (d->user_copy && d->lend_reads)
    blkemu_disk_set_read_sink (d->emu, queue_read_sink);
  d->take_writes = d->take_writes && d->user_copy;
  if (d->take_writes)
    blkemu_disk_set_write_source (d->emu, queue_write_source);
  if (start_queues (d) == -1)
    return -1;
  /* Returns once the driver has every tag's FETCH: the disk is live. */
  int r =
    ctrl_cmd (d->recovering ? UBLK_CMD_END_USER_RECOVERY : UBLK_CMD_START_DEV,
              (uint32_t) d->dev_id, NULL, 0, (uint64_t) getpid ());
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: %s: %s\n", d->name,
             d->recovering ? "END_USER_RECOVERY" : "starting the device",
             strerror (-r));
    return -1;
  }
  report_transport (d);
  if (d->recovering)
    blkemu_disk_set_transport (d->emu, "ublk_recovered", "yes");
  return 0;
}

static void
cancel_requests (void *arg)
{
  struct udisk *d = arg;
  fprintf (stderr,
           "blkemu-ublk: %s: requests still running after %u ms; "
           "ending them (ESHUTDOWN)\n",
           d->name, d->drain_ms);
  blkemu_disk_cancel (d->emu);
}

/* Stop (the driver aborts every tag, the queue threads return), then
 * delete; stats are written by blkemu_disk_close.
 */
static int
stop_disk (struct udisk *d)
{
  /* The kernel's STOP_DEV waits for the requests it has handed us: they
   * finish on their deadlines, up to --drain-timeout; then the ones still
   * waiting out a latency (a stall=3600s) end with an error.
   */
  if (!d->started || !d->drain_ms)
    blkemu_disk_cancel (d->emu);
  if (d->added) {
    int r = ctrl_cmd_grace (UBLK_CMD_STOP_DEV, (uint32_t) d->dev_id, NULL, 0,
                            0, d->drain_ms, cancel_requests, d);
    blkemu_disk_cancel (d->emu);
    if (r < 0 && d->started)
      fprintf (stderr, "blkemu-ublk: %s: stopping the device: %s\n", d->name,
               strerror (-r));
  }
  if (d->queues)
    for (unsigned i = 0; i < d->nqueues; i++)
      stop_queue (&d->queues[i]);
  free (d->queues);
  if (d->cdev_fd > 0)
    close (d->cdev_fd);
  /* DEL_DEV waits until /dev/ublkcN is released: close it first. */
  if (d->added) {
    int r = ctrl_cmd (UBLK_CMD_DEL_DEV, (uint32_t) d->dev_id, NULL, 0, 0);
    if (r < 0)
      fprintf (stderr, "blkemu-ublk: %s: deleting the device: %s\n", d->name,
               strerror (-r));
  }
  return blkemu_disk_close (d->emu);
}

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: blkemu-ublk [options] --disk SPEC [--disk SPEC ...]\n"
    "\n"
    "Serves each disk as the block device /dev/ublkbN with the disk's own\n"
    "queue limits (max_hw_sectors_kb = max-transfer, block sizes, io_min,\n"
    "io_opt, discard limits, rotational, queue-depth tags), until\n"
    "SIGINT or SIGTERM; then the devices are removed and stats= written.\n"
    "Needs root and the ublk_drv module (Linux 6.0 or later).\n"
    "\n"
    "SPEC is name=NAME,key=value,... with the keys below (the same as the\n"
    "nbdkit plugin's); name= defaults to d0, d1, ...\n"
    "\n"
    "Options:\n"
    "  --disk SPEC          add a disk (repeatable, at most %d)\n"
    "  --ready-file PATH    when every device is live, write one line per\n"
    "                       disk, 'NAME /dev/ublkbN', to PATH (atomically)\n"
    "  --queues N           hardware queues per disk (default 1; at most one\n"
    "                       per CPU), each with queue-depth tags: with one,\n"
    "                       the kernel gives the disk an I/O scheduler that\n"
    "                       merges; with several, none (blk-mq's default)\n"
    "  --recoverable        make each device outlive its server: if this\n"
    "                       process is killed, /dev/ublkbN stays with its\n"
    "                       I/O queued until --recover (needs a disk whose\n"
    "                       data outlives the process: backend=file)\n"
    "  --recover ID         take over /dev/ublkbID from a killed\n"
    "                       --recoverable server (repeatable: the Nth\n"
    "                       --recover is the Nth --disk, given the same\n"
    "                       spec); what it held is reissued\n"
    "  --drain-timeout SEC  at stop, requests in flight get SEC seconds to\n"
    "                       finish before they end with an error (default\n"
    "                       %u; 0: at once)\n"
    "  --completion-thread  complete requests from the core's completion\n"
    "                       thread (one per disk), not on the queue\n"
    "                       threads' rings (for comparison: a thread hop\n"
    "                       per request)\n"
    "  --copy-reads         move a memory disk's reads through the tag\n"
    "                       buffers (two copies), not straight from the\n"
    "                       store into the request's pages with user copy\n"
    "                       (Linux 6.5+; for comparison)\n"
    "  --copy-writes        move a memory disk's writes through the tag\n"
    "                       buffers (two copies), not from the request's\n"
    "                       pages straight into the store (for comparison)\n"
    "  --delete-stale       delete the ublk devices left by servers that "
    "were\n"
    "                       killed (SIGKILL), recoverable ones included,\n"
    "                       and exit\n"
    "  --features           print what this kernel's ublk_drv offers "
    "(user copy,\n"
    "                       zoned, recovery, ...), which of it blkemu-ublk "
    "uses,\n"
    "                       and exit (Linux 6.5 or later)\n"
    "  --list-keys          print the disk keys and exit\n"
    "  --list-profiles      print the presets for profile=NAME and exit\n"
    "  -h, --help           print this help and exit\n"
    "  -V, --version        print the version and exit\n"
    "\n"
    "The same lines go to standard output.  A disk's queue-depth is each\n"
    "hardware queue's tag count (at most %d here); more I/O waits in the\n"
    "kernel.\n"
    "ublk carries min-io and opt-io as powers of two: others are rounded\n"
    "down, with a warning.\n"
    "\nDisk keys:\n",
    MAX_DISKS, DRAIN_SECONDS, MAX_DEPTH);
  blkemu_spec_print_help (fp, "  ");
}

/* Long options only: the common ones hold the short letters. */
enum {
  OPT_RECOVERABLE = 0x100,
  OPT_RECOVER,
  OPT_DRAIN_TIMEOUT,
  OPT_COMPLETION_THREAD,
  OPT_COPY_READS,
  OPT_COPY_WRITES
};

static unsigned nqueues = 1;
static bool want_features, recoverable, completion_thread, copy_reads,
  copy_writes;
static int recover_ids[MAX_DISKS];
static size_t nrecover;
static unsigned drain_ms = DRAIN_SECONDS * 1000;

/* --queues N, --features, --recoverable, --recover ID, --drain-timeout */
static int
take_option (int opt, const char *arg)
{
  char *end;
  switch (opt) {
  case 'F': want_features = true; return -1;
  case OPT_RECOVERABLE: recoverable = true; return -1;
  case OPT_COMPLETION_THREAD: completion_thread = true; return -1;
  case OPT_COPY_READS: copy_reads = true; return -1;
  case OPT_COPY_WRITES: copy_writes = true; return -1;
  case OPT_RECOVER: {
    long id = strtol (arg, &end, 10);
    if (*end || end == arg || id < 0 || id > INT_MAX) {
      fprintf (stderr,
               "blkemu-ublk: --recover %s: the N of /dev/ublkbN, "
               "a number from 0\n",
               arg);
      return 1;
    }
    if (nrecover == MAX_DISKS) {
      fprintf (stderr, "blkemu-ublk: --recover: at most %d\n", MAX_DISKS);
      return 1;
    }
    recover_ids[nrecover++] = (int) id;
    return -1;
  }
  case OPT_DRAIN_TIMEOUT: {
    double sec = strtod (arg, &end);
    if (*end || end == arg || !(sec >= 0 && sec <= 3600)) {
      fprintf (stderr,
               "blkemu-ublk: --drain-timeout %s: seconds from 0 to "
               "3600\n",
               arg);
      return 1;
    }
    drain_ms = (unsigned) (sec * 1000 + 0.5);
    return -1;
  }
  }
  if (opt != 'q')
    return 1;
  unsigned long n = strtoul (arg, &end, 10);
  if (*end || n < 1 || n > MAX_QUEUES) {
    fprintf (stderr,
             "blkemu-ublk: --queues %s: a number of hardware "
             "queues from 1 to %d\n",
             arg, MAX_QUEUES);
    return 1;
  }
  nqueues = (unsigned) n;
  return -1;
}

/* The server's side of each opened disk: queues, tags, buffer size.
 * What ublk cannot carry was refused at open, by its descriptor.
 */
static int
prepare_disks (struct blkemu_disk **emu, size_t n, unsigned nqueues)
{
  int status = 0;
  for (; ndisks < n; ndisks++) {
    struct udisk *d = &disks[ndisks];
    d->emu = emu[ndisks];
    d->name = blkemu_disk_name (d->emu);
    d->dev_id = -1;
    d->nqueues = nqueues;
    d->drain_ms = drain_ms;
    d->ring_deadlines = !completion_thread;
    d->recover_id = ndisks < nrecover ? recover_ids[ndisks] : -1;
    d->recoverable = recoverable || d->recover_id >= 0;
    blkemu_disk_geometry (d->emu, &d->geo);
    blkemu_disk_zoned (d->emu, &d->zoned);
    d->lend_reads = !copy_reads && blkemu_disk_lends_reads (d->emu);
    d->take_writes = !copy_writes; /* with user copy only */
    /* A new server finds the data only where the old one left it. */
    const char *opt = d->recover_id >= 0 ? "--recover" : "--recoverable";
    if (d->recoverable && !d->geo.persistent) {
      fprintf (stderr,
               "blkemu-ublk: %s: %s: the disk's data lives in this "
               "process and dies with it; use backend=file (a file on "
               "/dev/shm for memory speed)\n",
               d->name, opt);
      status = -1;
    }
    /* The zone sidecar moves a write pointer before the data: a write
     * the dead server held would come back behind its own pointer.
     */
    if (d->recoverable && d->zoned.nr_zones) {
      fprintf (stderr,
               "blkemu-ublk: %s: %s: zoned=host-managed disks cannot be "
               "recovered (a reissued write would find its write pointer "
               "already moved)\n",
               d->name, opt);
      status = -1;
    }
    uint32_t qd = d->geo.queue_depth;
    d->depth = qd > MAX_DEPTH ? MAX_DEPTH : qd;
    if (qd > MAX_DEPTH)
      fprintf (stderr,
               "blkemu-ublk: %s: queue-depth=%u: ublk gets %d tags; "
               "the model keeps its own depth\n",
               d->name, qd, MAX_DEPTH);
    /* max_hw_sectors is the disk's max-transfer; the driver wants whole
     * pages of buffer.
     */
    size_t page = (size_t) sysconf (_SC_PAGESIZE);
    d->max_bytes = d->geo.max_transfer_bytes;
    d->buf_bytes = (d->max_bytes + page - 1) / page * page;
  }
  return status;
}

/* frontend_server's START: the ublk device made, its queues served,
 * started; then the core's disk.
 */
static int
serve_start (void *ctx, size_t i, const char **name, char *device,
             size_t device_len)
{
  struct udisk *d = &((struct udisk *) ctx)[i];
  char err[BLKEMU_ERR_MAX];
  if (start_disk (d) == -1)
    return -1;
  if (blkemu_disk_start (d->emu, err, sizeof err) == -1) {
    fprintf (stderr, "blkemu-ublk: %s: %s\n", d->name, err);
    return -1;
  }
  fprintf (stderr,
           "blkemu-ublk: %s: /dev/ublkb%d, %llu bytes, requests up "
           "to %u bytes, %u queue%s of %u tags\n",
           d->name, d->dev_id, (unsigned long long) d->geo.size_bytes,
           d->max_bytes, d->nqueues, d->nqueues > 1 ? "s" : "", d->depth);
  if (d->recovering)
    fprintf (stderr,
             "blkemu-ublk: %s: took over /dev/ublkb%d from a killed "
             "server; its queued requests go on\n",
             d->name, d->dev_id);
  *name = d->name;
  snprintf (device, device_len, "/dev/ublkb%d", d->dev_id);
  return 0;
}

/* frontend_server's STOP: -1 when the disk's stats= was not written. */
static int
serve_stop (void *ctx, size_t i)
{
  return stop_disk (&((struct udisk *) ctx)[i]);
}

int
main (int argc, char **argv)
{
  static const struct option options[] = {
    { "queues", required_argument, NULL, 'q' },
    { "features", no_argument, NULL, 'F' },
    { "recoverable", no_argument, NULL, OPT_RECOVERABLE },
    { "recover", required_argument, NULL, OPT_RECOVER },
    { "drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT },
    { "completion-thread", no_argument, NULL, OPT_COMPLETION_THREAD },
    { "copy-reads", no_argument, NULL, OPT_COPY_READS },
    { "copy-writes", no_argument, NULL, OPT_COPY_WRITES },
    { NULL, 0, NULL, 0 },
  };
  const struct frontend_cli cli = {
    .prog = "blkemu-ublk",
    .max_disks = MAX_DISKS,
    .usage = usage,
    .extra = options,
    .take_extra = take_option,
  };
  struct frontend_args o;
  int r = frontend_parse_args (&cli, argc, argv, &o);
  if (r != -1)
    return r;
  /* The control-device-only actions: no disk is made. */
  if (want_features || o.delete_stale) {
    bool with_disks = o.nspecs > 0;
    frontend_args_free (&o);
    if (want_features && with_disks) {
      fprintf (stderr, "blkemu-ublk: --features takes no --disk\n");
      return 1;
    }
    if (ctrl_open () == -1)
      return 1;
    r = want_features ? print_features (stdout) : delete_stale ();
    ctrl_close ();
    return r;
  }
  if (nrecover && nrecover != o.nspecs) {
    fprintf (stderr,
             "blkemu-ublk: %zu --recover for %zu --disk: one device "
             "to take over per disk\n",
             nrecover, o.nspecs);
    frontend_args_free (&o);
    return 1;
  }
  /* Every spec is checked before any device is created. */
  struct blkemu_disk *emu[MAX_DISKS];
  r = frontend_open_disks ("blkemu-ublk", &blkemu_ublk_frontend, o.specs,
                           o.nspecs, NULL, emu);
  size_t n = o.nspecs;
  frontend_args_free (&o);
  if (r == -1)
    return 1;
  if (prepare_disks (emu, n, nqueues) == -1) {
    frontend_close_disks (emu, n);
    return 1;
  }

  sigset_t stop;
  frontend_block_stop (&stop);
  const struct frontend_server server = {
    .prog = "blkemu-ublk",
    .stopping = "removing the devices",
    .ndisks = ndisks,
    .ctx = disks,
    .start = serve_start,
    .stop = serve_stop,
  };
  if (ctrl_open () == -1) {
    for (size_t i = ndisks; i-- > 0;)
      stop_disk (&disks[i]);
    if (o.ready_file)
      unlink (o.ready_file);
    return 1;
  }
  int status = frontend_serve (&server, o.ready_file, &stop);
  ctrl_close ();
  return status;
}
