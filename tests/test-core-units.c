/* Unit tests of core pieces against hand-computed expectations: unit
 * parsing and printing, the latency histogram's percentiles, the fixed
 * model's deadlines and the crash view's overlay.  Standalone: exit 0 pass, 1
 * fail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "helpers.h"
#include "control.h"
#include "strbuf.h"
#include "keys.h"
#include "model.h"
#include "overlay.h"
#include "stats.h"
#include "units.h"

static void
test_units (void)
{
  static const struct {
    const char *in;
    uint64_t want;
  } sizes[] = {
    { "512", 512 },       { "127K", 130048 }, { "4M", 4194304 },
    { "1G", 1ull << 30 }, { "1.5K", 1536 },   { "2T", 2ull << 40 },
    { "64KiB", 65536 },
  };
  const char *why;
  uint64_t v;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    CHECK (blkemu_parse_size (sizes[i].in, &v, &why) == 0 &&
             v == sizes[i].want,
           "size %s -> %llu", sizes[i].in, (unsigned long long) v);
  }
  static const char *bad_sizes[] = {
    "", "-1", "1X", "K", "1.3", "1..5K", "99999999999999999999"
  };
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++)
    CHECK (blkemu_parse_size (bad_sizes[i], &v, &why) == -1,
           "size '%s' accepted", bad_sizes[i]);

  static const struct {
    const char *in;
    uint64_t want;
  } durs[] = {
    { "0", 0 },           { "1ms", 1000000 },   { "250us", 250000 },
    { "1.5ms", 1500000 }, { "2s", 2000000000 }, { "100ns", 100 },
  };
  for (size_t i = 0; i < sizeof durs / sizeof durs[0]; i++)
    CHECK (blkemu_parse_duration (durs[i].in, &v, &why) == 0 &&
             v == durs[i].want,
           "duration %s -> %llu", durs[i].in, (unsigned long long) v);
  CHECK (blkemu_parse_duration ("5", &v, &why) == -1, "unitless duration");

  /* Hostile values found by review: every one is an error, none wraps. */
  static const char *bad_durs[] = { "18446744073.9s", "18446744074s",
                                    "2.5.999ms",      "1..5ms",
                                    "1.ms",           "ms" };
  for (size_t i = 0; i < sizeof bad_durs / sizeof bad_durs[0]; i++)
    CHECK (blkemu_parse_duration (bad_durs[i], &v, &why) == -1,
           "duration '%s' accepted as %llu", bad_durs[i],
           (unsigned long long) v);
  CHECK (blkemu_parse_duration ("18446744073.709551615s", &v, &why) == 0 &&
           v == UINT64_MAX,
         "the largest duration");
  static const char *bad_more_sizes[] = { "1.5.5G", "16777216.5T",
                                          "18446744073709551616" };
  for (size_t i = 0; i < sizeof bad_more_sizes / sizeof bad_more_sizes[0]; i++)
    CHECK (blkemu_parse_size (bad_more_sizes[i], &v, &why) == -1,
           "size '%s' accepted as %llu", bad_more_sizes[i],
           (unsigned long long) v);
  CHECK (blkemu_parse_fraction ("18446744073.9", &v, &why) == -1,
         "probability 18446744073.9 accepted as %llu", (unsigned long long) v);
  CHECK (blkemu_parse_rate ("1.5.5G/s", &v, &why) == -1, "rate 1.5.5G/s");
  CHECK (blkemu_parse_rate ("150M/s", &v, &why) == 0 && v == 150ull << 20,
         "rate 150M/s");

  char buf[32];
  blkemu_format_size (130048, buf, sizeof buf);
  CHECK (!strcmp (buf, "127K"), "format 127K: %s", buf);
  blkemu_format_size (1000, buf, sizeof buf);
  CHECK (!strcmp (buf, "1000"), "format 1000: %s", buf);
  blkemu_format_duration (1500000, buf, sizeof buf);
  CHECK (!strcmp (buf, "1500us"), "format 1500us: %s", buf);
}

static void
test_percentiles (void)
{
  static struct stats st; /* large: keep it off the stack */
  stats_init (&st);
  /* 1..1000 us, one each: p50 = 500 us, p99 = 990 us, within 0.4%. */
  for (uint64_t i = 1; i <= 1000; i++)
    stats_record (&st, BLKEMU_OP_READ, i * 4096, 4096, i, i * 1000, i * 1000,
                  1, 0);
  const struct op_stats *os = &st.op[BLKEMU_OP_READ];
  static const struct {
    double pct;
    double want_ns;
  } cases[] = {
    { 50, 500000 },
    { 90, 900000 },
    { 99, 990000 },
    { 100, 1000000 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double got = (double) stats_latency_percentile (os, cases[i].pct);
    double err = (got - cases[i].want_ns) / cases[i].want_ns;
    CHECK (err > -0.005 && err < 0.005, "p%g = %.0f ns, want %.0f",
           cases[i].pct, got, cases[i].want_ns);
  }
  CHECK (os->lat_max_ns == 1000000, "max %llu",
         (unsigned long long) os->lat_max_ns);
  CHECK (st.seq_requests == 999, "sequential %llu",
         (unsigned long long) st.seq_requests);
  /* Exact values below 256 ns land in their own buckets. */
  stats_reset (&st);
  stats_record (&st, BLKEMU_OP_WRITE, 0, 512, 1, 200, 200, 1, 0);
  CHECK (stats_latency_percentile (&st.op[BLKEMU_OP_WRITE], 50) == 200,
         "exact small latency");
  stats_destroy (&st);
}

static void
test_fixed_model (void)
{
  struct blkemu_config cfg;
  memset (&cfg, 0, sizeof cfg);
  cfg.num[K_QUEUE_DEPTH] = 2;
  cfg.num[K_LATENCY_READ] = 1000000; /* 1 ms */
  cfg.num[K_LATENCY_FLUSH] = 10000;
  cfg.num[K_BANDWIDTH] = 100ull << 20; /* 100 MiB/s */
  const struct model_ops *m = &model_fixed_ops;
  void *s = model_create (m, &cfg);
  uint64_t t0 = 1000000000;
  uint64_t xfer_1m = 10000000; /* 1 MiB at 100 MiB/s = 10 ms */

  /* Two slots: A and B start at once, share the media pipe; C waits for
   * A's slot.  Reads: transfer, then latency.
   */
  struct model_req a = { BLKEMU_OP_READ, 0, 1 << 20, 0, t0, 1000000 };
  uint64_t da = m->schedule (s, &cfg, &a);
  CHECK (da == t0 + xfer_1m + 1000000, "A done at +%llu",
         (unsigned long long) (da - t0));
  uint64_t db = m->schedule (s, &cfg, &a);
  CHECK (db == t0 + 2 * xfer_1m + 1000000, "B done at +%llu",
         (unsigned long long) (db - t0));
  uint64_t dc = m->schedule (s, &cfg, &a);
  CHECK (dc == t0 + 3 * xfer_1m + 1000000, "C done at +%llu",
         (unsigned long long) (dc - t0));

  /* A write at t0 then a flush: the flush waits for the write. */
  model_reset (m, s);
  cfg.num[K_LATENCY_WRITE] = 5000000;
  cfg.num[K_BANDWIDTH] = 0;
  struct model_req w = { BLKEMU_OP_WRITE, 0, 4096, 0, t0, 5000000 };
  struct model_req f = { BLKEMU_OP_FLUSH, 0, 0, 0, t0 + 1000, 10000 };
  uint64_t dw = m->schedule (s, &cfg, &w);
  uint64_t df = m->schedule (s, &cfg, &f);
  CHECK (dw == t0 + 5000000 && df == dw, "flush after write: %llu vs %llu",
         (unsigned long long) df, (unsigned long long) dw);

  /* channels=1 serializes whatever the queue depth. */
  model_reset (m, s);
  cfg.num[K_QUEUE_DEPTH] = 32;
  cfg.num[K_CHANNELS] = 1;
  struct model_req r = { BLKEMU_OP_READ, 0, 4096, 0, t0, 1000000 };
  uint64_t last = 0;
  for (int i = 0; i < 4; i++)
    last = m->schedule (s, &cfg, &r);
  CHECK (last == t0 + 4 * 1000000, "4 reads on 1 channel end at +%llu",
         (unsigned long long) (last - t0));
  model_destroy (m, s);
}

/* The crash view's overlay: the base (borrowed, sorted), writes over it
 * (copied, cut by later writes), zeros, and the medium where neither is.
 */
static void
test_overlay (void)
{
  struct overlay o;
  unsigned char a[4096], b[4096], buf[16384];
  memset (a, 'a', sizeof a);
  memset (b, 'b', sizeof b);
  overlay_init (&o);
  CHECK (overlay_base_add (&o, 0, 4096, a) == EINVAL, "a closed overlay "
                                                      "takes nothing");
  overlay_reset (&o, true);
  uint64_t first = overlay_epoch (&o);
  CHECK (overlay_base_add (&o, 4096, 4096, a) == 0, "base 1");
  CHECK (overlay_base_add (&o, 0, 512, a) == EINVAL, "base out of order");
  CHECK (overlay_base_add (&o, 10240, 1024, NULL) == 0, "base zeros");
  CHECK (overlay_put (&o, first, 6144, 4096, b) == 0, "a write over the base");
  CHECK (overlay_put (&o, first, 7168, 512, NULL) == 0, "zeros cut the write");
  CHECK (overlay_base_add (&o, 12288, 512, a) == EINVAL, "base after a write");
  memset (buf, 'm', sizeof buf); /* the medium */
  CHECK (overlay_patch (&o, buf, 0, sizeof buf) == 0, "patch");
  static const struct {
    uint64_t from, to;
    char want;
  } map[] = {
    { 0, 4096, 'm' },      { 4096, 6144, 'a' },  { 6144, 7168, 'b' },
    { 7168, 7680, 0 },     { 7680, 10240, 'b' }, { 10240, 11264, 0 },
    { 11264, 16384, 'm' },
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    for (uint64_t x = map[i].from; x < map[i].to; x++)
      if (buf[x] != (unsigned char) map[i].want) {
        CHECK (0, "byte %llu: %d, want %d", (unsigned long long) x, buf[x],
               map[i].want);
        break;
      }
  /* A read inside one range, at an offset. */
  memset (buf, 'm', 100);
  CHECK (overlay_patch (&o, buf, 7600, 100) == 0 && buf[0] == 0 &&
           buf[79] == 0 && buf[80] == 'b' && buf[99] == 'b',
         "patch at 7600");
  uint64_t ranges, bytes;
  overlay_usage (&o, &ranges, &bytes);
  CHECK (ranges == 3 && bytes == 3584, "written: %llu ranges, %llu bytes",
         (unsigned long long) ranges, (unsigned long long) bytes);
  overlay_reset (&o, false);
  CHECK (overlay_put (&o, first, 0, 512, b) == EIO,
         "a closed view refuses writes");
  memset (buf, 'm', 8192);
  CHECK (overlay_patch (&o, buf, 0, 8192) == 0 && buf[5000] == 'm',
         "after the reset the medium shows");
  /* The next opening: a put of the first one (a request still in flight
   * when its view ended) is refused there too (issue 37, defect 3).
   */
  overlay_reset (&o, true);
  CHECK (overlay_put (&o, first, 0, 512, b) == EIO,
         "the next view refuses a put of the one before");
  CHECK (overlay_put (&o, overlay_epoch (&o), 0, 512, b) == 0,
         "and takes its own");
  overlay_destroy (&o);
}

/* The enum and the key table come from one list (keys.def), so no key
 * can be a hole in the table; what is left to hold: every key has a name
 * and help, its name finds it, every enum key's default is one of its
 * choices, every model= choice has its ops.
 */
static void
test_tables (void)
{
  for (int id = 0; id < K_COUNT; id++) {
    const struct key_def *k = &config_keys[id];
    CHECK (k->name && k->help, "key %d has no entry in config_keys", id);
    if (!k->name)
      continue;
    CHECK (config_key_lookup (k->name) == id, "%s: lookup gives %d", k->name,
           config_key_lookup (k->name));
    if (k->type != T_ENUM)
      continue;
    CHECK (k->choices, "%s: an enum without choices", k->name);
    size_t n = strlen (k->def);
    const char *c = k->choices;
    bool found = false;
    while (c && *c && !found) {
      found = !strncmp (c, k->def, n) && (c[n] == '|' || !c[n]);
      c = strchr (c, '|');
      c = c ? c + 1 : NULL;
    }
    CHECK (found, "%s: default %s is not one of %s", k->name, k->def,
           k->choices);
  }
  for (int m = 0; m < MODEL_COUNT; m++)
    CHECK (model_lookup ((enum model_kind) m), "model %d has no ops", m);
  CHECK (!model_lookup ((enum model_kind) MODEL_COUNT),
         "a model past the list has ops");
}

/* What a frontend with a word for it asks after a failure (SCSI's sense
 * information field, its NOT READY): where the request failed, and
 * whether the disk is off.
 */
static void
test_error_at (void)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_spec *spec = blkemu_spec_new ();
  struct blkemu_disk *d = NULL;
  if (blkemu_spec_set_list (spec, "size=1M", err, sizeof err) == 0)
    d = blkemu_disk_open (spec, NULL, err, sizeof err);
  blkemu_spec_free (spec);
  CHECK (d, "open: %s", err);
  if (!d)
    return;
  CHECK (blkemu_disk_error_at (d, 4096, 8192) == 4096,
         "no bad range, no rule: the request's start");
  CHECK (blkemu_disk_bad_add (d, 65536, 8192, err, sizeof err) == 0, "%s",
         err);
  CHECK (blkemu_disk_error_at (d, 0, 131072) == 65536,
         "a bad range inside: its first byte, not the request's");
  CHECK (blkemu_disk_error_at (d, 69632, 65536) == 69632,
         "a request starting inside a bad range: its own start");
  CHECK (blkemu_disk_error_at (d, 131072, 4096) == 131072,
         "a request past the range: its own start");
  CHECK (blkemu_disk_set (d, "error-mode", "always", err, sizeof err) == 0 &&
           blkemu_disk_set (d, "error-offset", "512K", err, sizeof err) == 0,
         "%s", err);
  CHECK (blkemu_disk_error_at (d, 262144, 524288) == 524288,
         "an error-offset rule's start inside the request");
  CHECK (!blkemu_disk_offline (d), "a new disk is on");
  CHECK (blkemu_disk_crash (d, err, sizeof err) == 0, "crash: %s", err);
  CHECK (blkemu_disk_offline (d), "a crashed disk is off");
  blkemu_disk_power_on (d);
  CHECK (!blkemu_disk_offline (d), "power-on brings it back");
  blkemu_disk_close (d);
}

/* An atomic write (BLKEMU_FLAG_ATOMIC) survives a crash whole or not at
 * all, in every crash state; a plain one of the same size is torn in
 * some (the check's own sensitivity).  Many states of one epoch through
 * crash views.
 */
static void
test_atomic_never_torn (void)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_spec *spec = blkemu_spec_new ();
  struct blkemu_disk *d = NULL;
  if (blkemu_spec_set_list (spec,
                            "size=1M,write-cache=yes,oversize=split,"
                            "max-transfer=32K",
                            err, sizeof err) == 0)
    d = blkemu_disk_open (spec, NULL, err, sizeof err);
  blkemu_spec_free (spec);
  CHECK (d, "open: %s", err);
  if (!d)
    return;
  enum { LEN = 16384 };
  static unsigned char ones[LEN], back[LEN];
  memset (ones, 0xa5, LEN);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, ones, LEN, 0, BLKEMU_FLAG_ATOMIC) ==
             0 &&
           blkemu_io (d, BLKEMU_OP_WRITE, ones, LEN, 65536, 0) == 0,
         "the writes");
  /* Past max-transfer with oversize=split: a plain write is cut, an
   * atomic one refused.
   */
  static unsigned char big[65536];
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, big, sizeof big, 131072,
                    BLKEMU_FLAG_ATOMIC) == EINVAL,
         "an atomic write the device would split is refused");
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, big, sizeof big, 131072, 0) == 0,
         "a plain one is split and served");
  CHECK (blkemu_disk_power_off (d, err, sizeof err) == 0, "%s", err);
  unsigned plain_torn = 0, atomic_torn = 0;
  for (uint64_t seed = 1; seed <= 64; seed++) {
    struct blkemu_crash_report rep;
    if (blkemu_disk_view_open (d, BLKEMU_CRASH_TORN, seed, &rep, err,
                               sizeof err) != 0) {
      CHECK (0, "view: %s", err);
      break;
    }
    for (int w = 0; w < 2; w++) {
      blkemu_io (d, BLKEMU_OP_READ, back, LEN, w ? 65536 : 0, 0);
      unsigned kept = 0;
      for (unsigned b = 0; b < LEN / 512; b++)
        kept += back[b * 512] == 0xa5;
      bool torn = kept != 0 && kept != LEN / 512;
      *(w ? &plain_torn : &atomic_torn) += torn;
    }
    blkemu_disk_view_close (d, err, sizeof err);
  }
  CHECK (atomic_torn == 0, "the atomic write torn in %u of 64 states",
         atomic_torn);
  CHECK (plain_torn > 0, "the plain write never torn in 64 states");
  blkemu_disk_power_on (d);
  blkemu_disk_close (d);
}

/* blkemu_disk_add_command: a frontend's own control command, its
 * words, its reply, its usage in 'help'; names taken and extra words
 * refused.
 */
static void
echo_command (void *arg, int argc, char *const *argv, char *reply, size_t len)
{
  int *calls = arg;
  (*calls)++;
  size_t used = (size_t) snprintf (reply, len, "ok %d", argc);
  for (int i = 0; i < argc && used < len; i++)
    used += (size_t) snprintf (reply + used, len - used, " [%s]", argv[i]);
}

static void
silent_command (void *arg, int argc, char *const *argv, char *reply,
                size_t len)
{
  (void) arg, (void) argc, (void) argv, (void) reply, (void) len;
}

static char *
control (struct blkemu_disk *d, const char *cmd)
{
  char line[256];
  snprintf (line, sizeof line, "%s", cmd);
  struct strbuf sb = { 0 };
  control_run_command (d, line, &sb);
  char *r = sb_take (&sb);
  return r ? r : strdup ("(null)");
}

static void
test_frontend_commands (void)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_disk *d = test_disk ("size=1M", NULL);
  if (!d)
    return;
  int calls = 0;
  CHECK (blkemu_disk_add_command (d, "path", 2, "path [I down|up]",
                                  echo_command, &calls, err, sizeof err) == 0,
         "add path: %s", err);
  char *r = control (d, "path 1   down");
  CHECK (!strcmp (r, "ok 2 [1] [down]\n") && calls == 1, "path 1 down: %s", r);
  free (r);
  r = control (d, "path");
  CHECK (!strcmp (r, "ok 0\n"), "path: %s", r);
  free (r);
  r = control (d, "path 1 down now");
  CHECK (strstr (r, "error: path: takes at most 2 arguments (usage: path [I "
                    "down|up])") &&
           calls == 2,
         "three words: %s", r);
  free (r);
  r = control (d, "help");
  CHECK (strstr (r, "| help | path [I down|up]\n"), "help: %s", r);
  free (r);
  CHECK (blkemu_disk_add_command (d, "crash", 0, "crash", echo_command, &calls,
                                  err, sizeof err) == -1 &&
           strstr (err, "control command crash: the name is taken"),
         "a core command's name: %s", err);
  CHECK (blkemu_disk_add_command (d, "path", 0, "path", echo_command, &calls,
                                  err, sizeof err) == -1 &&
           strstr (err, "control command path: the name is taken"),
         "a name twice: %s", err);
  CHECK (blkemu_disk_add_command (d, "quiet", -1, "quiet", silent_command,
                                  NULL, err, sizeof err) == 0,
         "add quiet: %s", err);
  r = control (d, "quiet");
  CHECK (!strcmp (r, "error: the command gave no answer\n"), "quiet: %s", r);
  free (r);
  CHECK (blkemu_disk_add_command (d, "c3", 0, "c3", silent_command, NULL, err,
                                  sizeof err) == 0 &&
           blkemu_disk_add_command (d, "c4", 0, "c4", silent_command, NULL,
                                    err, sizeof err) == 0,
         "add c3, c4: %s", err);
  CHECK (blkemu_disk_add_command (d, "c5", 0, "c5", silent_command, NULL, err,
                                  sizeof err) == -1 &&
           strstr (err, "at most 4"),
         "a fifth: %s", err);
  r = control (d, "c5");
  CHECK (strstr (r, "error: unknown command 'c5'"), "c5: %s", r);
  free (r);
  blkemu_disk_close (d);
}

/* Transport facts: none dropped however many (the old bag held 16 and
 * lost the rest silently), a count is a JSON number, a string a string,
 * and setting a key again replaces it in place.
 */
static void
test_transport_facts (void)
{
  char key[32];
  struct blkemu_disk *d = test_disk ("size=1M", NULL);
  if (!d)
    return;
  for (int i = 0; i < 40; i++) {
    snprintf (key, sizeof key, "fact_%d", i);
    CHECK (blkemu_disk_set_transport_count (d, key, (uint64_t) i * 1000) == 0,
           "set %s", key);
  }
  blkemu_disk_set_transport (d, "fact_7", "seven");
  blkemu_disk_set_transport (d, "named", "a \"quoted\" value");
  char *j = blkemu_disk_stats_json (d, false);
  CHECK (j, "no stats JSON");
  const char *js = j ? j : "";
  CHECK (strstr (js, "\"fact_0\": 0, \"fact_1\": 1000"), "counts: %s", js);
  CHECK (strstr (js, "\"fact_39\": 39000, \"named\": \"a \\\"quoted\\\" "
                     "value\"}"),
         "the 40th and a string after it: %s", js);
  CHECK (strstr (js, "\"fact_6\": 6000, \"fact_7\": \"seven\", \"fact_8\""),
         "fact_7 replaced in place: %s", js);
  free (j);
  blkemu_disk_close (d);
}

int
main (void)
{
  test_atomic_never_torn ();
  test_error_at ();
  test_tables ();
  test_units ();
  test_overlay ();
  test_percentiles ();
  test_fixed_model ();
  test_frontend_commands ();
  test_transport_facts ();
  if (failures) {
    printf ("%d check(s) failed\n", failures);
    return 1;
  }
  printf ("all core unit checks passed\n");
  return 0;
}
