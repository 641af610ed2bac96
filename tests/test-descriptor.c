/* A frontend's descriptor, on the public API alone: the core refuses
 * what the frontend cannot serve (at open and on runtime changes), warns
 * about what it leaves without effect, and names the frontend in stats
 * from the descriptor, never from a list of its own.  A made-up
 * frontend is the point: a fourth one needs no core change for these.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "check.h"

static const struct blkemu_carry tiny_carries[] = {
  { "max-transfer", BLKEMU_CARRY_TOLD | BLKEMU_CARRY_DEVICE },
  { "max-discard-segments", BLKEMU_CARRY_TOLD },
  { "opt-io", 0 },
  { NULL, 0 },
};
static const struct blkemu_frontend tiny = {
  .name = "TINY",
  .id = "tiny",
  .prog = "test-descriptor",
  .carries = tiny_carries,
  .ops = 0,
  .max_transfer_bytes = 1u << 20,
};
static const struct blkemu_frontend zoned_multi = {
  .name = "ZM",
  .id = "zm",
  .prog = "test-descriptor",
  .carries = tiny_carries,
  .ops = BLKEMU_FE_ZONES | BLKEMU_FE_MULTI_DISCARD,
};

static const struct blkemu_frontend zero_reads = {
  .name = "ZR",
  .id = "zr",
  .prog = "test-descriptor",
  .carries = tiny_carries,
  .ops = BLKEMU_FE_ZONES | BLKEMU_FE_ZERO_READS,
};

#define Z "size=64M,zoned=host-managed,zone-size=4M"

/* Open SPEC for FE; expect it refused with WANT in the message, or
 * opened when WANT is NULL.  Returns the disk (NULL when refused).
 */
static struct blkemu_disk *
open_expect (const struct blkemu_frontend *fe, const char *spec,
             const char *want)
{
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d = blkemu_disk_open_spec (spec, 0, fe, err, sizeof err);
  if (want) {
    CHECK (!d, "%s on %s: opened, want refused with \"%s\"", spec,
           fe ? fe->name : "the API", want);
    CHECK (strstr (err, want), "%s: error \"%s\", want \"%s\"", spec, err,
           want);
    if (d)
      blkemu_disk_close (d);
    return NULL;
  }
  CHECK (d, "%s on %s: refused: %s", spec, fe ? fe->name : "the API", err);
  return d;
}

static void
test_limits (void)
{
  open_expect (&tiny, "size=16M,max-transfer=2M",
               "max-transfer=2M: TINY moves at most 1048576 bytes a request");
  struct blkemu_disk *d =
    open_expect (&tiny, "size=16M,max-transfer=1M", NULL);
  if (!d)
    return;
  char err[BLKEMU_ERR_MAX] = "";
  CHECK (blkemu_disk_set (d, "max-transfer", "4M", err, sizeof err) == -1 &&
           strstr (err, "TINY moves at most"),
         "runtime max-transfer=4M on TINY: %s", err);
  CHECK (blkemu_disk_set (d, "max-transfer", "512K", err, sizeof err) == 0,
         "runtime max-transfer=512K: %s", err);
  blkemu_disk_close (d);
  /* The C API has no cap of its own below the key's. */
  d = open_expect (NULL, "size=16M,max-transfer=32M", NULL);
  if (d)
    blkemu_disk_close (d);
}

static void
test_ops (void)
{
  open_expect (&tiny, Z, "zoned=host-managed: TINY has no zone commands");
  open_expect (&tiny, "size=16M,max-discard-segments=4",
               "max-discard-segments=4: TINY has no multi-range discards");
  struct blkemu_disk *d = open_expect (&zoned_multi, Z, NULL);
  if (d) {
    struct blkemu_geometry geo;
    blkemu_disk_geometry (d, &geo);
    CHECK (!geo.can_trim, "a zoned disk advertises trim");
    blkemu_disk_close (d);
  }
  d = open_expect (&zoned_multi, "size=16M,max-discard-segments=4", NULL);
  if (d) {
    struct blkemu_geometry geo;
    blkemu_disk_geometry (d, &geo);
    CHECK (geo.can_trim && geo.max_discard_segments == 4,
           "max-discard-segments=4 on ZM: can_trim %d, segments %u",
           geo.can_trim, geo.max_discard_segments);
    blkemu_disk_close (d);
  }
}

/* Warnings go to stderr: catch them in a file. */
static void
test_warning (void)
{
  char path[] = "/tmp/test-descriptor.XXXXXX";
  int fd = mkstemp (path);
  CHECK (fd >= 0, "mkstemp");
  if (fd < 0)
    return;
  fflush (stderr);
  int saved = dup (2);
  dup2 (fd, 2);
  char err[BLKEMU_ERR_MAX] = "";
  struct blkemu_disk *d =
    blkemu_disk_open_spec ("name=w,size=16M,max-transfer=1M,opt-io=64K", 0,
                           &tiny, err, sizeof err);
  fflush (stderr);
  dup2 (saved, 2);
  close (saved);
  char text[512] = "";
  ssize_t n = pread (fd, text, sizeof text - 1, 0);
  text[n > 0 ? n : 0] = '\0';
  close (fd);
  unlink (path);
  CHECK (d, "opt-io=64K on TINY refused: %s", err);
  if (!d)
    return;
  CHECK (strstr (text, "test-descriptor: w: not carried by TINY, no effect "
                       "there: opt-io=64K"),
         "warning: \"%s\"", text);
  char *json = blkemu_disk_stats_json (d, false);
  CHECK (json, "no stats");
  if (json) {
    CHECK (strstr (json, "\"frontend\": \"tiny\""),
           "stats do not name the frontend tiny: %.300s", json);
    CHECK (strstr (json, "\"not_carried\": \"opt-io=64K\""),
           "stats do not list opt-io=64K as not carried: %.300s", json);
  }
  free (json);
  blkemu_disk_close (d);
}

/* A read through blkemu_submit on a disk without latency: handed back
 * complete, DONE never called.  BUF is filled with 0xAA first; returns
 * the result.
 */
static void
record_result (void *cookie, int r)
{
  *(int *) cookie = r;
}

static int
submit_read (struct blkemu_disk *d, char *buf, uint64_t len, uint64_t off)
{
  int called = INT_MIN;
  memset (buf, 0xAA, len);
  int r = blkemu_submit (d, BLKEMU_OP_READ, buf, len, off, 0, record_result,
                         &called);
  CHECK (r != BLKEMU_QUEUED && called == INT_MIN,
         "a read without latency: answered %d, DONE %s", r,
         called == INT_MIN ? "not called" : "called");
  return r;
}

static bool
all_bytes (const char *buf, size_t len, unsigned char c)
{
  for (size_t i = 0; i < len; i++)
    if ((unsigned char) buf[i] != c)
      return false;
  return true;
}

/* BLKEMU_FE_ZERO_READS: reads of zeroes come back as BLKEMU_READ_ZEROES
 * with the buffer untouched, only where the data is known to be zeroes;
 * other frontends get the zeroes written.
 */
static void
test_zero_reads (void)
{
  static char buf[256 << 10], data[4096];
  struct blkemu_disk *d =
    open_expect (&zero_reads, "size=16M,backend=null", NULL);
  if (!d)
    return;
  int r = submit_read (d, buf, 128 << 10, 4096);
  CHECK (r == BLKEMU_READ_ZEROES && all_bytes (buf, 128 << 10, 0xAA),
         "null: result %d, buffer %s, want BLKEMU_READ_ZEROES, untouched", r,
         all_bytes (buf, 128 << 10, 0xAA) ? "untouched" : "written");
  /* A bit flip needs the data in the buffer: zeroes and one bit. */
  char err[BLKEMU_ERR_MAX] = "";
  CHECK (blkemu_disk_set (d, "bit-flip-probability", "1", err, sizeof err) ==
           0,
         "bit-flip-probability=1: %s", err);
  r = submit_read (d, buf, 4096, 0);
  unsigned bits = 0;
  for (size_t i = 0; i < 4096; i++)
    bits += (unsigned) __builtin_popcount ((unsigned char) buf[i]);
  CHECK (r == 0 && bits == 1, "null with a flip: result %d, %u bits set", r,
         bits);
  blkemu_disk_close (d);

  d = open_expect (&zero_reads, "size=16M,backend=memory", NULL);
  if (!d)
    return;
  r = submit_read (d, buf, 256 << 10, 1 << 20);
  CHECK (r == BLKEMU_READ_ZEROES && all_bytes (buf, 256 << 10, 0xAA),
         "memory holes: result %d, want BLKEMU_READ_ZEROES, untouched", r);
  memset (data, 0x5C, sizeof data);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, data, sizeof data, (1 << 20) + 65536,
                    0) == 0,
         "memory: a write failed");
  /* One chunk written among holes: the whole read moves, holes zeroed. */
  r = submit_read (d, buf, 256 << 10, 1 << 20);
  CHECK (r == 0 && all_bytes (buf, 65536, 0) &&
           all_bytes (buf + 65536, 4096, 0x5C) &&
           all_bytes (buf + 65536 + 4096, (192 << 10) - 4096, 0),
         "memory, data among holes: result %d, data wrong", r);
  r = submit_read (d, buf, 64 << 10, 2 << 20);
  CHECK (r == BLKEMU_READ_ZEROES, "memory, a hole after the data: result %d",
         r);
  blkemu_disk_close (d);

  /* The C API (no descriptor) gets its zeroes written. */
  d = open_expect (NULL, "size=16M,backend=null", NULL);
  if (!d)
    return;
  r = submit_read (d, buf, 8192, 0);
  CHECK (r == 0 && all_bytes (buf, 8192, 0),
         "null on the C API: result %d, want 0 and zeroes written", r);
  blkemu_disk_close (d);
}

/* blkemu_disk_set_read_sink: a memory disk lends a read's pieces, in
 * order, holes as NULL, and the buffer stays untouched; what needs the
 * data afterwards (a bit flip) and what cannot lend (null, zoned) keep
 * the buffer.
 */
struct sink_log {
  char out[512 << 10]; /* where the pieces land, by AT */
  uint64_t next;       /* the AT the next piece must start at */
  unsigned pieces, holes;
  int fail_at; /* the piece number that returns EIO; -1: none */
  int result;  /* DONE's: the cookie is the sink's and DONE's alike */
};

static void
sink_done (void *cookie, int r)
{
  ((struct sink_log *) cookie)->result = r;
}

/* A read of LEN at OFF with LOG as the cookie; BUF filled with 0xAA. */
static int
sink_submit (struct blkemu_disk *d, struct sink_log *log, char *buf,
             uint64_t len, uint64_t off)
{
  log->next = log->pieces = log->holes = 0;
  log->result = -1;
  memset (buf, 0xAA, len);
  int r = blkemu_submit (d, BLKEMU_OP_READ, buf, len, off, 0, sink_done, log);
  CHECK (r != BLKEMU_QUEUED && log->result == -1,
         "a read without latency: answered %d, DONE %s", r,
         log->result == -1 ? "not called" : "called");
  log->result = r;
  return log->result;
}

static int
sink_piece (void *cookie, uint64_t at, const void *data, uint64_t len)
{
  struct sink_log *l = cookie;
  CHECK (at == l->next && at + len <= sizeof l->out,
         "piece at %llu+%llu, want at %llu", (unsigned long long) at,
         (unsigned long long) len, (unsigned long long) l->next);
  if (at != l->next || at + len > sizeof l->out)
    return EINVAL;
  if ((int) l->pieces++ == l->fail_at)
    return EIO;
  if (data)
    memcpy (l->out + at, data, len);
  else {
    memset (l->out + at, 0, len);
    l->holes++;
  }
  l->next = at + len;
  return 0;
}

static char sink_buf[512 << 10], sink_data[8192];
static struct sink_log sink_log = { .fail_at = -1 };

static void
test_read_sink (void)
{
  char *buf = sink_buf, *data = sink_data;
  struct blkemu_disk *d =
    open_expect (&zero_reads, "size=16M,backend=memory", NULL);
  if (!d)
    return;
  CHECK (blkemu_disk_lends_reads (d), "a memory disk does not lend reads");
  blkemu_disk_set_read_sink (d, sink_piece);
  memset (data, 0x5C, 4096);
  memset (data + 4096, 0x3A, 4096);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, data, 8192, (1 << 20) + 65536 - 4096,
                    0) == 0,
         "memory: a write failed");
  /* 256K from 1M: a hole, 4K of 0x5C at the end of the first chunk, 4K
   * of 0x3A at the start of the second, then holes.
   */
  int r = sink_submit (d, &sink_log, buf, 256 << 10, 1 << 20);
  CHECK (r == BLKEMU_READ_SENT && all_bytes (buf, 256 << 10, 0xAA),
         "memory with a sink: result %d, buffer %s, want BLKEMU_READ_SENT, "
         "untouched",
         r, all_bytes (buf, 256 << 10, 0xAA) ? "untouched" : "written");
  CHECK (sink_log.next == 256 << 10 && sink_log.pieces == 4 &&
           sink_log.holes == 2,
         "sink saw %llu bytes in %u pieces, %u holes; want 256K in 4, 2",
         (unsigned long long) sink_log.next, sink_log.pieces, sink_log.holes);
  CHECK (all_bytes (sink_log.out, 65536 - 4096, 0) &&
           all_bytes (sink_log.out + 65536 - 4096, 4096, 0x5C) &&
           all_bytes (sink_log.out + 65536, 4096, 0x3A) &&
           all_bytes (sink_log.out + 65536 + 4096, (192 << 10) - 4096, 0),
         "the sink's data is wrong");
  /* A sink's error fails the read. */
  sink_log.fail_at = 1;
  r = sink_submit (d, &sink_log, buf, 256 << 10, 1 << 20);
  CHECK (r == EIO, "a sink's EIO: result %d", r);
  sink_log.fail_at = -1;
  /* All holes: the zeroes are the frontend's, as before. */
  r = sink_submit (d, &sink_log, buf, 64 << 10, 4 << 20);
  CHECK (r == BLKEMU_READ_ZEROES, "a hole with a sink: result %d", r);
  /* A bit flip needs the data: the buffer, one bit off. */
  char err[BLKEMU_ERR_MAX] = "";
  CHECK (blkemu_disk_set (d, "bit-flip-probability", "1", err, sizeof err) ==
           0,
         "bit-flip-probability=1: %s", err);
  r = sink_submit (d, &sink_log, buf, 8192, (1 << 20) + 65536 - 4096);
  unsigned diff = 0;
  for (size_t i = 0; i < 8192; i++)
    diff += (unsigned) __builtin_popcount ((unsigned char) (buf[i] ^ data[i]));
  CHECK (r == 0 && diff == 1 && sink_log.pieces == 0,
         "a flip with a sink: result %d, %u bits off, %u pieces sent", r, diff,
         sink_log.pieces);
  blkemu_disk_close (d);
}

/* A zoned disk lends what lies below a write pointer and sends zeroes
 * past it: sequential zone 1 holds 8K of 0x3A, then its write
 * pointer; conventional zone 0 ends with 4K of 0x5C.  (A read may not
 * cross a zone's end: boundary is the zone size.)
 */
static void
test_read_sink_zoned (void)
{
  char *buf = sink_buf, *data = sink_data;
  int r;
  /* A backend that cannot lend takes no sink. */
  struct blkemu_disk *d =
    open_expect (&zero_reads, "size=16M,backend=null", NULL);
  if (d) {
    CHECK (!blkemu_disk_lends_reads (d), "a null disk lends reads");
    blkemu_disk_close (d);
  }
  d = open_expect (&zero_reads,
                   "size=64M,backend=memory,zoned=host-managed,zone-size=4M,"
                   "conventional-zones=1",
                   NULL);
  if (d) {
    CHECK (blkemu_disk_lends_reads (d), "a zoned memory disk does not lend");
    blkemu_disk_set_read_sink (d, sink_piece);
    CHECK (blkemu_io (d, BLKEMU_OP_WRITE, data, 4096, (4 << 20) - 4096, 0) ==
               0 &&
             blkemu_io (d, BLKEMU_OP_WRITE, data + 4096, 4096, 4 << 20, 0) ==
               0 &&
             blkemu_io (d, BLKEMU_OP_WRITE, data + 4096, 4096,
                        (4 << 20) + 4096, 0) == 0,
           "zoned: the writes failed");
    r = sink_submit (d, &sink_log, buf, 16 << 10, 4 << 20);
    CHECK (r == BLKEMU_READ_SENT && all_bytes (buf, 16 << 10, 0xAA),
           "zoned with a sink: result %d, want BLKEMU_READ_SENT", r);
    CHECK (sink_log.next == 16 << 10 && sink_log.pieces == 2 &&
             sink_log.holes == 1,
           "zoned: %llu bytes in %u pieces, %u of zeroes; want 16K in 2, 1",
           (unsigned long long) sink_log.next, sink_log.pieces,
           sink_log.holes);
    CHECK (all_bytes (sink_log.out, 8192, 0x3A) &&
             all_bytes (sink_log.out + 8192, 8192, 0),
           "zoned: past the write pointer the sink's data is wrong");
    r = sink_submit (d, &sink_log, buf, 8192, (4 << 20) - 8192);
    CHECK (r == BLKEMU_READ_SENT && sink_log.pieces == 1 &&
             sink_log.holes == 0 && all_bytes (sink_log.out, 4096, 0) &&
             all_bytes (sink_log.out + 4096, 4096, 0x5C),
           "zoned, conventional zone: result %d, %u pieces, data %s", r,
           sink_log.pieces,
           all_bytes (sink_log.out + 4096, 4096, 0x5C) ? "ok" : "wrong");
    blkemu_disk_close (d);
  }
}

int
main (void)
{
  test_limits ();
  test_ops ();
  test_warning ();
  test_zero_reads ();
  test_read_sink ();
  test_read_sink_zoned ();
  if (failures) {
    printf ("%d failure(s)\n", failures);
    return 1;
  }
  printf ("ok: descriptors: limits, ops, warnings and stats from the "
          "frontend's own description; reads of zeroes left to it, reads "
          "lent to a sink\n");
  return 0;
}
