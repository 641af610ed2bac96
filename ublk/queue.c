/* blkemu-ublk: a hardware queue — one thread owns the queue's io_uring;
 * requests arrive as FETCH completions, go to the core through the
 * queue's timeline, and complete on this thread when their deadlines come
 * (an absolute timeout on the same ring wakes it); the answers go back as
 * COMMIT_AND_FETCH.  What completes on other threads (the I/O worker of
 * a file disk, a cancel; without ring deadlines, the core's completion
 * thread) comes through an eventfd the ring polls.
 */
#include "ublk.h"

/* ADDR: with user copy 0, or the LBA a zone append went to; otherwise
 * the tag's buffer is passed.
 */
static void
queue_io_cmd (struct uqueue *q, uint16_t tag, unsigned op, int32_t result,
              uint64_t addr)
{
  struct io_uring_sqe *sqe = get_sqe (&q->ring);
  memset (sqe, 0, sizeof *sqe);
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = q->fixed_cdev ? 0 : q->d->cdev_fd;
  if (q->fixed_cdev)
    sqe->flags = IOSQE_FIXED_FILE;
  sqe->cmd_op = op;
  sqe->user_data = tag;
  struct ublksrv_io_cmd *c = (struct ublksrv_io_cmd *) sqe->cmd;
  c->q_id = q->id;
  c->tag = tag;
  c->result = result;
  c->addr =
    q->d->user_copy
      ? addr
      : (uint64_t) (uintptr_t) (q->bufs + (size_t) tag * q->d->buf_bytes);
}

static void
arm_eventfd (struct uqueue *q)
{
  struct io_uring_sqe *sqe = get_sqe (&q->ring);
  /* Poll for the completion thread's signal; the queue thread resets
   * the count itself, then commits whatever is done.
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
  uint64_t addr = t->append && result >= 0 ? t->append_at >> 9 : 0;
  struct done dn = { .tag = t->tag, .result = result, .addr = addr };
  /* From the queue thread itself (a refusal, a request already due, a
   * deadline its timeline ran) the commit goes out after this batch of
   * completions: no lock, no wake-up.
   */
  if (pthread_equal (pthread_self (), q->self)) {
    q->local[q->nlocal++] = dn;
    return;
  }
  pthread_mutex_lock (&q->lock);
  q->done[q->ndone] = dn;
  __atomic_store_n (&q->ndone, q->ndone + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&q->lock);
  uint64_t one = 1;
  if (write (q->efd, &one, sizeof one) != sizeof one)
    abort (); /* an eventfd write of 1 cannot fail short of a bug */
}

/* With user copy, a read's data lent by the core: into the request's
 * pages at once (on the queue thread, inside blkemu_submit).
 */
int
queue_read_sink (void *cookie, uint64_t at, const void *data, uint64_t len)
{
  struct utag *t = cookie;
  struct uqueue *q = t->q;
  ssize_t n = pwrite (q->d->cdev_fd, data ? data : q->zeros, len,
                      user_copy_offset (q->id, t->tag) + (off_t) at);
  return n == (ssize_t) len ? 0 : n == -1 ? errno : EIO;
}

/* With user copy, a write's data taken by the core: from the request's
 * pages into DST (the store, or the tag's buffer), on the queue thread,
 * inside blkemu_submit.
 */
int
queue_write_source (void *cookie, uint64_t at, void *dst, uint64_t len)
{
  struct utag *t = cookie;
  struct uqueue *q = t->q;
  ssize_t n = pread (q->d->cdev_fd, dst, len,
                     user_copy_offset (q->id, t->tag) + (off_t) at);
  return n == (ssize_t) len ? 0 : n == -1 ? errno : EIO;
}

/* From the core's completion thread: no I/O here (a completion callback
 * must not block); the queue thread moves a read's data in commit_done.
 */
static void
request_done (void *cookie, int r)
{
  struct utag *t = cookie;
  t->zeroes = r == BLKEMU_READ_ZEROES;
  t->sent = r == BLKEMU_READ_SENT;
  if (t->zeroes || t->sent)
    r = 0;
  /* A read that failed on an unreadable sector is a medium error, as sd
   * and nvme report one (BLK_STS_MEDIUM: "critical medium error", and an
   * NVMe target's status for it); an injected EIO, or a disk without
   * power, stays a plain I/O error.
   */
  r = r == BLKEMU_ERR_MEDIUM ? ENODATA : frontend_errno (r);
  complete (t, r ? -r : t->data ? (int32_t) t->len : 0);
}

/* On the queue thread, before a tag's commit: with user copy a read's
 * data goes into the request's pages now (the commit completes it), and
 * a large buffer's pages go back to the kernel.  Returns the result to
 * commit.
 */
static int32_t
finish_tag (struct uqueue *q, const struct done *dn)
{
  struct utag *t = &q->tags[dn->tag];
  struct udisk *d = q->d;
  char *buf = q->bufs + (size_t) t->tag * d->buf_bytes;
  int32_t result = dn->result;
  /* Zeroes the core did not write: from the zero page with user copy,
   * else from the tag's buffer, zeroed as far as it is not already.
   */
  const char *src = buf;
  if (result > 0 && t->zeroes) {
    if (d->user_copy)
      src = q->zeros;
    else if (t->len > t->zero_len) {
      memset (buf + t->zero_len, 0, t->len - t->zero_len);
      t->zero_len = t->len;
    }
  }
  else if (t->data && !t->sent)
    t->zero_len = 0; /* data went through it (a write's, a read's) */
  if (result > 0 && t->read && d->user_copy && !t->sent &&
      pwrite (d->cdev_fd, src, t->len, user_copy_offset (q->id, t->tag)) !=
        (ssize_t) t->len)
    result = -EIO;
  if (t->data && !t->sent && t->len > KEEP_BYTES)
    madvise (buf + KEEP_BYTES, t->len - KEEP_BYTES, MADV_FREE);
  return result;
}

static void serve (struct uqueue *q, uint16_t tag);

/* Ask the ring to wake the thread for the timeline's earliest deadline.
 * Returns true when one is due already: the loop must not sleep.  A
 * timeout is armed only when it is earlier than the one armed last,
 * until that one fires; a later one still pending fires too (a spare
 * wake-up).
 */
static bool
arm_deadline (struct uqueue *q)
{
  if (!q->tl)
    return false;
  uint64_t at = blkemu_timeline_wake_at (q->tl);
  if (at == 0)
    return true;
  if (at >= q->armed_at)
    return false;
  q->timeout = (struct __kernel_timespec){
    .tv_sec = (long long) (at / 1000000000u),
    .tv_nsec = (long long) (at % 1000000000u),
  };
  struct io_uring_sqe *sqe = get_sqe (&q->ring);
  io_uring_prep_timeout (sqe, &q->timeout, 0, IORING_TIMEOUT_ABS);
  sqe->user_data = TIMEOUT_TAG;
  q->armed_at = at;
  return false;
}

/* Answer every completed tag (and ask for its next request). */
static void
commit_done (struct uqueue *q)
{
  for (unsigned i = 0; i < q->nlocal; i++)
    queue_io_cmd (q, q->local[i].tag, UBLK_IO_COMMIT_AND_FETCH_REQ,
                  finish_tag (q, &q->local[i]), q->local[i].addr);
  q->nlocal = 0;
  /* Those from other threads: taken out under the lock, served outside
   * it (the completion thread never waits for our copies); the lock is
   * taken only when there are some.
   */
  if (__atomic_load_n (&q->ndone, __ATOMIC_ACQUIRE) == 0)
    return;
  pthread_mutex_lock (&q->lock);
  unsigned n = q->ndone;
  memcpy (q->committing, q->done, n * sizeof *q->done);
  __atomic_store_n (&q->ndone, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&q->lock);
  for (unsigned i = 0; i < n; i++)
    queue_io_cmd (q, q->committing[i].tag, UBLK_IO_COMMIT_AND_FETCH_REQ,
                  finish_tag (q, &q->committing[i]), q->committing[i].addr);
}

/* The driver's requests arrive as completions of FETCH (or COMMIT_AND_
 * FETCH) commands; the answers go back as COMMIT_AND_FETCH, which also
 * asks for the tag's next request.  Runs until every tag is aborted
 * (the device was stopped).
 */
static void *
queue_main (void *arg)
{
  struct uqueue *q = arg;
  q->self = pthread_self ();
  struct udisk *d = q->d;
  unsigned aborted = 0;

  for (unsigned tag = 0; tag < d->depth; tag++)
    queue_io_cmd (q, (uint16_t) tag, UBLK_IO_FETCH_REQ, -1, 0);
  arm_eventfd (q);
  int r = io_uring_submit (&q->ring);
  pthread_mutex_lock (&q->lock);
  q->queue_err = r < 0 ? -r : 0;
  q->fetch_sent = true;
  pthread_cond_signal (&q->fetched);
  pthread_mutex_unlock (&q->lock);
  if (r < 0)
    return NULL;

  q->armed_at = UINT64_MAX;
  while (aborted < d->depth) {
    r = arm_deadline (q) ? io_uring_submit (&q->ring)
                         : io_uring_submit_and_wait (&q->ring, 1);
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
    io_uring_for_each_cqe (&q->ring, head, cqe)
    {
      seen++;
      if (cqe->user_data == TIMEOUT_TAG) {
        /* Due: the timeline runs below, and the next deadline arms a
         * timeout again (those still pending are later: spare wake-ups).
         */
        q->armed_at = UINT64_MAX;
      }
      else if (cqe->user_data == EVENTFD_TAG) {
        /* Reset the count (EAGAIN if it already was); the commits go
         * out below with the rest.
         */
        ssize_t n = read (q->efd, &q->efd_value, sizeof q->efd_value);
        (void) n;
        arm_eventfd (q);
      }
      else if (cqe->res == UBLK_IO_RES_OK)
        serve (q, (uint16_t) cqe->user_data);
      else {
        /* UBLK_IO_RES_ABORT: the device is going away.  Anything else
         * is a protocol error: stop using the tag too.
         */
        if (cqe->res != UBLK_IO_RES_ABORT)
          fprintf (stderr, "blkemu-ublk: %s: queue %u tag %llu: %s\n", d->name,
                   q->id, (unsigned long long) cqe->user_data,
                   strerror (-cqe->res));
        aborted++;
      }
    }
    io_uring_cq_advance (&q->ring, seen);
    if (q->tl)
      blkemu_timeline_run (q->tl);
    commit_done (q);
  }
  return NULL;
}

static void
zone_done (void *cookie, int r)
{
  complete (cookie, r ? -frontend_errno (r) : 0);
}

/* REPORT_ZONES: the zones as struct blk_zone (sectors), written into the
 * request's buffer.  The kernel zeroed it: an entry left zero ends the
 * report.  The result may exceed the buffer (the kernel clamps it): the
 * buffer's size is not in the descriptor.
 */
static void
report_zones (struct uqueue *q, struct utag *t, uint64_t offset, unsigned nr)
{
  struct udisk *d = q->d;
  size_t room = d->buf_bytes / sizeof (struct blk_zone);
  if (nr > room)
    nr = (unsigned) room;
  struct blkemu_zone *zones = calloc (nr ? nr : 1, sizeof *zones);
  if (!zones)
    return complete (t, -ENOMEM);
  unsigned n = blkemu_zone_report (d->emu, offset, zones, nr);
  struct blk_zone *out =
    (struct blk_zone *) (q->bufs + (size_t) t->tag * d->buf_bytes);
  t->zero_len = 0;
  for (unsigned i = 0; i < n; i++)
    out[i] = (struct blk_zone){
      .start = zones[i].start >> 9,
      .len = zones[i].len >> 9,
      .wp = zones[i].wp >> 9,
      .capacity = zones[i].capacity >> 9,
      .type = (uint8_t) zones[i].type,
      .cond = (uint8_t) zones[i].cond,
    };
  free (zones);
  size_t bytes = n * sizeof *out;
  if (bytes && pwrite (d->cdev_fd, out, bytes,
                       user_copy_offset (q->id, t->tag)) != (ssize_t) bytes)
    return complete (t, -EIO);
  complete (t, (int32_t) d->max_bytes);
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
  struct utag *t = &q->tags[tag];
  enum blkemu_op eop;
  int r;
  enum blkemu_zone_op zop;

  t->read = t->append = t->data = t->zeroes = t->sent = false;
  switch (op) {
  case UBLK_IO_OP_READ:
    eop = BLKEMU_OP_READ;
    t->read = true;
    break;
  case UBLK_IO_OP_WRITE: eop = BLKEMU_OP_WRITE; break;
  case UBLK_IO_OP_FLUSH: /* the position of a flush means nothing */
    eop = BLKEMU_OP_FLUSH;
    len = off = 0;
    break;
  case UBLK_IO_OP_DISCARD: eop = BLKEMU_OP_TRIM; break;
  case UBLK_IO_OP_WRITE_ZEROES:
    eop = BLKEMU_OP_ZERO;
    if (!(iod->op_flags & UBLK_IO_F_NOUNMAP))
      flags |= BLKEMU_FLAG_MAY_TRIM;
    break;
  case IO_OP_ZONE_APPEND:
    eop = BLKEMU_OP_WRITE;
    t->append = true;
    break;
  case IO_OP_ZONE_OPEN: zop = BLKEMU_ZONE_OPEN; goto zone_command;
  case IO_OP_ZONE_CLOSE: zop = BLKEMU_ZONE_CLOSE; goto zone_command;
  case IO_OP_ZONE_FINISH: zop = BLKEMU_ZONE_FINISH; goto zone_command;
  case IO_OP_ZONE_RESET: zop = BLKEMU_ZONE_RESET; goto zone_command;
  case IO_OP_ZONE_RESET_ALL: zop = BLKEMU_ZONE_RESET_ALL; goto zone_command;
  case IO_OP_REPORT_ZONES:
    if (!d->zoned.nr_zones)
      return complete (t, -EOPNOTSUPP);
    /* nr_sectors' place holds the number of zones asked for. */
    return report_zones (q, t, off, iod->nr_sectors);
  default: return complete (t, -EOPNOTSUPP);
  }
  t->data = eop == BLKEMU_OP_READ || eop == BLKEMU_OP_WRITE;
  t->len = (uint32_t) len;
  /* User copy: a write's data is read from the request's pages now,
   * unless the core takes it itself (queue_write_source).
   */
  if (d->user_copy && !d->take_writes && eop == BLKEMU_OP_WRITE &&
      pread (d->cdev_fd, buf, len, user_copy_offset (q->id, tag)) !=
        (ssize_t) len)
    return complete (t, -EIO);
  void *data = t->data ? buf : NULL;
  if (t->append && q->tl)
    r = blkemu_timeline_append (q->tl, buf, len, off, flags, &t->append_at,
                                request_done, t);
  else if (t->append)
    r = blkemu_submit_append (d->emu, buf, len, off, flags, &t->append_at,
                              request_done, t);
  else if (q->tl)
    r = blkemu_timeline_submit (q->tl, eop, data, len, off, flags,
                                request_done, t);
  else
    r = blkemu_submit (d->emu, eop, data, len, off, flags, request_done, t);
  /* Handed back complete (refused, or due at once): it ends here. */
  if (r != BLKEMU_QUEUED)
    request_done (t, r);
  return;

zone_command:
  t->data = false;
  t->len = 0;
  if (q->tl)
    r = blkemu_timeline_zone_submit (q->tl, zop, off, zone_done, t);
  else
    r = blkemu_zone_submit (d->emu, zop, off, zone_done, t);
  if (r != BLKEMU_QUEUED)
    zone_done (t, r);
}

/* The queue's io_uring, set up as ublksrv sets up its own.  Returns 0
 * or -1 (said on stderr).
 */
static int
setup_ring (struct uqueue *q)
{
  struct udisk *d = q->d;
  /* Task work run when the thread enters the ring, not by interrupting
   * it; kernels before 5.19 lack it.
   */
  int r =
    io_uring_queue_init (d->depth + 2, &q->ring, IORING_SETUP_COOP_TASKRUN);
  if (r == -EINVAL)
    r = io_uring_queue_init (d->depth + 2, &q->ring, 0);
  if (r < 0) {
    fprintf (stderr, "blkemu-ublk: %s: io_uring: %s\n", d->name,
             strerror (-r));
    return -1;
  }
  q->ring_ok = true;
  /* A registered file: no file lookup and reference per command. */
  q->fixed_cdev = io_uring_register_files (&q->ring, &d->cdev_fd, 1) == 0;
  return 0;
}

/* Map the queue's request table, reserve its buffers, start its thread,
 * and wait until the thread has sent every FETCH.
 */
int
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
    fprintf (stderr,
             "blkemu-ublk: %s: queue %u: mapping the request table: "
             "%s\n",
             d->name, q->id, strerror (errno));
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
  /* With user copy, reads of zeroes are written from here: read, never
   * written, every page maps the kernel's zero page.
   */
  void *zeros = d->user_copy
                  ? mmap (NULL, d->buf_bytes, PROT_READ,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                  : NULL;
  q->zeros = zeros == MAP_FAILED ? NULL : zeros;
  q->tags = calloc (d->depth, sizeof *q->tags);
  q->done = calloc (d->depth, sizeof *q->done);
  q->committing = calloc (d->depth, sizeof *q->committing);
  q->local = calloc (d->depth, sizeof *q->local);
  q->efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (!q->bufs || (d->user_copy && !q->zeros) || !q->tags || !q->done ||
      !q->committing || !q->local || q->efd == -1) {
    fprintf (stderr,
             "blkemu-ublk: %s: out of memory for %u x %zu-byte "
             "buffers\n",
             d->name, d->depth, d->buf_bytes);
    return -1;
  }
  if (setup_ring (q) == -1)
    return -1;
  if (d->ring_deadlines && !(q->tl = blkemu_timeline_new (d->emu))) {
    fprintf (stderr, "blkemu-ublk: %s: out of memory\n", d->name);
    return -1;
  }
  for (unsigned tag = 0; tag < d->depth; tag++)
    q->tags[tag] = (struct utag){ .q = q, .tag = (uint16_t) tag };
  int r;
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
void
stop_queue (struct uqueue *q)
{
  if (q->thread_ok)
    pthread_join (q->thread, NULL);
  blkemu_timeline_free (q->tl);
  if (q->ring_ok)
    io_uring_queue_exit (&q->ring);
  if (q->iods)
    munmap ((void *) q->iods, q->iods_len);
  if (q->bufs)
    munmap (q->bufs, q->d->depth * q->d->buf_bytes);
  if (q->zeros)
    munmap ((void *) q->zeros, q->d->buf_bytes);
  if (q->efd > 0)
    close (q->efd);
  free (q->tags);
  free (q->done);
  free (q->committing);
  free (q->local);
  pthread_cond_destroy (&q->fetched);
  pthread_mutex_destroy (&q->lock);
}
