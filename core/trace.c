/* The per-request trace: see trace.h.  One encoder per format turns a
 * request into bytes; the cap, the counters and write errors are common.
 */
#include "trace.h"

#include <errno.h>
#include <linux/blktrace_api.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "stats.h"

static const char op_letter[BLKEMU_OP_COUNT] = { 'R', 'W', 'F', 'T', 'Z' };
static const char *const mark_names[] = { "split", "oversize", "fua", "fault",
                                          "spike", "stall", "offline", "drop",
                                          "cached", "slow", "boundary",
                                          "zone-reset", "append",
                                          "crashed" };
_Static_assert (sizeof mark_names / sizeof mark_names[0] == TRACE_MARK_COUNT,
                "a name for every trace mark");

/* The device number blktrace records carry: 254:0, as a ublk or dm
 * device might be (the kernel's MKDEV layout, 20 bits of minor).
 */
#define TRACE_BLKTRACE_DEV (254u << 20)
/* The process the events name: "blkemu", announced once at the start. */
#define TRACE_BLKTRACE_PID 1
#define TRACE_BLKTRACE_COMM "blkemu"

/* One request as a record: at most this many bytes. */
#define RECORD_MAX 320   /* >= 3 * sizeof (struct blk_io_trace) */

struct request_rec {
  uint64_t arrival_ns;     /* since the trace started */
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
  for (size_t i = 0; i < sizeof mark_names / sizeof mark_names[0]; i++)
    if (r->marks & (1u << i)) {
      strcat (m, mark_names[i]);
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
                    op_letter[r->op], (unsigned long long) r->offset,
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
  case BLKEMU_OP_WRITE: case BLKEMU_OP_ZERO: cat = BLK_TC_WRITE; break;
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
    ev[i] = (struct blk_io_trace) {
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
 * 0"), between "0 FILE add", "0 FILE open" and "TIME_MS FILE close".  Only requests the
 * device served: a refused one would stop fio's replay.  Write-zeroes
 * replays as a write (iolog has no such action).
 */
static size_t
encode_iolog (struct trace *t, const struct request_rec *r, char *out)
{
  static const char *const action[BLKEMU_OP_COUNT] = {
    [BLKEMU_OP_READ] = "read", [BLKEMU_OP_WRITE] = "write",
    [BLKEMU_OP_FLUSH] = "sync", [BLKEMU_OP_TRIM] = "trim",
    [BLKEMU_OP_ZERO] = "write",
  };
  if (r->err)
    return 0;
  if (r->arrival_ns / 1000000 > t->last_ms)
    t->last_ms = r->arrival_ns / 1000000;
  int n = snprintf (out, RECORD_MAX, "%llu %s %s %llu %llu\n",
                  (unsigned long long) (r->arrival_ns / 1000000), t->name,
                  action[r->op],
                  (unsigned long long) (r->op == BLKEMU_OP_FLUSH ? 0
                                                                 : r->offset),
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

/* What a file of FORMAT starts with. */
static int
write_header (struct trace *t)
{
  int n = 0;
  if (t->format == TRACE_FMT_BLKEMU)
    n = fprintf (t->fp, "# blkemu trace v1\n"
                 "# time_s op offset length latency_us qd result marks\n");
  else if (t->format == TRACE_FMT_IOLOG)
    n = fprintf (t->fp, "fio version 3 iolog\n0 %s add\n0 %s open\n",
                 t->name, t->name);
  else if (t->format == TRACE_FMT_BLKTRACE) {
    /* A notify record naming the process, so blkparse prints [blkemu]. */
    struct blk_io_trace ev = {
      .magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION,
      .sequence = ++t->sequence,
      .action = BLK_TN_PROCESS,
      .pid = TRACE_BLKTRACE_PID,
      .device = TRACE_BLKTRACE_DEV,
      .pdu_len = sizeof TRACE_BLKTRACE_COMM,
    };
    if (fwrite (&ev, sizeof ev, 1, t->fp) == 1 &&
        fwrite (TRACE_BLKTRACE_COMM, sizeof TRACE_BLKTRACE_COMM, 1, t->fp) == 1)
      n = (int) (sizeof ev + sizeof TRACE_BLKTRACE_COMM);
    else
      n = -1;
  }
  t->bytes = n > 0 ? (uint64_t) n : 0;
  return n < 0 ? -1 : 0;
}

int
trace_open (struct trace *t, const char *path, enum trace_format format,
            const char *name, uint64_t start_ns, uint64_t max_bytes,
            char *err)
{
  memset (t, 0, sizeof *t);
  pthread_mutex_init (&t->lock, NULL);
  t->start_ns = start_ns;
  t->max_bytes = max_bytes;
  t->format = format;
  if (!path)
    return 0;
  t->path = strdup (path);
  t->name = strdup (name && *name ? name : "disk0");
  /* iolog names the file on every line: no blanks in it. */
  for (char *c = t->name; c && *c; c++)
    if (*c == ' ' || *c == '\t' || *c == '\n')
      *c = '_';
  t->fp = fopen (path, "w");
  if (!t->fp || !t->path || !t->name) {
    set_err (err, "trace=%s: %s", path, strerrordesc_np (t->fp ? ENOMEM
                                                               : errno));
    if (t->fp)
      fclose (t->fp);
    free (t->path);
    free (t->name);
    t->fp = NULL;
    t->path = t->name = NULL;
    return -1;
  }
  /* A large buffer keeps the cost per record to a formatted memcpy. */
  setvbuf (t->fp, NULL, _IOFBF, 1 << 20);
  write_header (t);
  return 0;
}

void
trace_note_zone_size (struct trace *t, uint64_t zone_size)
{
  if (!t->fp || t->format != TRACE_FMT_BLKEMU)
    return;
  int n = fprintf (t->fp, "# zone_size %llu\n", (unsigned long long) zone_size);
  if (n > 0)
    t->bytes += (uint64_t) n;
}

/* Stop tracing for good, saying why once on stderr.  Under LOCK. */
static void
stop (struct trace *t, int error)
{
  if (!t->fp)
    return;
  if (error) {
    t->write_error = error;
    fprintf (stderr, "blkemu: trace=%s: %s: tracing stopped (the disk "
             "serves on; stats count the requests not traced)\n", t->path,
             strerrordesc_np (error));
  }
  else if (t->format == TRACE_FMT_BLKEMU)
    fprintf (t->fp, "# trace stopped: trace-max-size reached\n");
  else if (t->format == TRACE_FMT_IOLOG)
    fprintf (t->fp, "%llu %s close\n", (unsigned long long) t->last_ms,
             t->name);
  if (fclose (t->fp) != 0 && !t->write_error) {
    t->write_error = errno;
    fprintf (stderr, "blkemu: trace=%s: %s\n", t->path,
             strerrordesc_np (errno));
  }
  t->fp = NULL;
}

void
trace_close (struct trace *t)
{
  pthread_mutex_lock (&t->lock);
  if (t->fp && t->format == TRACE_FMT_IOLOG)
    fprintf (t->fp, "%llu %s close\n", (unsigned long long) t->last_ms,
             t->name);
  if (t->fp && fclose (t->fp) != 0)
    fprintf (stderr, "blkemu: trace=%s: %s\n", t->path,
             strerrordesc_np (errno));
  t->fp = NULL;
  pthread_mutex_unlock (&t->lock);
  free (t->path);
  free (t->name);
  t->path = t->name = NULL;
  pthread_mutex_destroy (&t->lock);
}

void
trace_flush (struct trace *t)
{
  pthread_mutex_lock (&t->lock);
  if (t->fp && fflush (t->fp) != 0)
    stop (t, errno);
  pthread_mutex_unlock (&t->lock);
}

void
trace_counts (struct trace *t, struct trace_counts *out)
{
  pthread_mutex_lock (&t->lock);
  *out = (struct trace_counts) { .records = t->records,
                                 .dropped = t->dropped, .bytes = t->bytes,
                                 .write_error = t->write_error,
                                 .enabled = t->path != NULL };
  pthread_mutex_unlock (&t->lock);
}

/* Write one encoded request (LOCK held). */
static void
put (struct trace *t, const struct request_rec *r)
{
  char rec[RECORD_MAX];
  if (!t->fp) {
    t->dropped++;
    return;
  }
  size_t n = encode (t, r, rec);
  if (n == 0)
    return;                       /* not a record in this format */
  if (t->max_bytes && t->bytes + n > t->max_bytes) {
    t->dropped++;
    stop (t, 0);
  }
  else if (fwrite (rec, 1, n, t->fp) != n) {
    t->dropped++;
    stop (t, errno ? errno : EIO);
  }
  else {
    t->bytes += n;
    t->records++;
  }
}

void
trace_record (struct trace *t, uint64_t arrival_ns, enum blkemu_op op,
              uint64_t offset, uint64_t len, uint64_t latency_ns, uint64_t qd,
              int err, unsigned marks)
{
  if (!t->path)
    return;
  struct request_rec r = {
    .arrival_ns = arrival_ns - t->start_ns, .op = op, .offset = offset,
    .len = len, .latency_ns = latency_ns, .qd = qd, .err = err,
    .marks = marks,
  };
  pthread_mutex_lock (&t->lock);
  put (t, &r);
  pthread_mutex_unlock (&t->lock);
}

/* ---- converting recorded traces ------------------------------------ */

static int
errno_from_name (const char *s)
{
  for (int e = 1; e < 134; e++) {
    const char *n = strerrorname_np (e);
    if (n && strcmp (n, s) == 0)
      return e;
  }
  return EIO;
}

static int
trace_convert (FILE *in, const char *in_name, FILE *out, const char *format,
               const char *disk_name, char *err)
{
  enum trace_format f;
  if (!strcmp (format, "blktrace"))
    f = TRACE_FMT_BLKTRACE;
  else if (!strcmp (format, "iolog"))
    f = TRACE_FMT_IOLOG;
  else if (!strcmp (format, "blkemu"))
    f = TRACE_FMT_BLKEMU;
  else {
    set_err (err, "trace-format=%s: must be one of blkemu|blktrace|iolog",
             format);
    return -1;
  }
  struct trace t = { .format = f, .fp = out, .path = (char *) "-",
                     .name = strdup (disk_name ? disk_name : "disk0") };
  if (!t.name) {
    set_err (err, "out of memory");
    return -1;
  }
  write_header (&t);
  char line[512], op[8], result[32], marks[200];
  size_t lineno = 0;
  int r = 0;
  while (r == 0 && fgets (line, sizeof line, in)) {
    lineno++;
    if (line[0] == '#' || line[0] == '\n')
      continue;
    unsigned long long sec, usec, off, len, lat_us, lat_ns, qd;
    int o = -1;
    if (sscanf (line, "%llu.%llu %7s %llu %llu %llu.%llu %llu %31s %199s",
                &sec, &usec, op, &off, &len, &lat_us, &lat_ns, &qd, result,
                marks) == 10 && op[1] == '\0')
      for (int i = 0; i < BLKEMU_OP_COUNT; i++)
        if (op[0] == op_letter[i])
          o = i;
    if (o < 0 || usec >= 1000000 || lat_ns >= 1000 ||
        sec > UINT64_MAX / 1000000000u - 1) {
      line[strcspn (line, "\n")] = '\0';
      set_err (err, "%s:%zu: not a blkemu trace line: %.60s", in_name,
               lineno, line);
      r = -1;
      break;
    }
    struct request_rec rec = {
      .arrival_ns = sec * 1000000000u + usec * 1000u, .op = o, .offset = off,
      .len = len, .latency_ns = lat_us * 1000u + lat_ns, .qd = qd,
      .err = strcmp (result, "ok") ? errno_from_name (result) : 0,
    };
    for (size_t i = 0; i < sizeof mark_names / sizeof mark_names[0]; i++) {
      const char *m = strstr (marks, mark_names[i]);
      size_t ml = strlen (mark_names[i]);
      if (m && (m == marks || m[-1] == ',') && (m[ml] == ',' || !m[ml]))
        rec.marks |= 1u << i;
    }
    /* Straight to OUT: the live trace's cap and stop() (which closes its
     * file) are not the caller's.
     */
    char buf[RECORD_MAX];
    size_t n = encode (&t, &rec, buf);
    if (n && fwrite (buf, 1, n, out) != n) {
      set_err (err, "writing: %s", strerrordesc_np (errno));
      r = -1;
    }
  }
  if (r == 0 && f == TRACE_FMT_IOLOG)
    fprintf (out, "%llu %s close\n", (unsigned long long) t.last_ms, t.name);
  if (r == 0 && (ferror (in) || fflush (out) != 0)) {
    set_err (err, "%s: %s", ferror (in) ? in_name : "output",
             strerrordesc_np (errno));
    r = -1;
  }
  free (t.name);
  return r;
}

int
blkemu_trace_convert (FILE *in, const char *in_name, FILE *out,
                      const char *format, const char *disk_name, char *err,
                      size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (trace_convert (in, in_name, out, format, disk_name, e),
                     e, err, errlen);
}
