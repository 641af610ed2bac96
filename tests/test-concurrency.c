/* The core under concurrency, through the public API: eight threads
 * writing, reading, flushing and trimming their own regions (and one
 * region they share) on write-cached memory and file disks, while another
 * thread changes runtime keys, reads stats and the summary, and crashes
 * and powers the disk on.  Checks: every block written by a thread reads
 * back as that thread last wrote it while no crash intervened, and after
 * each crash the flushed data is there.  Mainly a target for the
 * ThreadSanitizer build (make check-tsan), where any data race fails it.
 * A disk with nothing for a request to read under the disk lock admits
 * without it (admission.h): that plain path runs the same way, and its
 * gate is checked to close for every key, crash and stall that must
 * close it and to open again after.
 * Standalone: exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "check.h"

#define THREADS 8
#define REGION (256 * 1024) /* per thread */
#define SHARED (THREADS * REGION)
#define ROUNDS 2000

static struct blkemu_disk *disk;
static volatile int stop_control;
static bool quiet_controller; /* no stats reads (the plain run) */
/* Crashes so far: a writer that sees it change between its write and its
 * read does not compare (the crash may have rolled the write back).
 */
static unsigned crash_count;
static unsigned crashes_done; /* controller only */
static pthread_rwlock_t crash_lock = PTHREAD_RWLOCK_INITIALIZER;

static void
pattern (unsigned char *p, size_t len, unsigned tag)
{
  for (size_t i = 0; i < len; i++)
    p[i] = (unsigned char) (tag * 31 + i / 512);
}

static void *
worker (void *arg)
{
  unsigned id = (unsigned) (uintptr_t) arg;
  unsigned char *buf = malloc (65536), *want = malloc (65536);
  unsigned seed = id + 1;
  for (unsigned r = 0; r < ROUNDS; r++) {
    uint64_t len = 4096u << (rand_r (&seed) % 5); /* 4K..64K */
    uint64_t off =
      (uint64_t) id * REGION + (rand_r (&seed) % (REGION / 4096)) * 4096;
    if (off + len > (uint64_t) (id + 1) * REGION)
      off = (uint64_t) (id + 1) * REGION - len;
    unsigned tag = id * 1000 + r;
    pattern (buf, len, tag);
    /* A crash between the write and the read may undo the write. */
    pthread_rwlock_rdlock (&crash_lock);
    unsigned before = __atomic_load_n (&crash_count, __ATOMIC_ACQUIRE);
    int w = blkemu_io (disk, BLKEMU_OP_WRITE, buf, len, off,
                       r % 7 == 0 ? BLKEMU_FLAG_FUA : 0);
    int rd = blkemu_io (disk, BLKEMU_OP_READ, want, len, off, 0);
    unsigned after = __atomic_load_n (&crash_count, __ATOMIC_ACQUIRE);
    pthread_rwlock_unlock (&crash_lock);
    if (w == 0 && rd == 0 && before == after)
      CHECK (memcmp (buf, want, len) == 0,
             "thread %u round %u: read back "
             "differs",
             id, r);
    /* Shared region: overlapping traffic, no data check (a device
     * promises nothing there), only no crash and no race report.
     */
    blkemu_io (disk, r % 2 ? BLKEMU_OP_WRITE : BLKEMU_OP_READ, buf, 4096,
               SHARED + (rand_r (&seed) % 64) * 4096, 0);
    if (r % 10 == 0)
      blkemu_io (disk, BLKEMU_OP_FLUSH, NULL, 0, 0, 0);
    if (r % 25 == 0)
      blkemu_io (disk, BLKEMU_OP_TRIM, NULL, 4096, off, 0);
  }
  free (buf);
  free (want);
  return NULL;
}

static void *
controller (void *arg)
{
  (void) arg;
  char err[BLKEMU_ERR_MAX];
  static const char *const sets[][2] = {
    { "latency-read", "20us" }, { "latency-read", "0" },
    { "oversize", "split" },    { "max-transfer", "32K" },
    { "max-transfer", "32M" },  { "slowdown", "2" },
    { "slowdown", "1" },        { "cache-size", "128K" },
    { "cache-size", "64M" },
  };
  unsigned i = 0;
  while (!__atomic_load_n (&stop_control, __ATOMIC_ACQUIRE)) {
    blkemu_disk_set (disk, sets[i % 9][0], sets[i % 9][1], err, sizeof err);
    /* Reading the stats orders the controller after the writers (their
     * stats lock): the plain run leaves it out, so that ThreadSanitizer
     * sees a change and the plain path's reads with nothing but the
     * path's own protocol between them.
     */
    if (!quiet_controller) {
      free (blkemu_disk_stats_json (disk, i % 2));
      free (blkemu_disk_summary_text (disk));
    }
    if (i % 10 == 9) {
      /* Writers hold the read side across write+read: a crash waits for
       * in-progress pairs, then every pair after it sees the new count.
       */
      pthread_rwlock_wrlock (&crash_lock);
      __atomic_add_fetch (&crash_count, 1, __ATOMIC_ACQ_REL);
      CHECK (blkemu_disk_crash (disk, err, sizeof err) == 0, "crash: %s", err);
      crashes_done++;
      blkemu_disk_power_on (disk);
      pthread_rwlock_unlock (&crash_lock);
    }
    usleep (500);
    i++;
  }
  return NULL;
}

static void
run (const char *spec)
{
  char err[BLKEMU_ERR_MAX];
  disk = blkemu_disk_open_spec (spec, 0, NULL, err, sizeof err);
  CHECK (disk != NULL, "open %s: %s", spec, err);
  if (!disk)
    return;
  pthread_t t[THREADS], c;
  stop_control = 0;
  pthread_create (&c, NULL, controller, NULL);
  for (unsigned i = 0; i < THREADS; i++)
    pthread_create (&t[i], NULL, worker, (void *) (uintptr_t) i);
  for (unsigned i = 0; i < THREADS; i++)
    pthread_join (t[i], NULL);
  __atomic_store_n (&stop_control, 1, __ATOMIC_RELEASE);
  pthread_join (c, NULL);

  /* Crash with everything flushed: nothing may change. */
  unsigned char *before = malloc (SHARED), *after = malloc (SHARED);
  CHECK (blkemu_io (disk, BLKEMU_OP_FLUSH, NULL, 0, 0, 0) == 0, "flush");
  blkemu_disk_set (disk, "max-transfer", "32M", err, sizeof err);
  CHECK (blkemu_io (disk, BLKEMU_OP_READ, before, SHARED, 0, 0) == 0, "read");
  CHECK (blkemu_disk_crash (disk, err, sizeof err) == 0, "crash: %s", err);
  blkemu_disk_power_on (disk);
  CHECK (blkemu_io (disk, BLKEMU_OP_READ, after, SHARED, 0, 0) == 0,
         "read after power-on");
  CHECK (memcmp (before, after, SHARED) == 0,
         "%s: flushed data changed by a crash", spec);
  free (before);
  free (after);
  blkemu_disk_close (disk);
  CHECK (crashes_done > 0, "%s: no crash happened during the run", spec);
  printf ("ok: %s (%u crashes during the run)\n", spec, crashes_done);
  crashes_done = 0;
}

/* The stats' admission: "plain" or "locked". */
static int
admission_is (struct blkemu_disk *d, const char *want)
{
  char *json = blkemu_disk_stats_json (d, 0);
  char key[64];
  snprintf (key, sizeof key, "\"admission\": \"%s\"", want);
  int r = json && strstr (json, key) != NULL;
  free (json);
  return r;
}

/* Which disks take the plain path, and that every change closes it and
 * the end of what closed it opens it again.
 */
static void
check_admission (void)
{
  char err[BLKEMU_ERR_MAX];
  static const char *const closers[][2] = {
    { "latency-read", "1us" },        { "bandwidth", "1G" },
    { "error-mode", "always" },       { "spike-probability", "1%" },
    { "bit-flip-probability", "1%" }, { "slowdown", "2" },
    { "write-cache", "yes" },         { "latency-dist", "uniform" },
  };
  struct blkemu_disk *d =
    blkemu_disk_open_spec ("size=1M", 0, NULL, err, sizeof err);
  CHECK (d, "open size=1M: %s", err);
  if (!d)
    return;
  CHECK (admission_is (d, "plain"), "a null-cost memory disk: plain");
  for (unsigned i = 0; i < sizeof closers / sizeof closers[0]; i++) {
    const char *key = closers[i][0];
    char was[64];
    blkemu_disk_get (d, key, was, sizeof was, err, sizeof err);
    CHECK (blkemu_disk_set (d, key, closers[i][1], err, sizeof err) == 0,
           "set %s: %s", key, err);
    CHECK (admission_is (d, "locked"), "%s=%s: locked", key, closers[i][1]);
    CHECK (blkemu_disk_set (d, key, was, err, sizeof err) == 0, "set %s: %s",
           key, err);
    CHECK (admission_is (d, "plain"), "%s=%s again: plain", key, was);
  }
  /* A crash closes it until power-on. */
  blkemu_disk_crash (d, err, sizeof err);
  CHECK (admission_is (d, "locked"), "crashed: locked");
  blkemu_disk_power_on (d);
  CHECK (admission_is (d, "plain"), "powered on: plain");
  /* A stall holds it closed until the first request after the stall. */
  unsigned char b[512];
  CHECK (blkemu_disk_set (d, "stall", "2ms", err, sizeof err) == 0,
         "set stall: %s", err);
  CHECK (admission_is (d, "locked"), "stalled: locked");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, b, sizeof b, 0, 0) == 0, "a read");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, b, sizeof b, 0, 0) == 0, "a read");
  CHECK (admission_is (d, "plain"), "after the stall: plain");
  /* What was refused under the lock is refused on the plain path. */
  CHECK (blkemu_io (d, BLKEMU_OP_READ, b, 511, 0, 0) == EINVAL,
         "a misaligned read on the plain path: EINVAL");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, b, sizeof b, 1 << 20, 0) == EINVAL,
         "a read past the end on the plain path: EINVAL");
  blkemu_disk_close (d);
  struct blkemu_disk *z =
    blkemu_disk_open_spec ("size=8M,zoned=host-managed,zone-size=1M", 0, NULL,
                           err, sizeof err);
  CHECK (z && admission_is (z, "locked"), "a zoned disk: locked");
  blkemu_disk_close (z);
  printf ("ok: admission plain and locked as the disk's state says\n");
}

int
main (void)
{
  char path[64], spec[512];
  check_admission ();
  /* The plain path (no cache, no model time) under the same changes:
   * every change but the latency keeps it open.
   */
  quiet_controller = true;
  run ("size=4M");
  quiet_controller = false;
  run ("size=4M,write-cache=yes,cache-size=1M");
  run ("size=4M,model=ssd,channels=4,queue-depth=8,write-cache=yes");
  snprintf (path, sizeof path, "/tmp/blkemu-concurrency.%d", (int) getpid ());
  snprintf (spec, sizeof spec,
            "file=%s,size=4M,write-cache=yes,"
            "latency-write=50us",
            path);
  run (spec);
  unlink (path);
  if (failures)
    printf ("%d failures\n", failures);
  return failures ? 1 : 0;
}
