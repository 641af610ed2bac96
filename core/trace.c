/* The per-request trace: see trace.h. */
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "stats.h"

static const char op_letter[BLKEMU_OP_COUNT] = { 'R', 'W', 'F', 'T', 'Z' };

int
trace_open (struct trace *t, const char *path, uint64_t start_ns,
            uint64_t max_bytes, char *err)
{
  memset (t, 0, sizeof *t);
  pthread_mutex_init (&t->lock, NULL);
  t->start_ns = start_ns;
  t->max_bytes = max_bytes;
  if (!path)
    return 0;
  t->path = strdup (path);
  t->fp = fopen (path, "w");
  if (!t->fp || !t->path) {
    set_err (err, "trace=%s: %s", path, strerrordesc_np (t->fp ? ENOMEM
                                                               : errno));
    if (t->fp)
      fclose (t->fp);
    free (t->path);
    t->fp = NULL;
    return -1;
  }
  /* A large buffer keeps the cost per record to a formatted memcpy. */
  setvbuf (t->fp, NULL, _IOFBF, 1 << 20);
  int n = fprintf (t->fp, "# blkemu trace v1\n"
                   "# time_s op offset length latency_us qd result marks\n");
  t->bytes = n > 0 ? (uint64_t) n : 0;
  return 0;
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
  else
    fprintf (t->fp, "# trace stopped: trace-max-size reached\n");
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
  if (t->fp && fclose (t->fp) != 0)
    fprintf (stderr, "blkemu: trace=%s: %s\n", t->path,
             strerrordesc_np (errno));
  t->fp = NULL;
  pthread_mutex_unlock (&t->lock);
  free (t->path);
  t->path = NULL;
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

void
trace_record (struct trace *t, uint64_t arrival_ns, enum blkemu_op op,
              uint64_t offset, uint64_t len, uint64_t latency_ns, uint64_t qd,
              int err, unsigned marks)
{
  if (!t->path)
    return;
  static const char *const names[] = { "split", "oversize", "fua", "fault",
                                       "spike", "stall", "offline", "drop",
                                       "cached", "slow" };
  char m[128] = "";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (marks & (1u << i)) {
      strcat (m, names[i]);
      strcat (m, ",");
    }
  size_t mlen = strlen (m);
  if (mlen)
    m[mlen - 1] = '\0';
  else
    strcpy (m, "-");
  uint64_t t_ns = arrival_ns - t->start_ns;
  char rec[320];
  int n = snprintf (rec, sizeof rec,
           "%llu.%06llu %c %llu %llu %llu.%03llu %llu %s %s\n",
           (unsigned long long) (t_ns / 1000000000u),
           (unsigned long long) (t_ns / 1000 % 1000000),
           op_letter[op], (unsigned long long) offset,
           (unsigned long long) len,
           (unsigned long long) (latency_ns / 1000),
           (unsigned long long) (latency_ns % 1000),
           (unsigned long long) qd,
           err ? strerrorname_np (err) : "ok", m);
  pthread_mutex_lock (&t->lock);
  if (!t->fp) {
    t->dropped++;
  }
  else if (t->max_bytes && t->bytes + (uint64_t) n > t->max_bytes) {
    t->dropped++;
    stop (t, 0);
  }
  else if (fwrite (rec, 1, (size_t) n, t->fp) != (size_t) n) {
    t->dropped++;
    stop (t, errno ? errno : EIO);
  }
  else {
    t->bytes += (uint64_t) n;
    t->records++;
  }
  pthread_mutex_unlock (&t->lock);
}
