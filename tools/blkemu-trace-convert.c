/* blkemu-trace-convert: a recorded blkemu trace in the formats other
 * tools read.
 *
 *   blkemu-trace-convert --to blktrace|iolog [-n NAME] [-o OUT] TRACE
 *
 * blktrace: struct blk_io_trace events (D at arrival, C at completion)
 * for blkparse -i, btt and iowatcher.  iolog: fio's iolog version 3 for
 * fio --read_iolog.  The same encoders as trace-format= on a live disk.
 * See docs/blkemu-trace-convert.1.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: blkemu-trace-convert --to blktrace|iolog [-n NAME] [-o OUT] "
    "TRACE\n"
    "\n"
    "Converts a blkemu trace (trace=PATH, the default trace-format=blkemu)\n"
    "to the format other tools read.  TRACE may be - for standard input.\n"
    "\n"
    "  -t, --to FORMAT      blktrace (for blkparse -i, btt, iowatcher) or\n"
    "                       iolog (fio's iolog v3, for fio --read_iolog)\n"
    "  -n, --name NAME      the file name an iolog uses (default: disk0)\n"
    "  -o, --output OUT     write to OUT (default: standard output)\n"
    "  -h, --help           this text\n"
    "  -V, --version        print the version\n");
}

int
main (int argc, char **argv)
{
  static const struct option opts[] = {
    { "to", required_argument, NULL, 't' },
    { "name", required_argument, NULL, 'n' },
    { "output", required_argument, NULL, 'o' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  const char *to = NULL, *name = "disk0", *outpath = NULL;
  int c;
  while ((c = getopt_long (argc, argv, "t:n:o:hV", opts, NULL)) != -1) {
    switch (c) {
    case 't': to = optarg; break;
    case 'n': name = optarg; break;
    case 'o': outpath = optarg; break;
    case 'h': usage (stdout); return 0;
    case 'V': printf ("blkemu-trace-convert %s\n", BLKEMU_VERSION); return 0;
    default: usage (stderr); return 2;
    }
  }
  if (!to || optind != argc - 1) {
    usage (stderr);
    return 2;
  }
  const char *inpath = argv[optind];
  FILE *in = strcmp (inpath, "-") ? fopen (inpath, "r") : stdin;
  if (!in) {
    fprintf (stderr, "blkemu-trace-convert: %s: %s\n", inpath,
             strerror (errno));
    return 1;
  }
  FILE *out = outpath ? fopen (outpath, "w") : stdout;
  if (!out) {
    fprintf (stderr, "blkemu-trace-convert: %s: %s\n", outpath,
             strerror (errno));
    return 1;
  }
  char err[BLKEMU_ERR_MAX];
  int r = blkemu_trace_convert (in, inpath, out, to, name, err, sizeof err);
  if (r == -1)
    fprintf (stderr, "blkemu-trace-convert: %s\n", err);
  if (out != stdout && fclose (out) != 0 && r == 0) {
    fprintf (stderr, "blkemu-trace-convert: %s: %s\n", outpath,
             strerror (errno));
    r = -1;
  }
  if (in != stdin)
    fclose (in);
  return r == 0 ? 0 : 1;
}
