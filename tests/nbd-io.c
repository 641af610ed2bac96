/* nbd-io: one raw NBD request, with libnbd's client-side checks off, so a
 * test can send what a careless client would (oversize, misaligned).
 *
 *   nbd-io URI read|write|write-fua|read-zeros|trim|zero|flush
 *   nbd-io URI write-fua-many OFFSET LENGTH COUNT  (COUNT FUA writes over
 *       4096 consecutive LENGTH slots from OFFSET, round and round)
 *          OFFSET LENGTH [SEED]
 *
 * write fills the buffer from SEED (default 1); read compares against the
 * same pattern when SEED is given; read-zeros expects zeros; read-twice
 * sends two reads on one connection and prints both results (to see a
 * connection dropped after the first).  Prints "ok" or the errno name; exits
 * 0 on success, 1 on a request error, 2 on usage or connection errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <libnbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pattern: every 8-byte word holds its absolute offset xor SEED, so
 * misplaced data is caught as well as corrupt data.
 */
static void
fill (unsigned char *buf, uint64_t len, uint64_t offset, uint64_t seed)
{
  for (uint64_t i = 0; i < len; i += 8) {
    uint64_t w = (offset + i) ^ (seed * 0x9E3779B97F4A7C15ull);
    memcpy (buf + i, &w, len - i < 8 ? len - i : 8);
  }
}

static uint64_t
parse_num (const char *s)
{
  char *end;
  errno = 0;
  uint64_t v = strtoull (s, &end, 0);
  if (errno || *end) {
    fprintf (stderr, "nbd-io: bad number '%s'\n", s);
    exit (2);
  }
  return v;
}

/* OP ("read", "write", "write-fua-many", "trim", "zero", "flush") on
 * NBD: its result (-1 on error), or -2 for an unknown OP.  A read
 * lands in *BUF; write-fua-many allocates *BUF itself.
 */
static int
run_op (struct nbd_handle *nbd, const char *op, bool twice, bool fua,
        unsigned char **bufp, uint64_t offset, uint64_t len, uint64_t seed)
{
  unsigned char *buf = *bufp;
  int r;
  if (!strcmp (op, "write-fua-many")) {
    buf = *bufp = calloc (1, len ? len : 1);
    r = buf ? 0 : -1;
    for (uint64_t i = 0; i < seed && r == 0; i++)
      r = nbd_pwrite (nbd, buf, len, offset + (i % 4096) * len,
                      LIBNBD_CMD_FLAG_FUA);
  }
  else if (!strcmp (op, "write")) {
    fill (buf, len, offset, seed);
    r = nbd_pwrite (nbd, buf, len, offset, fua ? LIBNBD_CMD_FLAG_FUA : 0);
  }
  else if (!strcmp (op, "read") && twice) {
    r = nbd_pread (nbd, buf, len, offset, 0);
    printf ("%s ", r == -1
                     ? (nbd_get_errno () ? strerrorname_np (nbd_get_errno ())
                                         : "error")
                     : "ok");
    r = nbd_pread (nbd, buf, len, offset, 0);
  }
  else if (!strcmp (op, "read"))
    r = nbd_pread (nbd, buf, len, offset, 0);
  else if (!strcmp (op, "trim"))
    r = nbd_trim (nbd, len, offset, 0);
  else if (!strcmp (op, "zero"))
    r = nbd_zero (nbd, len, offset, 0);
  else if (!strcmp (op, "flush"))
    r = nbd_flush (nbd, 0);
  else
    r = -2;
  return r;
}

/* A read's data against what SEED wrote there (or zeroes): "ok" or
 * "MISMATCH at OFFSET"; 0, 1 on a mismatch, 2 without memory.
 */
static int
check_read (const unsigned char *buf, uint64_t len, uint64_t offset,
            uint64_t seed, bool zeros)
{
  unsigned char *want = malloc (len ? len : 1);
  if (!want)
    return 2;
  if (zeros)
    memset (want, 0, len);
  else
    fill (want, len, offset, seed);
  int status = 0;
  for (uint64_t i = 0; i < len; i++)
    if (buf[i] != want[i]) {
      printf ("MISMATCH at %" PRIu64 "\n", offset + i);
      status = 1;
      break;
    }
  free (want);
  if (status == 0)
    printf ("ok\n");
  return status;
}

int
main (int argc, char **argv)
{
  if (argc < 3 || argc > 6) {
    fprintf (stderr, "usage: nbd-io URI read|write|write-fua|read-zeros|"
                     "trim|zero|flush|write-fua-many "
                     "[OFFSET LENGTH [SEED|COUNT]]\n");
    return 2;
  }
  const char *op = argv[2];
  uint64_t offset = argc > 3 ? parse_num (argv[3]) : 0;
  uint64_t len = argc > 4 ? parse_num (argv[4]) : 0;
  bool have_seed = argc > 5;
  uint64_t seed = have_seed ? parse_num (argv[5]) : 1;

  struct nbd_handle *nbd = nbd_create ();
  if (!nbd || nbd_set_strict_mode (nbd, 0) == -1 ||
      nbd_connect_uri (nbd, argv[1]) == -1) {
    fprintf (stderr, "nbd-io: %s\n", nbd_get_error ());
    return 2;
  }
  unsigned char *buf = NULL;
  bool fua = !strcmp (op, "write-fua"), zeros = !strcmp (op, "read-zeros");
  bool twice = !strcmp (op, "read-twice");
  if (twice)
    op = "read";
  if (fua)
    op = "write";
  if (zeros) {
    op = "read";
    have_seed = true;
  }
  if (!strcmp (op, "read") || !strcmp (op, "write")) {
    buf = malloc (len ? len : 1);
    if (!buf)
      return 2;
  }

  int r = run_op (nbd, op, twice, fua, &buf, offset, len, seed);
  if (r == -2) {
    fprintf (stderr, "nbd-io: unknown operation '%s'\n", op);
    return 2;
  }

  int status = 0;
  if (r == -1) {
    int e = nbd_get_errno ();
    printf ("%s\n", e ? strerrorname_np (e) : "error");
    fprintf (stderr, "nbd-io: %s\n", nbd_get_error ());
    status = 1;
  }
  else if (!strcmp (op, "read") && have_seed)
    status = check_read (buf, len, offset, seed, zeros);
  else
    printf ("ok\n");

  nbd_shutdown (nbd, 0);
  nbd_close (nbd);
  free (buf);
  return status;
}
