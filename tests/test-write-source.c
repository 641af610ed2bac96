/* Writes taken from the frontend (blkemu_disk_set_write_source): a
 * memory disk takes a submitted write's data straight from the source
 * into its store, chunk by chunk, and never reads the buffer; where
 * something needs the data first (a write cache, a crash view, a
 * misdirected write, a file backend's worker) the source fills the
 * buffer, whole, before; an injected error takes nothing; a source that
 * fails fails the write with its errno.  Every case reads back what the
 * source held.
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

#define LEN (192 * 1024) /* three 64 KiB chunks, one partly */
#define OFF (32 * 1024)

static unsigned char pages[LEN]; /* what the frontend holds: the data */
static unsigned calls, whole_calls;
static uint64_t took;
static int fail_with;

static int
source (void *cookie, uint64_t at, void *dst, uint64_t len)
{
  (void) cookie;
  calls++;
  whole_calls += at == 0 && len == LEN;
  if (fail_with)
    return fail_with;
  if (at + len > LEN)
    return EINVAL;
  memcpy (dst, pages + at, len);
  took += len;
  return 0;
}

/* Submit one write of LEN at OFF with BUF (poisoned: must not reach the
 * disk unless the source filled it), wait, return its result.
 */
static int
write_one (struct blkemu_disk *d, unsigned char *buf)
{
  struct test_done rec = { 0 };
  memset (buf, 0xEE, LEN);
  calls = whole_calls = 0;
  took = 0;
  test_answered (blkemu_submit (d, BLKEMU_OP_WRITE, buf, LEN, OFF, 0,
                                test_done, &rec),
                 test_done, &rec);
  return test_wait (&rec, 5);
}

static bool
reads_back (struct blkemu_disk *d)
{
  static unsigned char got[LEN];
  return blkemu_io (d, BLKEMU_OP_READ, got, LEN, OFF, 0) == 0 &&
         memcmp (got, pages, LEN) == 0;
}

static struct blkemu_disk *
open_disk (const char *spec)
{
  struct blkemu_disk *d = test_disk (spec, NULL);
  if (d)
    blkemu_disk_set_write_source (d, source);
  return d;
}

static void
fill_pages (unsigned seed)
{
  for (unsigned i = 0; i < LEN; i++)
    pages[i] = (unsigned char) (i * 7 + seed);
}

static unsigned char buf[LEN];

/* Straight into the store: per chunk, never the whole buffer. */
static void
test_taken (void)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_disk *d = open_disk ("size=1M");
  fill_pages (1);
  CHECK (write_one (d, buf) == 0, "a taken write");
  CHECK (calls == 4 && whole_calls == 0 && took == LEN,
         "taken chunk by chunk: %u calls (4: 32K, 64K, 64K, 32K), %u whole",
         calls, whole_calls);
  CHECK (buf[0] == 0xEE && buf[LEN - 1] == 0xEE, "the buffer untouched");
  CHECK (reads_back (d), "the store holds the source's data");

  /* A source that fails fails the write with its errno. */
  fail_with = ENOSPC;
  CHECK (write_one (d, buf) == ENOSPC, "a failing source: ENOSPC");
  fail_with = 0;

  /* An injected error takes nothing. */
  CHECK (blkemu_disk_set (d, "error-mode", "always", err, sizeof err) == 0,
         "error-mode=always: %s", err);
  CHECK (write_one (d, buf) == EIO && calls == 0,
         "an injected error: EIO, the source not called (%u)", calls);
  CHECK (blkemu_disk_set (d, "error-mode", "off", err, sizeof err) == 0,
         "error-mode=off");

  /* Split by the device (max-transfer 64K): still taken, piece by piece. */
  CHECK (blkemu_disk_set (d, "max-transfer", "64K", err, sizeof err) == 0 &&
           blkemu_disk_set (d, "oversize", "split", err, sizeof err) == 0,
         "max-transfer=64K,oversize=split: %s", err);
  fill_pages (2);
  CHECK (write_one (d, buf) == 0 && whole_calls == 0 && took == LEN,
         "a split write taken in pieces (%u calls)", calls);
  CHECK (reads_back (d), "and read back");
  blkemu_disk_close (d);
}

/* What needs the data before it is stored gets the buffer filled whole. */
static void
test_filled (void)
{
  char err[BLKEMU_ERR_MAX];
  /* A write cache keeps the old data: the buffer is filled first. */
  struct blkemu_disk *d = open_disk ("size=1M,write-cache=on");
  fill_pages (3);
  CHECK (write_one (d, buf) == 0 && whole_calls == 1,
         "with a write cache the buffer is filled whole (%u whole of %u)",
         whole_calls, calls);
  CHECK (reads_back (d), "and the disk holds the data");
  CHECK (blkemu_disk_crash (d, err, sizeof err) == 0, "crash");
  blkemu_disk_power_on (d);
  memset (pages, 0, LEN);
  CHECK (reads_back (d), "the unflushed write rolled back to zeroes");
  /* A crash view's writes go to its overlay: filled first. */
  struct blkemu_crash_report rep;
  CHECK (blkemu_disk_power_off (d, err, sizeof err) == 0 &&
           blkemu_disk_view_open (d, BLKEMU_CRASH_LOSE_ALL, 0, &rep, err,
                                  sizeof err) == 0,
         "a view: %s", err);
  fill_pages (6);
  CHECK (write_one (d, buf) == 0 && whole_calls == 1,
         "a write in a crash view is filled whole (%u whole of %u)",
         whole_calls, calls);
  CHECK (reads_back (d), "and the view reads it");
  CHECK (blkemu_disk_view_close (d, err, sizeof err) == 0, "view end");
  blkemu_disk_power_on (d);
  blkemu_disk_close (d);

  /* A misdirected write lands elsewhere: filled, then moved. */
  d = open_disk ("size=4M,misdirected-write-probability=1");
  fill_pages (4);
  CHECK (write_one (d, buf) == 0 && whole_calls == 1,
         "a misdirected write is filled whole (%u whole of %u)", whole_calls,
         calls);
  blkemu_disk_close (d);

  /* A file backend's worker copies the buffer: filled first. */
  char path[] = "/tmp/test-write-source-XXXXXX", spec[128];
  int fd = mkstemp (path);
  CHECK (fd >= 0 && ftruncate (fd, 1 << 20) == 0, "a 1M file");
  close (fd);
  snprintf (spec, sizeof spec, "size=1M,backend=file,file=%s", path);
  d = open_disk (spec);
  fill_pages (5);
  CHECK (write_one (d, buf) == 0 && whole_calls == 1,
         "a file disk's write is filled whole (%u whole of %u)", whole_calls,
         calls);
  CHECK (reads_back (d), "and the file holds it");
  blkemu_disk_close (d);
  unlink (path);
}

int
main (void)
{
  test_taken ();
  test_filled ();

  printf ("%s\n", failures ? "FAILED" : "ok: write source");
  return failures ? 1 : 0;
}
