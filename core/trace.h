/* trace=PATH: one text line per request the device saw.  Format in
 * docs/blkemu-trace.5.md.
 */
#ifndef BLKEMU_TRACE_H
#define BLKEMU_TRACE_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "blkemu/blkemu.h"

struct trace {
  FILE *fp;            /* NULL: tracing off */
  pthread_mutex_t lock;
  uint64_t start_ns;
};

#define TRACE_SPLIT    (1u << 0)  /* a piece of a request the device split */
#define TRACE_OVERSIZE (1u << 1)  /* above the limit (rejected or allowed) */
#define TRACE_FUA      (1u << 2)
#define TRACE_FAULT    (1u << 3)  /* an injected error */
#define TRACE_SPIKE    (1u << 4)  /* paid a latency spike */
#define TRACE_STALL    (1u << 5)  /* held by a stall */
#define TRACE_OFFLINE  (1u << 6)  /* refused: the disk crashed */
#define TRACE_DROP     (1u << 7)  /* its connection was dropped */
#define TRACE_CACHED   (1u << 8)  /* held in the volatile write cache */
#define TRACE_SLOW     (1u << 9)  /* stretched by slowdown */

int trace_open (struct trace *t, const char *path, uint64_t start_ns,
                char *err);
void trace_close (struct trace *t);
void trace_record (struct trace *t, uint64_t arrival_ns, enum blkemu_op op,
                   uint64_t offset, uint64_t len, uint64_t latency_ns,
                   uint64_t qd, int err, unsigned marks);
void trace_flush (struct trace *t);

#endif
