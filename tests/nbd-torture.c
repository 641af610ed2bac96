/* nbd-torture: a seeded, randomized run against a write-cached blkemu disk
 * over NBD, checking the promise users test crash consistency with.
 *
 *   nbd-torture URI CONTROL_SOCKET SECONDS SEED
 *
 * Four client threads own a quarter of the disk each and write versioned
 * 4 KiB blocks (1..16 at a time, some FUA), read and verify them, and
 * flush; a controller thread, between client operations, sets random
 * valid runtime keys (timing, limits, error injection), drops the
 * connections, and crashes and powers the disk on, some of the crashes
 * with writes and reads in flight under long latencies.  After every crash
 * each block must hold its durable version (the one a completed flush or FUA
 * covered) or one written since; while no crash intervenes a read returns
 * exactly the last successful write.  A failed or dropped write leaves its
 * blocks uncertain until the next successful one.  No operation may take
 * longer than 60 s (the server must not hang).  Exit 0, or 1 with the
 * first violation; the seed is printed so any run can be repeated.
 */
#include <errno.h>
#include <inttypes.h>
#include <libnbd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS 4
#define BLOCK 4096
#define CAND 16

struct block {
  uint32_t latest, durable;
  uint32_t cand[CAND]; /* written since the last flush/crash */
  int ncand;           /* -1: too many, anything since durable goes */
  bool uncertain;      /* a failed write may or may not have landed */
  unsigned epoch;      /* the power epoch LATEST's write was sent in */
};

/* A crash that strikes requests in flight opens a window (until the
 * controller has checked every block): reads are not held to the latest
 * write.  A flush promises only the writes of the power epoch it
 * completed in.  The epoch moves on once a crash has rolled the cache
 * back, before the power returns; a client reads it before it sends a
 * write and after a flush completes, so that a client stalled anywhere
 * (CI's loaded machine stalled one between reading the epoch and sending
 * its flush) cannot promise what the crash undid.  A write that spans
 * the move is promised only when it was in flight when the power went
 * (sent after the long latencies were set, too late to complete before
 * the crash): acknowledging one of those is the bug this hunts, as the
 * crash had undone it, and the controller's flush and check then catch it.
 */
static volatile int crash_window;
static volatile unsigned power_epoch;
/* CLOCK_MONOTONIC ns: when the long write latency was in force, and when
 * the crash was sent.
 */
static volatile uint64_t slow_since_ns, crash_sent_ns;
#define INFLIGHT_WRITE_MIN_NS                                                 \
  100000000ull /* latency-write=120ms, less jitter */

static uint64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* The epoch an acknowledged write belongs to: sent at SENT_NS in epoch
 * BEFORE, its reply seen in epoch AFTER.
 */
static unsigned
write_epoch (unsigned before, unsigned after, uint64_t sent_ns)
{
  uint64_t slow = __atomic_load_n (&slow_since_ns, __ATOMIC_ACQUIRE);
  uint64_t crash = __atomic_load_n (&crash_sent_ns, __ATOMIC_ACQUIRE);
  if (before != after && slow && sent_ns >= slow && sent_ns < crash &&
      sent_ns + INFLIGHT_WRITE_MIN_NS > crash)
    return after; /* in flight at the crash: served after it, or a bug */
  return before;
}

static const char *uri, *control;
static unsigned run_seed;
static uint64_t disk_blocks, per_client;
static struct block *blocks;
/* Clients hold it shared per operation, the controller exclusively for a
 * drop or crash; writer-preferring, or busy clients starve the controller.
 */
static pthread_rwlock_t world;
static volatile int done, failed;
static time_t last_progress;
static uint64_t stat_ops, stat_crashes, stat_flushes, stat_errors, stat_drops,
  stat_sets, stat_inflight_crashes;

#define FAIL(...)                                                             \
  do {                                                                        \
    fprintf (stderr, "nbd-torture: FAIL: " __VA_ARGS__);                      \
    fprintf (stderr, "\n");                                                   \
    failed = 1;                                                               \
  } while (0)

static void
fill (unsigned char *p, uint64_t b, uint32_t v)
{
  for (int i = 0; i < BLOCK; i += 16) {
    uint64_t w[2] = { b, (uint64_t) v * 0x9e3779b97f4a7c15ull ^ b };
    memcpy (p + i, w, 16);
  }
  if (v == 0)
    memset (p, 0, BLOCK);
}

/* The version P holds for block B, or UINT32_MAX if none matches. */
static uint32_t
version_in (const unsigned char *p, uint64_t b, const struct block *k)
{
  unsigned char want[BLOCK];
  uint32_t try[CAND + 2];
  int n = 0;
  try[n++] = k->latest;
  try[n++] = k->durable;
  for (int i = 0; i < k->ncand; i++)
    try[n++] = k->cand[i];
  for (int i = 0; i < n; i++) {
    fill (want, b, try[i]);
    if (memcmp (want, p, BLOCK) == 0)
      return try[i];
  }
  return UINT32_MAX;
}

/* What P holds, for a failure message: a version of some block (fill's
 * pattern decoded), zeros, or pieces of several (a torn block).
 */
static void
describe (const unsigned char *p, char *out, size_t outlen)
{
  uint64_t inv = 0x9e3779b97f4a7c15ull; /* odd: Newton finds its inverse */
  for (int i = 0; i < 5; i++)
    inv *= 2 - 0x9e3779b97f4a7c15ull * inv;
  size_t used = 0;
  int pieces = 0;
  for (int i = 0; i < BLOCK && used + 1 < outlen; i += 16) {
    if (i > 0 && memcmp (p + i, p + i - 16, 16) == 0)
      continue;
    uint64_t w[2];
    memcpy (w, p + i, 16);
    if (++pieces > 4) {
      snprintf (out + used, outlen - used, " ...");
      return;
    }
    int n;
    if (w[0] == 0 && w[1] == 0)
      n = snprintf (out + used, outlen - used, "%sfrom byte %d: zeros",
                    i ? "; " : "", i);
    else
      n = snprintf (out + used, outlen - used,
                    "%sfrom byte %d: block %" PRIu64 " version %" PRIu64,
                    i ? "; " : "", i, w[0], (w[1] ^ w[0]) * inv);
    used += n > 0 ? (size_t) n : 0;
  }
}

static struct nbd_handle *
connect_disk (void)
{
  for (int tries = 0; tries < 100; tries++) {
    struct nbd_handle *h = nbd_create ();
    if (h && nbd_connect_uri (h, uri) == 0)
      return h;
    if (h)
      nbd_close (h);
    usleep (50000);
  }
  FAIL ("cannot connect to %s: %s", uri, nbd_get_error ());
  return NULL;
}

static void
written (uint64_t b, uint32_t v, bool fua, bool ok, unsigned epoch)
{
  struct block *k = &blocks[b];
  if (k->ncand >= 0 && k->ncand < CAND)
    k->cand[k->ncand++] = v;
  else
    k->ncand = -1;
  if (!ok) {
    k->uncertain = true;
    return;
  }
  k->latest = v;
  k->uncertain = false;
  k->epoch = epoch;
  if (fua) {
    k->durable = v;
    k->ncand = 0;
  }
}

/* Blocks B..B+N read on H into BUF, each against what was written to it
 * (while a crash may be undoing writes, what it holds is learnt instead).
 */
static int
read_and_verify (struct nbd_handle *h, unsigned char *buf, uint64_t b,
                 uint64_t n)
{
  unsigned epoch = __atomic_load_n (&power_epoch, __ATOMIC_ACQUIRE);
  int r = nbd_pread (h, buf, n * BLOCK, b * BLOCK, 0);
  for (uint64_t i = 0; r == 0 && i < n; i++) {
    struct block *k = &blocks[b + i];
    uint32_t got = version_in (buf + i * BLOCK, b + i, k);
    bool window = __atomic_load_n (&crash_window, __ATOMIC_ACQUIRE);
    if (window && got != k->latest && got != UINT32_MAX)
      k->uncertain = true; /* rolled back, or not: the check says */
    else if (!k->uncertain && !window && got != k->latest)
      FAIL ("block %" PRIu64 ": read version %" PRIu32 ", last written "
            "%" PRIu32,
            b + i, got, k->latest);
    else if (k->uncertain && got == UINT32_MAX && k->ncand >= 0) {
      char holds[256];
      describe (buf + i * BLOCK, holds, sizeof holds);
      FAIL ("block %" PRIu64 ": holds data never written there: %s", b + i,
            holds);
    }
    else if (k->uncertain && got != UINT32_MAX) {
      k->latest = got;
      k->uncertain = false;
      k->epoch = epoch; /* on the medium since before the read */
    }
  }
  return r;
}

static void *
client (void *arg)
{
  unsigned id = (unsigned) (uintptr_t) arg;
  unsigned seed = run_seed * 7919 + id;
  uint64_t first = id * per_client;
  unsigned char *buf = malloc (16 * BLOCK);
  uint32_t version = id << 24;
  struct nbd_handle *h = connect_disk ();
  while (h && !done && !failed) {
    pthread_rwlock_rdlock (&world);
    uint64_t n = 1 + rand_r (&seed) % 16;
    uint64_t b = first + rand_r (&seed) % (per_client - n);
    unsigned what = rand_r (&seed) % 10;
    int r = 0;
    if (what < 5) { /* write, some FUA */
      bool fua = what == 0;
      uint32_t v = ++version;
      for (uint64_t i = 0; i < n; i++)
        fill (buf + i * BLOCK, b + i, v);
      unsigned before = __atomic_load_n (&power_epoch, __ATOMIC_ACQUIRE);
      uint64_t sent = now_ns ();
      r = nbd_pwrite (h, buf, n * BLOCK, (b) *BLOCK,
                      fua ? LIBNBD_CMD_FLAG_FUA : 0);
      unsigned epoch =
        write_epoch (before, __atomic_load_n (&power_epoch, __ATOMIC_ACQUIRE),
                     sent);
      for (uint64_t i = 0; i < n; i++)
        written (b + i, v, fua, r == 0, epoch);
    }
    else if (what < 9) /* read and verify */
      r = read_and_verify (h, buf, b, n);
    else { /* flush this client's blocks */
      r = nbd_flush (h, 0);
      if (r == 0) {
        unsigned epoch = __atomic_load_n (&power_epoch, __ATOMIC_ACQUIRE);
        for (uint64_t i = first; i < first + per_client; i++)
          if (!blocks[i].uncertain && blocks[i].epoch == epoch) {
            blocks[i].durable = blocks[i].latest;
            blocks[i].ncand = 0;
          }
        __atomic_add_fetch (&stat_flushes, 1, __ATOMIC_RELAXED);
      }
    }
    pthread_rwlock_unlock (&world);
    __atomic_add_fetch (&stat_ops, 1, __ATOMIC_RELAXED);
    __atomic_store_n (&last_progress, time (NULL), __ATOMIC_RELAXED);
    if (r != 0) {
      __atomic_add_fetch (&stat_errors, 1, __ATOMIC_RELAXED);
      /* A dropped connection: the next request finds it gone. */
      if (!nbd_aio_is_ready (h)) {
        nbd_close (h);
        h = connect_disk ();
      }
    }
  }
  if (h)
    nbd_close (h);
  free (buf);
  return NULL;
}

/* One control command; the reply's first line in OUT. */
static int
ctl (const char *cmd, char *out, size_t outlen)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "%s", control);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
    if (fd >= 0)
      close (fd);
    return -1;
  }
  char line[512];
  snprintf (line, sizeof line, "%s\n", cmd);
  ssize_t w = write (fd, line, strlen (line));
  shutdown (fd, SHUT_WR);
  size_t have = 0;
  ssize_t r;
  while (w > 0 && have + 1 < outlen &&
         (r = read (fd, out + have, outlen - 1 - have)) > 0)
    have += (size_t) r;
  out[have] = '\0';
  out[strcspn (out, "\n")] = '\0';
  close (fd);
  return strncmp (out, "ok", 2) == 0 ? 0 : -1;
}

/* After a crash: every block holds its durable version or a later one. */
static void
check_after_crash (void)
{
  struct nbd_handle *h = connect_disk ();
  unsigned char buf[BLOCK];
  for (uint64_t b = 0; h && b < CLIENTS * per_client && !failed; b++) {
    struct block *k = &blocks[b];
    if (nbd_pread (h, buf, BLOCK, b * BLOCK, 0) != 0) {
      FAIL ("read after power-on: %s", nbd_get_error ());
      break;
    }
    uint32_t got = version_in (buf, b, k);
    bool may = got != UINT32_MAX && (got == k->durable || k->ncand < 0 ||
                                     k->uncertain || got == k->latest);
    for (int i = 0; !may && i < k->ncand; i++)
      may = got == k->cand[i];
    char holds[256];
    if (!may && k->ncand >= 0 && got == UINT32_MAX) {
      describe (buf, holds, sizeof holds);
      FAIL ("block %" PRIu64
            " after crash: neither its durable version %" PRIu32
            " nor one written since (latest %" PRIu32 "): promised "
            "data lost; it holds %s",
            b, k->durable, k->latest, holds);
    }
    else if (!may && k->ncand >= 0)
      FAIL ("block %" PRIu64 " after crash: version %" PRIu32
            " (durable %" PRIu32 ", latest %" PRIu32 ")",
            b, got, k->durable, k->latest);
    k->latest = k->durable = got == UINT32_MAX ? k->durable : got;
    k->ncand = 0;
    k->uncertain = got == UINT32_MAX;
  }
  if (h)
    nbd_close (h);
}

/* Writes and reads in flight, with long latencies, when the power goes;
 * it comes back within 40 ms, while some still are.
 */
static void
crash_in_flight (unsigned *seed)
{
  char out[256];
  __atomic_store_n (&slow_since_ns, 0, __ATOMIC_RELEASE);
  if (ctl ("set latency-write=120ms latency-read=40ms", out, sizeof out) == 0)
    __atomic_store_n (&slow_since_ns, now_ns (), __ATOMIC_RELEASE);
  usleep (60000);
  __atomic_store_n (&crash_window, 1, __ATOMIC_RELEASE);
  __atomic_store_n (&crash_sent_ns, now_ns (), __ATOMIC_RELEASE);
  if (ctl ("crash", out, sizeof out) != 0)
    FAIL ("crash in flight: %s", out);
  __atomic_add_fetch (&power_epoch, 1, __ATOMIC_ACQ_REL);
  usleep ((useconds_t) (rand_r (seed) % 40000));
  if (ctl ("power-on", out, sizeof out) != 0)
    FAIL ("power-on: %s", out);
  ctl ("set latency-write=0 latency-read=0 error-mode=off", out, sizeof out);
  pthread_rwlock_wrlock (&world);
  /* A flush first: every write of the new epoch is then promised,
   * so one the crash had undone before its reply (the bug this
   * hunts) cannot pass for a legal loss.
   */
  struct nbd_handle *fh = connect_disk ();
  unsigned epoch = __atomic_load_n (&power_epoch, __ATOMIC_ACQUIRE);
  if (fh && nbd_flush (fh, 0) == 0)
    for (uint64_t b = 0; b < CLIENTS * per_client; b++)
      if (!blocks[b].uncertain && blocks[b].epoch == epoch) {
        blocks[b].durable = blocks[b].latest;
        blocks[b].ncand = 0;
      }
  if (fh)
    nbd_close (fh);
  check_after_crash ();
  __atomic_store_n (&crash_window, 0, __ATOMIC_RELEASE);
  stat_crashes++;
  stat_inflight_crashes++;
  pthread_rwlock_unlock (&world);
}

static void *
controller (void *arg)
{
  unsigned seed = (unsigned) (uintptr_t) arg;
  static const char *const sets[] = {
    "set latency-read=0 latency-write=0",
    "set latency-read=200us",
    "set latency-write=300us latency-dist=lognormal latency-jitter=100us",
    "set max-transfer=16K oversize=split",
    "set max-transfer=32M",
    "set slowdown=3",
    "set slowdown=1",
    "set cache-size=256K",
    "set cache-size=16M",
    "set queue-depth=4",
    "set queue-depth=128",
    "set error-mode=always error-op=read error-probability=2%",
    "set error-mode=always error-op=write error-probability=2%",
    "set error-mode=off",
    "set spike-probability=1% spike-latency=5ms",
    "set spike-probability=0",
  };
  char out[256];
  while (!done && !failed) {
    usleep (20000 + rand_r (&seed) % 80000);
    unsigned what = rand_r (&seed) % 20;
    if (what < 14) {
      const char *cmd = sets[rand_r (&seed) % (sizeof sets / sizeof *sets)];
      if (ctl (cmd, out, sizeof out) != 0)
        FAIL ("'%s' refused: %s", cmd, out);
      stat_sets++;
    }
    else if (what < 16) {
      pthread_rwlock_wrlock (&world);
      ctl ("drop", out, sizeof out);
      stat_drops++;
      pthread_rwlock_unlock (&world);
    }
    else if (stat_inflight_crashes * 2 <= stat_crashes) /* every other */
      crash_in_flight (&seed);
    else {
      pthread_rwlock_wrlock (&world);
      if (ctl ("crash", out, sizeof out) != 0)
        FAIL ("crash: %s", out);
      __atomic_add_fetch (&power_epoch, 1, __ATOMIC_ACQ_REL);
      if (ctl ("power-on", out, sizeof out) != 0)
        FAIL ("power-on: %s", out);
      ctl ("set error-mode=off", out, sizeof out);
      check_after_crash ();
      stat_crashes++;
      pthread_rwlock_unlock (&world);
    }
  }
  return NULL;
}

int
main (int argc, char **argv)
{
  if (argc != 5) {
    fprintf (stderr, "usage: nbd-torture URI CONTROL_SOCKET SECONDS SEED\n");
    return 2;
  }
  uri = argv[1];
  control = argv[2];
  unsigned seconds = (unsigned) atoi (argv[3]);
  unsigned seed = (unsigned) strtoul (argv[4], NULL, 10);
  run_seed = seed;
  printf ("nbd-torture: seed %u, %u s\n", seed, seconds);
  struct nbd_handle *h = connect_disk ();
  if (!h)
    return 1;
  disk_blocks = (uint64_t) nbd_get_size (h) / BLOCK;
  nbd_close (h);
  per_client = disk_blocks / CLIENTS;
  blocks = calloc (disk_blocks, sizeof *blocks);
  /* The disk starts zeroed: version 0 everywhere, durable. */
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init (&attr);
  pthread_rwlockattr_setkind_np (&attr,
                                 PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init (&world, &attr);
  pthread_t c[CLIENTS], k;
  last_progress = time (NULL);
  for (unsigned i = 0; i < CLIENTS; i++)
    pthread_create (&c[i], NULL, client, (void *) (uintptr_t) i);
  pthread_create (&k, NULL, controller, (void *) (uintptr_t) seed);
  time_t end = time (NULL) + seconds, next_line = time (NULL) + 10;
  while (time (NULL) < end && !failed) {
    sleep (1);
    if (time (NULL) - __atomic_load_n (&last_progress, __ATOMIC_RELAXED) > 60)
      FAIL ("no operation completed for 60 s: the server hangs");
    if (time (NULL) >= next_line) {
      printf ("nbd-torture: %" PRIu64 " ops, %" PRIu64 " flushes, %" PRIu64
              " crashes, %" PRIu64 " drops, %" PRIu64 " sets, %" PRIu64
              " errors\n",
              stat_ops, stat_flushes, stat_crashes, stat_drops, stat_sets,
              stat_errors);
      fflush (stdout);
      next_line += 10;
    }
  }
  done = 1;
  pthread_join (k, NULL);
  for (unsigned i = 0; i < CLIENTS; i++)
    pthread_join (c[i], NULL);
  printf ("nbd-torture: %s: %" PRIu64 " ops, %" PRIu64 " flushes, %" PRIu64
          " crashes (%" PRIu64 " in flight), %" PRIu64 " drops, %" PRIu64
          " sets, %" PRIu64 " errors\n",
          failed ? "FAILED" : "ok", stat_ops, stat_flushes, stat_crashes,
          stat_inflight_crashes, stat_drops, stat_sets, stat_errors);
  if (!failed && stat_crashes == 0)
    printf ("nbd-torture: (no crash happened: run longer)\n");
  free (blocks);
  return failed ? 1 : 0;
}
