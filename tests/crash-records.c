/* crash-records: an application that commits records, for crash tests.
 *
 *   crash-records write FILE N [--fsync]   append N records; after each
 *                                          one is committed (written, and
 *                                          with --fsync made durable by
 *                                          fdatasync), print its number
 *   crash-records check FILE N             exit 0 when records 1..N are
 *                                          all there and intact; else say
 *                                          which are lost or damaged
 *
 * A record is 512 bytes: a magic, its number, a payload derived from the
 * number and a checksum of both.  The writer's output is what it told
 * its clients; a crash state passes when every record it acknowledged is
 * still there.  Without --fsync the acknowledgement promises nothing the
 * disk has, and blkemu-crashcheck finds the states that show it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECORD 512
#define MAGIC "BLKEMREC"

struct record {
  char magic[8];
  uint64_t seq;
  uint64_t sum;
  unsigned char payload[RECORD - 24];
};
_Static_assert(sizeof (struct record) == RECORD, "one sector per record");

/* FNV-1a over the number and the payload. */
static uint64_t
checksum (const struct record *r)
{
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char *p = (const unsigned char *) &r->seq;
  for (size_t i = 0; i < sizeof r->seq; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  for (size_t i = 0; i < sizeof r->payload; i++)
    h = (h ^ r->payload[i]) * 0x100000001b3ull;
  return h;
}

static void
make_record (struct record *r, uint64_t seq)
{
  memcpy (r->magic, MAGIC, sizeof r->magic);
  r->seq = seq;
  uint64_t x = seq * 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < sizeof r->payload; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    r->payload[i] = (unsigned char) x;
  }
  r->sum = checksum (r);
}

static int
write_records (const char *path, uint64_t n, bool durable)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd == -1) {
    fprintf (stderr, "crash-records: %s: %s\n", path, strerror (errno));
    return 2;
  }
  for (uint64_t seq = 1; seq <= n; seq++) {
    struct record r;
    make_record (&r, seq);
    if (write (fd, &r, sizeof r) != (ssize_t) sizeof r ||
        (durable && fdatasync (fd) == -1)) {
      fprintf (stderr, "crash-records: %s: record %" PRIu64 ": %s\n", path,
               seq, strerror (errno));
      return 2;
    }
    printf ("%" PRIu64 "\n", seq); /* committed: acknowledged */
    fflush (stdout);
  }
  return close (fd) == 0 ? 0 : 2;
}

static int
check_records (const char *path, uint64_t n)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd == -1) {
    printf ("%s: %s: all %" PRIu64 " acknowledged records lost\n", path,
            strerror (errno), n);
    return 1;
  }
  uint64_t lost = 0, damaged = 0, first_bad = 0;
  for (uint64_t seq = 1; seq <= n; seq++) {
    struct record got, want;
    make_record (&want, seq);
    ssize_t r = pread (fd, &got, sizeof got, (off_t) ((seq - 1) * RECORD));
    bool ok = r == (ssize_t) sizeof got && !memcmp (&got, &want, sizeof got);
    if (!ok) {
      if (r < (ssize_t) sizeof got)
        lost++;
      else
        damaged++;
      if (!first_bad)
        first_bad = seq;
    }
  }
  close (fd);
  if (!lost && !damaged) {
    printf ("%s: all %" PRIu64 " acknowledged records intact\n", path, n);
    return 0;
  }
  printf ("%s: of %" PRIu64 " acknowledged records %" PRIu64
          " lost (past the end of the file), %" PRIu64
          " damaged (zeros or other data); the first bad: %" PRIu64 "\n",
          path, n, lost, damaged, first_bad);
  return 1;
}

int
main (int argc, char **argv)
{
  char *end;
  if (argc < 4 || argc > 5)
    goto usage;
  uint64_t n = strtoull (argv[3], &end, 10);
  if (*end || n == 0)
    goto usage;
  if (!strcmp (argv[1], "write") &&
      (argc == 4 || !strcmp (argv[4], "--fsync")))
    return write_records (argv[2], n, argc == 5);
  if (!strcmp (argv[1], "check") && argc == 4)
    return check_records (argv[2], n);
usage:
  fprintf (stderr, "usage: crash-records write FILE N [--fsync]\n"
                   "       crash-records check FILE N\n");
  return 2;
}
