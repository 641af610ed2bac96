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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/ublk_cmd.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "frontend.h"

#define CONTROL_DEV   "/dev/ublk-control"
#define MAX_DISKS     64
#define MAX_DEPTH     UBLK_MAX_QUEUE_DEPTH   /* tags per queue: the driver's */
#define MAX_QUEUES    64          /* the driver allows one per CPU */
#define EVENTFD_TAG   UINT64_MAX  /* user_data of the completion wake-up */
/* A buffer keeps this much of a large request's pages; beyond it they go
 * back to the kernel (MADV_FREE), so memory follows what is in flight.
 */
#define KEEP_BYTES    (1u << 20)

struct done {
  uint16_t tag;
  int32_t result;
};

struct udisk;
struct uqueue;

/* A tag's request in the core: what the completion callback needs. */
struct utag {
  struct uqueue *q;
  uint16_t tag;
  bool data;                  /* read or write: the buffer was used */
  uint32_t len;
};

/* One hardware queue: its tags, the driver's request table for them, and
 * the io_uring its commands go through (ublk takes a queue's commands from
 * one task: the queue thread).
 */
struct uqueue {
  struct udisk *d;
  uint16_t id;
  const struct ublksrv_io_desc *iods; /* mapped from /dev/ublkcN */
  size_t iods_len;
  char *bufs;                 /* depth * buf_bytes */
  struct io_uring ring;
  bool ring_ok, thread_ok;
  int efd;                    /* completions -> queue thread */
  uint64_t efd_value;
  pthread_t thread;
  struct utag *tags;

  pthread_mutex_t lock;
  pthread_cond_t fetched;     /* main waits for the first FETCH_REQs */
  struct done *done;          /* completed, to commit */
  unsigned ndone;
  bool fetch_sent;
  int queue_err;
};

struct udisk {
  struct blkemu_disk *emu;
  struct blkemu_geometry geo;
  const char *name;
  int dev_id;                 /* N of /dev/ublkbN, -1 before ADD_DEV */
  bool added, started;
  unsigned depth;             /* tags per queue */
  unsigned nqueues;           /* hardware queues */
  uint32_t max_bytes;         /* the largest request: max-transfer */
  size_t buf_bytes;           /* per tag: max_bytes in whole pages */
  int cdev_fd;                /* /dev/ublkcN */
  struct uqueue *queues;
};

static struct udisk disks[MAX_DISKS];
static size_t ndisks;
static int ctrl_fd = -1;
static struct io_uring ctrl_ring;

/* A free submission entry.  The rings are sized so that every command a
 * tag can have outstanding fits; a full ring is flushed first anyway.
 */
static struct io_uring_sqe *
get_sqe (struct io_uring *ring)
{
  struct io_uring_sqe *sqe = io_uring_get_sqe (ring);
  if (!sqe) {
    io_uring_submit (ring);
    sqe = io_uring_get_sqe (ring);
  }
  if (!sqe) {
    fprintf (stderr, "blkemu-ublk: io_uring submission queue stuck full\n");
    abort ();
  }
  return sqe;
}

/* ---- control commands ------------------------------------------------ */

/* One command on /dev/ublk-control; returns the driver's result (< 0 is
 * -errno).  The main thread is the only user of the control ring.
 */
static int
ctrl_cmd (unsigned op, uint32_t dev_id, void *addr, uint16_t len,
          uint64_t data0)
{
  struct io_uring_sqe *sqe = get_sqe (&ctrl_ring);
  memset (sqe, 0, 2 * sizeof *sqe);   /* SQE128 */
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
  do
    r = io_uring_wait_cqe (&ctrl_ring, &cqe);
  while (r == -EINTR);
  if (r < 0)
    return r;
  r = cqe->res;
  io_uring_cqe_seen (&ctrl_ring, cqe);
  return r;
}

static int
open_control (void)
{
  ctrl_fd = open (CONTROL_DEV, O_RDWR | O_CLOEXEC);
  if (ctrl_fd == -1) {
    fprintf (stderr, "blkemu-ublk: %s: %s%s\n", CONTROL_DEV, strerror (errno),
             errno == ENOENT ? " (load the ublk_drv module: modprobe ublk_drv;"
             " it needs Linux 6.0 or later)" : "");
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
    fprintf (stderr, "blkemu-ublk: %s: %s=%llu is not a power of two; ublk "
             "reports %llu\n", d->name, key, (unsigned long long) bytes,
             1ull << s);
  return s < floor_shift ? floor_shift : s;
}

static uint32_t
sectors_or_max (uint64_t bytes)
{
  return bytes == 0 || bytes >> 9 > UINT32_MAX ? UINT32_MAX
                                               : (uint32_t) (bytes >> 9);
}

static int
set_params (struct udisk *d)
{
  const struct blkemu_geometry *g = &d->geo;
  struct ublk_params p = { .len = sizeof p, .types = UBLK_PARAM_TYPE_BASIC };
  p.basic.logical_bs_shift = ilog2_u64 (g->logical_block_size);
  p.basic.physical_bs_shift = ilog2_u64 (g->physical_block_size);
  p.basic.io_min_shift = pow2_shift (d, "min-io", g->min_io_bytes,
                                     p.basic.logical_bs_shift);
  p.basic.io_opt_shift = pow2_shift (d, "opt-io", g->opt_io_bytes, 0);
  p.basic.max_sectors = d->max_bytes >> 9;
  p.basic.dev_sectors = g->size_bytes >> 9;
  if (g->rotational)
    p.basic.attrs |= UBLK_ATTR_ROTATIONAL;
  if (g->can_flush)
    p.basic.attrs |= UBLK_ATTR_VOLATILE_CACHE;
  if (g->can_fua)
    p.basic.attrs |= UBLK_ATTR_FUA;
  if (g->can_trim || g->can_zero) {
    p.types |= UBLK_PARAM_TYPE_DISCARD;
    p.discard.discard_granularity = g->physical_block_size;
    p.discard.max_discard_segments = 1;
    if (g->can_trim)
      p.discard.max_discard_sectors = sectors_or_max (g->max_discard_bytes);
    if (g->can_zero)
      p.discard.max_write_zeroes_sectors =
        sectors_or_max (g->max_write_zeroes_bytes);
  }
  return ctrl_cmd (UBLK_CMD_SET_PARAMS, (uint32_t) d->dev_id, &p, sizeof p, 0);
}

/* ---- a queue --------------------------------------------------------- */

static void
queue_io_cmd (struct uqueue *q, uint16_t tag, unsigned op, int32_t result)
{
  struct io_uring_sqe *sqe = get_sqe (&q->ring);
  memset (sqe, 0, sizeof *sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = q->d->cdev_fd;
  sqe->cmd_op = op;
  sqe->user_data = tag;
  struct ublksrv_io_cmd *c = (struct ublksrv_io_cmd *) sqe->cmd;
  c->q_id = q->id;
  c->tag = tag;
  c->result = result;
  c->addr = (uint64_t) (uintptr_t) (q->bufs + (size_t) tag * q->d->buf_bytes);
}

static void
arm_eventfd (struct uqueue *q)
{
  struct io_uring_sqe *sqe = get_sqe (&q->ring);
  /* A poll, not a read: a read of an empty eventfd goes to an io-wq
   * worker thread; a poll completes inline when the fd is signalled.
   */
  io_uring_prep_poll_add (sqe, q->efd, POLLIN);
  sqe->user_data = EVENTFD_TAG;
}

/* Hand a tag's result to the queue thread, which commits it.  Called
 * from the core's completion thread (or from serve, for a refusal).
 */
static void
complete (struct utag *t, int32_t result)
{
  struct uqueue *q = t->q;
  pthread_mutex_lock (&q->lock);
  q->done[q->ndone++] = (struct done) { .tag = t->tag, .result = result };
  pthread_mutex_unlock (&q->lock);
  uint64_t one = 1;
  if (write (q->efd, &one, sizeof one) != sizeof one)
    abort ();   /* an eventfd write of 1 cannot fail short of a bug */
}

static void
request_done (void *cookie, int r)
{
  struct utag *t = cookie;
  r = frontend_errno (r);
  char *buf = t->q->bufs + (size_t) t->tag * t->q->d->buf_bytes;
  if (t->data && t->len > KEEP_BYTES)
    madvise (buf + KEEP_BYTES, t->len - KEEP_BYTES, MADV_FREE);
  complete (t, r ? -r : t->data ? (int32_t) t->len : 0);
}

static void serve (struct uqueue *q, uint16_t tag);

/* The driver's requests arrive as completions of FETCH (or COMMIT_AND_
 * FETCH) commands; the answers go back as COMMIT_AND_FETCH, which also
 * asks for the tag's next request.  Runs until every tag is aborted
 * (the device was stopped).
 */
static void *
queue_main (void *arg)
{
  struct uqueue *q = arg;
  struct udisk *d = q->d;
  unsigned aborted = 0;

  for (unsigned tag = 0; tag < d->depth; tag++)
    queue_io_cmd (q, (uint16_t) tag, UBLK_IO_FETCH_REQ, -1);
  arm_eventfd (q);
  int r = io_uring_submit (&q->ring);
  pthread_mutex_lock (&q->lock);
  q->queue_err = r < 0 ? -r : 0;
  q->fetch_sent = true;
  pthread_cond_signal (&q->fetched);
  pthread_mutex_unlock (&q->lock);
  if (r < 0)
    return NULL;

  while (aborted < d->depth) {
    r = io_uring_submit_and_wait (&q->ring, 1);
    if (r < 0 && r != -EINTR) {
      /* The queue cannot go on: have the main thread stop every device
       * rather than leave one live with nobody serving it.
       */
      fprintf (stderr, "blkemu-ublk: %s: queue %u: io_uring: %s; stopping\n",
               d->name, q->id, strerror (-r));
      kill (getpid (), SIGTERM);
      break;
    }
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe (&q->ring, head, cqe) {
      seen++;
      if (cqe->user_data == EVENTFD_TAG) {
        /* Reset the count (EAGAIN if it already was). */
        ssize_t n = read (q->efd, &q->efd_value, sizeof q->efd_value);
        (void) n;
        pthread_mutex_lock (&q->lock);
        for (unsigned i = 0; i < q->ndone; i++)
          queue_io_cmd (q, q->done[i].tag, UBLK_IO_COMMIT_AND_FETCH_REQ,
                        q->done[i].result);
        q->ndone = 0;
        pthread_mutex_unlock (&q->lock);
        arm_eventfd (q);
      }
      else if (cqe->res == UBLK_IO_RES_OK)
        serve (q, (uint16_t) cqe->user_data);
      else {
        /* UBLK_IO_RES_ABORT: the device is going away.  Anything else
         * is a protocol error: stop using the tag too.
         */
        if (cqe->res != UBLK_IO_RES_ABORT)
          fprintf (stderr, "blkemu-ublk: %s: queue %u tag %llu: %s\n",
                   d->name, q->id, (unsigned long long) cqe->user_data,
                   strerror (-cqe->res));
        aborted++;
      }
    }
    io_uring_cq_advance (&q->ring, seen);
  }
  return NULL;
}

/* One request, as the driver describes it, into the core. */
static void
serve (struct uqueue *q, uint16_t tag)
{
  struct udisk *d = q->d;
  const struct ublksrv_io_desc *iod = &q->iods[tag];
  unsigned op = ublksrv_get_op (iod);
  unsigned flags = iod->op_flags & UBLK_IO_F_FUA ? BLKEMU_FLAG_FUA : 0;
  uint64_t len = (uint64_t) iod->nr_sectors << 9;
  uint64_t off = iod->start_sector << 9;
  char *buf = q->bufs + (size_t) tag * d->buf_bytes;
  enum blkemu_op eop;

  switch (op) {
  case UBLK_IO_OP_READ: eop = BLKEMU_OP_READ; break;
  case UBLK_IO_OP_WRITE: eop = BLKEMU_OP_WRITE; break;
  case UBLK_IO_OP_FLUSH:   /* the position of a flush means nothing */
    eop = BLKEMU_OP_FLUSH;
    len = off = 0;
    break;
  case UBLK_IO_OP_DISCARD: eop = BLKEMU_OP_TRIM; break;
  case UBLK_IO_OP_WRITE_ZEROES:
    eop = BLKEMU_OP_ZERO;
    if (!(iod->op_flags & UBLK_IO_F_NOUNMAP))
      flags |= BLKEMU_FLAG_MAY_TRIM;
    break;
  default:
    return complete (&q->tags[tag], -EOPNOTSUPP);
  }
  struct utag *t = &q->tags[tag];
  t->data = eop == BLKEMU_OP_READ || eop == BLKEMU_OP_WRITE;
  t->len = (uint32_t) len;
  blkemu_submit (d->emu, eop, t->data ? buf : NULL, len, off, flags,
                 request_done, t);
}

/* Map the queue's request table, reserve its buffers, start its thread,
 * and wait until the thread has sent every FETCH.
 */
static int
start_queue (struct uqueue *q)
{
  struct udisk *d = q->d;
  size_t page = (size_t) sysconf (_SC_PAGESIZE);
  size_t desc = sizeof (struct ublksrv_io_desc);
  /* Each queue's table sits at a stride sized for the deepest queue. */
  size_t stride = (UBLK_MAX_QUEUE_DEPTH * desc + page - 1) / page * page;
  q->iods_len = (d->depth * desc + page - 1) / page * page;
  void *iods = mmap (NULL, q->iods_len, PROT_READ, MAP_SHARED | MAP_POPULATE,
                     d->cdev_fd, UBLKSRV_CMD_BUF_OFFSET + q->id * stride);
  if (iods == MAP_FAILED) {
    fprintf (stderr, "blkemu-ublk: %s: queue %u: mapping the request table: "
             "%s\n", d->name, q->id, strerror (errno));
    return -1;
  }
  q->iods = iods;
  /* Reserved lazily: pages appear as requests use them. */
  q->bufs = mmap (NULL, d->depth * d->buf_bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (q->bufs == MAP_FAILED)
    q->bufs = NULL;
  /* 4 KiB pages: with transparent huge pages, the first byte a request
   * touches in a tag's buffer would take 2 MiB (1024 tags: 2 GiB).
   */
  else
    madvise (q->bufs, d->depth * d->buf_bytes, MADV_NOHUGEPAGE);
  q->tags = calloc (d->depth, sizeof *q->tags);
  q->done = calloc (d->depth, sizeof *q->done);
  q->efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (!q->bufs || !q->tags || !q->done || q->efd == -1) {
    fprintf (stderr, "blkemu-ublk: %s: out of memory for %u x %zu-byte "
             "buffers\n", d->name, d->depth, d->buf_bytes);
    return -1;
  }
  int r = io_uring_queue_init (d->depth + 2, &q->ring, 0);
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: io_uring: %s\n", d->name, strerror (-r));
    return -1;
  }
  q->ring_ok = true;
  for (unsigned tag = 0; tag < d->depth; tag++)
    q->tags[tag] = (struct utag) { .q = q, .tag = (uint16_t) tag };
  if ((r = pthread_create (&q->thread, NULL, queue_main, q)) == 0) {
    char name[16];
    snprintf (name, sizeof name, "ublk-q%u", q->id);
    pthread_setname_np (q->thread, name);
  }
  else {
    fprintf (stderr, "blkemu-ublk: %s: queue thread: %s\n", d->name,
             strerror (r));
    return -1;
  }
  q->thread_ok = true;
  pthread_mutex_lock (&q->lock);
  while (!q->fetch_sent)
    pthread_cond_wait (&q->fetched, &q->lock);
  r = q->queue_err;
  pthread_mutex_unlock (&q->lock);
  if (r) {
    fprintf (stderr, "blkemu-ublk: %s: queueing requests: %s\n", d->name,
             strerror (r));
    return -1;
  }
  return 0;
}

/* After STOP_DEV: the queue thread has seen every tag aborted. */
static void
stop_queue (struct uqueue *q)
{
  if (q->thread_ok)
    pthread_join (q->thread, NULL);
  if (q->ring_ok)
    io_uring_queue_exit (&q->ring);
  if (q->iods)
    munmap ((void *) q->iods, q->iods_len);
  if (q->bufs)
    munmap (q->bufs, q->d->depth * q->d->buf_bytes);
  if (q->efd > 0)
    close (q->efd);
  free (q->tags);
  free (q->done);
  pthread_cond_destroy (&q->fetched);
  pthread_mutex_destroy (&q->lock);
}

/* ---- a disk's life: add, set limits, start, stop, delete --------------- */

static int
start_disk (struct udisk *d)
{
  char path[64];
  struct ublksrv_ctrl_dev_info info = {
    .nr_hw_queues = (uint16_t) d->nqueues,
    .queue_depth = (uint16_t) d->depth,
    .max_io_buf_bytes = (uint32_t) d->buf_bytes,
    .dev_id = (uint32_t) -1,
    .ublksrv_pid = getpid (),
  };
  int r = ctrl_cmd (UBLK_CMD_ADD_DEV, (uint32_t) -1, &info, sizeof info, 0);
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: adding the device: %s\n", d->name,
             strerror (-r));
    return -1;
  }
  d->dev_id = (int) info.dev_id;
  d->added = true;
  /* The driver may grant less than asked; that is the transport's cap. */
  if (info.max_io_buf_bytes < d->buf_bytes) {
    fprintf (stderr, "blkemu-ublk: %s: the driver caps requests at %u bytes; "
             "max-transfer=%u is split by the kernel first\n", d->name,
             info.max_io_buf_bytes, d->max_bytes);
    d->buf_bytes = info.max_io_buf_bytes;
    d->max_bytes = info.max_io_buf_bytes;
  }
  if (info.nr_hw_queues < d->nqueues)
    fprintf (stderr, "blkemu-ublk: %s: %u hardware queues (one per CPU at "
             "most), not %u\n", d->name, info.nr_hw_queues, d->nqueues);
  d->depth = info.queue_depth;
  d->nqueues = info.nr_hw_queues;
  r = set_params (d);
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: setting the queue limits: %s\n",
             d->name, strerror (-r));
    return -1;
  }

  snprintf (path, sizeof path, "/dev/ublkc%d", d->dev_id);
  for (int tries = 0; (d->cdev_fd = open (path, O_RDWR | O_CLOEXEC)) == -1 &&
                      errno == ENOENT && tries < 100; tries++)
    usleep (10000);   /* udev may still be creating the node */
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
  d->started = true;   /* from here on, stopping means STOP_DEV */
  for (unsigned i = 0; i < d->nqueues; i++)
    if (start_queue (&d->queues[i]) == -1)
      return -1;
  /* Returns once the driver has every tag's FETCH: the disk is live. */
  r = ctrl_cmd (UBLK_CMD_START_DEV, (uint32_t) d->dev_id, NULL, 0,
                (uint64_t) getpid ());
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: starting the device: %s\n", d->name,
             strerror (-r));
    return -1;
  }
  char v[32];
  blkemu_disk_set_transport (d->emu, "frontend", "ublk");
  snprintf (v, sizeof v, "/dev/ublkb%d", d->dev_id);
  blkemu_disk_set_transport (d->emu, "device", v);
  snprintf (v, sizeof v, "%u", d->nqueues);
  blkemu_disk_set_transport (d->emu, "ublk_queues", v);
  snprintf (v, sizeof v, "%u", d->depth);
  blkemu_disk_set_transport (d->emu, "ublk_queue_depth", v);
  snprintf (v, sizeof v, "%u", d->max_bytes);
  blkemu_disk_set_transport (d->emu, "ublk_max_request", v);
  return 0;
}

/* Stop (the driver aborts every tag, the queue threads return), then
 * delete; stats are written by blkemu_disk_close.
 */
static void
stop_disk (struct udisk *d)
{
  /* The kernel's STOP_DEV waits for the requests it has handed us: end
   * the ones still waiting out a latency (a stall=3600s) now.
   */
  blkemu_disk_cancel (d->emu);
  if (d->added) {
    int r = ctrl_cmd (UBLK_CMD_STOP_DEV, (uint32_t) d->dev_id, NULL, 0, 0);
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
  blkemu_disk_close (d->emu);
}

/* ---- leftovers of a killed server ------------------------------------ */

/* A server killed with SIGKILL leaves its ublk devices behind: the kernel
 * stops them (state DEAD, no server pid) but only DEL_DEV removes them.
 * Delete those whose server is gone; a device another live server is
 * still setting up keeps its pid and is left alone.
 */
static int
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
    int r = ctrl_cmd (UBLK_CMD_GET_DEV_INFO, (uint32_t) id, &info,
                      sizeof info, 0);
    if (r < 0) {
      fprintf (stderr, "blkemu-ublk: ublk device %d: %s\n", id, strerror (-r));
      status = 1;
      continue;
    }
    bool server_alive = info.ublksrv_pid > 0 &&
                        (kill (info.ublksrv_pid, 0) == 0 || errno == EPERM);
    if (info.state != UBLK_S_DEV_DEAD || server_alive)
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

static void
usage (FILE *fp)
{
  fprintf (fp,
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
    "  --delete-stale       delete the ublk devices left by servers that were\n"
    "                       killed (SIGKILL) and exit\n"
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
    "\nDisk keys:\n", MAX_DISKS, MAX_DEPTH);
  blkemu_spec_print_help (fp, "  ");
}

static int
write_ready (const char *path)
{
  char text[MAX_DISKS * (NAME_MAX + 32)];
  size_t len = 0;
  for (size_t i = 0; i < ndisks; i++)
    len += (size_t) snprintf (text + len, sizeof text - len,
                              "%s /dev/ublkb%d\n", disks[i].name,
                              disks[i].dev_id);
  fputs (text, stdout);
  fflush (stdout);
  if (path && frontend_write_atomic (path, text) == -1) {
    fprintf (stderr, "blkemu-ublk: --ready-file %s: %s\n", path,
             strerror (errno));
    return -1;
  }
  return 0;
}

int
main (int argc, char **argv)
{
  static const struct option longopts[] = {
    { "disk", required_argument, NULL, 'd' },
    { "ready-file", required_argument, NULL, 'r' },
    { "delete-stale", no_argument, NULL, 's' },
    { "queues", required_argument, NULL, 'q' },
    { "list-keys", no_argument, NULL, 'k' },
    { "list-profiles", no_argument, NULL, 'p' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  char *specs[MAX_DISKS];
  const char *ready_file = NULL;
  size_t nspecs = 0;
  bool stale = false;
  unsigned nqueues = 1;
  int c;
  while ((c = getopt_long (argc, argv, "hV", longopts, NULL)) != -1)
    switch (c) {
    case 'd':
      if (nspecs == MAX_DISKS) {
        fprintf (stderr, "blkemu-ublk: at most %d disks\n", MAX_DISKS);
        return 1;
      }
      specs[nspecs++] = optarg;
      break;
    case 'r': ready_file = optarg; break;
    case 's': stale = true; break;
    case 'q': {
      char *end;
      unsigned long n = strtoul (optarg, &end, 10);
      if (*end || n < 1 || n > MAX_QUEUES) {
        fprintf (stderr, "blkemu-ublk: --queues %s: a number of hardware "
                 "queues from 1 to %d\n", optarg, MAX_QUEUES);
        return 1;
      }
      nqueues = (unsigned) n;
      break;
    }
    case 'k': return frontend_list_keys ();
    case 'p': return frontend_list_profiles ();
    case 'h': usage (stdout); return 0;
    case 'V': return frontend_print_version ("blkemu-ublk", NULL);
    default: usage (stderr); return 1;
    }
  if (optind < argc) {
    fprintf (stderr, "blkemu-ublk: unexpected argument '%s'\n", argv[optind]);
    return 1;
  }
  if (stale) {
    if (nspecs) {
      fprintf (stderr, "blkemu-ublk: --delete-stale takes no --disk\n");
      return 1;
    }
    if (open_control () == -1)
      return 1;
    int r = delete_stale ();
    io_uring_queue_exit (&ctrl_ring);
    close (ctrl_fd);
    return r;
  }
  /* Every spec is checked before any device is created. */
  int status = 1;
  struct blkemu_disk *emu[MAX_DISKS];
  if (frontend_open_disks ("blkemu-ublk", specs, nspecs, NULL, emu) == -1)
    return 1;
  for (; ndisks < nspecs; ndisks++) {
    struct udisk *d = &disks[ndisks];
    d->emu = emu[ndisks];
    d->name = blkemu_disk_name (d->emu);
    d->dev_id = -1;
    d->nqueues = nqueues;
    blkemu_disk_geometry (d->emu, &d->geo);
    uint32_t qd = d->geo.queue_depth;
    d->depth = qd > MAX_DEPTH ? MAX_DEPTH : qd;
    if (qd > MAX_DEPTH)
      fprintf (stderr, "blkemu-ublk: %s: queue-depth=%u: ublk gets %d tags; "
               "the model keeps its own depth\n", d->name, qd, MAX_DEPTH);
    /* max_hw_sectors is the disk's max-transfer; the driver wants whole
     * pages of buffer.
     */
    size_t page = (size_t) sysconf (_SC_PAGESIZE);
    d->max_bytes = d->geo.max_transfer_bytes;
    d->buf_bytes = (d->max_bytes + page - 1) / page * page;
  }

  /* Signals are taken by sigwait in this thread only. */
  sigset_t stop;
  sigemptyset (&stop);
  sigaddset (&stop, SIGINT);
  sigaddset (&stop, SIGTERM);
  sigaddset (&stop, SIGHUP);
  pthread_sigmask (SIG_BLOCK, &stop, NULL);

  char err[BLKEMU_ERR_MAX];
  if (open_control () == -1)
    goto out;
  for (size_t i = 0; i < ndisks; i++) {
    if (start_disk (&disks[i]) == -1)
      goto out;
    if (blkemu_disk_start (disks[i].emu, err) == -1) {
      fprintf (stderr, "blkemu-ublk: %s: %s\n", disks[i].name, err);
      goto out;
    }
    fprintf (stderr, "blkemu-ublk: %s: /dev/ublkb%d, %llu bytes, requests up "
             "to %u bytes, %u queue%s of %u tags\n", disks[i].name,
             disks[i].dev_id, (unsigned long long) disks[i].geo.size_bytes,
             disks[i].max_bytes, disks[i].nqueues,
             disks[i].nqueues > 1 ? "s" : "", disks[i].depth);
  }
  if (write_ready (ready_file) == -1)
    goto out;
  int sig;
  sigwait (&stop, &sig);
  fprintf (stderr, "blkemu-ublk: %s: removing the devices\n", strsignal (sig));
  status = 0;

out:
  for (size_t i = ndisks; i-- > 0;)
    stop_disk (&disks[i]);
  if (ctrl_fd != -1) {
    io_uring_queue_exit (&ctrl_ring);
    close (ctrl_fd);
  }
  if (ready_file)
    unlink (ready_file);
  return status;
}
