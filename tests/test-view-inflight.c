/* A crash view's writes stay in that view.  With backend=file a view's
 * requests move on the disk's I/O worker, in order: a write queued
 * behind a long read can still be waiting when its view ends and the
 * next one opens.  It must fail (EIO, as the view it belonged to is
 * gone) and must not show in the next view, which reads the crash state
 * and nothing else (issue 37, defect 3: it landed in the next view's
 * overlay, which was open again).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "check.h"
#include "helpers.h"

#define BLOCK 4096
#define BIG (256ULL << 20) /* the read that keeps the worker busy */

/* One attempt: returns true when the write was still queued behind the
 * read when the next view opened (the case under test), and checks what
 * that view reads.
 */
static bool
attempt (struct blkemu_disk *d, unsigned char *big, int round)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_crash_report rep;
  unsigned char mine[BLOCK], got[BLOCK];
  struct test_done rd = { 0 }, wr = { 0 };

  CHECK (blkemu_disk_view_open (d, BLKEMU_CRASH_LOSE_ALL, 0, &rep, err,
                                sizeof err) == 0,
         "round %d: view 1: %s", round, err);
  memset (mine, 0xB0 + round, BLOCK);
  test_answered (blkemu_submit (d, BLKEMU_OP_READ, big, BIG, 1 << 20, 0,
                                test_done, &rd),
                 test_done, &rd);
  test_answered (blkemu_submit (d, BLKEMU_OP_WRITE, mine, BLOCK, 0, 0,
                                test_done, &wr),
                 test_done, &wr);
  CHECK (blkemu_disk_view_close (d, err, sizeof err) == 0,
         "round %d: view 1 ends: %s", round, err);
  CHECK (blkemu_disk_view_open (d, BLKEMU_CRASH_LOSE_ALL, 0, &rep, err,
                                sizeof err) == 0,
         "round %d: view 2: %s", round, err);
  bool raced = !__atomic_load_n (&wr.done, __ATOMIC_ACQUIRE);
  int rr = test_wait (&rd, 20), wr_result = test_wait (&wr, 20);
  CHECK (rr != ETIMEDOUT && wr_result != ETIMEDOUT, "round %d: both completed",
         round);
  if (raced) {
    CHECK (wr_result == EIO,
           "round %d: the write of the ended view fails with EIO (%d)", round,
           wr_result);
    CHECK (blkemu_io (d, BLKEMU_OP_READ, got, BLOCK, 0, 0) == 0,
           "round %d: view 2 reads block 0", round);
    CHECK (got[0] == 0xA5 && memcmp (got, got + 1, BLOCK - 1) == 0,
           "round %d: view 2 reads the crash state (0xa5), not the ended "
           "view's write (read 0x%02x)",
           round, got[0]);
  }
  CHECK (blkemu_disk_view_close (d, err, sizeof err) == 0,
         "round %d: view 2 ends: %s", round, err);
  return raced;
}

int
main (void)
{
  char dir[] = "/tmp/blkemu-view-inflight.XXXXXX";
  CHECK (mkdtemp (dir) != NULL, "mkdtemp: %s", strerror (errno));
  char path[sizeof dir + 16];
  snprintf (path, sizeof path, "%s/disk", dir);
  char spec[256];
  snprintf (spec, sizeof spec, "backend=file,file=%s,size=%llu,oversize=split",
            path, (unsigned long long) (BIG + (2 << 20)));
  struct blkemu_disk *d = test_disk (spec, NULL);
  unsigned char *big = malloc (BIG);
  if (!d || !big)
    return 1;

  /* The durable state every view shows at block 0. */
  unsigned char a5[BLOCK];
  memset (a5, 0xA5, BLOCK);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, a5, BLOCK, 0, 0) == 0 &&
           blkemu_io (d, BLKEMU_OP_FLUSH, NULL, 0, 0, 0) == 0,
         "block 0 written and flushed");
  char err[BLKEMU_ERR_MAX];
  CHECK (blkemu_disk_power_off (d, err, sizeof err) == 0, "power-off: %s",
         err);

  int raced = 0;
  for (int round = 1; round <= 8 && raced < 3; round++)
    raced += attempt (d, big, round);
  printf ("%d of the rounds had the write queued when the next view "
          "opened\n",
          raced);
  CHECK (raced >= 1,
         "the worker never held the write past the view's end: the case "
         "was not set up (a %llu MiB read should take longer than two "
         "control calls)",
         (unsigned long long) (BIG >> 20));

  blkemu_disk_power_on (d);
  blkemu_disk_close (d);
  free (big);
  unlink (path);
  rmdir (dir);
  return failures ? 1 : 0;
}
