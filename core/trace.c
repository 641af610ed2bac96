/* The per-request trace: see trace.h. */
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "stats.h"

static const char op_letter[BLKEMU_OP_COUNT] = { 'R', 'W', 'F', 'T', 'Z' };

int
trace_open (struct trace *t, const char *path, uint64_t start_ns, char *err)
{
  memset (t, 0, sizeof *t);
  pthread_mutex_init (&t->lock, NULL);
  t->start_ns = start_ns;
  if (!path)
    return 0;
  t->fp = fopen (path, "w");
  if (!t->fp) {
    set_err (err, "trace=%s: %s", path, strerrordesc_np (errno));
    return -1;
  }
  /* A large buffer keeps the cost per record to a formatted memcpy. */
  setvbuf (t->fp, NULL, _IOFBF, 1 << 20);
  fprintf (t->fp, "# blkemu trace v1\n"
           "# time_s op offset length latency_us qd result marks\n");
  return 0;
}

void
trace_close (struct trace *t)
{
  if (t->fp)
    fclose (t->fp);
  t->fp = NULL;
  pthread_mutex_destroy (&t->lock);
}

void
trace_flush (struct trace *t)
{
  if (!t->fp)
    return;
  pthread_mutex_lock (&t->lock);
  fflush (t->fp);
  pthread_mutex_unlock (&t->lock);
}

void
trace_record (struct trace *t, uint64_t arrival_ns, enum blkemu_op op,
              uint64_t offset, uint64_t len, uint64_t latency_ns, uint64_t qd,
              int err, unsigned marks)
{
  if (!t->fp)
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
  size_t n = strlen (m);
  if (n)
    m[n - 1] = '\0';
  else
    strcpy (m, "-");
  uint64_t t_ns = arrival_ns - t->start_ns;
  pthread_mutex_lock (&t->lock);
  fprintf (t->fp, "%llu.%06llu %c %llu %llu %llu.%03llu %llu %s %s\n",
           (unsigned long long) (t_ns / 1000000000u),
           (unsigned long long) (t_ns / 1000 % 1000000),
           op_letter[op], (unsigned long long) offset,
           (unsigned long long) len,
           (unsigned long long) (latency_ns / 1000),
           (unsigned long long) (latency_ns % 1000),
           (unsigned long long) qd,
           err ? strerrorname_np (err) : "ok", m);
  pthread_mutex_unlock (&t->lock);
}
