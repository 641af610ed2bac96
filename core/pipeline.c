/* One request's way through the device: range and alignment checks,
 * the oversize policy and boundary, the timing model, the backend, the
 * wait for the deadline (blkemu_io, in the caller's thread) or the
 * completion engine (blkemu_submit), then stats and trace.  With a
 * blocking backend (file) blkemu_submit leaves the transfer to the disk's
 * I/O worker, and the request completes at its deadline or when its
 * transfer ends, whichever is later.  The stages of its own live beside
 * it (request.h): the checks (check.c), the transfer (transfer.c), zone
 * commands (zonecmd.c), the cut into pieces and its cost (shape.c),
 * writes in flight (inflight.c).
 */
#include "pipeline.h"
#include "request.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "clock.h"
#include "disk.h"
#include "engine.h"
#include "error.h"
#include "timeline.h"

/* Refuse a request before it reaches the device. */
static int
refuse (struct blkemu_disk *disk, enum blkemu_op op, uint64_t len,
        uint64_t offset, uint64_t arrival, uint64_t *counter, unsigned marks,
        int err)
{
  stats_record_refused (&disk->stats, op, len, counter);
  trace_record (&disk->trace, arrival, op, offset, len, 0, 0, err, marks);
  return err;
}

/* Under the disk lock: every piece scheduled as the device would queue
 * it, at arrival; each draws its own base latency, the first carries any
 * spike.  Sets the pieces' deadlines and the request's (the last).
 */
static void
request_schedule (struct request *req, bool plain,
                  const struct fault_verdict *fv)
{
  struct blkemu_disk *disk = req->disk;
  if (plain) {
    /* disk_is_plain: the fixed model at zero cost, nothing cached. */
    for (uint64_t i = 0; i < req->npieces; i++)
      req->deadline[i] = req->arrival;
    req->entry.deadline_ns = req->arrival;
    req->slowed = false;
    return;
  }
  uint64_t slowdown = disk->cfg.num[K_SLOWDOWN];
  uint64_t last = req->arrival;
  for (uint64_t i = 0; i < req->npieces; i++) {
    struct model_req mreq = {
      .op = req->op,
      .offset = req->cut[i],
      .len = piece_len (req, i),
      .flags = req->flags,
      .arrival_ns =
        faults_to_device_time (&disk->faults, slowdown, req->arrival),
      .latency_ns = dist_sample (&disk->cfg, &disk->rng,
                                 cfg_latency_ns (&disk->cfg, req->op)) +
                    (i == 0 ? fv->extra_ns : 0),
    };
    uint64_t t =
      faults_to_wall_time (&disk->faults, slowdown,
                           disk->model->schedule (disk->model_state,
                                                  &disk->cfg, &mreq));
    /* Device time rounds on the way there and back: never before the
     * request arrived (slowdown=7 gave deadlines a few ns early).
     */
    req->deadline[i] = model_max (t, model_max (fv->not_before, req->arrival));
    last = model_max (last, req->deadline[i]);
  }
  req->entry.deadline_ns = last;
  if (model_write_cached (&disk->cfg,
                          &(struct model_req){ .op = req->op,
                                               .flags = req->flags }))
    req->marks |= TRACE_CACHED;
  req->slowed = slowdown > 1;
  if (req->slowed)
    req->marks |= TRACE_SLOW;
}

/* A scheduled request enters the device: what it needs of the disk's
 * state, read under the disk lock the caller holds.
 */
static void
request_admit (struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  req->cache = disk->cfg.num[K_WRITE_CACHE] != 0;
  view_admit (req);
  /* A cache larger than the disk holds at most the disk's size of old
   * data: cache-size=1T on a 64M disk must not let repeated overwrites
   * grow the undo log to a terabyte.
   */
  req->cache_size = disk->cfg.num[K_CACHE_SIZE] < disk->cfg.num[K_SIZE]
                      ? disk->cfg.num[K_CACHE_SIZE]
                      : disk->cfg.num[K_SIZE];
  req->qd =
    __atomic_add_fetch (&disk->in_flight, req->npieces, __ATOMIC_RELAXED);
  /* Read under the lock that blkemu_disk_crash takes to go offline: a crash
   * after this point fails a flush that has not finished.
   */
  req->crash_gen = wcache_generation (&disk->wcache);
  /* A zoned read lent: its write pointers now, or the buffer and its
   * mask when it spans more zones than the request has room for.
   */
  if (req->sink_ok && zones_on (&disk->zones)) {
    req->lend_zones =
      zones_read_limits (&disk->zones, req->offset, req->len,
                         req->lend_zone_end, req->lend_data_end, LEND_ZONES);
    req->sink_ok = req->lend_zones != 0;
  }
}

/* A blocking caller's slot on the plain path, kept per thread in a
 * pthread key rather than a __thread variable: the plugin is dlopen'ed,
 * its dynamic TLS is freed by glibc when a thread exits, and
 * ThreadSanitizer reported the next thread's first use of that memory
 * as a race with the free (as clock.c's timer-slack flag did).
 */
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

static void
slot_key_create (void)
{
  pthread_key_create (&slot_key, NULL);
}

/* Where REQ counts on the plain path: its queue's slot, or its
 * thread's (blocking callers: nbdkit's and FUSE's threads).
 */
static unsigned
plain_slot (const struct request *req)
{
  if (req->tl)
    return req->tl->plain_slot;
  pthread_once (&slot_once, slot_key_create);
  uintptr_t slot = (uintptr_t) pthread_getspecific (slot_key); /* 1 + slot */
  if (!slot) {
    slot = 1 + disk_plain_slot (req->disk);
    pthread_setspecific (slot_key, (void *) slot);
  }
  return (unsigned) (slot - 1);
}

/* Admission's way in: the plain path where the disk has nothing for a
 * request to read under its lock (disk.h), else the lock.  The gate may
 * have been closed for a stall that has since ended: the lock's holder
 * opens it again.  Returns whether the path is plain.
 */
static bool
request_enter (const struct request *req)
{
  struct blkemu_disk *disk = req->disk;
  if (disk_plain_enter (disk, plain_slot (req)))
    return true;
  pthread_mutex_lock (&disk->lock);
  disk_plain_recheck (disk);
  return false;
}

static void
request_leave (const struct request *req, bool plain)
{
  if (plain)
    disk_plain_leave (req->disk, plain_slot (req));
  else
    pthread_mutex_unlock (&req->disk->lock);
}

/* Checks and schedule, then the data transfer unless DEFER (the caller
 * queues it).  Returns 0 with REQ scheduled (finish it with request_end),
 * or the errno of a refusal (recorded; nothing to finish).
 */
static int
request_begin (struct request *req, void *buf, bool defer)
{
  struct blkemu_disk *disk = req->disk;
  uint64_t *counter = &disk->stats.cancelled;
  struct fault_verdict fv = { 0 };
  int r = ESHUTDOWN;

  if (req->is_zone)
    return zone_cmd_start (req);
  if (__atomic_load_n (&disk->cancelled, __ATOMIC_ACQUIRE))
    return refuse (disk, req->op, req->len, req->offset, req->arrival, counter,
                   0, r);
  bool plain = request_enter (req);
  if ((r = request_check (req, plain, &fv, &counter)) != 0) {
    request_leave (req, plain);
    if (req->marks & TRACE_BOUNDARY)
      stats_count (&disk->stats, &disk->stats.boundary_crossed);
    return refuse (disk, req->op, req->len, req->offset, req->arrival, counter,
                   req->marks, r);
  }
  if (request_cut (req) != 0) {
    request_leave (req, plain);
    return ENOMEM;
  }
  request_schedule (req, plain, &fv);
  req->buf = buf;
  request_admit (req);
  request_leave (req, plain);
  if (!fv.err)
    medium_admit (req, &fv);
  /* The zone's new write pointer reaches its sidecar before the data
   * moves (backend=file), with the disk lock dropped.  Only writes move
   * write pointers: reads take no sidecar lock.
   */
  if (model_is_write (req->op))
    zones_sidecar_sync (&disk->zones, &disk->lock);

  req->err = fv.err;
  req->injected = fv.err != 0 && !(req->marks & TRACE_MEDIUM);
  req->xfer = request_plan (req);
  if (req->unfilled && req->xfer != XFER_TAKE && req->xfer != XFER_NONE)
    request_fill (req);
  if (!defer)
    request_transfer (req);
  return 0;
}

/* The power went while REQ was in the device: it never completed.
 * Whatever it left on the medium counts as unflushed (a later crash may
 * take it); acknowledging it would promise data that the crash may
 * already have rolled back.  Returns the error it completes with.
 */
static int
request_crashed (struct request *req)
{
  struct stats *st = req_stats (req);
  req->err = EIO;
  req->marks |= TRACE_CRASHED;
  stats_count (st, &st->faults.crash_aborted);
  return EIO;
}

/* Completion: stats and trace for each piece.  CANCEL_ERR is non-zero when
 * the disk stopped before the deadline (the request fails with it).
 * Returns the request's result.
 */
static int
request_end (struct request *req, int cancel_err)
{
  struct blkemu_disk *disk = req->disk;
  uint64_t done = clock_now_ns ();
  int err = req->err ? req->err : cancel_err;
  __atomic_sub_fetch (&disk->in_flight, req->npieces, __ATOMIC_RELAXED);
  if (err == 0 && wcache_generation (&disk->wcache) != req->crash_gen)
    err = request_crashed (req);
  /* A write that completed made its sectors readable again.  One a crash
   * interrupted was marked unreadable by it (disk_interrupt_writes) before
   * this runs: the mark stays, as its data did not complete.
   */
  medium_written (req, err);
  if (req->is_zone) {
    zone_cmd_end (req, done, err);
    return err;
  }
  /* A zoned disk reads zeroes past a write pointer, whatever the medium
   * still holds there (data a crash rolled back).
   */
  if (req->op == BLKEMU_OP_READ && !err && !req->zeroes && !req->sent &&
      zones_on (&disk->zones)) {
    pthread_mutex_lock (&disk->lock);
    zones_mask_read (&disk->zones, req->buf, req->len, req->offset);
    pthread_mutex_unlock (&disk->lock);
  }
  if (req->marks &
      (TRACE_FAULT | TRACE_SPIKE | TRACE_STALL | TRACE_SLOW | TRACE_CORRUPT))
    count_faults (req_stats (req), req->marks, req->injected, req->slowed,
                  err ? SILENT_NONE : req->silent, req->stuck && !err);
  count_shape (req, cancel_err);
  record_pieces (req, done, err);
  if (req->deadline != req->inline_deadline)
    free (req->deadline);
  return err;
}

/* The blocking wait of blkemu_io: a futex that blkemu_disk_cancel and
 * blkemu_disk_interrupt wake, the last microseconds spun.  Returns 0 or
 * ESHUTDOWN.  (nbdkit_nanosleep, used for long waits before, asserted
 * when nbdkit's captive --run parent took a SIGTERM: it shares the quit
 * pipe, and the sleeper woke to a quit that nbdkit had not seen.)
 */
static int
wait_deadline (struct blkemu_disk *disk, uint64_t deadline)
{
  return clock_wait_until_or_cancel (deadline, &disk->cancelled) == 0
           ? 0
           : ESHUTDOWN;
}

/* The blocking form: REQ (on the caller's stack) begun, waited out in
 * the caller's thread, ended.  blkemu_io, blkemu_zone_command and
 * blkemu_zone_append.
 */
static int
request_run (struct request *req, void *buf)
{
  int r = request_begin (req, buf, false);
  if (r)
    return r;
  return request_end (req, wait_deadline (req->disk, req->entry.deadline_ns));
}

/* The contracts blkemu.h states for a request.  A frontend breaking one
 * has a bug to fix, not a client to answer: the frontends translate
 * their clients' flags and ops, and refuse what they cannot carry.
 */
static void
assert_request (struct blkemu_disk *disk, enum blkemu_op op, const void *buf,
                uint64_t len, unsigned flags)
{
  assert (disk);
  assert ((unsigned) op < BLKEMU_OP_COUNT);
  assert ((flags & ~(BLKEMU_FLAG_FUA | BLKEMU_FLAG_MAY_TRIM |
                     BLKEMU_FLAG_ATOMIC)) == 0);
  assert (!(flags & BLKEMU_FLAG_ATOMIC) || op == BLKEMU_OP_WRITE);
  assert (buf || len == 0 || (op != BLKEMU_OP_READ && op != BLKEMU_OP_WRITE));
  (void) disk, (void) op, (void) buf, (void) len, (void) flags;
}

int
blkemu_io (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
           uint64_t len, uint64_t offset, unsigned flags)
{
  assert_request (disk, op, buf, len, flags);
  struct request req = {
    .disk = disk,
    .op = op,
    .flags = flags,
    .len = len,
    .offset = offset,
    .arrival = clock_now_ns (),
  };
  return request_run (&req, buf);
}

/* A request for an asynchronous submit: from TL's pool when there is
 * one (the owner's thread takes, so only the owner pops), else malloc'ed.
 */
static struct request *
request_alloc (struct blkemu_timeline *tl)
{
  if (!tl)
    return malloc (sizeof (struct request));
  struct request *req = tl->free_local;
  if (!req)
    req = __atomic_exchange_n (&tl->free_remote, NULL, __ATOMIC_ACQUIRE);
  if (req)
    tl->free_local = req->pool_next;
  else if (!(req = malloc (sizeof *req)))
    return NULL;
  __atomic_add_fetch (&tl->outstanding, 1, __ATOMIC_RELAXED);
  return req;
}

/* REQ back to its timeline's pool (from any thread), or freed. */
static void
request_release (struct request *req)
{
  struct blkemu_timeline *tl = req->tl;
  if (!tl) {
    free (req);
    return;
  }
  if (pthread_equal (pthread_self (),
                     __atomic_load_n (&tl->owner, __ATOMIC_RELAXED))) {
    req->pool_next = tl->free_local;
    tl->free_local = req;
  }
  else {
    /* Pushed only, and taken whole by the owner: no ABA. */
    req->pool_next = __atomic_load_n (&tl->free_remote, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n (&tl->free_remote, &req->pool_next,
                                         req, true, __ATOMIC_RELEASE,
                                         __ATOMIC_RELAXED))
      ;
  }
  /* Last: blkemu_timeline_free waits for this to free the pool. */
  __atomic_sub_fetch (&tl->outstanding, 1, __ATOMIC_RELEASE);
}

void
pipeline_pool_free (struct blkemu_timeline *tl)
{
  assert (__atomic_load_n (&tl->outstanding, __ATOMIC_ACQUIRE) == 0);
  struct request *lists[2] = { tl->free_local, tl->free_remote };
  for (int i = 0; i < 2; i++)
    while (lists[i]) {
      struct request *next = lists[i]->pool_next;
      free (lists[i]);
      lists[i] = next;
    }
  tl->free_local = tl->free_remote = NULL;
}

/* What DONE gets: ERR, a medium error told apart from other EIOs (what
 * medium_admit found, unless the power went while it waited: then the
 * device never answered), or how a read's data went.
 */
static int
request_result (const struct request *req, int err)
{
  if (err == EIO && (req->marks & TRACE_MEDIUM) &&
      wcache_generation (&req->disk->wcache) == req->crash_gen)
    return BLKEMU_ERR_MEDIUM;
  return err           ? err
         : req->zeroes ? BLKEMU_READ_ZEROES
         : req->sent   ? BLKEMU_READ_SENT
                       : 0;
}

/* REQ's end: its result, its own buffer freed; the caller releases it. */
static int
request_close (struct request *req, int cancel_err)
{
  int err = request_end (req, cancel_err);
  if (req->own_buf)
    free (req->buf);
  return request_result (req, err);
}

static void
request_complete (struct request *req, int cancel_err)
{
  req->done (req->cookie, request_close (req, cancel_err));
  request_release (req);
}

static void request_io_run (struct iowork_job *job);

/* Queue REQ's transfer on the worker.  A write's data is copied: the
 * caller's buffer is only lent for the duration of blkemu_submit (FUSE
 * hands its own back when the write handler returns).  Returns false
 * when it cannot be queued (no memory, no thread).
 */
static bool
request_defer (struct request *req)
{
  if (req->op == BLKEMU_OP_WRITE && req->buf) {
    void *copy = malloc (req->len);
    if (!copy)
      return false;
    memcpy (copy, req->buf, req->len);
    req->buf = copy;
    req->own_buf = true;
  }
  req->io_state = IO_PENDING;
  req->job.run = request_io_run;
  if (iowork_add (&req->disk->iowork, &req->job) == 0)
    return true;
  req->io_state = 0;
  if (req->own_buf) {
    free (req->buf);
    req->own_buf = false;
  }
  return false;
}

bool
pipeline_abortable (const struct engine_entry *entry, void *cookie)
{
  const struct request *req = (const struct request *) entry;
  return req->cookie == cookie && !(req->marks & TRACE_STALL);
}

/* REQ is due (or cancelled with CANCEL_ERR): true when the caller ends
 * it; false while its transfer is still with the I/O worker, which then
 * completes it as the transfer ends.  Whichever comes second completes.
 */
static bool
request_take_due (struct request *req, int cancel_err)
{
  req->due_err = cancel_err;
  return !(__atomic_fetch_or (&req->io_state, IO_DUE, __ATOMIC_ACQ_REL) &
           IO_PENDING);
}

/* Due (or cancelled), from an engine: DONE called. */
void
pipeline_fire (struct engine_entry *entry, int cancel_err)
{
  struct request *req = (struct request *) entry; /* entry is first */
  if (request_take_due (req, cancel_err))
    request_complete (req, cancel_err);
}

/* On the I/O worker.  After blkemu_disk_cancel the transfer is skipped
 * and the request fails with ESHUTDOWN, even if its deadline had already
 * passed: it must not report data moved that never was.
 */
static void
request_io_run (struct iowork_job *job)
{
  struct request *req =
    (struct request *) ((char *) job - offsetof (struct request, job));
  if (!__atomic_load_n (&req->disk->cancelled, __ATOMIC_ACQUIRE))
    request_transfer (req);
  else if (req->err == 0)
    req->err = ESHUTDOWN;
  if (__atomic_fetch_and (&req->io_state, ~IO_PENDING, __ATOMIC_ACQ_REL) &
      IO_DUE)
    request_complete (req, req->due_err);
}

/* Due when submitted, or not queueable (CANCEL_ERR): ended on the
 * submitting thread, its result returned, DONE never called.  Unless
 * the I/O worker still moves its data: the worker completes it then.
 */
static int
request_end_here (struct request *req, int cancel_err)
{
  if (!request_take_due (req, cancel_err))
    return BLKEMU_QUEUED;
  int result = request_close (req, cancel_err);
  request_release (req);
  return result;
}

/* A begun request (R: request_begin's answer) queued on its engine, or
 * ended here: BLKEMU_QUEUED, or the result of a request refused, already
 * due (no latency, or the transfer took that long: no trip through the
 * completion thread and back) or that could not be queued.
 */
static int
request_finish_async (struct request *req, int r)
{
  if (r) {
    request_release (req);
    return r;
  }
  if (req->entry.deadline_ns > clock_now_ns ()) {
    struct engine *engine = req->engine ? req->engine : &req->disk->engine;
    if ((r = engine_add (engine, &req->entry)) == 0)
      return BLKEMU_QUEUED;
  }
  return request_end_here (req, r);
}

/* A request from TL's pool (or the heap), arrived now, its other fields
 * zero: what every asynchronous form fills in first. */
static struct request *
request_new (struct blkemu_disk *disk, struct blkemu_timeline *tl,
             blkemu_done_cb done, void *cookie)
{
  uint64_t arrival = clock_now_ns ();
  struct request *req = request_alloc (tl);
  if (req)
    *req = (struct request){
      .disk = disk,
      .engine = tl ? &tl->engine : NULL,
      .tl = tl,
      .arrival = arrival,
      .done = done,
      .cookie = cookie,
    };
  return req;
}

/* The asynchronous form: a request allocated for a read, write,
 * write-zeroes, trim or flush (APPEND_AT: a zone append), begun and
 * queued on the engine, or completed at once.
 */
static int
submit (struct blkemu_disk *disk, struct blkemu_timeline *tl,
        enum blkemu_op op, void *buf, uint64_t len, uint64_t offset,
        unsigned flags, uint64_t *append_at, blkemu_done_cb done, void *cookie)
{
  assert_request (disk, op, buf, len, flags);
  assert (done);
  struct request *req = request_new (disk, tl, done, cookie);
  if (!req)
    return ENOMEM;
  req->op = op;
  req->flags = flags;
  req->len = len;
  req->offset = offset;
  req->append_at = append_at;
  /* A stuck bit needs the data in the buffer. */
  req->zero_ok = op == BLKEMU_OP_READ && disk->frontend &&
                 (disk->frontend->ops & BLKEMU_FE_ZERO_READS) &&
                 !stuckbits_any (&disk->stuck);
  req->sink_ok =
    op == BLKEMU_OP_READ && disk->read_sink && !stuckbits_any (&disk->stuck);
  req->unfilled = op == BLKEMU_OP_WRITE && disk->write_source && len > 0;
  bool defer = disk->backend.ops->blocking;
  int r = request_begin (req, buf, defer);
  /* Served from the page cache at once when nothing queued before it
   * could be overtaken; otherwise the worker moves it, in order.
   */
  if (r == 0 && defer &&
      !(iowork_idle (&disk->iowork) && request_try_transfer (req)) &&
      !request_defer (req))
    request_transfer (req); /* cannot queue: move the data here */
  return request_finish_async (req, r);
}

int
blkemu_submit (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
               uint64_t len, uint64_t offset, unsigned flags,
               blkemu_done_cb done, void *cookie)
{
  return submit (disk, NULL, op, buf, len, offset, flags, NULL, done, cookie);
}

int
pipeline_submit_on (struct blkemu_timeline *tl, enum blkemu_op op, void *buf,
                    uint64_t len, uint64_t offset, unsigned flags,
                    blkemu_done_cb done, void *cookie)
{
  return submit (tl->disk, tl, op, buf, len, offset, flags, NULL, done,
                 cookie);
}

int
pipeline_append_on (struct blkemu_disk *disk, struct blkemu_timeline *tl,
                    const void *buf, uint64_t len, uint64_t zone_offset,
                    unsigned flags, uint64_t *written_at, blkemu_done_cb done,
                    void *cookie)
{
  /* A write: BUF is only read (the cast as in blkemu_zone_append). */
  return submit (disk, tl, BLKEMU_OP_WRITE, (void *) buf, len, zone_offset,
                 flags, written_at, done, cookie);
}

int
blkemu_submit_append (struct blkemu_disk *disk, const void *buf, uint64_t len,
                      uint64_t zone_offset, unsigned flags,
                      uint64_t *written_at, blkemu_done_cb done, void *cookie)
{
  return pipeline_append_on (disk, NULL, buf, len, zone_offset, flags,
                             written_at, done, cookie);
}

int
pipeline_zone_submit_on (struct blkemu_disk *disk, struct blkemu_timeline *tl,
                         enum blkemu_zone_op op, uint64_t offset,
                         blkemu_done_cb done, void *cookie)
{
  assert (done);
  if ((unsigned) op >= BLKEMU_ZONE_OP_COUNT)
    return EINVAL;
  struct request *req = request_new (disk, tl, done, cookie);
  if (!req)
    return ENOMEM;
  req->is_zone = true;
  req->zone_op = op;
  req->offset = offset;
  return request_finish_async (req, request_begin (req, NULL, false));
}

int
blkemu_zone_submit (struct blkemu_disk *disk, enum blkemu_zone_op op,
                    uint64_t offset, blkemu_done_cb done, void *cookie)
{
  return pipeline_zone_submit_on (disk, NULL, op, offset, done, cookie);
}

int
blkemu_zone_command (struct blkemu_disk *disk, enum blkemu_zone_op op,
                     uint64_t offset)
{
  if ((unsigned) op >= BLKEMU_ZONE_OP_COUNT)
    return EINVAL;
  struct request req = {
    .disk = disk,
    .is_zone = true,
    .zone_op = op,
    .offset = offset,
    .arrival = clock_now_ns (),
  };
  return request_run (&req, NULL);
}

int
blkemu_zone_append (struct blkemu_disk *disk, const void *buf, uint64_t len,
                    uint64_t zone_offset, unsigned flags, uint64_t *written_at)
{
  struct request req = {
    .disk = disk,
    .op = BLKEMU_OP_WRITE,
    .flags = flags,
    .len = len,
    .offset = zone_offset,
    .arrival = clock_now_ns (),
    .append_at = written_at,
  };
  /* A write: the backend only reads BUF (the path is shared with reads,
   * hence the cast).
   */
  return request_run (&req, (void *) buf);
}
