/* blkemu - userspace block-device emulator: the public interface.
 *
 * Every frontend (the nbdkit plugin, blkemu-fuse, blkemu-ublk) builds a
 * disk from key=value specs and its own descriptor, and hands each
 * request to blkemu_io() or blkemu_submit(); limits, timing, stats,
 * trace, crash states and runtime control all live behind this header.
 */
#ifndef BLKEMU_BLKEMU_H
#define BLKEMU_BLKEMU_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BLKEMU_VERSION "0.1.0"

enum blkemu_op {
  BLKEMU_OP_READ,
  BLKEMU_OP_WRITE,
  BLKEMU_OP_FLUSH,
  BLKEMU_OP_TRIM,
  BLKEMU_OP_ZERO,
  BLKEMU_OP_COUNT
};

/* Request flags, matching the NBD command flags in meaning. */
#define BLKEMU_FLAG_FUA (1u << 0)      /* write through before completing */
#define BLKEMU_FLAG_MAY_TRIM (1u << 1) /* zero may deallocate */
/* An atomic write (SCSI's WRITE ATOMIC, the kernel's REQ_ATOMIC): it
 * reaches the medium whole or not at all -- no crash mode tears it or
 * leaves it unreadable -- and is refused (EINVAL) where the device
 * would have to split it (oversize=split past max-transfer or across
 * boundary=).
 */
#define BLKEMU_FLAG_ATOMIC (1u << 2)

/* blkemu_io's answer when the drop fault fires: the frontend should drop
 * the client's connection (the network went away), then keep serving.
 * Not an errno: a frontend without connections maps it to EIO.
 */
#define BLKEMU_ERR_DROP 0x10000

/* A timeline's answer (blkemu_submit's DONE) for a read that failed on an
 * unreadable sector: a bad range, or the blocks of a write a crash
 * interrupted.  A medium error, decided when the request was admitted,
 * which a frontend reports as its transport does (ublk: ENODATA, the
 * kernel's BLK_STS_MEDIUM; SCSI: MEDIUM ERROR); not an errno:
 * frontend_errno and the blocking calls (blkemu_io) give EIO.  An
 * injected error, or the power going while the read waited, stays EIO.
 */
#define BLKEMU_ERR_MEDIUM 0x80000

/* Functions that can fail with a message fill ERR (ERRLEN bytes, the
 * message cut to fit) with one line, "key=value: rule".  A buffer of
 * BLKEMU_ERR_MAX holds any message whole.
 */
#define BLKEMU_ERR_MAX 512
/* Room for any value blkemu_disk_get writes (a path, with its NUL). */
#define BLKEMU_VALUE_MAX 4200

struct blkemu_spec;     /* key=value settings, before validation */
struct blkemu_disk;     /* an emulated disk, ready for requests */
struct blkemu_frontend; /* what a frontend carries (see "frontends") */

/* --- spec --------------------------------------------------------- */

struct blkemu_spec *blkemu_spec_new (void);
void blkemu_spec_free (struct blkemu_spec *spec);

/* Set one key.  Unknown keys and malformed values fail here, with a message
 * naming the key, the value and the rule.  Returns 0 or -1.
 */
int blkemu_spec_set (struct blkemu_spec *spec, const char *key,
                     const char *value, char *err, size_t errlen);

/* Parse "key=value,key=value" (the --disk syntax).  Returns 0 or -1. */
int blkemu_spec_set_list (struct blkemu_spec *spec, const char *list,
                          char *err, size_t errlen);

/* The value set for KEY, or NULL (the frontends use this for name=). */
const char *blkemu_spec_get (const struct blkemu_spec *spec, const char *key);

/* Print the table of keys (name, default, runtime-changeable, help). */
void blkemu_spec_print_help (FILE *fp, const char *indent);

/* List the presets (profiles/NAME.conf) with their one-line descriptions.
 * Returns how many were found.
 */
int blkemu_profiles_print (FILE *fp);

/* --- disk --------------------------------------------------------- */

/* Resolve the profile, validate every key and cross-key rule, check
 * that frontend FE can serve the disk (see "frontends" below), open the
 * backend.  Does not start threads (nbdkit may still fork): call
 * blkemu_disk_start() from the process that will serve.
 */
struct blkemu_disk *blkemu_disk_open (const struct blkemu_spec *spec,
                                      const struct blkemu_frontend *fe,
                                      char *err, size_t errlen);
/* Open the disk of a frontend's --disk SPEC ("name=d0,key=value,..."):
 * name= defaults to dINDEX and must be a plain file name.  Returns NULL
 * with ERR filled.
 */
struct blkemu_disk *blkemu_disk_open_spec (const char *list, size_t index,
                                           const struct blkemu_frontend *fe,
                                           char *err, size_t errlen);
/* The disk's name=. */
const char *blkemu_disk_name (const struct blkemu_disk *disk);
/* Start the service thread (control socket, SIGUSR1 stats dumps). */
int blkemu_disk_start (struct blkemu_disk *disk, char *err, size_t errlen);
/* Stop the service thread, write stats= and the summary, free the disk.
 * Returns 0, or -1 when stats= could not be written (said on stderr):
 * a frontend's exit status should say so.
 */
int blkemu_disk_close (struct blkemu_disk *disk);
/* The process is exiting without blkemu_disk_close (its host failed after
 * the open, before serving): remove what the disk put in the file system
 * — its control socket, unless a forked process still holds it to serve.
 * Frees nothing; call nothing on DISK after it.  From an atexit handler.
 */
void blkemu_disk_abandon (struct blkemu_disk *disk);

/* Serve one request.  BUF holds LEN bytes for read/write, NULL otherwise;
 * a write only reads it (one pointer type serves both: a const buffer
 * may be cast; the write-only calls below take const void *).
 * Returns 0, a positive errno (EINVAL for a limit violation, EIO ...;
 * ESHUTDOWN once blkemu_disk_cancel was called) or BLKEMU_ERR_DROP.
 * Blocks until the request's modelled completion time: the blocking form
 * of blkemu_submit, for thread-per-request frontends (nbdkit).
 */
int blkemu_io (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
               uint64_t len, uint64_t offset, unsigned flags);

/* Serve one request without blocking (ublksrv's handle_io_async, fio's
 * fio_q_status).  Checks, schedules and moves the data, and returns at
 * once, saying which of two things happened:
 * - BLKEMU_QUEUED: DONE(COOKIE, result) will be called exactly once, with
 *   what blkemu_io would return, at the request's modelled completion
 *   time, from the disk's completion thread (one per disk, started by the
 *   first submit), possibly before blkemu_submit has returned;
 * - anything else: the request is over and this is its result (refused,
 *   or due at once: no latency); DONE is never called for it.
 * DONE is never called from inside the submit call, so a frontend ends a
 * request it got back complete on its own terms (after its own
 * bookkeeping, outside any lock the core holds).  A write's BUF is not
 * used after the call returns; a read's must stay valid until DONE.
 * With a backend whose calls block (backend=file) what the page cache
 * cannot serve at once moves on the disk's I/O worker thread, in arrival
 * order (a write's data copied); DONE then comes at the modelled time or
 * when the transfer ends, whichever is later (possibly from the worker).
 * DONE must not block: hand the result to the frontend's own loop.
 */
#define BLKEMU_QUEUED (-1)
#define BLKEMU_SUBMIT_ANSWER __attribute__ ((warn_unused_result))
typedef void (*blkemu_done_cb) (void *cookie, int result);
int blkemu_submit (struct blkemu_disk *disk, enum blkemu_op op, void *buf,
                   uint64_t len, uint64_t offset, unsigned flags,
                   blkemu_done_cb done, void *cookie) BLKEMU_SUBMIT_ANSWER;

/* Reads lent instead of copied.  A disk whose backend can lend its store
 * (backend=memory: blkemu_disk_lends_reads) hands a submitted
 * read's data to SINK(COOKIE, AT, DATA, LEN), piece by piece in order, AT
 * bytes into the read (DATA NULL: LEN bytes of zeroes), from inside
 * blkemu_submit or blkemu_timeline_submit, while the piece is held whole
 * against writes.  The read's buffer is then not written and DONE gets
 * BLKEMU_READ_SENT instead of 0.  SINK returns 0 or an errno, which fails
 * the read.  A zoned disk's zeroes past a write pointer come as DATA
 * NULL.  A read that needs its data afterwards (a bit flip) uses the
 * buffer as before.  Set it before the first request (NULL: none).  ublk
 * with user copy writes the store into the request's pages: one copy
 * instead of two.
 */
#define BLKEMU_READ_SENT 0x40000
typedef int (*blkemu_read_sink) (void *cookie, uint64_t at, const void *data,
                                 uint64_t len);
bool blkemu_disk_lends_reads (const struct blkemu_disk *disk);
void blkemu_disk_set_read_sink (struct blkemu_disk *disk,
                                blkemu_read_sink sink);

/* Writes taken instead of copied, the mirror of the read sink.  A
 * frontend that can copy a write's data from where it lies (ublk with
 * user copy: a pread of the request's pages) sets SOURCE; the buffers of
 * the writes it then submits (blkemu_submit, blkemu_timeline_submit,
 * blkemu_submit_append) come unfilled, and the core calls
 * SOURCE(COOKIE, AT, DST, LEN) for the LEN bytes AT bytes into the
 * write: straight into the store where it can (backend=memory, and no
 * write cache, crash view, silent fault or zones in the way), else into
 * the buffer, whole, before anything reads it.  Always from inside the
 * submit call, on its thread.  SOURCE returns 0 or an errno, which fails
 * the write.  Set it before the first request (NULL: none).
 */
typedef int (*blkemu_write_source) (void *cookie, uint64_t at, void *dst,
                                    uint64_t len);
void blkemu_disk_set_write_source (struct blkemu_disk *disk,
                                   blkemu_write_source source);

/* Deadlines on a frontend's own loop.  blkemu_submit's requests are
 * completed by the disk's completion thread, so a frontend with an event
 * loop of its own (ublk's io_uring) pays a hop between threads for each
 * one.  A timeline lets that loop wait out the deadlines instead: the
 * requests submitted through it complete, DONE called on the loop's
 * thread, when the loop calls blkemu_timeline_run.  The loop sleeps until
 * blkemu_timeline_wake_at (an absolute CLOCK_MONOTONIC time in ns, a
 * little before the earliest deadline, learned from how late this
 * machine's wake-ups are; 0 when it has come: the loop polls, not
 * sleeps; UINT64_MAX when nothing waits) and calls blkemu_timeline_run after
 * every wake-up.  A timeline belongs to one thread, which submits through
 * it and runs it; blkemu_disk_cancel completes what it holds from the
 * cancelling thread.  Free it before blkemu_disk_close.  Zone commands
 * and zone append have timeline forms (below blkemu_submit_append).
 *
 * The submit calls answer as blkemu_submit does: BLKEMU_QUEUED, or the
 * result of a request refused or already due (DONE not called).  DONE
 * comes on the owner's thread from blkemu_timeline_run; a file disk's
 * I/O worker calls it when a transfer ends after the deadline, and a
 * cancel from the cancelling thread: a frontend whose DONE touches
 * state the loop owns hands such completions back (ublk: an eventfd).
 */
struct blkemu_timeline;
struct blkemu_timeline *blkemu_timeline_new (struct blkemu_disk *disk);
void blkemu_timeline_free (struct blkemu_timeline *tl);
int blkemu_timeline_submit (struct blkemu_timeline *tl, enum blkemu_op op,
                            void *buf, uint64_t len, uint64_t offset,
                            unsigned flags, blkemu_done_cb done,
                            void *cookie) BLKEMU_SUBMIT_ANSWER;
uint64_t blkemu_timeline_wake_at (struct blkemu_timeline *tl);
/* Completes every request due now; returns how many. */
unsigned blkemu_timeline_run (struct blkemu_timeline *tl);
/* blkemu_disk_abort for the requests submitted through TL, from its
 * owner's thread: DONE(COOKIE, ECANCELED) called there.
 */
size_t blkemu_timeline_abort (struct blkemu_timeline *tl, void *cookie);

/* Stop waiting: every pending request completes now with ESHUTDOWN
 * (blkemu_io's waiters return, blkemu_submit's callbacks fire from the
 * caller's thread), and later requests are refused with it.  Data the
 * requests moved stays (a write refused this way may or may not have
 * reached the medium, as on a device that lost its link).  For a
 * frontend's shutdown; blkemu_disk_close calls it too.
 */
void blkemu_disk_cancel (struct blkemu_disk *disk);

/* The host aborted a request (SCSI's ABORT TASK, a timed-out command):
 * every request submitted with COOKIE through blkemu_submit that still
 * waits for its deadline completes now, DONE(COOKIE, ECANCELED) called
 * from the caller's thread, as a device drops an aborted command.  Not
 * one held by a stall (stall=: a hung device answers no abort).  Data
 * it moved stays (a write may or may not have reached the medium).
 * Counted in stats as `aborted`.  Returns how many were ended: 0 when
 * none waits (already completed, completing now, or stalled).
 */
size_t blkemu_disk_abort (struct blkemu_disk *disk, void *cookie);

/* From a signal handler (async-signal-safe, nothing else is): every
 * blocking wait (blkemu_io, blkemu_zone_command, blkemu_zone_append)
 * returns now with ESHUTDOWN and later requests are refused with it.
 * For a frontend whose host stops on a signal while its threads wait in
 * the core (nbdkit); blkemu_disk_cancel or blkemu_disk_close must still
 * follow, outside the handler, for the rest.
 */
void blkemu_disk_interrupt (struct blkemu_disk *disk);

/* Report allocated/hole ranges from OFFSET for up to LEN bytes.  CB returns
 * 0 to continue, -1 to stop.  Returns 0 or a positive errno.
 */
typedef int (*blkemu_extent_cb) (void *opaque, uint64_t offset,
                                 uint64_t length, bool hole);
int blkemu_extents (struct blkemu_disk *disk, uint64_t offset, uint64_t len,
                    blkemu_extent_cb cb, void *opaque);

/* What a frontend advertises. */
struct blkemu_geometry {
  uint64_t size_bytes;
  uint32_t logical_block_size;
  uint32_t physical_block_size;
  uint32_t min_io_bytes;
  uint32_t opt_io_bytes;
  uint32_t max_transfer_bytes;
  uint32_t queue_depth;            /* requests the device holds at once */
  uint64_t boundary_bytes;         /* no request crosses a multiple; 0: none */
  uint64_t max_discard_bytes;      /* 0: unlimited */
  uint64_t max_write_zeroes_bytes; /* 0: unlimited */
  /* Limits only a kernel above the device can apply (0: its default). */
  uint64_t virt_boundary_bytes; /* mask + 1 */
  uint32_t discard_granularity; /* 0: the physical block */
  uint32_t discard_alignment;
  uint32_t max_discard_segments;
  uint32_t max_segments;
  uint32_t max_segment_size;
  uint64_t segment_boundary_bytes; /* mask + 1 */
  uint32_t dma_alignment;          /* mask + 1 */
  /* Atomic writes (BLKEMU_FLAG_ATOMIC) a protocol can ask for: at most
   * this many bytes (0: none), length and offset multiples of the
   * granularity.
   */
  uint32_t atomic_write_max_bytes, atomic_write_granularity;
  /* Metadata beside each logical block (a controller keeps it: 0 none)
   * and the T10 protection type in it (0 none, 1-3).
   */
  uint32_t metadata_bytes;
  uint32_t protection_type;
  bool rotational;
  bool can_flush, can_fua, can_trim, can_zero, can_extents, can_multi_conn;
  bool persistent; /* data outlives the process (file) */
};
void blkemu_disk_geometry (struct blkemu_disk *disk,
                           struct blkemu_geometry *geo);

/* --- zones (zoned=host-managed) ----------------------------------- */

/* Zone commands, and a zone's type and condition (Linux's values, from
 * <linux/blkzoned.h>, so a frontend copies them through).
 */
enum blkemu_zone_op {
  BLKEMU_ZONE_OPEN,
  BLKEMU_ZONE_CLOSE,
  BLKEMU_ZONE_FINISH,
  BLKEMU_ZONE_RESET,
  BLKEMU_ZONE_RESET_ALL,
  BLKEMU_ZONE_OP_COUNT
};
#define BLKEMU_ZONE_TYPE_CONVENTIONAL 1
#define BLKEMU_ZONE_TYPE_SEQWRITE_REQ 2
#define BLKEMU_ZONE_COND_NOT_WP 0x0
#define BLKEMU_ZONE_COND_EMPTY 0x1
#define BLKEMU_ZONE_COND_IMP_OPEN 0x2
#define BLKEMU_ZONE_COND_EXP_OPEN 0x3
#define BLKEMU_ZONE_COND_CLOSED 0x4
#define BLKEMU_ZONE_COND_READONLY 0xD
#define BLKEMU_ZONE_COND_FULL 0xE
#define BLKEMU_ZONE_COND_OFFLINE 0xF

struct blkemu_zone {
  uint64_t start, len, capacity, wp; /* bytes */
  unsigned type, cond;
};

/* The zone geometry (nr_zones 0: not zoned). */
struct blkemu_zoned {
  uint64_t zone_size, zone_capacity; /* bytes */
  uint32_t nr_zones, nr_conventional;
  uint32_t max_open, max_active; /* 0: no limit */
  uint32_t max_append_bytes;
};
void blkemu_disk_zoned (struct blkemu_disk *disk, struct blkemu_zoned *zg);

/* A zone command on the zone starting at OFFSET (reset-all: any), timed
 * by latency-zone like any request; answered (BLKEMU_QUEUED or the
 * result) and DONE(COOKIE, result) called as for blkemu_submit.  Errors: EIO
 * (the zone's condition does not take it, or a conventional zone),
 * ETOOMANYREFS (no zone can be opened), EOVERFLOW (no zone can become active),
 * EINVAL (not a zone start).
 */
int blkemu_zone_submit (struct blkemu_disk *disk, enum blkemu_zone_op op,
                        uint64_t offset, blkemu_done_cb done,
                        void *cookie) BLKEMU_SUBMIT_ANSWER;
int blkemu_zone_command (struct blkemu_disk *disk, enum blkemu_zone_op op,
                         uint64_t offset);
/* Zone append: write LEN bytes at the write pointer of the zone starting
 * at ZONE_OFFSET; *WRITTEN_AT (set before DONE is called) is where they
 * went.  Otherwise as blkemu_submit with BLKEMU_OP_WRITE.
 */
int blkemu_submit_append (struct blkemu_disk *disk, const void *buf,
                          uint64_t len, uint64_t zone_offset, unsigned flags,
                          uint64_t *written_at, blkemu_done_cb done,
                          void *cookie) BLKEMU_SUBMIT_ANSWER;
/* blkemu_zone_submit and blkemu_submit_append through a timeline: DONE
 * on its owner's thread, as for blkemu_timeline_submit.
 */
int blkemu_timeline_zone_submit (struct blkemu_timeline *tl,
                                 enum blkemu_zone_op op, uint64_t offset,
                                 blkemu_done_cb done,
                                 void *cookie) BLKEMU_SUBMIT_ANSWER;
int blkemu_timeline_append (struct blkemu_timeline *tl, const void *buf,
                            uint64_t len, uint64_t zone_offset, unsigned flags,
                            uint64_t *written_at, blkemu_done_cb done,
                            void *cookie) BLKEMU_SUBMIT_ANSWER;
int blkemu_zone_append (struct blkemu_disk *disk, const void *buf,
                        uint64_t len, uint64_t zone_offset, unsigned flags,
                        uint64_t *written_at);
/* A zone failing as media does (null_blk's zone_readonly/zone_offline):
 * COND BLKEMU_ZONE_COND_READONLY (reads work, writes and zone commands
 * fail with EIO), BLKEMU_ZONE_COND_OFFLINE (reads fail too), or
 * BLKEMU_ZONE_COND_EMPTY to bring it back, empty (a replaced zone).  The
 * zone starts at OFFSET and is sequential; it leaves the open and active
 * counts.  Returns 0 or -1 with ERR filled.
 */
int blkemu_zone_set_condition (struct blkemu_disk *disk, uint64_t offset,
                               unsigned cond, char *err, size_t errlen);
/* Up to NR zones from the one holding OFFSET into OUT; returns how many
 * (0 past the end, or when the disk is not zoned).
 */
unsigned blkemu_zone_report (struct blkemu_disk *disk, uint64_t offset,
                             struct blkemu_zone *out, unsigned nr);

/* --- frontends ----------------------------------------------------- */

/* A frontend describes itself when it opens a disk: what it tells the
 * layer above (NBD's block-size constraints, the kernel's queue limits
 * under ublk), what it can express, and its own limits.  The core
 * refuses a disk the frontend cannot serve and warns about keys it
 * leaves without effect, from this alone; it never names a frontend.
 */
#define BLKEMU_CARRY_TOLD 1u /* the layer above is told and splits by it */
#define BLKEMU_CARRY_DEVICE                                                   \
  2u /* the device refuses or splits what breaks it */
struct blkemu_carry {
  const char *key; /* a key name, as blkemu_spec_set takes it */
  unsigned how;    /* BLKEMU_CARRY_* or 0: no effect there */
};
/* What a frontend can express beyond read, write, flush, trim and zero. */
#define BLKEMU_FE_ZONES (1u << 0)         /* zone commands, reports, append */
#define BLKEMU_FE_MULTI_DISCARD (1u << 1) /* several ranges in one discard */
/* Takes BLKEMU_READ_ZEROES for a read whose data is all zeroes (a
 * backend=null disk, a memory disk's holes): blkemu_submit's and a
 * timeline's DONE get it instead of 0, and the read's buffer was not
 * written; the frontend delivers the zeroes (ublk from a zero page, one
 * copy instead of two).
 */
#define BLKEMU_FE_ZERO_READS (1u << 2)
/* Keeps metadata beside each block (metadata-size, protection) in the
 * disk itself: qemu's NVMe namespace, after the data.
 */
#define BLKEMU_FE_METADATA (1u << 3)
#define BLKEMU_READ_ZEROES 0x20000
struct blkemu_frontend {
  const char *name; /* in messages: "NBD" */
  const char *id;   /* in stats (transport.frontend), tables: "nbd" */
  const char *prog; /* who warns on stderr: "nbdkit-blkemu-plugin" */
  /* The keys it tells the layer above, or otherwise treats than the
   * core would (a key not listed: the device enforces it by itself, or,
   * for a hint only the layer above can apply — physical-block-size,
   * min-io, opt-io, rotational and the kernel's segment limits — it has
   * no effect), ended by { NULL, 0 }.
   */
  const struct blkemu_carry *carries;
  unsigned ops;                /* BLKEMU_FE_* */
  uint32_t max_transfer_bytes; /* the largest payload it moves; 0: any */
};
/* A disk FE cannot serve is refused at open ("KEY=VALUE: FE has no ...");
 * keys set away from their defaults that FE neither tells nor enforces
 * are warned about on stderr ("PROG: NAME: not carried by FE, no effect
 * there: key=value ...") and listed in stats as transport.not_carried.
 * FE must outlive the disk.  FE NULL: the caller drives the C API
 * itself, every op and no warnings (tests, tools, fuzzers).
 */

/* Print the table of the keys some of FES[0..N) does not simply leave to
 * the device: "key ID ...", each column told+device, told, device or
 * not-carried (blkemu-ctl carriage; the man pages' tables).
 */
void blkemu_carriage_print (FILE *fp, const struct blkemu_frontend *const *fes,
                            size_t n);

/* Frontend facts shown in stats under "transport" (e.g. FUSE's request
 * cap), in the order first set; setting a KEY again replaces its value.
 * KEY and VALUE are copied; VALUE is emitted as a JSON string, COUNT (a
 * number or a counter: ublk's queues, SCSI's resets) as a JSON number.
 * Any number of keys (none is dropped); 0, or -1 without memory.
 */
int blkemu_disk_set_transport (struct blkemu_disk *disk, const char *key,
                               const char *value);
int blkemu_disk_set_transport_count (struct blkemu_disk *disk, const char *key,
                                     uint64_t count);
/* Facts a frontend only learns by asking (LIO's per-port command
 * counts): REFRESH(ARG) runs before every stats JSON is made, on the
 * thread that asks for it (the control thread, a stats= dump), and
 * calls blkemu_disk_set_transport.  It must not block long nor read the
 * stats.  It may be set while the disk serves (NULL: none).
 */
typedef void (*blkemu_transport_refresh_fn) (void *arg);
void blkemu_disk_set_transport_refresh (struct blkemu_disk *disk,
                                        blkemu_transport_refresh_fn refresh,
                                        void *arg);

/* A command of the frontend's own on the disk's control socket (and so
 * blkemu-ctl): a line "NAME ARG..." with at most MAX_ARGS arguments
 * (at most BLKEMU_COMMAND_ARGS) runs RUN(ARG, ARGC, ARGV, REPLY,
 * REPLY_LEN) on the control thread, which writes its one-line answer
 * into REPLY, without the newline: "ok ..." or "error: ..." naming what
 * it refused.  USAGE ("path N up|down") joins 'help'.  RUN must not block
 * for long: the control thread serves every disk.  NAME and USAGE are
 * not copied.  At most BLKEMU_COMMANDS_MAX per disk, added before it
 * serves.  Returns 0, or -1 with ERR (a name the core or an earlier call
 * took, too many).
 */
#define BLKEMU_COMMANDS_MAX 4
#define BLKEMU_COMMAND_ARGS 8
typedef void (*blkemu_command_fn) (void *arg, int argc, char *const *argv,
                                   char *reply, size_t reply_len);
int blkemu_disk_add_command (struct blkemu_disk *disk, const char *name,
                             int max_args, const char *usage,
                             blkemu_command_fn run, void *arg, char *err,
                             size_t errlen);

/* Runtime control, the same for the control socket and FUSE attribute
 * files.  Each returns 0 or -1 with ERR filled.
 */
int blkemu_disk_get (struct blkemu_disk *disk, const char *key, char *out,
                     size_t outlen, char *err, size_t errlen);
int blkemu_disk_set (struct blkemu_disk *disk, const char *key,
                     const char *value, char *err, size_t errlen);
void blkemu_disk_reset_stats (struct blkemu_disk *disk);
/* Power loss: with write-cache=yes the writes not yet flushed, FUA'd or
 * destaged are undone; every request fails with EIO until power-on.  A
 * flush in progress fails.  Returns 0 or -1 with ERR filled.
 */
int blkemu_disk_crash (struct blkemu_disk *disk, char *err, size_t errlen);

/* Crash states (blkemu-robustness(7)).  Writes acknowledged since the
 * last completed flush, and not FUA'd, written through or destaged,
 * reach the medium:
 *   LOSE_ALL  none of them (blkemu_disk_crash);
 *   SUBSET    each one whole or not at all, independently: every block
 *             holds its flushed version or one written since;
 *   TORN      as SUBSET, and a write may land in part, cut at the
 *             atomic unit (atomic-unit=, default physical-block-size).
 * The choice is a function of SEED and the disk's history: the same seed
 * after the same writes gives the same state.
 */
enum blkemu_crash_mode {
  BLKEMU_CRASH_LOSE_ALL,
  BLKEMU_CRASH_SUBSET,
  BLKEMU_CRASH_TORN,
  BLKEMU_CRASH_INTERRUPTED, /* as TORN, and the writes in flight leave
                               their sectors unreadable until written
                               again (not for views) */
  BLKEMU_CRASH_PICK,        /* a SUBSET state named, not drawn: bit I of
                               SEED set = the Ith cached write, oldest
                               first (0), reached the medium whole; clear
                               (or I >= 64) = lost.  Seeds 0 .. 2^W - 1
                               enumerate every subset of W writes */
  BLKEMU_CRASH_MODE_COUNT
};
enum blkemu_crash_fate {
  BLKEMU_FATE_LOST,
  BLKEMU_FATE_PERSISTED,
  BLKEMU_FATE_TORN
};
/* What a crash did to the writes it found in the cache. */
struct blkemu_crash_report {
  enum blkemu_crash_mode mode;
  uint64_t seed;
  uint64_t persisted, lost, torn; /* writes */
  uint64_t lost_bytes;            /* bytes put back to older versions */
};
/* "lose-all", "subset", "torn", "interrupted"; NULL past the last. */
const char *blkemu_crash_mode_name (enum blkemu_crash_mode mode);
/* Returns 0 with *MODE set, or -1 when NAME is no mode. */
int blkemu_crash_mode_parse (const char *name, enum blkemu_crash_mode *mode);
/* The "MODE [SEED]" of a crash or view command, WHAT naming it in the
 * message: SEED a whole number below 2^64, or NULL for one drawn at
 * random (say it back: it replays the state).  Returns 0, or -1 with ERR
 * ("WHAT MODE: MODE must be ...", "WHAT MODE SEED: SEED must be ...").
 */
int blkemu_crash_args (const char *what, const char *mode_text,
                       const char *seed_text, enum blkemu_crash_mode *mode,
                       uint64_t *seed, char *err, size_t errlen);
/* Power loss producing MODE's state from SEED; REPORT (if not NULL) says
 * what it did.  On a zoned disk each sequential zone keeps a prefix of
 * its writes (no hole below a write pointer); there an interrupted
 * write is a torn one (the drive finds its pointer after the last
 * sector it wrote whole), and only conventional zones are left
 * unreadable.  Returns 0 or -1 with ERR filled.
 */
int blkemu_disk_crash_state (struct blkemu_disk *disk,
                             enum blkemu_crash_mode mode, uint64_t seed,
                             struct blkemu_crash_report *report, char *err,
                             size_t errlen);

/* Crash views: many crash states of one epoch, the disk kept.
 * blkemu_disk_power_off takes the disk offline (requests in flight fail
 * with EIO, as at a crash) and keeps the cache's unflushed writes.  Then
 * blkemu_disk_view_open serves MODE's state from SEED, as a crash would
 * leave it, without touching the medium or the cache: reads see the
 * state, writes (a journal replay, fsck's repairs) go to a scratch
 * overlay.  blkemu_disk_view_close throws the view and its writes away
 * (requests still in it fail with EIO) and the disk is off again, ready
 * for the next view.  At the end, a crash picks the state the disk
 * keeps, or blkemu_disk_power_on brings it back with every write (it
 * also ends an open view).  Memory: the put-back data of one state
 * (at most the cache's) plus what is written in the view.  On a zoned
 * disk a view has the state's write pointers and zone conditions, and
 * its zone commands and writes change them in the view only (never the
 * sidecar).  Each returns 0 or -1 with ERR filled.
 */
int blkemu_disk_power_off (struct blkemu_disk *disk, char *err, size_t errlen);
int blkemu_disk_view_open (struct blkemu_disk *disk,
                           enum blkemu_crash_mode mode, uint64_t seed,
                           struct blkemu_crash_report *report, char *err,
                           size_t errlen);
int blkemu_disk_view_close (struct blkemu_disk *disk, char *err,
                            size_t errlen);
void blkemu_disk_power_on (struct blkemu_disk *disk);
/* How many times blkemu_disk_power_on brought the disk back: a frontend
 * whose protocol reports a reset (SCSI's UNIT ATTENTION, POWER ON)
 * compares it with the count it last saw.
 */
uint64_t blkemu_disk_power_ons (struct blkemu_disk *disk);
/* Whether the disk is off (crashed or powered off, no view open): its
 * requests fail with EIO, which a protocol with a word for it reports
 * as such (SCSI: NOT READY) rather than as a medium error.
 */
bool blkemu_disk_offline (struct blkemu_disk *disk);
/* Unreadable sectors (latent sector errors): a read touching one fails
 * with EIO, a medium error, until a write or write-zeroes covers it.
 * OFFSET and LEN are multiples of the logical block, within the disk.
 * Each returns 0 or -1 with ERR filled.
 */
int blkemu_disk_bad_add (struct blkemu_disk *disk, uint64_t offset,
                         uint64_t len, char *err, size_t errlen);
int blkemu_disk_bad_clear (struct blkemu_disk *disk, uint64_t offset,
                           uint64_t len, char *err, size_t errlen);
/* Stuck bits (a defective cell, which no write repairs): bit BIT (0, the
 * least significant, to 7) of the byte at OFFSET reads VALUE (0 or 1)
 * whatever is written there, silently.  A read it changes counts in
 * stats as faults.stuck_reads and is traced corrupt.  At most 4096 on
 * a disk.  Each returns 0 or -1 with ERR filled.
 */
int blkemu_disk_stuck_add (struct blkemu_disk *disk, uint64_t offset,
                           unsigned bit, unsigned value, char *err,
                           size_t errlen);
void blkemu_disk_stuck_clear (struct blkemu_disk *disk);
/* The stuck bits, as "OFFSET:BIT=VALUE ..." (at most 128 shown; "..."
 * ends a longer list), malloc'd; *COUNT: how many there are.
 */
char *blkemu_disk_stuck_list (struct blkemu_disk *disk, uint64_t *count);
/* The words of a "stuck add OFFSET BIT VALUE" or "stuck clear" command
 * (WHAT "add" or "clear"; OFFSET takes units).  0, or -1 with ERR
 * ("stuck ...: usage" or the rule broken).
 */
int blkemu_disk_stuck_args (struct blkemu_disk *disk, const char *what,
                            const char *offset, const char *bit,
                            const char *value, char *err, size_t errlen);
/* Where in the LEN bytes from OFFSET a request that failed with EIO
 * failed: the first unreadable byte of a bad range in it, else the
 * start of an error-offset rule's range in it, else OFFSET.  What a
 * SCSI MEDIUM ERROR names in its information field; asked after the
 * failure (a write since may have healed the range: then OFFSET).
 */
uint64_t blkemu_disk_error_at (struct blkemu_disk *disk, uint64_t offset,
                               uint64_t len);
/* The unreadable ranges from FROM on, as "OFFSET+LENGTH ..." (at most
 * about 4 KiB of text; "..." ends a longer list), malloc'd; *COUNT: how
 * many there are.
 */
char *blkemu_disk_bad_list (struct blkemu_disk *disk, uint64_t *count);
/* The words of a "bad add|clear OFFSET LENGTH" command (the control
 * socket's, the FUSE bad file's): WHAT is "add" or "clear", the sizes
 * take units (64K).  Returns 0, or -1 with ERR ("bad WHAT ...: usage",
 * the size's rule, or the range's).
 */
int blkemu_disk_bad_args (struct blkemu_disk *disk, const char *what,
                          const char *offset, const char *length, char *err,
                          size_t errlen);
/* The next request gets BLKEMU_ERR_DROP: its frontend drops the link. */
void blkemu_disk_drop (struct blkemu_disk *disk);
/* Stats JSON in a malloc'd string (caller frees); PRETTY adds newlines. */
char *blkemu_disk_stats_json (struct blkemu_disk *disk, bool pretty);
/* The human summary (iostat-style totals, size histograms), malloc'd. */
char *blkemu_disk_summary_text (struct blkemu_disk *disk);
/* Write stats= now.  Returns 0 or -1 with ERR filled. */
int blkemu_disk_write_stats (struct blkemu_disk *disk, char *err,
                             size_t errlen);
/* Write TEXT to PATH whole or not at all (PATH.tmp.PID, then rename), so
 * readers never see half a file.  Returns 0, or -1 with errno set.
 */
int blkemu_write_file_atomic (const char *path, const char *text);

/* Reading a recorded trace (blkemu's text format, blkemu-trace(5)): the
 * one reader that blkemu-plot and blkemu-trace-convert share, so a line
 * means the same to both.  A line is "TIME OP OFFSET LENGTH LATENCY QD
 * RESULT [MARKS]": TIME seconds and LATENCY microseconds as decimals
 * (digits, optionally a point and at most 9 more), OP one of R W F T Z,
 * RESULT "ok" or an errno name (unknown names read as EIO), MARKS "-" or
 * known mark names joined by commas.  Lines starting with '#' are
 * comments ("# blkemu trace" is the header, "# zone_size N" a zoned
 * disk's zone size); blank lines are skipped.  A line longer than
 * BLKEMU_TRACE_LINE_MAX, or bytes that are not text, are refused by
 * their line number, and messages quote the line with non-printable
 * bytes escaped.
 */
#define BLKEMU_TRACE_LINE_MAX 1024

struct blkemu_trace_rec {
  uint64_t arrival_ns; /* since the trace started */
  enum blkemu_op op;
  uint64_t offset, len;
  uint64_t latency_ns;
  uint64_t qd;
  int err;        /* 0: ok */
  unsigned marks; /* bit I: blkemu_trace_mark_name (I) */
};

struct blkemu_trace_reader;
/* Read from IN; NAME (a path, or "-") starts every message. */
struct blkemu_trace_reader *blkemu_trace_reader_new (FILE *in,
                                                     const char *name);
void blkemu_trace_reader_free (struct blkemu_trace_reader *r);
/* The next request: 1 with *REC filled, 0 at the end, -1 with ERR filled
 * ("NAME:LINE: what is wrong: the line").
 */
int blkemu_trace_read (struct blkemu_trace_reader *r,
                       struct blkemu_trace_rec *rec, char *err, size_t errlen);
/* What the comments said so far: the header, a zone size (0: none). */
bool blkemu_trace_has_header (const struct blkemu_trace_reader *r);
uint64_t blkemu_trace_zone_size (const struct blkemu_trace_reader *r);
/* The line the last call read (1-based). */
size_t blkemu_trace_line (const struct blkemu_trace_reader *r);
/* Mark I's name ("split", "fua", ...), NULL past the last. */
const char *blkemu_trace_mark_name (unsigned i);

/* Convert a recorded trace (blkemu's text format, from IN) to FORMAT
 * ("blkemu", "blktrace" or "iolog", as trace-format= writes them) on OUT;
 * DISK_NAME names the file in an iolog.  Returns 0 or -1 with ERR filled
 * (IN_NAME:LINE: what is wrong).
 */
int blkemu_trace_convert (FILE *in, const char *in_name, FILE *out,
                          const char *format, const char *disk_name, char *err,
                          size_t errlen);

/* Shortest exact spelling, as the spec keys take them: 131072 -> "128K",
 * 1000000 ns -> "1ms".
 */
void blkemu_format_size (uint64_t bytes, char *buf, size_t len);
void blkemu_format_duration (uint64_t ns, char *buf, size_t len);

/* Iterate the key table: returns the Nth key's name or NULL past the end. */
const char *blkemu_key_name (size_t n);
bool blkemu_key_is_runtime (const char *key);

#endif /* BLKEMU_BLKEMU_H */
