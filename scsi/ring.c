/* A disk's TCMU command ring (see the kernel's tcmu-design document):
 * one thread reads the entries the kernel posts and hands each command
 * to scsi_execute, which submits its I/O through the thread's timeline;
 * the thread sleeps in ppoll until the ring has news or the timeline's
 * next deadline, and runs the timeline after every wake-up, so requests
 * complete on it.  Completions (also from a file disk's I/O worker, or a
 * cancel) are written at the ring's tail, in the order they come: the
 * kernel takes them out of order (TCMU_MAILBOX_FLAG_CAP_OOOC) and finds
 * each command by its id.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* linux/uio.h would define struct iovec a second time (sys/uio.h's,
 * through scsi.h, has the same layout).
 */
#define __LINUX_UIO_H
#include <linux/target_core_user.h>

#include "scsi.h"

static struct tcmu_mailbox *
mailbox (struct sdisk *d)
{
  return (struct tcmu_mailbox *) d->map;
}

static struct tcmu_cmd_entry *
entry_at (struct sdisk *d, uint32_t pos)
{
  return (struct tcmu_cmd_entry *) (d->map + d->cmdr_off + pos);
}

static uint32_t
entry_len (const struct tcmu_cmd_entry *e)
{
  return tcmu_hdr_get_len (e->hdr.len_op);
}

/* The CDB's length from its group code (SPC-4 4.2.5.1). */
static size_t
cdb_len (uint8_t opcode)
{
  switch (opcode >> 5) {
  case 0: return 6;
  case 1:
  case 2: return 10;
  case 4: return 16;
  case 5: return 12;
  default: return 16;
  }
}

/* Copy what the command needs out of its entry: the entry's slot may
 * carry another command's completion before this one ends.
 */
static struct scmd *
take_command (struct sdisk *d, const struct tcmu_cmd_entry *e)
{
  uint32_t n = e->req.iov_cnt;
  struct scmd *c = calloc (1, sizeof *c + n * sizeof (struct iovec));
  if (!c)
    return NULL;
  c->d = d;
  c->cmd_id = e->hdr.cmd_id;
  c->iov = (struct iovec *) (c + 1);
  c->iov_cnt = n;
  pthread_mutex_init (&c->lock, NULL);
  const uint8_t *cdb = d->map + e->req.cdb_off;
  memcpy (c->cdb, cdb, cdb_len (cdb[0]));
  for (uint32_t i = 0; i < n; i++) {
    c->iov[i].iov_base = d->map + (uintptr_t) e->req.iov[i].iov_base;
    c->iov[i].iov_len = e->req.iov[i].iov_len;
    c->data_len += e->req.iov[i].iov_len;
  }
  pthread_mutex_lock (&d->cmds_lock);
  c->next = d->cmds;
  if (c->next)
    c->next->prev = c;
  d->cmds = c;
  pthread_mutex_unlock (&d->cmds_lock);
  return c;
}

/* Write one completion at the tail and tell the kernel.  The entry
 * there is one this thread has already read (there are never more
 * completions than commands read); its slot now carries this answer.
 */
static void
answer (struct sdisk *d, uint16_t cmd_id, uint8_t status, const uint8_t *sense)
{
  struct tcmu_mailbox *mb = mailbox (d);
  pthread_mutex_lock (&d->tail_lock);
  uint32_t tail = __atomic_load_n (&mb->cmd_tail, __ATOMIC_RELAXED);
  struct tcmu_cmd_entry *e = entry_at (d, tail);
  while (tcmu_hdr_get_op (e->hdr.len_op) != TCMU_OP_CMD) {
    tail = (tail + entry_len (e)) % d->cmdr_size;
    e = entry_at (d, tail);
  }
  e->hdr.cmd_id = cmd_id;
  e->hdr.uflags = 0;
  e->rsp.scsi_status = status;
  if (sense)
    memcpy (e->rsp.sense_buffer, sense, SENSE_LEN);
  tail = (tail + entry_len (e)) % d->cmdr_size;
  __atomic_store_n (&mb->cmd_tail, tail, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&d->tail_lock);
  uint32_t poke = 1;
  if (write (d->uio_fd, &poke, sizeof poke) != sizeof poke)
    fprintf (stderr, "blkemu-scsi: %s: telling the kernel: %s\n", d->name,
             strerror (errno));
}

void
ring_complete (struct scmd *c)
{
  struct sdisk *d = c->d;
  if (c->counted)
    __atomic_sub_fetch (&d->in_flight, 1, __ATOMIC_RELAXED);
  pthread_mutex_lock (&d->cmds_lock);
  if (c->prev)
    c->prev->next = c->next;
  else
    d->cmds = c->next;
  if (c->next)
    c->next->prev = c->prev;
  pthread_mutex_unlock (&d->cmds_lock);
  answer (d, c->cmd_id, c->status, c->status ? c->sense : NULL);
  free (c->buf);
  pthread_mutex_destroy (&c->lock);
  free (c);
}

/* End command CMD_ID now if the disk is only waiting out its time; a
 * stalled disk (stall=) does not answer aborts.  Returns whether it did.
 */
static bool
end_aborted (struct sdisk *d, uint16_t cmd_id)
{
  pthread_mutex_lock (&d->cmds_lock);
  struct scmd *c = d->cmds;
  while (c && c->cmd_id != cmd_id)
    c = c->next;
  pthread_mutex_unlock (&d->cmds_lock);
  /* C is only a cookie from here: if it completed meanwhile nothing
   * matches it, and no other command can take its address before this
   * thread, the only one taking commands, reads the next entry.
   */
  return c && blkemu_timeline_abort (d->tl, c) > 0;
}

/* A task management notification: counted, published at once (they
 * are rare; a user watching a slow disk wants to see them come), and
 * the commands it aborts end at once, unless stalled.
 */
static void
count_tmr (struct sdisk *d, const struct tcmu_tmr_entry *t)
{
  switch (t->tmr_type) {
  case TCMU_TMR_ABORT_TASK:
  case TCMU_TMR_ABORT_TASK_SET:
  case TCMU_TMR_CLEAR_TASK_SET:
    d->aborted_commands += t->cmd_cnt;
    blkemu_disk_set_transport_count (d->emu, "scsi_aborted_commands",
                                     d->aborted_commands);
    break;
  case TCMU_TMR_LUN_RESET:
  case TCMU_TMR_TARGET_WARM_RESET:
  case TCMU_TMR_TARGET_COLD_RESET:
    d->resets++;
    blkemu_disk_set_transport_count (d->emu, "scsi_resets", d->resets);
    break;
  default: return;
  }
  /* An abort names its commands; a reset names every command it
   * aborts on the LUN.
   */
  uint64_t ended = 0;
  for (uint32_t i = 0; i < t->cmd_cnt; i++)
    ended += end_aborted (d, t->cmd_ids[i]);
  if (ended) {
    d->aborts_ended += ended;
    blkemu_disk_set_transport_count (d->emu, "scsi_aborts_ended",
                                     d->aborts_ended);
  }
}

/* A draining disk's answer to everything: fixed-format sense, NOT
 * READY, MEDIUM NOT PRESENT (sd's SYNCHRONIZE CACHE on removal takes it
 * as nothing left to flush, and retries nothing).
 */
static void
answer_gone (struct sdisk *d, uint16_t cmd_id)
{
  uint8_t sense[SENSE_LEN] = { 0x70, 0, 0x02 };
  sense[7] = SENSE_LEN - 8;
  sense[12] = 0x3a;
  answer (d, cmd_id, 0x02 /* CHECK CONDITION */, sense);
}

/* Every entry the kernel posted since the last look. */
static void
read_entries (struct sdisk *d)
{
  struct tcmu_mailbox *mb = mailbox (d);
  uint32_t head;
  while (d->next !=
         (head = __atomic_load_n (&mb->cmd_head, __ATOMIC_ACQUIRE))) {
    struct tcmu_cmd_entry *e = entry_at (d, d->next);
    uint32_t len = entry_len (e);
    if (tcmu_hdr_get_op (e->hdr.len_op) == TCMU_OP_CMD && d->drain)
      answer_gone (d, e->hdr.cmd_id);
    else if (tcmu_hdr_get_op (e->hdr.len_op) == TCMU_OP_CMD) {
      struct scmd *c = take_command (d, e);
      if (c)
        scsi_execute (c);
      else
        answer (d, e->hdr.cmd_id, 0x08 /* BUSY: no memory for it */, NULL);
    }
    else if (tcmu_hdr_get_op (e->hdr.len_op) == TCMU_OP_TMR && !d->drain)
      count_tmr (d, (const struct tcmu_tmr_entry *) e);
    /* PAD and TMR entries need no answer: the tail passes them. */
    d->next = (d->next + len) % d->cmdr_size;
  }
}

/* How long ppoll may sleep: until the timeline's wake-up (an absolute
 * CLOCK_MONOTONIC time; 0: poll; UINT64_MAX: until the ring has news).
 */
static struct timespec *
sleep_for (struct sdisk *d, struct timespec *ts)
{
  uint64_t at = d->tl ? blkemu_timeline_wake_at (d->tl) : UINT64_MAX;
  if (at == UINT64_MAX)
    return NULL;
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  uint64_t now_ns =
    (uint64_t) now.tv_sec * 1000000000u + (uint64_t) now.tv_nsec;
  uint64_t left = at > now_ns ? at - now_ns : 0;
  *ts = (struct timespec){ .tv_sec = (time_t) (left / 1000000000u),
                           .tv_nsec = (long) (left % 1000000000u) };
  return ts;
}

static void *
ring_thread (void *arg)
{
  struct sdisk *d = arg;
  struct pollfd fds[2] = { { .fd = d->uio_fd, .events = POLLIN },
                           { .fd = d->stop_fd, .events = POLLIN } };
  /* Deadlines are kept to microseconds: no slack on the sleeps. */
  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  for (;;) {
    /* New commands first (those due at once complete inside), then what
     * the sleep brought due.
     */
    read_entries (d);
    if (d->tl)
      blkemu_timeline_run (d->tl);
    struct timespec ts;
    if (ppoll (fds, 2, sleep_for (d, &ts), NULL) == -1) {
      if (errno == EINTR)
        continue;
      fprintf (stderr, "blkemu-scsi: %s: poll: %s\n", d->name,
               strerror (errno));
      break;
    }
    if (fds[1].revents)
      break;
    uint32_t events;
    if ((fds[0].revents & POLLIN) &&
        read (d->uio_fd, &events, sizeof events) == -1 && errno != EAGAIN)
      break;
  }
  return NULL;
}

/* The map's size, as uio publishes it ("0x..."). */
static size_t
map_size (int index)
{
  char path[96];
  snprintf (path, sizeof path, "/sys/class/uio/uio%d/maps/map0/size", index);
  FILE *f = fopen (path, "r");
  unsigned long long size = 0;
  if (f) {
    if (fscanf (f, "%llx", &size) != 1)
      size = 0;
    fclose (f);
  }
  return (size_t) size;
}

int
ring_start (struct sdisk *d)
{
  char path[32];
  d->complete = ring_complete;
  snprintf (path, sizeof path, "/dev/uio%d", d->uio_index);
  d->uio_fd = open (path, O_RDWR | O_CLOEXEC);
  if (d->uio_fd == -1) {
    fprintf (stderr, "blkemu-scsi: %s: %s: %s\n", d->name, path,
             strerror (errno));
    return -1;
  }
  d->map_size = map_size (d->uio_index);
  if (d->map_size == 0) {
    fprintf (stderr, "blkemu-scsi: %s: uio%d publishes no map\n", d->name,
             d->uio_index);
    return -1;
  }
  void *map =
    mmap (NULL, d->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, d->uio_fd, 0);
  if (map == MAP_FAILED) {
    fprintf (stderr, "blkemu-scsi: %s: mapping %s (%zu bytes): %s\n", d->name,
             path, d->map_size, strerror (errno));
    return -1;
  }
  d->map = map;
  struct tcmu_mailbox *mb = mailbox (d);
  if (mb->version != TCMU_MAILBOX_VERSION ||
      !(mb->flags & TCMU_MAILBOX_FLAG_CAP_OOOC)) {
    fprintf (stderr,
             "blkemu-scsi: %s: the kernel's TCMU ring is version %u, "
             "flags 0x%x: blkemu-scsi needs version %d with out-of-order "
             "completions\n",
             d->name, mb->version, mb->flags, TCMU_MAILBOX_VERSION);
    return -1;
  }
  d->cmdr_off = mb->cmdr_off;
  d->cmdr_size = mb->cmdr_size;
  /* From the tail: what a killed predecessor left unanswered is read
   * again (a server answers it, a drain fails it).
   */
  d->next = __atomic_load_n (&mb->cmd_tail, __ATOMIC_ACQUIRE);
  d->stop_fd = eventfd (0, EFD_CLOEXEC);
  if (d->stop_fd == -1)
    return -1;
  pthread_mutex_init (&d->tail_lock, NULL);
  pthread_mutex_init (&d->cmds_lock, NULL);
  if (d->emu && !(d->tl = blkemu_timeline_new (d->emu))) {
    fprintf (stderr, "blkemu-scsi: %s: no memory for its timeline\n", d->name);
    return -1;
  }
  int r = pthread_create (&d->thread, NULL, ring_thread, d);
  if (r) {
    fprintf (stderr, "blkemu-scsi: %s: ring thread: %s\n", d->name,
             strerror (r));
    return -1;
  }
  d->thread_started = true;
  return 0;
}

void
ring_stop (struct sdisk *d)
{
  if (d->thread_started) {
    uint64_t one = 1;
    if (write (d->stop_fd, &one, sizeof one) != sizeof one)
      abort ();
    pthread_join (d->thread, NULL);
    d->thread_started = false;
  }
  /* What it still holds completes now (ECANCELED), answered on the ring
   * while it is mapped.
   */
  blkemu_timeline_free (d->tl);
  d->tl = NULL;
  if (d->map) {
    munmap (d->map, d->map_size);
    d->map = NULL;
  }
  if (d->uio_fd > 0)
    close (d->uio_fd);
  d->uio_fd = -1;
  if (d->stop_fd > 0)
    close (d->stop_fd);
  d->stop_fd = -1;
}
