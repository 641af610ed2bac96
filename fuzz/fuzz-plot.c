/* Fuzz blkemu-plot's trace reader and the drawing behind it: any bytes
 * either are refused with a message or plot in bounded output.
 */
#define BLKEMU_PLOT_FUZZ
#include "../tools/blkemu-plot.c"

/* A sink that counts what it is given. */
static ssize_t
count_write (void *cookie, const char *buf, size_t n)
{
  (void) buf;
  *(size_t *) cookie += n;
  return (ssize_t) n;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (!diag_fp)
    diag_fp = fopen ("/dev/null", "w");
  FILE *in = fmemopen ((void *) data, size, "r");
  if (!in)
    return 0;
  struct trace tr = { 0 };
  size_t written = 0;
  FILE *out = fopencookie (&written, "w",
                           (cookie_io_functions_t){ .write = count_write });
  if (read_trace_fp (in, "fuzz", &tr) == 0) {
    plot (out, &tr, "fuzz");
    fflush (out);
    /* Bounded output: the densest plot is a few MB. */
    if (written > (size_t) 64 << 20)
      abort ();
  }
  fclose (out);
  fclose (in);
  free (tr.r);
  return 0;
}
