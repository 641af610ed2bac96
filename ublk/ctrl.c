/* blkemu-ublk: the control device — ADD/SET_PARAMS/START/STOP/DEL
 * commands through an io_uring of 128-byte entries, the disk's limits as
 * ublk parameters, and the removal of devices left by killed servers.
 */
#include "ublk.h"

static int ctrl_fd = -1;
static struct io_uring ctrl_ring;

/* ---- control commands ------------------------------------------------ */

/* One command on /dev/ublk-control; returns the driver's result (< 0 is
 * -errno).  The main thread is the only user of the control ring.  When
 * the driver has not answered within GRACE_MS (0: never), LATE(ARG) runs
 * once and the wait goes on: a STOP_DEV waiting on requests cancels them.
 */
int
ctrl_cmd_grace (unsigned op, uint32_t dev_id, void *addr, uint16_t len,
                uint64_t data0, unsigned grace_ms, void (*late) (void *),
                void *arg)
{
  struct io_uring_sqe *sqe = get_sqe (&ctrl_ring);
  memset (sqe, 0, 2 * sizeof *sqe); /* SQE128 */
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = ctrl_fd;
  sqe->cmd_op = op;
  struct ublksrv_ctrl_cmd *c = (struct ublksrv_ctrl_cmd *) sqe->cmd;
  c->dev_id = dev_id;
  c->queue_id = (uint16_t) -1;
  c->addr = (uint64_t) (uintptr_t) addr;
  c->len = len;
  c->data[0] = data0;
  int r = io_uring_submit (&ctrl_ring);
  if (r < 0)
    return r;
  struct io_uring_cqe *cqe;
  r = -ETIME; /* no answer yet */
  if (grace_ms && late) {
    struct __kernel_timespec ts = { .tv_sec = grace_ms / 1000,
                                    .tv_nsec = grace_ms % 1000 * 1000000L };
    do
      r = io_uring_wait_cqe_timeout (&ctrl_ring, &cqe, &ts);
    while (r == -EINTR);
    if (r == -ETIME)
      late (arg);
  }
  while (r == -ETIME || r == -EINTR)
    r = io_uring_wait_cqe (&ctrl_ring, &cqe);
  if (r < 0)
    return r;
  r = cqe->res;
  io_uring_cqe_seen (&ctrl_ring, cqe);
  return r;
}

int
ctrl_cmd (unsigned op, uint32_t dev_id, void *addr, uint16_t len,
          uint64_t data0)
{
  return ctrl_cmd_grace (op, dev_id, addr, len, data0, 0, NULL, NULL);
}

int
ctrl_open (void)
{
  ctrl_fd = open (CONTROL_DEV, O_RDWR | O_CLOEXEC);
  if (ctrl_fd == -1) {
    fprintf (stderr, "blkemu-ublk: %s: %s%s\n", CONTROL_DEV, strerror (errno),
             errno == ENOENT ? " (load the ublk_drv module: modprobe ublk_drv;"
                               " it needs Linux 6.0 or later)"
                             : "");
    return -1;
  }
  int r = io_uring_queue_init (4, &ctrl_ring, IORING_SETUP_SQE128);
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: io_uring with 128-byte entries: %s\n",
             strerror (-r));
    close (ctrl_fd);
    ctrl_fd = -1;
    return -1;
  }
  return 0;
}

void
ctrl_close (void)
{
  if (ctrl_fd == -1)
    return;
  io_uring_queue_exit (&ctrl_ring);
  close (ctrl_fd);
  ctrl_fd = -1;
}

/* ---- limits ---------------------------------------------------------- */

static uint8_t
ilog2_u64 (uint64_t v)
{
  uint8_t s = 0;
  while (v >>= 1)
    s++;
  return s;
}

/* ublk carries io_min/io_opt as powers of two: round down, and say so. */
static uint8_t
pow2_shift (const struct udisk *d, const char *key, uint64_t bytes,
            uint8_t floor_shift)
{
  if (bytes == 0)
    return floor_shift;
  uint8_t s = ilog2_u64 (bytes);
  if ((1ull << s) != bytes)
    fprintf (stderr,
             "blkemu-ublk: %s: %s=%llu is not a power of two; ublk "
             "reports %llu\n",
             d->name, key, (unsigned long long) bytes, 1ull << s);
  return s < floor_shift ? floor_shift : s;
}

static uint32_t
sectors_or_max (uint64_t bytes)
{
  return bytes == 0 || bytes >> 9 > UINT32_MAX ? UINT32_MAX
                                               : (uint32_t) (bytes >> 9);
}

/* The parameter block as Linux 6.15 lays it out (uapi ublk_cmd.h: the
 * offsets below are the ABI); Debian 12's headers stop at discard.  A
 * kernel older than a parameter type ignores the bytes past its own
 * struct and clears the type's bit, which GET_PARAMS then shows.
 */
#define PARAM_TYPE_DMA_ALIGN (1u << 4)
#define PARAM_TYPE_SEGMENT (1u << 5)
struct params {
  uint32_t len, types;
  struct ublk_param_basic basic;
  struct ublk_param_discard discard;
  struct {
    uint32_t char_major, char_minor, disk_major, disk_minor;
  } devt;
  struct {
    uint32_t max_open_zones, max_active_zones, max_zone_append_sectors;
    uint8_t reserved[20];
  } zoned;
  struct {
    uint32_t alignment;
    uint8_t pad[4];
  } dma;
  struct {
    uint64_t seg_boundary_mask;
    uint32_t max_segment_size;
    uint16_t max_segments;
    uint8_t pad[2];
  } seg;
};
_Static_assert(offsetof (struct params, discard) == 40, "ublk ABI");
_Static_assert(offsetof (struct params, zoned) == 76, "ublk ABI");
_Static_assert(offsetof (struct params, dma) == 108, "ublk ABI");
_Static_assert(offsetof (struct params, seg) == 120, "ublk ABI");
_Static_assert(sizeof (struct params) == 136, "ublk ABI");

/* Keys the parameter types carry, for the message when a kernel lacks one. */
static const struct {
  uint32_t type;
  const char *keys[3];
  const char *what;
} newer_types[] = {
  { PARAM_TYPE_DMA_ALIGN, { "dma-alignment" }, "UBLK_PARAM_TYPE_DMA_ALIGN" },
  { PARAM_TYPE_SEGMENT,
    { "max-segments", "max-segment-size", "segment-boundary" },
    "UBLK_PARAM_TYPE_SEGMENT" },
};

/* The kernel cleared TYPE: name the keys that need it, and the kernel. */
static void
report_missing_type (const struct udisk *d, size_t t)
{
  char used[256] = "", v[64], err[BLKEMU_ERR_MAX];
  size_t n = 0;
  for (int k = 0; k < 3 && newer_types[t].keys[k]; k++) {
    const char *key = newer_types[t].keys[k];
    if (blkemu_disk_get (d->emu, key, v, sizeof v, err, sizeof err) == -1 ||
        !strcmp (v, "0"))
      continue;
    n += (size_t) snprintf (used + n, sizeof used - n, "%s%s=%s", n ? " " : "",
                            key, v);
    if (n >= sizeof used)
      break;
  }
  struct utsname u;
  if (uname (&u) == -1)
    strcpy (u.release, "?");
  fprintf (stderr,
           "blkemu-ublk: %s: %s: Linux %s's ublk_drv does not take "
           "%s (Linux 6.15 and later do); drop the key%s or run a newer "
           "kernel\n",
           d->name, used, u.release, newer_types[t].what,
           strchr (used, ' ') ? "s" : "");
}

int
set_params (struct udisk *d)
{
  const struct blkemu_geometry *g = &d->geo;
  struct params p = { .len = sizeof p, .types = UBLK_PARAM_TYPE_BASIC };
  p.basic.logical_bs_shift = ilog2_u64 (g->logical_block_size);
  p.basic.physical_bs_shift = ilog2_u64 (g->physical_block_size);
  p.basic.io_min_shift =
    pow2_shift (d, "min-io", g->min_io_bytes, p.basic.logical_bs_shift);
  p.basic.io_opt_shift = pow2_shift (d, "opt-io", g->opt_io_bytes, 0);
  p.basic.max_sectors = d->max_bytes >> 9;
  p.basic.dev_sectors = g->size_bytes >> 9;
  /* The kernel splits at it: the device sees no crossing request. */
  p.basic.chunk_sectors = (uint32_t) (g->boundary_bytes >> 9);
  if (g->virt_boundary_bytes)
    p.basic.virt_boundary_mask = g->virt_boundary_bytes - 1;
  if (g->rotational)
    p.basic.attrs |= UBLK_ATTR_ROTATIONAL;
  if (g->can_flush)
    p.basic.attrs |= UBLK_ATTR_VOLATILE_CACHE;
  if (g->can_fua)
    p.basic.attrs |= UBLK_ATTR_FUA;
  if (g->can_trim || g->can_zero) {
    p.types |= UBLK_PARAM_TYPE_DISCARD;
    p.discard.discard_granularity =
      g->discard_granularity ? g->discard_granularity : g->physical_block_size;
    p.discard.discard_alignment = g->discard_alignment;
    /* ublk_drv takes single-range discards only (checked at start). */
    p.discard.max_discard_segments = 1;
    if (g->can_trim)
      p.discard.max_discard_sectors = sectors_or_max (g->max_discard_bytes);
    if (g->can_zero)
      p.discard.max_write_zeroes_sectors =
        sectors_or_max (g->max_write_zeroes_bytes);
  }
  if (d->zoned.nr_zones) {
    /* chunk_sectors is the zone size (the core set boundary to it). */
    p.types |= PARAM_TYPE_ZONED;
    p.zoned.max_open_zones = d->zoned.max_open;
    p.zoned.max_active_zones = d->zoned.max_active;
    p.zoned.max_zone_append_sectors = d->zoned.max_append_bytes >> 9;
  }
  if (g->dma_alignment) {
    p.types |= PARAM_TYPE_DMA_ALIGN;
    p.dma.alignment = g->dma_alignment - 1;
  }
  if (g->max_segments || g->max_segment_size || g->segment_boundary_bytes) {
    /* The kernel takes all three: the defaults for those not set. */
    p.types |= PARAM_TYPE_SEGMENT;
    p.seg.seg_boundary_mask =
      g->segment_boundary_bytes ? g->segment_boundary_bytes - 1 : 0xffffffffu;
    p.seg.max_segment_size =
      g->max_segment_size ? g->max_segment_size : UINT32_MAX;
    p.seg.max_segments =
      (uint16_t) (g->max_segments ? g->max_segments : 65535);
  }
  int r =
    ctrl_cmd (UBLK_CMD_SET_PARAMS, (uint32_t) d->dev_id, &p, sizeof p, 0);
  if (r < 0 || !(p.types & (PARAM_TYPE_DMA_ALIGN | PARAM_TYPE_SEGMENT)))
    return r;
  /* Did the kernel keep the newer types?  An older one drops them. */
  struct params got = { .len = sizeof got };
  r =
    ctrl_cmd (UBLK_CMD_GET_PARAMS, (uint32_t) d->dev_id, &got, sizeof got, 0);
  if (r < 0)
    return r;
  for (size_t t = 0; t < sizeof newer_types / sizeof newer_types[0]; t++)
    if ((p.types & newer_types[t].type) &&
        !(got.types & newer_types[t].type)) {
      report_missing_type (d, t);
      return -EOPNOTSUPP;
    }
  return 0;
}

/* ---- recovery (--recoverable, --recover ID) -------------------------- */

/* Is PID a running process (not a zombie waiting for its parent)? */
static bool
process_running (pid_t pid)
{
  char path[64], buf[256];
  snprintf (path, sizeof path, "/proc/%d/stat", (int) pid);
  FILE *f = fopen (path, "r");
  if (!f)
    return false;
  size_t n = fread (buf, 1, sizeof buf - 1, f);
  fclose (f);
  buf[n] = '\0';
  /* "pid (comm) S ...": the state follows the last ')'. */
  const char *rp = strrchr (buf, ')');
  return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* START_USER_RECOVERY of device ID for disk D: the device must have been
 * added recoverable and describe the same disk (size, block sizes,
 * largest request).  Its queues and depth are the driver's: D takes
 * them.  The driver answers EBUSY until the old server's /dev/ublkcN is
 * released and its requests are requeued; a killed server takes a
 * moment to go, so wait for it, but not for a server still running.
 * Returns 0 or -1 (said why).
 */
int
start_recovery (struct udisk *d, int id)
{
  struct ublksrv_ctrl_dev_info info = { 0 };
  int r =
    ctrl_cmd (UBLK_CMD_GET_DEV_INFO, (uint32_t) id, &info, sizeof info, 0);
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: --recover %d: %s%s\n", d->name, id,
             strerror (-r), r == -ENODEV ? " (no such ublk device)" : "");
    return -1;
  }
  if (!(info.flags & UBLK_F_USER_RECOVERY)) {
    fprintf (stderr,
             "blkemu-ublk: %s: --recover %d: /dev/ublkb%d was not made "
             "recoverable (start its server with --recoverable)\n",
             d->name, id, id);
    return -1;
  }
  struct params p = { .len = sizeof p };
  r = ctrl_cmd (UBLK_CMD_GET_PARAMS, (uint32_t) id, &p, sizeof p, 0);
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: --recover %d: reading its limits: %s\n",
             d->name, id, strerror (-r));
    return -1;
  }
  const struct blkemu_geometry *g = &d->geo;
  struct {
    const char *what;
    unsigned long long dev, spec;
  } same[] = {
    { "size", (unsigned long long) p.basic.dev_sectors << 9, g->size_bytes },
    { "logical-block-size", 1ull << p.basic.logical_bs_shift,
      g->logical_block_size },
    { "physical-block-size", 1ull << p.basic.physical_bs_shift,
      g->physical_block_size },
    { "max-transfer", (unsigned long long) p.basic.max_sectors << 9,
      d->max_bytes },
    { "zoned", (info.flags & F_ZONED) != 0, d->zoned.nr_zones != 0 },
  };
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
    if (same[i].dev != same[i].spec) {
      fprintf (stderr,
               "blkemu-ublk: %s: --recover %d: /dev/ublkb%d has %s %llu, "
               "the spec %llu: recover with the spec it was started with\n",
               d->name, id, id, same[i].what, same[i].dev, same[i].spec);
      return -1;
    }
  /* Up to 30 s for the old server's exit (its rings' teardown). */
  for (int tries = 0;; tries++) {
    r = ctrl_cmd (UBLK_CMD_START_USER_RECOVERY, (uint32_t) id, NULL, 0, 0);
    if (r != -EBUSY || tries == 600)
      break;
    if (tries == 0 && info.ublksrv_pid > 0 &&
        process_running (info.ublksrv_pid)) {
      fprintf (stderr,
               "blkemu-ublk: %s: --recover %d: /dev/ublkb%d is still "
               "served by process %d; stop or kill it first\n",
               d->name, id, id, info.ublksrv_pid);
      return -1;
    }
    usleep (50000);
  }
  if (r < 0) {
    ctrl_cmd (UBLK_CMD_GET_DEV_INFO, (uint32_t) id, &info, sizeof info, 0);
    fprintf (stderr,
             "blkemu-ublk: %s: --recover %d: START_USER_RECOVERY: %s "
             "(device state %s)\n",
             d->name, id, strerror (-r),
             info.state == UBLK_S_DEV_LIVE       ? "live"
             : info.state == UBLK_S_DEV_QUIESCED ? "quiesced"
                                                 : "dead: it cannot be "
                                                   "recovered, delete it");
    return -1;
  }
  d->dev_id = id;
  d->added = true;
  d->recovering = true;
  d->nqueues = info.nr_hw_queues;
  d->depth = info.queue_depth;
  d->user_copy = (info.flags & F_USER_COPY) != 0;
  d->flags = info.flags;
  return 0;
}

/* ---- leftovers of a killed server ------------------------------------ */

/* A server killed with SIGKILL leaves its ublk devices behind: the kernel
 * stops them (state DEAD, no server pid), or with --recoverable holds
 * them quiesced for a new server (QUIESCED), but only DEL_DEV removes
 * them.  Delete those whose server is gone; a device another live server
 * is still setting up keeps its pid and is left alone.
 */
int
delete_stale (void)
{
  DIR *dir = opendir ("/sys/class/ublk-char");
  if (!dir) {
    printf ("no ublk devices\n");
    return 0;
  }
  int status = 0;
  unsigned found = 0, deleted = 0;
  struct dirent *e;
  while ((e = readdir (dir)) != NULL) {
    int id;
    if (sscanf (e->d_name, "ublkc%d", &id) != 1)
      continue;
    found++;
    struct ublksrv_ctrl_dev_info info = { 0 };
    int r =
      ctrl_cmd (UBLK_CMD_GET_DEV_INFO, (uint32_t) id, &info, sizeof info, 0);
    if (r < 0) {
      fprintf (stderr, "blkemu-ublk: ublk device %d: %s\n", id, strerror (-r));
      status = 1;
      continue;
    }
    bool server_alive = info.ublksrv_pid > 0 &&
                        (kill (info.ublksrv_pid, 0) == 0 || errno == EPERM);
    /* A recoverable device whose server died waits, quiesced, for a
     * --recover: deleting it fails the I/O it holds.
     */
    if (info.state == UBLK_S_DEV_LIVE || server_alive)
      continue;
    r = ctrl_cmd (UBLK_CMD_DEL_DEV, (uint32_t) id, NULL, 0, 0);
    if (r < 0) {
      fprintf (stderr, "blkemu-ublk: deleting ublk device %d: %s\n", id,
               strerror (-r));
      status = 1;
    }
    else {
      printf ("deleted ublk device %d (its server is gone)\n", id);
      deleted++;
    }
  }
  closedir (dir);
  printf ("%u ublk devices, %u stale deleted\n", found, deleted);
  return status;
}

/* ---- command line ---------------------------------------------------- */

/* ---- features -------------------------------------------------------- */

/* GET_FEATURES (Linux >= 6.5) answers the UBLK_F_* bits the driver
 * knows; Debian 12's headers predate it.  Bits from uapi ublk_cmd.h.
 */
#ifndef UBLK_U_CMD_GET_FEATURES
#define UBLK_U_CMD_GET_FEATURES _IOR ('u', 0x13, struct ublksrv_ctrl_cmd)
#endif

static const struct {
  unsigned bit;
  const char *name, *use;
} feature_table[] = {
  { 0, "zero-copy", "" },
  { 1, "uring-cmd-comp-in-task", "" },
  { 2, "need-get-data", "" },
  { 3, "user-recovery",
    "used with --recoverable: a killed server's "
    "device waits for --recover" },
  { 4, "user-recovery-reissue",
    "used with --recoverable: what the killed "
    "server held is reissued" },
  { 5, "unprivileged-dev", "" },
  { 6, "cmd-ioctl-encode", "" },
  { 7, "user-copy",
    "used by zoned and memory disks: data moves by pread/pwrite" },
  { 8, "zoned", "used by disks with zoned=host-managed" },
  { 9, "user-recovery-fail-io", "" },
  { 10, "update-size", "" },
  { 11, "auto-buf-reg", "" },
  { 12, "quiesce", "" },
  { 13, "per-io-daemon", "" },
  { 14, "buf-reg-off-daemon", "" },
};

/* FLAGS' feature names, comma-separated, into OUT (a disk's granted
 * features, for its stats).
 */
void
feature_names (uint64_t flags, char *out, size_t len)
{
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof feature_table / sizeof *feature_table; i++)
    if (flags & (1ull << feature_table[i].bit) && n < len)
      n += (size_t) snprintf (out + n, len - n, "%s%s", n ? "," : "",
                              feature_table[i].name);
}

/* blkemu-ublk --features: what this kernel's ublk_drv offers, and which
 * of it blkemu-ublk uses (null_blk's features file, ublk's 'features').
 */
int
print_features (FILE *fp)
{
  uint64_t f = 0;
  int r = ctrl_cmd (UBLK_U_CMD_GET_FEATURES, 0, &f, sizeof f, 0);
  if (r < 0) {
    fprintf (stderr,
             "blkemu-ublk: --features: %s: GET_FEATURES: %s (the query "
             "needs Linux 6.5 or later)\n",
             CONTROL_DEV, strerror (-r));
    return 1;
  }
  struct utsname u;
  uname (&u);
  fprintf (fp, "ublk_drv of Linux %s: features 0x%llx\n", u.release,
           (unsigned long long) f);
  uint64_t known = 0;
  for (size_t i = 0; i < sizeof feature_table / sizeof *feature_table; i++) {
    uint64_t bit = 1ull << feature_table[i].bit;
    known |= bit;
    const char *use = feature_table[i].use;
    if (*use)
      fprintf (fp, "  %-3s %-24s %s\n", f & bit ? "yes" : "no",
               feature_table[i].name, use);
    else
      fprintf (fp, "  %-3s %s\n", f & bit ? "yes" : "no",
               feature_table[i].name);
  }
  if (f & ~known)
    fprintf (fp, "  and bits 0x%llx this blkemu-ublk does not name\n",
             (unsigned long long) (f & ~known));
  return 0;
}
