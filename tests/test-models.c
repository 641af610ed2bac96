/* Unit tests of the timing models, the latency distributions and the
 * fault rules against hand-computed expectations.  Standalone: exit 0
 * pass, 1 fail.  Times are in ns from 0 so rotational angles are easy to
 * work out by hand.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dist.h"
#include "faults.h"
#include "ftl.h"
#include "model.h"
#include "trace.h"
#include "units.h"

#define MS 1000000.0
#define US 1000.0
#define MiB 1048576.0

/* |got - want| <= tol, all in ns. */
static int
near (double got, double want, double tol)
{
  return fabs (got - want) <= tol;
}

static struct model_req
req (enum blkemu_op op, uint64_t offset, uint64_t len, uint64_t t,
     uint64_t lat)
{
  return (struct model_req){ .op = op,
                             .offset = offset,
                             .len = len,
                             .flags = 0,
                             .arrival_ns = t,
                             .latency_ns = lat };
}

static void
base_config (struct blkemu_config *cfg)
{
  memset (cfg, 0, sizeof *cfg);
  cfg->num[K_SIZE] = 1ull << 30;
  cfg->num[K_QUEUE_DEPTH] = 32;
  cfg->num[K_DIES] = 1;
  cfg->num[K_SLOWDOWN] = 1;
  cfg->num[K_ARRAY_STRIPE] = 1 << 20;
}

static void
hdd_config (struct blkemu_config *cfg)
{
  base_config (cfg);
  cfg->num[K_MODEL] = MODEL_HDD;
  cfg->num[K_RPM] = 6000; /* one revolution: 10 ms */
  cfg->num[K_SEEK_TRACK] = 1000000;
  cfg->num[K_SEEK_AVG] = 8500000;
  cfg->num[K_SEEK_FULL] = 16000000;
  cfg->num[K_ZONE_RATE_OUTER] = 128ull << 20;
  cfg->num[K_ZONE_RATE_INNER] = 64ull << 20;
}

/* Seeks, zone rates and the rotational wait, as functions. */
static void
test_hdd_geometry (void)
{
  struct blkemu_config cfg;
  hdd_config (&cfg);
  uint64_t size = cfg.num[K_SIZE], quarter = size / 4;

  /* a = 5 (8.5 - 1 - 15/3) = 12.5 ms, b = 15 - 12.5 = 2.5 ms.
   * seek(1/4) = 1 + 12.5 * 0.5 + 2.5 * 0.25 = 7.875 ms.
   */
  CHECK (hdd_seek_ns (&cfg, 0, quarter) == 7875000, "seek(1/4) = %llu",
         (unsigned long long) hdd_seek_ns (&cfg, 0, quarter));
  CHECK (hdd_seek_ns (&cfg, size, 0) == 16000000, "full stroke");
  CHECK (hdd_seek_ns (&cfg, 4096, 4096) == 0, "no distance, no seek");
  CHECK (hdd_seek_ns (&cfg, 0, 512) >= 1000000 &&
           hdd_seek_ns (&cfg, 0, 512) < 1010000,
         "one sector away ~ track");

  /* The mean over random pairs is the datasheet's average. */
  struct rng r;
  rng_seed (&r, 7);
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; i++) {
    uint64_t a = (uint64_t) (rng_uniform (&r) * (double) size);
    uint64_t b = (uint64_t) (rng_uniform (&r) * (double) size);
    sum += (double) hdd_seek_ns (&cfg, a, b);
  }
  CHECK (near (sum / n, 8.5 * MS, 0.01 * 8.5 * MS), "mean seek %.0f ns",
         sum / n);

  /* Zones: 128 MiB/s at 0, 64 at the end, 112 at a quarter. */
  CHECK (near (hdd_rate (&cfg, quarter), 112 * MiB, 1), "rate at 1/4: %f",
         hdd_rate (&cfg, quarter));

  /* Rotation: at t = 2.5 ms the head is a quarter turn past offset 0's
   * sector, which comes round after 7.5 ms.
   */
  CHECK (near ((double) hdd_rotation_wait_ns (&cfg, 2500000, 0), 7.5 * MS, 1),
         "rotation wait %llu",
         (unsigned long long) hdd_rotation_wait_ns (&cfg, 2500000, 0));
}

/* Requests through the model: a random read, the stream after it. */
static void
test_hdd_reads (void)
{
  struct blkemu_config cfg;
  hdd_config (&cfg);
  uint64_t quarter = cfg.num[K_SIZE] / 4;
  /* A 1 MiB read at a quarter, head at 0, t = 0:
   *   seek 7.875 ms; the sector's angle: a track at 112 MiB/s holds
   *   1.12 MiB, 256 / 1.12 = 228 + 4/7, so it sits at 4/7 of a turn; the
   *   head is at 0.7875 turn, so it waits (4/7 - 0.7875 + 1) * 10 ms
   *   = 7.839286 ms; transfer 1 / 112 s = 8.928571 ms.
   */
  const struct model_ops *m = &model_hdd_ops;
  void *s = model_create (m, &cfg);
  struct model_req rd = req (BLKEMU_OP_READ, quarter, 1 << 20, 0, 0);
  double want = 7.875 * MS + (4.0 / 7 - 0.7875 + 1) * 10 * MS + 1e9 / 112;
  uint64_t d1 = m->schedule (s, &cfg, &rd);
  CHECK (near ((double) d1, want, 2), "random 1M read: %llu, want %.0f",
         (unsigned long long) d1, want);
  /* The next 1M streams on at the zone's rate: no seek, no rotation. */
  struct model_req rd2 =
    req (BLKEMU_OP_READ, quarter + (1 << 20), 1 << 20, 0, 0);
  uint64_t d2 = m->schedule (s, &cfg, &rd2);
  double rate2 = 128 * MiB - 64 * MiB * (257.0 / 1024);
  CHECK (near ((double) (d2 - d1), (double) (1 << 20) * 1e9 / rate2, 2),
         "sequential 1M: %llu", (unsigned long long) (d2 - d1));
  model_destroy (m, s);
}

static void
test_hdd_write_cache (void)
{
  struct blkemu_config cfg;
  hdd_config (&cfg);
  const struct model_ops *m = &model_hdd_ops;
  void *s = model_create (m, &cfg);
  /* Write cache: a 4 MiB cache absorbs four random 1 MiB writes at once
   * (each done after its 100 us latency); the fifth waits until the head
   * has written the first; a flush waits for all of them.
   */
  cfg.num[K_WRITE_CACHE] = 1;
  cfg.num[K_CACHE_SIZE] = 4 << 20;
  uint64_t done[6];
  for (int i = 0; i < 5; i++) {
    struct model_req w =
      req (BLKEMU_OP_WRITE, (uint64_t) (i * 3 + 1) * (64 << 20), 1 << 20, 0,
           100000);
    done[i] = m->schedule (s, &cfg, &w);
  }
  CHECK (done[0] == 100000 && done[3] == 100000,
         "cached writes done at %llu, %llu", (unsigned long long) done[0],
         (unsigned long long) done[3]);
  CHECK (done[4] > 10 * MS && done[4] < 40 * MS,
         "the fifth write waits for the first's media write: %llu",
         (unsigned long long) done[4]);
  struct model_req f = req (BLKEMU_OP_FLUSH, 0, 0, 0, 0);
  uint64_t df = m->schedule (s, &cfg, &f);
  CHECK (df > done[4] + 3 * 8 * MS, "flush waits for the media: %llu",
         (unsigned long long) df);
  model_destroy (m, s);
}

static void
test_hdd_command_buffer (void)
{
  struct blkemu_config cfg;
  hdd_config (&cfg);
  const struct model_ops *m = &model_hdd_ops;
  void *s = model_create (m, &cfg);
  /* command-buffer=2M: writes at offset 0, the head already there (no
   * seek, no rotation), 128 MiB/s there.  A 4M command stalls once, one
   * revolution (10 ms): 31.25 + 10 ms; 2M does not; 4M + 512 stalls
   * twice; buffer-stall=3ms replaces the revolution; reads never stall.
   */
  const struct {
    enum blkemu_op op;
    uint64_t len, stall;
    double want;
  } cmd[] = {
    { BLKEMU_OP_WRITE, 4 << 20, 0, 31.25 * MS + 10 * MS },
    { BLKEMU_OP_WRITE, 2 << 20, 0, 15.625 * MS },
    { BLKEMU_OP_WRITE, (4 << 20) + 512, 0,
      ((4 << 20) + 512) * 1e9 / (128 * MiB) + 20 * MS },
    { BLKEMU_OP_WRITE, 4 << 20, 3000000, 31.25 * MS + 3 * MS },
    { BLKEMU_OP_READ, 4 << 20, 0, 31.25 * MS },
  };
  cfg.num[K_COMMAND_BUFFER] = 2 << 20;
  for (size_t i = 0; i < sizeof cmd / sizeof cmd[0]; i++) {
    model_reset (m, s);
    cfg.num[K_BUFFER_STALL] = cmd[i].stall;
    struct model_req w = req (cmd[i].op, 0, cmd[i].len, 0, 0);
    uint64_t d = m->schedule (s, &cfg, &w);
    CHECK (near ((double) d, cmd[i].want, 2),
           "command-buffer=2M, %s of %llu: %llu, want %.0f",
           cmd[i].op == BLKEMU_OP_READ ? "read" : "write",
           (unsigned long long) cmd[i].len, (unsigned long long) d,
           cmd[i].want);
  }
  /* With a write cache a 4M command completes when all but its last 2M
   * are on the media (41.25 - 15.625 ms); a 2M one at once.
   */
  cfg.num[K_BUFFER_STALL] = 0;
  cfg.num[K_WRITE_CACHE] = 1;
  cfg.num[K_CACHE_SIZE] = 64 << 20;
  model_reset (m, s);
  struct model_req big = req (BLKEMU_OP_WRITE, 0, 4 << 20, 0, 0);
  uint64_t dbig = m->schedule (s, &cfg, &big);
  CHECK (near ((double) dbig, 41.25 * MS - 15.625 * MS, 2),
         "cached 4M over a 2M buffer: %llu", (unsigned long long) dbig);
  model_reset (m, s);
  struct model_req small = req (BLKEMU_OP_WRITE, 0, 2 << 20, 0, 0);
  CHECK (m->schedule (s, &cfg, &small) == 0, "cached 2M: done at once");
  cfg.num[K_COMMAND_BUFFER] = 0;
  model_destroy (m, s);
}

static void
test_ssd (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  cfg.num[K_MODEL] = MODEL_SSD;
  cfg.num[K_CHANNELS] = 4;
  cfg.num[K_DIES] = 2;
  cfg.num[K_CHANNEL_BANDWIDTH] = 400ull << 20;
  const struct model_ops *m = &model_ssd_ops;
  void *s = model_create (m, &cfg);

  /* 4K at 400 MiB/s = 9.765625 us on the bus after a 100 us sense.  Eight
   * reads at once take all eight dies; two dies share each channel, so
   * four finish at 109.77 us and four one bus transfer later.  The ninth
   * waits for a die: 109.77 + 100 sensing, then its bus (free at 119.53).
   */
  double bus = 4096 * 1e9 / (400 * MiB);
  uint64_t d[9];
  for (int i = 0; i < 9; i++) {
    struct model_req r =
      req (BLKEMU_OP_READ, (uint64_t) i << 20, 4096, 0, 100000);
    d[i] = m->schedule (s, &cfg, &r);
  }
  int first = 0, second = 0;
  for (int i = 0; i < 8; i++) {
    first += near ((double) d[i], 100 * US + bus, 1);
    second += near ((double) d[i], 100 * US + 2 * bus, 2);
  }
  CHECK (first == 4 && second == 4, "8 reads: %d at 109.8us, %d at 119.5us",
         first, second);
  CHECK (near ((double) d[8], 200 * US + bus + bus, 2), "9th read: %llu",
         (unsigned long long) d[8]);

  /* IOPS flatten at channels x dies: 64 reads at QD 64 take 8 rounds. */
  model_reset (m, s);
  cfg.num[K_CHANNEL_BANDWIDTH] = 0;
  cfg.num[K_QUEUE_DEPTH] = 64;
  uint64_t last = 0;
  for (int i = 0; i < 64; i++) {
    struct model_req r = req (BLKEMU_OP_READ, 0, 4096, 0, 100000);
    last = model_max (last, m->schedule (s, &cfg, &r));
  }
  CHECK (last == 8 * 100000, "64 reads on 8 dies end at %llu",
         (unsigned long long) last);

  /* A write crosses the bus then programs; with write-cache it replies
   * after the bus and a flush waits for the program.
   */
  model_reset (m, s);
  cfg.num[K_CHANNEL_BANDWIDTH] = 400ull << 20;
  struct model_req w = req (BLKEMU_OP_WRITE, 0, 4096, 0, 500000);
  CHECK (near ((double) m->schedule (s, &cfg, &w), bus + 500 * US, 1),
         "uncached write");
  model_reset (m, s);
  cfg.num[K_WRITE_CACHE] = 1;
  CHECK (near ((double) m->schedule (s, &cfg, &w), bus, 1), "cached write");
  struct model_req f = req (BLKEMU_OP_FLUSH, 0, 0, 0, 0);
  CHECK (near ((double) m->schedule (s, &cfg, &f), bus + 500 * US, 1),
         "flush waits for the program");
  model_destroy (m, s);
}

static void
test_array (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  cfg.num[K_MODEL] = MODEL_ARRAY;
  cfg.num[K_CHANNELS] = 4;
  cfg.num[K_BANDWIDTH] = 100ull << 20; /* 10 ms per MiB */
  cfg.num[K_PIECE_OVERHEAD] = 1000000; /* 1 ms per 1M piece */
  const struct model_ops *m = &model_array_ops;
  void *s = model_create (m, &cfg);

  /* One 4M write: four pieces one after another, 4 x (1 + 10) = 44 ms. */
  struct model_req big = req (BLKEMU_OP_WRITE, 0, 4 << 20, 0, 0);
  CHECK (m->schedule (s, &cfg, &big) == 44000000, "4M as one request");
  /* Four 1M writes at once overlap their overheads: 1 + 4 x 10 = 41 ms. */
  model_reset (m, s);
  uint64_t last = 0;
  for (int i = 0; i < 4; i++) {
    struct model_req w =
      req (BLKEMU_OP_WRITE, (uint64_t) i << 20, 1 << 20, 0, 0);
    last = model_max (last, m->schedule (s, &cfg, &w));
  }
  CHECK (last == 41000000, "4 x 1M: %llu", (unsigned long long) last);
  /* 1M requests are one piece either way: no difference. */
  model_reset (m, s);
  struct model_req one = req (BLKEMU_OP_WRITE, 0, 1 << 20, 0, 0);
  CHECK (m->schedule (s, &cfg, &one) == 11000000, "1M");

  /* Write-back cache: 2M, destaging at 50 MiB/s, host side instant.  Two
   * 1M writes fit; the third waits for 1M to drain (20 ms); a flush then
   * waits for the 2M left (40 ms).
   */
  model_reset (m, s);
  cfg.num[K_BANDWIDTH] = 0;
  cfg.num[K_PIECE_OVERHEAD] = 0;
  cfg.num[K_WRITE_CACHE] = 1;
  cfg.num[K_CACHE_SIZE] = 2 << 20;
  cfg.num[K_DESTAGE_RATE] = 50ull << 20;
  uint64_t d[3];
  for (int i = 0; i < 3; i++) {
    struct model_req w =
      req (BLKEMU_OP_WRITE, (uint64_t) i << 20, 1 << 20, 0, 0);
    d[i] = m->schedule (s, &cfg, &w);
  }
  CHECK (d[0] == 0 && d[1] == 0 && near ((double) d[2], 20 * MS, 1),
         "cache: %llu %llu %llu", (unsigned long long) d[0],
         (unsigned long long) d[1], (unsigned long long) d[2]);
  struct model_req f = req (BLKEMU_OP_FLUSH, 0, 0, d[2], 0);
  CHECK (near ((double) m->schedule (s, &cfg, &f), 60 * MS, 2),
         "flush drains the cache");
  model_destroy (m, s);
}

static void
test_link (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  cfg.num[K_MODEL] = MODEL_LINK;
  cfg.num[K_LINK_RTT] = 1000000;
  cfg.num[K_LINK_BANDWIDTH] = 125000000;
  const struct model_ops *m = &model_link_ops;
  void *s = model_create (m, &cfg);

  /* QD1: rtt + size / bandwidth, for reads and writes alike. */
  static const uint64_t sizes[] = { 4096, 65536, 524288, 4194304 };
  uint64_t t = 0;
  for (size_t i = 0; i < 4; i++)
    for (int op = BLKEMU_OP_READ; op <= BLKEMU_OP_WRITE; op++) {
      struct model_req r = req ((enum blkemu_op) op, 0, sizes[i], t, 0);
      uint64_t d = m->schedule (s, &cfg, &r);
      double want = 1 * MS + (double) sizes[i] * 1e9 / 125e6;
      CHECK (near ((double) (d - t), want, 1), "%s %llu: %llu, want %.0f",
             op ? "write" : "read", (unsigned long long) sizes[i],
             (unsigned long long) (d - t), want);
      t = d;
    }

  /* A window of 2: the third request waits for the first's answer; the
   * second's payload queues behind the first's on the way back.
   */
  model_reset (m, s);
  cfg.num[K_LINK_WINDOW] = 2;
  double x = 4096 * 1e9 / 125e6;
  uint64_t d[3];
  for (int i = 0; i < 3; i++) {
    struct model_req r = req (BLKEMU_OP_READ, 0, 4096, 0, 0);
    d[i] = m->schedule (s, &cfg, &r);
  }
  CHECK (near ((double) d[0], MS + x, 1) &&
           near ((double) d[1], MS + 2 * x, 1),
         "window: %llu %llu", (unsigned long long) d[0],
         (unsigned long long) d[1]);
  CHECK (near ((double) d[2], (MS + x) + MS + x, 1), "third: %llu",
         (unsigned long long) d[2]);

  /* In front of another model the device's time adds up. */
  model_destroy (m, s);
  cfg.num[K_MODEL] = MODEL_FIXED;
  cfg.num[K_LINK_WINDOW] = 0;
  s = model_create (m, &cfg);
  struct model_req r = req (BLKEMU_OP_READ, 0, 4096, 0, 300000);
  CHECK (near ((double) m->schedule (s, &cfg, &r), MS + x + 300 * US, 1),
         "link + fixed 300us");
  model_destroy (m, s);
}

/* The volume throttle in front of an instant device: REQS requests of
 * LEN bytes all queued at 0, the deadlines into D.
 */
static void
volume_run (const struct blkemu_config *cfg, uint64_t len, uint64_t *d,
            size_t reqs)
{
  const struct model_ops *m = &model_link_ops;
  void *s = model_create (m, cfg);
  for (size_t i = 0; i < reqs; i++) {
    struct model_req r = req (BLKEMU_OP_READ, 0, len, 0, 0);
    d[i] = m->schedule (s, cfg, &r);
  }
  model_destroy (m, s);
}

/* N reads of LEN queued at 0 on the link model's state S: the burst's
 * end (the deadline before the first gap over GAP ns) into *END, the
 * last deadline into *LAST; returns the reads a second after the burst.
 */
static double
burst_drive (void *s, const struct blkemu_config *cfg, uint64_t n,
             uint64_t len, double gap, uint64_t *end, uint64_t *last)
{
  uint64_t prev = 0, after = 0;
  *end = 0;
  for (uint64_t i = 0; i < n; i++) {
    struct model_req r = req (BLKEMU_OP_READ, 0, len, 0, 0);
    uint64_t t = model_link_ops.schedule (s, cfg, &r);
    if (!*end && i && (double) (t - prev) > gap)
      *end = prev;
    if (*end)
      after++;
    prev = t;
  }
  *last = prev;
  return (double) (after - 1) / ((double) (prev - *end) / 1e9);
}

static void
test_volume (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  uint64_t d[16];

  /* 1,000 IOPS: the nth request of a full queue leaves at n ms. */
  cfg.num[K_VOLUME_IOPS] = 1000;
  volume_run (&cfg, 4096, d, 10);
  for (int i = 0; i < 10; i++)
    CHECK (near ((double) d[i], i * MS, 1), "iops: request %d at %llu", i,
           (unsigned long long) d[i]);

  /* 256 KiB accounting: a 1 MiB read costs four I/Os (4 ms each). */
  cfg.num[K_VOLUME_IO_UNIT] = 256 << 10;
  volume_run (&cfg, 1 << 20, d, 3);
  CHECK (near ((double) d[1], 4 * MS, 1) && near ((double) d[2], 8 * MS, 1),
         "io unit: %llu %llu", (unsigned long long) d[1],
         (unsigned long long) d[2]);
  volume_run (&cfg, 256 << 10, d, 3);
  CHECK (near ((double) d[2], 2 * MS, 1), "256K is one I/O: %llu",
         (unsigned long long) d[2]);

  /* 100 MB/s: each 1 MB read leaves when its bytes have crossed. */
  base_config (&cfg);
  cfg.num[K_VOLUME_BANDWIDTH] = 100000000;
  volume_run (&cfg, 1000000, d, 4);
  CHECK (near ((double) d[0], 10 * MS, 1) && near ((double) d[3], 40 * MS, 1),
         "bandwidth: %llu .. %llu", (unsigned long long) d[0],
         (unsigned long long) d[3]);

  /* gp2 at 100 GiB, full size: baseline max(100, 3 x 100) = 300 IOPS,
   * burst 3,000 on 5.4 M credits draining at 3,000 - 300 a second: the
   * burst lasts 5,400,000 / 2,700 = 2,000 s (AWS's formula), 6 M I/Os;
   * then 300 IOPS.
   */
  base_config (&cfg);
  cfg.num[K_SIZE] = 100ull << 30;
  cfg.num[K_VOLUME_IOPS] = 100;
  cfg.num[K_VOLUME_IOPS_PER_GIB] = 3;
  cfg.num[K_VOLUME_BURST_IOPS] = 3000;
  cfg.num[K_VOLUME_BURST_CREDITS] = 5400000;
  CHECK (volume_baseline_iops (&cfg) == 300, "gp2 baseline %llu",
         (unsigned long long) volume_baseline_iops (&cfg));
  const struct model_ops *m = &model_link_ops;
  void *s = model_create (m, &cfg);
  uint64_t burst_end, prev;
  /* The burst ends at the first gap of a baseline I/O (3.33 ms). */
  double rate =
    burst_drive (s, &cfg, 6100000, 4096, 3 * MS, &burst_end, &prev);
  CHECK (near ((double) burst_end, 2000e9, 1e6), "gp2 burst ends at %.3f s",
         (double) burst_end / 1e9);
  CHECK (fabs (rate - 300) < 1, "gp2 after the burst: %.2f IOPS", rate);
  CHECK (near (volume_credits (link_volume (s), &cfg, prev), 0, 1),
         "gp2 credits left: %.0f",
         volume_credits (link_volume (s), &cfg, prev));
  /* Idle, the bucket refills at the baseline: 1,080,000 credits in an
   * hour, full after 5 (18,000 s), and no more after 6.
   */
  double hour = 3600e9;
  CHECK (near (volume_credits (link_volume (s), &cfg, prev + (uint64_t) hour),
               1080000, 1),
         "gp2 an hour idle: %.0f",
         volume_credits (link_volume (s), &cfg, prev + (uint64_t) hour));
  CHECK (near (volume_credits (link_volume (s), &cfg,
                               prev + (uint64_t) (6 * hour)),
               5400000, 1),
         "gp2 six hours idle: %.0f",
         volume_credits (link_volume (s), &cfg, prev + (uint64_t) (6 * hour)));
  model_destroy (m, s);
}

/* st1 at 2 TiB, full size: 1 MiB reads at the 500 MiB/s burst while the
 * 2 TiB byte bucket lasts, draining at 500 - 80 MiB/s: 2 TiB / 420 MiB/s
 * = 4,993.2 s; then the 80 MiB/s baseline (12.5 ms a read).  A refusal
 * without the bucket is validate.c's; this is the pacer's arithmetic.
 */
static void
test_volume_throughput_burst (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  cfg.num[K_SIZE] = 2ull << 40;
  cfg.num[K_VOLUME_IOPS] = 500;
  cfg.num[K_VOLUME_IO_UNIT] = 1 << 20;
  cfg.num[K_VOLUME_BANDWIDTH] = 80 << 20;
  cfg.num[K_VOLUME_BURST_BANDWIDTH] = 500 << 20;
  cfg.num[K_VOLUME_BURST_BYTES] = 2ull << 40;
  const struct model_ops *m = &model_link_ops;
  void *s = model_create (m, &cfg);
  uint64_t burst_end, prev;
  /* a burst read leaves 2 ms after the one before, a baseline one 12.5 */
  double mibs =
    burst_drive (s, &cfg, 2600000, 1 << 20, 5 * MS, &burst_end, &prev);
  double want = (double) (2ull << 40) / (420.0 * 1048576) * 1e9;
  CHECK (near ((double) burst_end, want, 1e7),
         "st1 burst ends at %.3f s (%.3f)", (double) burst_end / 1e9,
         want / 1e9);
  CHECK (fabs (mibs - 80) < 0.1, "st1 after the burst: %.2f MiB/s", mibs);
  /* at the last read's end: what came in while it crossed (1 MiB) */
  CHECK (near (volume_burst_bytes (link_volume (s), &cfg, prev), 1048576, 1),
         "st1 bytes left: %.0f",
         volume_burst_bytes (link_volume (s), &cfg, prev));
  /* Idle, the bucket refills at 80 MiB/s: full after 2 TiB / 80 MiB/s. */
  CHECK (near (volume_burst_bytes (link_volume (s), &cfg,
                                   prev + 3600 * 1000 * MS),
               3600.0 * (80 << 20) + 1048576, 1),
         "st1 an hour idle: %.0f",
         volume_burst_bytes (link_volume (s), &cfg, prev + 3600 * 1000 * MS));
  model_destroy (m, s);
}

/* N uniform random 4K writes to F (FP-byte pages), from X. */
static void
ftl_random_writes (struct ftl *f, uint64_t n, uint64_t *x)
{
  struct ftl_work w = { 0 };
  for (uint64_t i = 0; i < n; i++) {
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    uint64_t l = (*x * 0x2545F4914F6CDD1Dull >> 32) % f->pages;
    ftl_write (f, l * 4096, 4096, 4096, &w);
  }
}

static double
waf_of (const struct ftl *f)
{
  return (double) (f->host_pages + f->gc_pages) / (double) f->host_pages;
}

static void
ftl_config (struct blkemu_config *cfg)
{
  base_config (cfg);
  cfg->num[K_SIZE] = 256ull << 20; /* 256 blocks: the spare is not lumpy */
  cfg->num[K_MODEL] = MODEL_SSD;
  cfg->num[K_FLASH_PAGE] = 4096;
  cfg->num[K_FLASH_BLOCK] = 1 << 20; /* 256 pages a block */
  cfg->num[K_SEED] = 1;
}

static void
test_ftl_waf (void)
{
  struct blkemu_config cfg;
  ftl_config (&cfg);

  /* Greedy GC under uniform random 4K writes, in the steady state
   * (precondition=random, then twice the capacity): the write
   * amplification Agarwal and Marrow's closed form gives for spare
   * factor r, (1 + r) / (2r), within 15%.  Measured here: 7%: 8.21 vs
   * 7.64, 15%: 4.14 vs 3.83, 28%: 2.49 vs 2.29 (256 MiB disks).
   */
  static const double ops[] = { 0.07, 0.15, 0.28 };
  for (int i = 0; i < 3; i++) {
    cfg.num[K_OVER_PROVISIONING] = (uint64_t) (ops[i] * 1e9);
    cfg.num[K_PRECONDITION] = PRECONDITION_RANDOM;
    struct ftl *f = ftl_create (&cfg);
    CHECK (f && f->host_pages == 0, "precondition resets the counters");
    uint64_t x = 12345;
    ftl_random_writes (f, 2ull * f->pages, &x);
    double am = (1 + ops[i]) / (2 * ops[i]), waf = waf_of (f);
    CHECK (fabs (waf / am - 1) <= 0.15,
           "OP %.0f%%: WAF %.3f, closed form %.3f", ops[i] * 100, waf, am);
    printf ("measured: OP %.0f%%: WAF %.3f, Agarwal-Marrow %.3f (%+.1f%%)\n",
            ops[i] * 100, waf, am, (waf / am - 1) * 100);

    /* Trimmed whole, the disk recovers: half its capacity in random
     * writes moves (almost) nothing.
     */
    ftl_trim (f, 0, cfg.num[K_SIZE], 4096);
    uint64_t host = f->host_pages, gc = f->gc_pages;
    ftl_random_writes (f, f->pages / 2, &x);
    double fresh = (double) (f->host_pages - host + f->gc_pages - gc) /
                   (double) (f->host_pages - host);
    CHECK (fresh < 1.05, "after a full trim: WAF %.3f", fresh);
    ftl_destroy (f);
  }
}

static void
test_ftl_fill (void)
{
  struct blkemu_config cfg;
  ftl_config (&cfg);
  /* Fresh out of the box, no GC until the spare is used; a full disk
   * written in order (precondition=sequential) collects at once.
   */
  cfg.num[K_OVER_PROVISIONING] = 70000000; /* 7% */
  cfg.num[K_PRECONDITION] = PRECONDITION_NONE;
  struct ftl *f = ftl_create (&cfg);
  uint64_t x = 7;
  ftl_random_writes (f, f->pages / 2, &x);
  CHECK (f->gc_pages == 0 && f->erase_total == 0, "FOB: %llu moved",
         (unsigned long long) f->gc_pages);
  ftl_destroy (f);
  cfg.num[K_PRECONDITION] = PRECONDITION_SEQUENTIAL;
  f = ftl_create (&cfg);
  ftl_random_writes (f, f->pages / 2, &x);
  CHECK (f->gc_pages > 0 && waf_of (f) > 1.5,
         "sequentially filled: WAF %.3f after half a capacity", waf_of (f));
  uint32_t emin, emax;
  double emean;
  ftl_erase_stats (f, &emin, &emean, &emax);
  CHECK (emin <= emean && emean <= emax && emax > 0, "erase counts %u/%.2f/%u",
         emin, emean, emax);
  ftl_destroy (f);
}

static void
test_ftl_timing (void)
{
  struct blkemu_config cfg;
  ftl_config (&cfg);
  uint64_t x = 7;
  /* The timing: in the steady state a QD1 4K write pays its GC on the
   * die, (WAF - 1) page moves of latency-read + latency-write and the
   * erases, on top of its own program.
   */
  cfg.num[K_OVER_PROVISIONING] = 280000000; /* 28% */
  cfg.num[K_PRECONDITION] = PRECONDITION_RANDOM;
  cfg.num[K_LATENCY_READ] = 50000;
  cfg.num[K_LATENCY_WRITE] = 500000;
  cfg.num[K_LATENCY_ERASE] = 3000000;
  const struct model_ops *m = &model_link_ops;
  void *s = model_create (m, &cfg);
  struct ftl *f = ssd_ftl (link_device (s));
  uint64_t t = 0, n = 20000;
  for (uint64_t i = 0; i < n; i++) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    uint64_t l = (x * 0x2545F4914F6CDD1Dull >> 32) % f->pages;
    struct model_req r = req (BLKEMU_OP_WRITE, l * 4096, 4096, t, 500000);
    t = m->schedule (s, &cfg, &r);
  }
  double mean = (double) t / (double) n;
  double want = 500000 + (double) f->gc_pages / (double) n * 550000 +
                (double) f->erase_total / (double) n * 3000000;
  CHECK (near (mean, want, want * 0.001) && mean > 2 * 500000,
         "steady-state QD1 write: %.0f ns, want %.0f", mean, want);
  printf ("measured: steady state at 28%%: a QD1 4K write takes %.0f us (%.0f "
          "us "
          "fresh), WAF %.2f\n",
          mean / 1000, 500.0, waf_of (f));
  model_destroy (m, s);
}

static void
test_slc (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  cfg.num[K_MODEL] = MODEL_SSD;
  cfg.num[K_SLC_CACHE] = 8 << 20;
  cfg.num[K_LATENCY_SLC_WRITE] = 100000;
  cfg.num[K_LATENCY_WRITE] = 1000000;
  cfg.num[K_SLC_FOLD_RATE] = 100000000;
  const struct model_ops *m = &model_link_ops;
  void *s = model_create (m, &cfg);
  /* QD1 1 MiB writes: eight fit the cache at 100 us, then 1 ms each. */
  uint64_t t = 1, took[12];
  for (int i = 0; i < 12; i++) {
    struct model_req r =
      req (BLKEMU_OP_WRITE, (uint64_t) i << 20, 1 << 20, t, 1000000);
    uint64_t d = m->schedule (s, &cfg, &r);
    took[i] = d - t;
    t = d;
  }
  CHECK (took[0] == 100000 && took[7] == 100000 && took[8] == 1000000 &&
           took[11] == 1000000,
         "slc: %llu %llu then %llu %llu", (unsigned long long) took[0],
         (unsigned long long) took[7], (unsigned long long) took[8],
         (unsigned long long) took[11]);
  struct ssd_slc *c = ssd_slc (link_device (s));
  CHECK (c->used == 8 << 20 && c->fast == 8 << 20 && c->native == 4 << 20,
         "slc counts: used %llu fast %llu native %llu",
         (unsigned long long) c->used, (unsigned long long) c->fast,
         (unsigned long long) c->native);
  /* Idle 40.5 ms at 100 MB/s folds 4.05 MB, room for three 1 MiB
   * writes at SLC speed again, the first waiting out the fold program
   * under way (0.5 ms of its 1), then the native rate.
   */
  t += 40500000;
  for (int i = 0; i < 5; i++) {
    struct model_req r = req (BLKEMU_OP_WRITE, 0, 1 << 20, t, 1000000);
    uint64_t d = m->schedule (s, &cfg, &r);
    took[i] = d - t;
    t = d;
  }
  CHECK (c->folded == 4050000 && took[0] == 500000 + 100000 &&
           took[1] == 100000 && took[2] == 100000 && took[3] == 1000000,
         "after 40.5 ms idle: folded %llu, %llu %llu %llu %llu",
         (unsigned long long) c->folded, (unsigned long long) took[0],
         (unsigned long long) took[1], (unsigned long long) took[2],
         (unsigned long long) took[3]);
  /* A power cycle keeps the cache's contents (flash, not timing). */
  uint64_t used = c->used;
  model_reset (m, s);
  CHECK (ssd_slc (link_device (s))->used == used, "slc kept over a reset");
  model_destroy (m, s);

  /* Dynamic: a share of the free flash; a full disk has none. */
  base_config (&cfg);
  cfg.num[K_MODEL] = MODEL_SSD;
  cfg.num[K_SIZE] = 64 << 20;
  cfg.num[K_OVER_PROVISIONING] = 70000000;
  cfg.num[K_FLASH_PAGE] = 4096;
  cfg.num[K_FLASH_BLOCK] = 1 << 20;
  cfg.num[K_SLC_DYNAMIC] = 250000000;
  s = model_create (m, &cfg);
  CHECK (ssd_slc_capacity (link_device (s), &cfg) == 16 << 20,
         "dynamic, empty: %llu",
         (unsigned long long) ssd_slc_capacity (link_device (s), &cfg));
  model_destroy (m, s);
  cfg.num[K_PRECONDITION] = PRECONDITION_SEQUENTIAL;
  s = model_create (m, &cfg);
  CHECK (ssd_slc_capacity (link_device (s), &cfg) == 0, "dynamic, full: %llu",
         (unsigned long long) ssd_slc_capacity (link_device (s), &cfg));
  model_destroy (m, s);
}

static int
cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

/* Draw N latencies; return them sorted. */
static uint64_t *
draw (const struct blkemu_config *cfg, uint64_t base, int n, uint64_t seed)
{
  struct rng r;
  rng_seed (&r, seed);
  uint64_t *v = malloc ((size_t) n * sizeof *v);
  for (int i = 0; i < n; i++)
    v[i] = dist_sample (cfg, &r, base);
  qsort (v, (size_t) n, sizeof *v, cmp_u64);
  return v;
}

static double
pct (const uint64_t *sorted, int n, double p)
{
  return (double) sorted[(int) (p / 100 * (n - 1))];
}

/* The generator: the same seed gives the same numbers, chance holds. */
static void
test_rng (void)
{
  const int n = 400000;
  /* Same seed, same numbers; another seed, others. */
  struct rng a, b, c;
  rng_seed (&a, 42);
  rng_seed (&b, 42);
  rng_seed (&c, 43);
  int same = 0, differ = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t x = rng_next (&a), y = rng_next (&b), z = rng_next (&c);
    same += x == y;
    differ += x != z;
  }
  CHECK (same == 1000 && differ == 1000, "seeding: %d same, %d differ", same,
         differ);
  int hits = 0;
  for (int i = 0; i < n; i++)
    hits += rng_chance (&a, 250000000);
  CHECK (near (hits, 0.25 * n, 0.005 * n), "chance 25%%: %d of %d", hits, n);
}

static void
test_distributions (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  const int n = 400000;
  /* fixed: the base itself. */
  cfg.num[K_LATENCY_DIST] = DIST_FIXED;
  uint64_t *v = draw (&cfg, 1000000, 100, 1);
  CHECK (v[0] == 1000000 && v[99] == 1000000, "fixed");
  free (v);

  /* uniform 1 ms +- 200 us: bounds and median. */
  cfg.num[K_LATENCY_DIST] = DIST_UNIFORM;
  cfg.num[K_LATENCY_JITTER] = 200000;
  v = draw (&cfg, 1000000, n, 1);
  CHECK (v[0] >= 800000 && v[n - 1] <= 1200000 &&
           near (pct (v, n, 50), 1 * MS, 0.01 * MS) &&
           near (pct (v, n, 90), 1.16 * MS, 0.01 * MS),
         "uniform: min %llu p50 %.0f p90 %.0f max %llu",
         (unsigned long long) v[0], pct (v, n, 50), pct (v, n, 90),
         (unsigned long long) v[n - 1]);
  free (v);

  /* normal 1 ms, sd 100 us: p50 1 ms, p99 1 + 2.326 * 0.1 ms. */
  cfg.num[K_LATENCY_DIST] = DIST_NORMAL;
  cfg.num[K_LATENCY_JITTER] = 100000;
  v = draw (&cfg, 1000000, n, 2);
  CHECK (near (pct (v, n, 50), 1 * MS, 0.005 * MS) &&
           near (pct (v, n, 99), 1.23263 * MS, 0.01 * MS),
         "normal: p50 %.0f p99 %.0f", pct (v, n, 50), pct (v, n, 99));
  free (v);

  /* lognormal, mean 1 ms, sd 500 us: sigma^2 = ln 1.25, mu = -sigma^2/2
   * (in ms): p50 = e^mu = 0.894427 ms, p99 = e^(mu + 2.326 sigma)
   * = 2.6227 ms; the sample mean is the base.
   */
  cfg.num[K_LATENCY_DIST] = DIST_LOGNORMAL;
  cfg.num[K_LATENCY_JITTER] = 500000;
  v = draw (&cfg, 1000000, n, 3);
  double mean = 0;
  for (int i = 0; i < n; i++)
    mean += (double) v[i] / n;
  double s2 = log (1.25), mu = -s2 / 2;
  CHECK (near (pct (v, n, 50), exp (mu) * MS, 0.01 * MS) &&
           near (pct (v, n, 99), exp (mu + Z_P99 * sqrt (s2)) * MS,
                 0.03 * 2.6 * MS) &&
           near (mean, 1 * MS, 0.01 * MS),
         "lognormal: p50 %.0f p99 %.0f mean %.0f", pct (v, n, 50),
         pct (v, n, 99), mean);
  free (v);

  /* percentiles: p50 1 ms, p99 5 ms, p999 20 ms — for reads, and twice
   * that for a 2 ms base.
   */
  cfg.num[K_LATENCY_DIST] = DIST_PERCENTILES;
  cfg.num[K_LATENCY_READ] = 1000000;
  cfg.num[K_LATENCY_P99] = 5000000;
  cfg.num[K_LATENCY_P999] = 20000000;
  for (uint64_t base = 1000000; base <= 2000000; base += 1000000) {
    double k = (double) base / 1e6;
    v = draw (&cfg, base, n, 4);
    CHECK (near (pct (v, n, 50), k * MS, 0.02 * k * MS) &&
             near (pct (v, n, 99), 5 * k * MS, 0.03 * 5 * k * MS) &&
             near (pct (v, n, 99.9), 20 * k * MS, 0.05 * 20 * k * MS),
           "percentiles x%.0f: p50 %.0f p99 %.0f p99.9 %.0f", k,
           pct (v, n, 50), pct (v, n, 99), pct (v, n, 99.9));
    free (v);
  }
}

static void
test_faults (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  struct faults f;
  struct fault_verdict v;
  struct rng r;
  rng_seed (&r, 1);

  /* once, after 2 matches, writes to [1M, 2M): the 3rd matching write
   * fails, nothing else does.
   */
  cfg.num[K_ERROR_MODE] = ERROR_ONCE;
  cfg.num[K_ERROR_OP] = ERROR_OP_WRITE;
  cfg.num[K_ERROR_OFFSET] = 1 << 20;
  cfg.num[K_ERROR_LENGTH] = 1 << 20;
  cfg.num[K_ERROR_ERRNO] = 1; /* ENOSPC */
  cfg.num[K_ERROR_AFTER] = 2;
  cfg.num[K_ERROR_PROBABILITY] = BLKEMU_PROB_ONE;
  faults_init (&f, &cfg, 0);
  int fired_at = -1, fired = 0;
  for (int i = 0; i < 10; i++) {
    faults_check (&f, &cfg, &r, BLKEMU_OP_READ, 1 << 20, 4096, 0, &v);
    CHECK (v.err == 0, "a read matched a write rule");
    faults_check (&f, &cfg, &r, BLKEMU_OP_WRITE, 0, 4096, 0, &v);
    CHECK (v.err == 0, "a write outside the range failed");
    faults_check (&f, &cfg, &r, BLKEMU_OP_WRITE, (1 << 20) + 8192, 4096, 0,
                  &v);
    if (v.err) {
      fired++;
      fired_at = i;
      CHECK (v.err == ENOSPC && (v.marks & TRACE_FAULT), "errno %d", v.err);
    }
  }
  CHECK (fired == 1 && fired_at == 2, "once after 2: fired %d times, at %d",
         fired, fired_at);
  /* A write straddling the range's start matches too. */
  cfg.num[K_ERROR_MODE] = ERROR_ALWAYS;
  cfg.num[K_ERROR_AFTER] = 0;
  faults_rearm (&f);
  faults_check (&f, &cfg, &r, BLKEMU_OP_WRITE, (1 << 20) - 4096, 8192, 0, &v);
  CHECK (v.err == ENOSPC, "straddling write");

  /* sticky with 10%: quiet at first, then every match fails. */
  cfg.num[K_ERROR_MODE] = ERROR_STICKY;
  cfg.num[K_ERROR_PROBABILITY] = 100000000;
  faults_rearm (&f);
  int first = -1, after = 0;
  for (int i = 0; i < 1000; i++) {
    faults_check (&f, &cfg, &r, BLKEMU_OP_WRITE, 1 << 20, 4096, 0, &v);
    if (v.err && first < 0)
      first = i;
    else if (first >= 0)
      after += v.err != 0;
  }
  CHECK (first >= 0 && after == 999 - first, "sticky: first %d, then %d",
         first, after);

  /* always with 5%: about 5% of matches. */
  cfg.num[K_ERROR_MODE] = ERROR_ALWAYS;
  cfg.num[K_ERROR_PROBABILITY] = 50000000;
  faults_rearm (&f);
  int errs = 0;
  for (int i = 0; i < 100000; i++) {
    faults_check (&f, &cfg, &r, BLKEMU_OP_WRITE, 1 << 20, 4096, 0, &v);
    errs += v.err != 0;
  }
  CHECK (errs > 4700 && errs < 5300, "always 5%%: %d of 100000", errs);
}

/* A stall holds requests until it runs out; drop and offline refuse. */
static void
test_fault_refusals (void)
{
  struct blkemu_config cfg;
  base_config (&cfg);
  struct faults f;
  struct fault_verdict v;
  struct rng r;
  rng_seed (&r, 1);
  faults_init (&f, &cfg, 0);
  cfg.num[K_STALL] = 3000000000ull;
  f.stall_until_ns = 1000 + cfg.num[K_STALL]; /* stall=3s set at 1000 */
  faults_check (&f, &cfg, &r, BLKEMU_OP_READ, 0, 4096, 2000, &v);
  CHECK (v.not_before == 3000001000ull && (v.marks & TRACE_STALL), "stall");
  faults_check (&f, &cfg, &r, BLKEMU_OP_READ, 0, 4096, 3000001000ull, &v);
  CHECK (v.not_before == 0, "stall over");
  f.drop_armed = true;
  faults_check (&f, &cfg, &r, BLKEMU_OP_READ, 0, 4096, 0, &v);
  CHECK (v.refused && v.err == BLKEMU_ERR_DROP, "drop");
  faults_check (&f, &cfg, &r, BLKEMU_OP_READ, 0, 4096, 0, &v);
  CHECK (!v.refused && v.err == 0, "drop fires once");
  f.offline = true;
  faults_check (&f, &cfg, &r, BLKEMU_OP_READ, 0, 4096, 0, &v);
  CHECK (v.refused && v.err == EIO, "offline");
}

static void
test_fraction_units (void)
{
  const char *why;
  uint64_t v;
  char buf[32];
  CHECK (blkemu_parse_fraction ("0.01", &v, &why) == 0 && v == 10000000,
         "0.01");
  CHECK (blkemu_parse_fraction ("5%", &v, &why) == 0 && v == 50000000, "5%%");
  CHECK (blkemu_parse_fraction ("1.5", &v, &why) == -1, "1.5 accepted");
  CHECK (blkemu_parse_fraction ("x", &v, &why) == -1, "x accepted");
  blkemu_format_fraction (10000000, buf, sizeof buf);
  CHECK (!strcmp (buf, "0.01"), "format 0.01: %s", buf);
  blkemu_format_fraction (1000000000, buf, sizeof buf);
  CHECK (!strcmp (buf, "1"), "format 1: %s", buf);
}

int
main (void)
{
  test_hdd_geometry ();
  test_hdd_reads ();
  test_hdd_write_cache ();
  test_hdd_command_buffer ();
  test_ssd ();
  test_array ();
  test_link ();
  test_volume ();
  test_volume_throughput_burst ();
  test_ftl_waf ();
  test_ftl_fill ();
  test_ftl_timing ();
  test_slc ();
  test_rng ();
  test_distributions ();
  test_faults ();
  test_fault_refusals ();
  test_fraction_units ();
  if (failures) {
    printf ("%d check(s) failed\n", failures);
    return 1;
  }
  printf ("all model, distribution and fault checks passed\n");
  return 0;
}
