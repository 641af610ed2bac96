/* blkemu-ublk's parts: the control device (ctrl.c), the hardware queues
 * (queue.c) and the disks' life and the command line (blkemu-ublk.c).
 * ublksrv separates its library from its targets the same way.
 */
#ifndef BLKEMU_UBLK_H
#define BLKEMU_UBLK_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/blkzoned.h>
#include <linux/ublk_cmd.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "frontend.h"

#define CONTROL_DEV "/dev/ublk-control"
#define MAX_DISKS 64
#define MAX_DEPTH UBLK_MAX_QUEUE_DEPTH /* tags per queue: the driver's */
#define MAX_QUEUES 64                  /* the driver allows one per CPU */
#define EVENTFD_TAG UINT64_MAX       /* user_data of the completion wake-up */
#define TIMEOUT_TAG (UINT64_MAX - 1) /* user_data of a deadline's timeout */
#define DRAIN_SECONDS 5              /* --drain-timeout's default */
#define F_RECOVERY (UBLK_F_USER_RECOVERY | UBLK_F_USER_RECOVERY_REISSUE)

/* Zoned devices (Linux >= 6.6) and the user-copy data path they need;
 * Debian 12's headers predate both.  Values from uapi ublk_cmd.h.
 */
#define F_USER_COPY (1ull << 7)
#define F_ZONED (1ull << 8)
#define PARAM_TYPE_ZONED (1u << 3)
#define IO_OP_ZONE_OPEN 10
#define IO_OP_ZONE_CLOSE 11
#define IO_OP_ZONE_FINISH 12
#define IO_OP_ZONE_APPEND 13
#define IO_OP_ZONE_RESET_ALL 14
#define IO_OP_ZONE_RESET 15
#define IO_OP_REPORT_ZONES 18
/* pread/pwrite offset of a tag's request data on /dev/ublkcN. */
#define IO_BUF_BITS 25
#define TAG_BITS 16
static inline off_t
user_copy_offset (unsigned q_id, unsigned tag)
{
  return (off_t) (UBLKSRV_IO_BUF_OFFSET +
                  ((uint64_t) q_id << (IO_BUF_BITS + TAG_BITS)) +
                  ((uint64_t) tag << IO_BUF_BITS));
}
/* A buffer keeps this much of a large request's pages; beyond it they go
 * back to the kernel (MADV_FREE), so memory follows what is in flight.
 */
#define KEEP_BYTES (1u << 20)

struct done {
  uint16_t tag;
  int32_t result;
  uint64_t addr; /* user copy: 0, or a zone append's LBA */
};

struct udisk;
struct uqueue;

/* A tag's request in the core: what the completion callback needs. */
struct utag {
  struct uqueue *q;
  uint16_t tag;
  bool data;   /* read or write: the buffer was used */
  bool read;   /* a read (user copy: pwrite its data back) */
  bool append; /* commit carries the zone append's LBA */
  bool zeroes; /* a read of zeroes: its buffer was not written */
  bool sent;   /* a read the core wrote into the request's pages */
  /* The buffer's first bytes known to be zeroes (without user copy a
   * read of zeroes is copied from it: zeroed once, not every time).
   */
  uint32_t zero_len;
  uint32_t len;
  uint64_t append_at; /* where the core put a zone append */
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
  char *bufs; /* depth * buf_bytes */
  /* With user copy, buf_bytes never written: the zero page, where a
   * read of zeroes comes from (NULL without user copy).
   */
  const char *zeros;
  struct io_uring ring;
  bool ring_ok, thread_ok;
  bool fixed_cdev; /* /dev/ublkcN is the ring's registered file 0 */
  int efd;         /* completions -> queue thread */
  uint64_t efd_value;
  /* The deadlines of the requests, waited out on the ring (NULL: the
   * core's completion thread fires them, --completion-thread).
   */
  struct blkemu_timeline *tl;
  struct __kernel_timespec timeout; /* read by the kernel at submission */
  uint64_t armed_at; /* the timeout armed last, until it fires */
  pthread_t thread;
  pthread_t self; /* the queue thread, as it sees itself */
  struct utag *tags;

  pthread_mutex_t lock;
  pthread_cond_t fetched;  /* main waits for the first FETCH_REQs */
  struct done *done;       /* completed elsewhere, to commit (under LOCK) */
  unsigned ndone;          /* written under LOCK, atomically */
  struct done *committing; /* the queue thread's copy of DONE */
  struct done *local;      /* completed on the queue thread: no lock */
  unsigned nlocal;
  bool fetch_sent;
  int queue_err;
};

struct udisk {
  struct blkemu_disk *emu;
  struct blkemu_geometry geo;
  const char *name;
  int dev_id; /* N of /dev/ublkbN, -1 before ADD_DEV */
  bool added, started;
  bool recoverable;    /* UBLK_F_USER_RECOVERY(_REISSUE): outlives a kill */
  bool lend_reads;     /* reads from the store to the pages (user copy) */
  bool take_writes;    /* writes from the pages to the store (user copy) */
  bool recovering;     /* --recover: taken over from a killed server */
  int recover_id;      /* --recover ID for this disk, else -1 */
  unsigned drain_ms;   /* at stop, requests get this long to finish */
  bool ring_deadlines; /* timelines on the queues' rings */
  unsigned depth;      /* tags per queue */
  unsigned nqueues;    /* hardware queues */
  uint32_t max_bytes;  /* the largest request: max-transfer */
  size_t buf_bytes;    /* per tag: max_bytes in whole pages */
  bool user_copy;      /* data by pread/pwrite on /dev/ublkcN */
  uint64_t flags;      /* UBLK_F_* the driver granted */
  struct blkemu_zoned zoned; /* nr_zones 0: not zoned */
  int cdev_fd;               /* /dev/ublkcN */
  struct uqueue *queues;
};

/* A free submission entry.  The rings are sized so that every command a
 * tag can have outstanding fits; a full ring is flushed first anyway.
 */
static inline struct io_uring_sqe *
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

/* ctrl.c: /dev/ublk-control, used by the main thread only. */
int ctrl_open (void);
void ctrl_close (void);
/* One command; returns the driver's result (< 0 is -errno). */
int ctrl_cmd (unsigned op, uint32_t dev_id, void *addr, uint16_t len,
              uint64_t data0);
/* The same; past GRACE_MS without an answer, LATE (ARG) runs once. */
int ctrl_cmd_grace (unsigned op, uint32_t dev_id, void *addr, uint16_t len,
                    uint64_t data0, unsigned grace_ms, void (*late) (void *),
                    void *arg);
/* SET_PARAMS from the disk's geometry. */
int set_params (struct udisk *d);
/* --delete-stale: 0 or 1 (the exit status). */
int delete_stale (void);
/* --recover ID: START_USER_RECOVERY, D taking the device's queues. */
int start_recovery (struct udisk *d, int id);
int print_features (FILE *fp);
void feature_names (uint64_t flags, char *out, size_t len);

/* queue.c: map, start its thread and wait for every FETCH; stop after
 * STOP_DEV.
 */
int start_queue (struct uqueue *q);
void stop_queue (struct uqueue *q);
/* blkemu_read_sink for a disk with user copy: COOKIE is the tag. */
int queue_read_sink (void *cookie, uint64_t at, const void *data,
                     uint64_t len);
/* blkemu_write_source for a disk with user copy: COOKIE is the tag. */
int queue_write_source (void *cookie, uint64_t at, void *dst, uint64_t len);

#endif
