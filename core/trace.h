/* trace=PATH: one record per request the device saw, in the format
 * trace-format= names: blkemu (text, docs/blkemu-trace.5.md), blktrace
 * (struct blk_io_trace, for blkparse, btt and iowatcher) or iolog (fio's
 * iolog version 3, for fio --read_iolog).
 */
#ifndef BLKEMU_TRACE_H
#define BLKEMU_TRACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "blkemu/blkemu.h"

#include "config.h" /* enum trace_format */

/* A request's op as a trace line writes it: R W F T Z. */
extern const char trace_op_letter[BLKEMU_OP_COUNT];

/* Everything below LOCK is guarded by it; any thread may call in. */
struct trace {
  pthread_mutex_t lock;
  enum trace_format format;
  char *name;        /* the disk's name: iolog's file name */
  uint32_t sequence; /* blktrace: event number */
  uint64_t last_ms;  /* iolog: the latest time written, for "close" */
  int fd;            /* -1: tracing off, or stopped */
  char *buf;         /* records not yet written out */
  size_t used;
  uint32_t *ends; /* where each record in BUF ends */
  size_t nends, ends_cap;
  size_t first_at;     /* where the first record in BUF starts */
  uint64_t file_bytes; /* in the file */
  char *path;
  uint64_t start_ns;
  uint64_t max_bytes; /* trace-max-size: 0 unlimited */
  uint64_t bytes;     /* the file's size once BUF is written out */
  uint64_t records;   /* request lines written */
  uint64_t dropped;   /* requests not written: cap reached or write error */
  int write_error;    /* the errno that stopped the trace, or 0 */
};

/* The trace's counters, for stats. */
struct trace_counts {
  uint64_t records, dropped, bytes;
  int write_error;
  bool enabled;
};

#define TRACE_SPLIT (1u << 0)    /* a piece of a request the device split */
#define TRACE_OVERSIZE (1u << 1) /* above the limit (rejected or allowed) */
#define TRACE_FUA (1u << 2)
#define TRACE_FAULT (1u << 3)   /* an injected error */
#define TRACE_SPIKE (1u << 4)   /* paid a latency spike */
#define TRACE_STALL (1u << 5)   /* held by a stall */
#define TRACE_OFFLINE (1u << 6) /* refused: the disk crashed */
#define TRACE_DROP (1u << 7)    /* its connection was dropped */
#define TRACE_CACHED (1u << 8)  /* held in the volatile write cache */
#define TRACE_SLOW (1u << 9)    /* stretched by slowdown */
#define TRACE_BOUNDARY                                                        \
  (1u << 10) /* crossed boundary= (refused, split, allowed) */
#define TRACE_ZONE_RESET (1u << 11) /* a zone reset, recorded as a trim */
#define TRACE_APPEND (1u << 12)     /* a zone append (at the write pointer) */
#define TRACE_CRASHED (1u << 13)    /* in flight at a crash: failed with EIO */
#define TRACE_MEDIUM (1u << 14)     /* read an unreadable sector: EIO */
#define TRACE_CORRUPT (1u << 15)    /* silent: bit flip, lost, misdirected */
#define TRACE_MARK_COUNT 16

/* Open PATH (NULL: no trace) for at most MAX_BYTES (0: unlimited),
 * writing FORMAT; NAME is the disk's.
 */
int trace_open (struct trace *t, const char *path, enum trace_format format,
                const char *name, uint64_t start_ns, uint64_t max_bytes,
                char *err);
/* A zoned disk's zone size, as a "# zone_size N" line of the blkemu
 * format (blkemu-plot draws writes per zone from it).  Call before any
 * record.
 */
void trace_note_zone_size (struct trace *t, uint64_t zone_size);
/* A comment line ("# ...\n") in the blkemu format, within the cap like
 * any record; nothing in the other formats.
 */
void trace_note (struct trace *t, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));
/* Whether trace_note writes anything (saves the work of lines nobody
 * reads).
 */
bool trace_wants_notes (struct trace *t);
void trace_counts (struct trace *t, struct trace_counts *out);
void trace_close (struct trace *t);
void trace_record (struct trace *t, uint64_t arrival_ns, enum blkemu_op op,
                   uint64_t offset, uint64_t len, uint64_t latency_ns,
                   uint64_t qd, int err, unsigned marks);
void trace_flush (struct trace *t);

#endif
