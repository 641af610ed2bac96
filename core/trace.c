/* The per-request trace: see trace.h.  One encoder per format turns a
 * request into bytes; the cap, the counters and write errors are common.
 */
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>
#include <linux/blktrace_api.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "paths.h"
#include "stats.h"

/* The device number blktrace records carry: 254:0, as a ublk or dm
 * device might be (the kernel's MKDEV layout, 20 bits of minor).
 */
#define TRACE_BLKTRACE_DEV (254u << 20)
/* The process the events name: "blkemu", announced once at the start. */
#define TRACE_BLKTRACE_PID 1
#define TRACE_BLKTRACE_COMM "blkemu"

/* One request as a record: at most this many bytes. */
#define RECORD_MAX 320 /* >= 3 * sizeof (struct blk_io_trace) */

struct request_rec {
  uint64_t arrival_ns; /* since the trace started */
  enum blkemu_op op;
  uint64_t offset, len, latency_ns, qd;
  int err;
  unsigned marks;
};

static size_t
encode_blkemu (struct trace *t, const struct request_rec *r, char *out)
{
  (void) t;
  char m[128] = "";
  for (unsigned i = 0; i < TRACE_MARK_COUNT; i++)
    if (r->marks & (1u << i)) {
      strcat (m, blkemu_trace_mark_name (i));
      strcat (m, ",");
    }
  size_t mlen = strlen (m);
  if (mlen)
    m[mlen - 1] = '\0';
  else
    strcpy (m, "-");
  int n = snprintf (out, RECORD_MAX,
                    "%llu.%06llu %c %llu %llu %llu.%03llu %llu %s %s\n",
                    (unsigned long long) (r->arrival_ns / 1000000000u),
                    (unsigned long long) (r->arrival_ns / 1000 % 1000000),
                    trace_op_letter[r->op], (unsigned long long) r->offset,
                    (unsigned long long) r->len,
                    (unsigned long long) (r->latency_ns / 1000),
                    (unsigned long long) (r->latency_ns % 1000),
                    (unsigned long long) r->qd,
                    r->err ? strerrorname_np (r->err) : "ok", m);
  return n > 0 ? (size_t) n : 0;
}

/* Three events, as the kernel logs a request: Q and D when the device
 * got it (arrival: blkemu has no host queue in front of it), C when it
 * completed, so btt's D2C is the device's service time.  The categories
 * make blkparse's RWBS: W for writes and write-zeroes, D for trims, R for
 * reads, FN for a flush, F appended for FUA.
 */
static size_t
encode_blktrace (struct trace *t, const struct request_rec *r, char *out)
{
  uint32_t cat = 0;
  switch (r->op) {
  case BLKEMU_OP_READ: cat = BLK_TC_READ; break;
  case BLKEMU_OP_WRITE:
  case BLKEMU_OP_ZERO: cat = BLK_TC_WRITE; break;
  case BLKEMU_OP_TRIM: cat = BLK_TC_WRITE | BLK_TC_DISCARD; break;
  case BLKEMU_OP_FLUSH: cat = BLK_TC_FLUSH; break;
  default: break;
  }
  if (r->marks & TRACE_FUA)
    cat |= BLK_TC_FUA;
  static const uint32_t what[3] = { BLK_TA_QUEUE, BLK_TA_ISSUE,
                                    BLK_TA_COMPLETE };
  struct blk_io_trace ev[3];
  for (int i = 0; i < 3; i++)
    ev[i] = (struct blk_io_trace){
      .magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION,
      .sequence = ++t->sequence,
      .time = r->arrival_ns + (i == 2 ? r->latency_ns : 0),
      .sector = r->op == BLKEMU_OP_FLUSH ? 0 : r->offset >> 9,
      .bytes = (uint32_t) (r->op == BLKEMU_OP_FLUSH ? 0 : r->len),
      .action = what[i] | BLK_TC_ACT (cat),
      .pid = TRACE_BLKTRACE_PID,
      .device = TRACE_BLKTRACE_DEV,
      .error = (uint16_t) (i == 2 ? r->err : 0),
    };
  memcpy (out, ev, sizeof ev);
  return sizeof ev;
}

/* fio iolog v3: "TIME_MS FILE ACTION OFFSET LENGTH" (a flush is "sync 0
 * 0"), between "0 FILE add", "0 FILE open" and "TIME_MS FILE close".  Only
 * requests the device served: a refused one would stop fio's replay.
 * Write-zeroes replays as a write (iolog has no such action).
 */
static size_t
encode_iolog (struct trace *t, const struct request_rec *r, char *out)
{
  static const char *const action[BLKEMU_OP_COUNT] = {
    [BLKEMU_OP_READ] = "read",  [BLKEMU_OP_WRITE] = "write",
    [BLKEMU_OP_FLUSH] = "sync", [BLKEMU_OP_TRIM] = "trim",
    [BLKEMU_OP_ZERO] = "write",
  };
  if (r->err)
    return 0;
  if (r->arrival_ns / 1000000 > t->last_ms)
    t->last_ms = r->arrival_ns / 1000000;
  int n =
    snprintf (out, RECORD_MAX, "%llu %s %s %llu %llu\n",
              (unsigned long long) (r->arrival_ns / 1000000), t->name,
              action[r->op],
              (unsigned long long) (r->op == BLKEMU_OP_FLUSH ? 0 : r->offset),
              (unsigned long long) (r->op == BLKEMU_OP_FLUSH ? 0 : r->len));
  return n > 0 ? (size_t) n : 0;
}

static size_t
encode (struct trace *t, const struct request_rec *r, char *out)
{
  switch (t->format) {
  case TRACE_FMT_BLKTRACE: return encode_blktrace (t, r, out);
  case TRACE_FMT_IOLOG: return encode_iolog (t, r, out);
  default: return encode_blkemu (t, r, out);
  }
}

/* ---- the file ----------------------------------------------------
 * Records go into BUF and reach the file with write(2) when it fills,
 * on trace_flush and at the end.  BYTES is what the file holds plus
 * what BUF holds: after a write error it drops to what the file got, so
 * stats' trace.bytes is the file's size, whatever happened.
 */
#define TRACE_BUF_SIZE (1u << 20)

/* Write out BUF.  Returns 0, or the errno of a failed write: the file
 * then keeps the records that reached it whole (a torn last one is cut
 * off where the file allows), the rest of BUF and its records are
 * dropped, and BYTES and RECORDS say what the file holds.
 */
static int
drain (struct trace *t)
{
  size_t done = 0;
  int e = 0;
  while (done < t->used) {
    ssize_t n = write (t->fd, t->buf + done, t->used - done);
    if (n > 0) {
      done += (size_t) n;
      continue;
    }
    if (n == -1 && errno == EINTR)
      continue;
    e = n == 0 ? EIO : errno;
    break;
  }
  if (e) {
    /* The records that ended within what was written. */
    size_t whole = 0;
    while (whole < t->nends && t->ends[whole] <= done)
      whole++;
    /* Bytes before the first record are the header: kept as written. */
    size_t keep = whole                            ? t->ends[whole - 1]
                  : t->nends && t->first_at < done ? t->first_at
                                                   : done;
    if (done > keep && ftruncate (t->fd, (off_t) (t->file_bytes + keep)) == 0)
      done = keep;
    t->records -= t->nends - whole;
    t->dropped += t->nends - whole;
  }
  t->file_bytes += done;
  t->bytes = t->file_bytes;
  t->used = 0;
  t->nends = 0;
  return e;
}

/* BUF's record ends grow with it (records are at least a few bytes). */
static int
note_record_end (struct trace *t, size_t n)
{
  if (t->nends == 0)
    t->first_at = t->used - n;
  if (t->nends == t->ends_cap) {
    size_t cap = t->ends_cap ? t->ends_cap * 2 : 1024;
    uint32_t *ends = realloc (t->ends, cap * sizeof *ends);
    if (!ends)
      return ENOMEM;
    t->ends = ends;
    t->ends_cap = cap;
  }
  t->ends[t->nends++] = (uint32_t) t->used;
  return 0;
}

/* Append N bytes of DATA.  Returns 0 or an errno (from drain). */
static int
emit (struct trace *t, const void *data, size_t n)
{
  if (t->used + n > TRACE_BUF_SIZE) {
    int e = drain (t);
    if (e)
      return e;
  }
  memcpy (t->buf + t->used, data, n);
  t->used += n;
  t->bytes = t->file_bytes + t->used;
  return 0;
}

static int emit_text (struct trace *t, const char *fmt, ...)
  __attribute__ ((format (printf, 2, 3)));
static int
emit_text (struct trace *t, const char *fmt, ...)
{
  char line[RECORD_MAX];
  va_list ap;
  va_start (ap, fmt);
  int n = vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  if (n < 0)
    return EIO;
  return emit (t, line,
               (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
}

/* What the file ends with when the cap stops the trace or the disk
 * closes; the cap keeps room for it.
 */
static const char capped_trailer[] =
  "# trace stopped: trace-max-size reached\n";

static size_t
trailer_room (const struct trace *t)
{
  switch (t->format) {
  case TRACE_FMT_BLKEMU: return sizeof capped_trailer - 1;
  case TRACE_FMT_IOLOG: return 20 + 1 + strlen (t->name) + sizeof " close\n";
  default: return 0;
  }
}

/* Write the end of the file: the cap's note (CAPPED) or iolog's close. */
static int
emit_trailer (struct trace *t, bool capped)
{
  if (capped && t->format == TRACE_FMT_BLKEMU)
    return emit (t, capped_trailer, sizeof capped_trailer - 1);
  if (t->format == TRACE_FMT_IOLOG)
    return emit_text (t, "%llu %s close\n", (unsigned long long) t->last_ms,
                      t->name);
  return 0;
}

/* What a file of FORMAT starts with. */
static int
write_header (struct trace *t)
{
  if (t->format == TRACE_FMT_BLKEMU)
    return emit_text (t, "# blkemu trace v1\n"
                         "# time_s op offset length latency_us qd result "
                         "marks\n");
  if (t->format == TRACE_FMT_IOLOG)
    return emit_text (t, "fio version 3 iolog\n0 %s add\n0 %s open\n", t->name,
                      t->name);
  if (t->format == TRACE_FMT_BLKTRACE) {
    /* A notify record naming the process, so blkparse prints [blkemu]. */
    struct blk_io_trace ev = {
      .magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION,
      .sequence = ++t->sequence,
      .action = BLK_TN_PROCESS,
      .pid = TRACE_BLKTRACE_PID,
      .device = TRACE_BLKTRACE_DEV,
      .pdu_len = sizeof TRACE_BLKTRACE_COMM,
    };
    int e = emit (t, &ev, sizeof ev);
    return e ? e : emit (t, TRACE_BLKTRACE_COMM, sizeof TRACE_BLKTRACE_COMM);
  }
  return 0;
}

int
trace_open (struct trace *t, const char *path, enum trace_format format,
            const char *name, uint64_t start_ns, uint64_t max_bytes, char *err)
{
  memset (t, 0, sizeof *t);
  pthread_mutex_init (&t->lock, NULL);
  t->fd = -1;
  t->start_ns = start_ns;
  t->max_bytes = max_bytes;
  t->format = format;
  if (!path)
    return 0;
  t->path = strdup (path);
  t->name = strdup (name && *name ? name : "disk0");
  t->buf = malloc (TRACE_BUF_SIZE);
  if (!t->path || !t->name || !t->buf) {
    set_err (err, "trace=%s: out of memory", path);
    goto fail;
  }
  /* iolog names the file on every line: no blanks in it. */
  for (char *c = t->name; *c; c++)
    if (*c == ' ' || *c == '\t' || *c == '\n')
      *c = '_';
  /* A FIFO, a socket or /proc is refused, not opened (a FIFO with no
   * reader blocked start-up forever); /dev/null is fine.
   */
  t->fd = path_open_output ("trace", path, true, err);
  if (t->fd == -1)
    goto fail;
  write_header (t);
  return 0;

fail:
  free (t->path);
  free (t->name);
  free (t->buf);
  t->path = t->name = t->buf = NULL;
  return -1;
}

void
trace_note_zone_size (struct trace *t, uint64_t zone_size)
{
  if (t->fd == -1 || t->format != TRACE_FMT_BLKEMU)
    return;
  emit_text (t, "# zone_size %llu\n", (unsigned long long) zone_size);
}

/* Defined with the records below. */
static bool put_line (struct trace *t, const char *line, size_t n);

bool
trace_wants_notes (struct trace *t)
{
  pthread_mutex_lock (&t->lock);
  bool on = t->fd != -1 && t->format == TRACE_FMT_BLKEMU;
  pthread_mutex_unlock (&t->lock);
  return on;
}

void
trace_note (struct trace *t, const char *fmt, ...)
{
  if (!t->path)
    return;
  char line[RECORD_MAX];
  va_list ap;
  va_start (ap, fmt);
  int n = vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  if (n <= 0)
    return;
  pthread_mutex_lock (&t->lock);
  if (t->fd != -1 && t->format == TRACE_FMT_BLKEMU)
    put_line (t, line,
              (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
  pthread_mutex_unlock (&t->lock);
}

/* End the file: the trailer (CAPPED: the cap's note), the last bytes
 * out, closed.  ERROR is the errno that stops it, if any (no trailer
 * then).  Says why once on stderr.  Under LOCK.
 */
static void
finish (struct trace *t, bool capped, int error)
{
  if (t->fd == -1)
    return;
  if (!error)
    error = emit_trailer (t, capped);
  if (!error)
    error = drain (t);
  if (close (t->fd) == -1 && !error && errno != EINTR)
    error = errno;
  t->fd = -1;
  if (error && !t->write_error) {
    t->write_error = error;
    fprintf (stderr,
             "blkemu: trace=%s: %s: tracing stopped (the disk "
             "serves on; stats count the requests not traced)\n",
             t->path, strerrordesc_np (error));
  }
}

void
trace_close (struct trace *t)
{
  pthread_mutex_lock (&t->lock);
  finish (t, false, 0);
  pthread_mutex_unlock (&t->lock);
  free (t->path);
  free (t->name);
  free (t->buf);
  free (t->ends);
  t->path = t->name = t->buf = NULL;
  t->ends = NULL;
  pthread_mutex_destroy (&t->lock);
}

void
trace_flush (struct trace *t)
{
  pthread_mutex_lock (&t->lock);
  if (t->fd != -1) {
    int e = drain (t);
    if (e)
      finish (t, false, e);
  }
  pthread_mutex_unlock (&t->lock);
}

void
trace_counts (struct trace *t, struct trace_counts *out)
{
  pthread_mutex_lock (&t->lock);
  *out = (struct trace_counts){ .records = t->records,
                                .dropped = t->dropped,
                                .bytes = t->bytes,
                                .write_error = t->write_error,
                                .enabled = t->path != NULL };
  pthread_mutex_unlock (&t->lock);
}

/* Write one encoded request (LOCK held). */
static void
put (struct trace *t, const struct request_rec *r)
{
  char rec[RECORD_MAX];
  if (t->fd == -1) {
    t->dropped++;
    return;
  }
  size_t n = encode (t, r, rec);
  if (n == 0)
    return; /* not a record in this format */
  if (put_line (t, rec, n))
    t->records++;
  else
    t->dropped++;
}

/* Write one whole line (LOCK held, the file open): within the cap, or
 * the trace stops there.  Returns whether it was written.
 */
static bool
put_line (struct trace *t, const char *line, size_t n)
{
  if (t->max_bytes && t->bytes + n + trailer_room (t) > t->max_bytes) {
    finish (t, true, 0);
    return false;
  }
  int e = emit (t, line, n);
  if (e == 0)
    e = note_record_end (t, n);
  if (e) {
    finish (t, false, e);
    return false;
  }
  return true;
}

void
trace_record (struct trace *t, uint64_t arrival_ns, enum blkemu_op op,
              uint64_t offset, uint64_t len, uint64_t latency_ns, uint64_t qd,
              int err, unsigned marks)
{
  if (!t->path)
    return;
  struct request_rec r = {
    .arrival_ns = arrival_ns - t->start_ns,
    .op = op,
    .offset = offset,
    .len = len,
    .latency_ns = latency_ns,
    .qd = qd,
    .err = err,
    .marks = marks,
  };
  pthread_mutex_lock (&t->lock);
  put (t, &r);
  pthread_mutex_unlock (&t->lock);
}

/* ---- converting recorded traces ------------------------------------ */

static int
trace_convert (FILE *in, const char *in_name, FILE *out, const char *format,
               const char *disk_name, char *err)
{
#define FORMAT_NAME(id, text) [id] = text,
  static const char *const names[] = { TRACE_FORMAT_LIST (FORMAT_NAME) };
  enum trace_format f = 0;
  while (f < sizeof names / sizeof names[0] && strcmp (format, names[f]))
    f++;
  if (f == sizeof names / sizeof names[0]) {
    set_err (err, "trace-format=%s: must be one of %s", format,
             CHOICES (TRACE_FORMAT_LIST));
    return -1;
  }
  /* The live trace's encoders and buffer, on OUT's descriptor; the cap
   * is not the caller's.
   */
  struct trace t = { .format = f,
                     .path = (char *) "-",
                     .name = strdup (disk_name ? disk_name : "disk0"),
                     .buf = malloc (TRACE_BUF_SIZE) };
  struct blkemu_trace_reader *rd = blkemu_trace_reader_new (in, in_name);
  int r = -1;
  if (!t.name || !t.buf || !rd || fflush (out) != 0) {
    set_err (err, "%s",
             t.name && t.buf && rd ? strerrordesc_np (errno)
                                   : "out of memory");
    goto out;
  }
  t.fd = fileno (out);
  int e = write_header (&t);
  struct blkemu_trace_rec rec;
  int got;
  while (e == 0 &&
         (got = blkemu_trace_read (rd, &rec, err, BLKEMU_ERR_MAX)) == 1) {
    struct request_rec rr = {
      .arrival_ns = rec.arrival_ns,
      .op = rec.op,
      .offset = rec.offset,
      .len = rec.len,
      .latency_ns = rec.latency_ns,
      .qd = rec.qd,
      .err = rec.err,
      .marks = rec.marks,
    };
    char buf[RECORD_MAX];
    size_t n = encode (&t, &rr, buf);
    if (n)
      e = emit (&t, buf, n);
  }
  if (e == 0 && got == -1)
    goto out; /* ERR says which line */
  if (e == 0)
    e = emit_trailer (&t, false);
  if (e == 0)
    e = drain (&t);
  if (e) {
    set_err (err, "writing: %s", strerrordesc_np (e));
    goto out;
  }
  r = 0;
out:
  blkemu_trace_reader_free (rd);
  free (t.name);
  free (t.buf);
  return r;
}

int
blkemu_trace_convert (FILE *in, const char *in_name, FILE *out,
                      const char *format, const char *disk_name, char *err,
                      size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (trace_convert (in, in_name, out, format, disk_name, e), e,
                     err, errlen);
}
