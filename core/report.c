/* What the device saw, for machines (stats JSON) and for people (the
 * iostat-style summary with size histograms).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "disk.h"
#include "error.h"
#include "report_devices.h"
#include "strbuf.h"
#include "units.h"

/* A consistent copy of the stats: the disk's and its queues'. */
static struct stats *
snapshot (struct blkemu_disk *disk)
{
  return timelines_stats_snapshot (disk);
}

static int
cmp_slot (const void *a, const void *b)
{
  const struct size_slot *x = a, *y = b;
  return (x->size > y->size) - (x->size < y->size);
}

/* The op's used size slots, sorted by size; returns how many. */
static size_t
sorted_sizes (const struct op_stats *os, struct size_slot *out)
{
  size_t n = 0;
  for (size_t i = 0; i < SIZE_SLOTS; i++)
    if (os->sizes[i].count)
      out[n++] = os->sizes[i];
  qsort (out, n, sizeof *out, cmp_slot);
  return n;
}

/* Mean queue depth at arrival, from the histogram. */
static double
qd_mean (const struct stats *st)
{
  uint64_t n = 0, sum = 0;
  for (int i = 0; i < QD_BUCKETS; i++) {
    n += st->qd_hist[i];
    sum += st->qd_hist[i] * (uint64_t) i;
  }
  return n ? (double) sum / (double) n : 0.0;
}

/* First arrival to last completion, in seconds (0: nothing served). */
static double
active_seconds (const struct stats *st)
{
  return (double) (st->last_done_ns - st->first_arrival_ns) / 1e9;
}

static double
us (uint64_t ns)
{
  return (double) ns / 1000.0;
}

/* The stats JSON, one section per function; PRETTY indents. */
struct json_out {
  struct strbuf *sb;
  const char *nl, *in1, *in2, *in3;
};

static void
json_config (const struct json_out *j, struct blkemu_disk *disk)
{
  char v[CONFIG_TEXT_MAX];
  sb_printf (j->sb, "%s\"config\": {", j->in1);
  pthread_mutex_lock (&disk->lock);
  for (int i = 0; i < K_COUNT; i++) {
    config_format (&disk->cfg, i, v, sizeof v);
    sb_printf (j->sb, "%s%s%s", i ? "," : "", j->nl, j->in2);
    sb_json_string (j->sb, config_key_name (i));
    sb_printf (j->sb, ": ");
    sb_json_string (j->sb, v);
  }
  pthread_mutex_unlock (&disk->lock);
  sb_printf (j->sb, "%s%s},%s", j->nl, j->in1, j->nl);
}

/* An alignment bucket's name: the power of two ("4K"), "0" for the
 * offset-0 bucket (aligned to anything).
 */
static void
align_label (int b, char *v, size_t len)
{
  if (b == SIZE_LOG2_BUCKETS - 1)
    snprintf (v, len, "0");
  else
    blkemu_format_size (1ull << b, v, len);
}

static void
json_op (const struct json_out *j, const struct op_stats *os,
         struct size_slot *slots)
{
  struct strbuf *sb = j->sb;
  char v[32];
  sb_printf (sb, "%s\"requests\": %llu, \"bytes\": %llu, \"errors\": %llu,%s",
             j->in3, (unsigned long long) os->requests,
             (unsigned long long) os->bytes, (unsigned long long) os->errors,
             j->nl);
  size_t n = sorted_sizes (os, slots);
  sb_printf (sb, "%s\"sizes\": {", j->in3);
  for (size_t i = 0; i < n; i++)
    sb_printf (sb, "%s\"%llu\": %llu", i ? ", " : "",
               (unsigned long long) slots[i].size,
               (unsigned long long) slots[i].count);
  if (os->size_other)
    sb_printf (sb, "%s\"other\": %llu", n ? ", " : "",
               (unsigned long long) os->size_other);
  sb_printf (sb, "},%s%s\"size_log2\": {", j->nl, j->in3);
  bool first = true;
  for (int b = 0; b < SIZE_LOG2_BUCKETS; b++)
    if (os->size_log2[b]) {
      blkemu_format_size (1ull << b, v, sizeof v);
      sb_printf (sb, "%s\"%s\": %llu", first ? "" : ", ", v,
                 (unsigned long long) os->size_log2[b]);
      first = false;
    }
  sb_printf (sb, "},%s%s\"alignment_log2\": {", j->nl, j->in3);
  first = true;
  for (int b = 0; b < SIZE_LOG2_BUCKETS; b++)
    if (os->align_log2[b]) {
      align_label (b, v, sizeof v);
      sb_printf (sb, "%s\"%s\": %llu", first ? "" : ", ", v,
                 (unsigned long long) os->align_log2[b]);
      first = false;
    }
  double mean =
    os->lat_count ? us (os->lat_sum_ns) / (double) os->lat_count : 0;
  double modelled =
    os->lat_count ? us (os->model_sum_ns) / (double) os->lat_count : 0;
  sb_printf (sb,
             "},%s%s\"latency_us\": {\"mean\": %.3f, "
             "\"modelled_mean\": %.3f, \"p50\": %.3f, "
             "\"p90\": %.3f, \"p99\": %.3f, \"p999\": %.3f, "
             "\"max\": %.3f}%s",
             j->nl, j->in3, mean, modelled,
             us (stats_latency_percentile (os, 50)),
             us (stats_latency_percentile (os, 90)),
             us (stats_latency_percentile (os, 99)),
             us (stats_latency_percentile (os, 99.9)), us (os->lat_max_ns),
             j->nl);
}

/* A counter of counters.h as the JSON writer reads it. */
struct counter_desc {
  const char *group, *name;
  size_t offset; /* in struct stats */
};
#define COUNTER_DESC(type, field, group, name)                                \
  { group, name, offsetof (type, field) },
static const struct counter_desc device_counters[] = {
#define DEVICE_DESC(f, g, n, h) COUNTER_DESC (struct stats, f, g, n)
  DEVICE_COUNTERS (DEVICE_DESC)
#undef DEVICE_DESC
};
static const struct counter_desc fault_counters[] = {
#define FAULT_DESC(f, g, n, h) COUNTER_DESC (struct stats, faults.f, g, n)
  FAULT_COUNTERS (FAULT_DESC)
#undef FAULT_DESC
};
#define NDESC(a) (sizeof (a) / sizeof (a)[0])

static uint64_t
counter_value (const struct stats *st, const struct counter_desc *d)
{
  uint64_t v;
  memcpy (&v, (const char *) st + d->offset, sizeof v);
  return v;
}

/* The members D[FROM..TO) as "name": N, ", " between them. */
static void
json_members (struct strbuf *sb, const struct stats *st,
              const struct counter_desc *d, size_t from, size_t to)
{
  for (size_t i = from; i < to; i++)
    sb_printf (sb, "%s\"%s\": %llu", i > from ? ", " : "", d[i].name,
               (unsigned long long) counter_value (st, &d[i]));
}

static bool
same_group (const char *a, const char *b)
{
  return a && b && strcmp (a, b) == 0;
}

/* The device counters (a group an object on its line, the others a line
 * each), then faults.
 */
static void
json_counters (const struct json_out *j, const struct stats *st)
{
  const struct counter_desc *d = device_counters;
  for (size_t i = 0, end; i < NDESC (device_counters); i = end) {
    end = i + 1;
    if (!d[i].group) {
      sb_printf (j->sb, "%s", j->in1);
      json_members (j->sb, st, d, i, end);
      sb_printf (j->sb, ",%s", j->nl);
      continue;
    }
    while (end < NDESC (device_counters) &&
           same_group (d[end].group, d[i].group))
      end++;
    if (strcmp (d[i].group, "zones") == 0)
      continue; /* with the zone report */
    sb_printf (j->sb, "%s\"%s\": {", j->in1, d[i].group);
    json_members (j->sb, st, d, i, end);
    sb_printf (j->sb, "},%s", j->nl);
  }
  const struct fault_counts *fc = &st->faults;
  sb_printf (j->sb, "%s\"faults\": {", j->in1);
  json_members (j->sb, st, fault_counters, 0, NDESC (fault_counters));
  sb_printf (j->sb, ", \"last_crash\": ");
  if (fc->crashes)
    sb_printf (j->sb,
               "{\"mode\": \"%s\", \"seed\": %llu, "
               "\"persisted\": %llu, \"lost\": %llu, \"torn\": %llu}",
               blkemu_crash_mode_name (fc->last_mode),
               (unsigned long long) fc->last_seed,
               (unsigned long long) fc->last_persisted,
               (unsigned long long) fc->last_lost,
               (unsigned long long) fc->last_torn);
  else
    sb_printf (j->sb, "null");
  sb_printf (j->sb, "},%s", j->nl);
}

/* trace (with trace= only), write_cache. */
static void
json_trace_cache (const struct json_out *j, struct blkemu_disk *disk)
{
  struct trace_counts tc;
  trace_counts (&disk->trace, &tc);
  if (tc.enabled)
    sb_printf (j->sb,
               "%s\"trace\": {\"records\": %llu, \"dropped\": %llu, "
               "\"bytes\": %llu, \"write_error\": %s%s%s},%s",
               j->in1, (unsigned long long) tc.records,
               (unsigned long long) tc.dropped, (unsigned long long) tc.bytes,
               tc.write_error ? "\"" : "",
               tc.write_error ? strerrorname_np (tc.write_error) : "null",
               tc.write_error ? "\"" : "", j->nl);
  uint64_t wc_entries, wc_bytes;
  wcache_usage (&disk->wcache, &wc_entries, &wc_bytes);
  sb_printf (j->sb,
             "%s\"write_cache\": {\"entries\": %llu, \"bytes\": %llu},%s",
             j->in1, (unsigned long long) wc_entries,
             (unsigned long long) wc_bytes, j->nl);
}

/* "NAME": {"KEY": VALUE, ...} on one line of JSON, and a comma. */
static void
json_counts (const struct json_out *j, const char *indent, const char *name,
             const char *const *keys, const uint64_t *vals, size_t n)
{
  sb_printf (j->sb, "%s\"%s\": {", indent, name);
  for (size_t i = 0; i < n; i++)
    sb_printf (j->sb, "%s\"%s\": %llu", i ? ", " : "", keys[i],
               (unsigned long long) vals[i]);
  sb_printf (j->sb, "},%s", j->nl);
}

#define NCOUNTS(a) (sizeof (a) / sizeof (a)[0])

/* zones: null unless zoned=host-managed. */
static void
json_zones (const struct json_out *j, struct blkemu_disk *disk,
            const struct stats *st)
{
  struct strbuf *sb = j->sb;
  pthread_mutex_lock (&disk->lock);
  const struct zones *z = &disk->zones;
  if (!zones_on (z)) {
    pthread_mutex_unlock (&disk->lock);
    sb_printf (sb, "%s\"zones\": null,%s", j->in1, j->nl);
    return;
  }
  uint64_t c[16];
  zones_count (z, c);
  sb_printf (sb,
             "%s\"zones\": {\"count\": %llu, \"conventional\": %llu, "
             "\"zone_size\": %llu, \"capacity\": %llu, \"max_open\": %llu, "
             "\"max_active\": %llu,%s",
             j->in1, (unsigned long long) z->nr,
             (unsigned long long) z->nr_conv,
             (unsigned long long) z->zone_size,
             (unsigned long long) z->capacity,
             (unsigned long long) z->max_open,
             (unsigned long long) z->max_active, j->nl);
  static const char *const cond_keys[] = {
    "not_wp", "empty", "implicit_open", "explicit_open",
    "closed", "full",  "read_only",     "offline",
  };
  const uint64_t conds[] = {
    c[BLKEMU_ZONE_COND_NOT_WP],   c[BLKEMU_ZONE_COND_EMPTY],
    c[BLKEMU_ZONE_COND_IMP_OPEN], c[BLKEMU_ZONE_COND_EXP_OPEN],
    c[BLKEMU_ZONE_COND_CLOSED],   c[BLKEMU_ZONE_COND_FULL],
    c[BLKEMU_ZONE_COND_READONLY], c[BLKEMU_ZONE_COND_OFFLINE],
  };
  json_counts (j, j->in2, "conditions", cond_keys, conds, NCOUNTS (conds));
  sb_printf (sb,
             "%s\"open_peak\": %llu, \"active_peak\": %llu, "
             "\"excursions\": %llu,%s",
             j->in2, (unsigned long long) z->open_peak,
             (unsigned long long) z->active_peak,
             (unsigned long long) z->excursions, j->nl);
  static const char *const cmd_keys[BLKEMU_ZONE_OP_COUNT] = {
    "open", "close", "finish", "reset", "reset_all",
  };
  json_counts (j, j->in2, "commands", cmd_keys, z->cmds, BLKEMU_ZONE_OP_COUNT);
  static const char *const write_keys[] = {
    "sequential",
    "conventional",
    "appends",
  };
  const uint64_t writes[] = { z->writes_seq, z->writes_conv, z->appends };
  json_counts (j, j->in2, "writes", write_keys, writes, NCOUNTS (writes));
  static const char *const viol_keys[] = {
    "write_pointer",  "zone_end",         "full",
    "open_resources", "active_resources", "condition",
  };
  const uint64_t viol[] = {
    z->wp_violations, z->boundary_violations, z->full_violations,
    z->open_refused,  z->active_refused,      z->cond_refused,
  };
  json_counts (j, j->in2, "violations", viol_keys, viol, NCOUNTS (viol));
  pthread_mutex_unlock (&disk->lock);
  sb_printf (sb, "%s\"refused\": %llu},%s", j->in2,
             (unsigned long long) st->zone_refused, j->nl);
}

/* queue_depth, sequential_fraction, transport (last: closes the object). */
static void
json_queue_transport (const struct json_out *j, struct blkemu_disk *disk,
                      const struct stats *st)
{
  struct strbuf *sb = j->sb;
  sb_printf (sb,
             "%s\"queue_depth\": {\"max\": %llu, \"mean\": %.3f, "
             "\"histogram\": {",
             j->in1, (unsigned long long) st->qd_max, qd_mean (st));
  bool first = true;
  for (int i = 0; i < QD_BUCKETS; i++)
    if (st->qd_hist[i]) {
      sb_printf (sb, "%s\"%d%s\": %llu", first ? "" : ", ", i,
                 i == QD_BUCKETS - 1 ? "+" : "",
                 (unsigned long long) st->qd_hist[i]);
      first = false;
    }
  sb_printf (sb, "}},%s", j->nl);
  sb_printf (sb, "%s\"sequential_fraction\": %.4f,%s", j->in1,
             st->rw_requests
               ? (double) st->seq_requests / (double) st->rw_requests
               : 0.0,
             j->nl);
  sb_printf (sb, "%s\"transport\": {", j->in1);
  pthread_mutex_lock (&disk->transport_lock);
  for (size_t i = 0; i < disk->ntransport; i++) {
    sb_printf (sb, "%s", i ? ", " : "");
    sb_json_string (sb, disk->transport[i].key);
    sb_printf (sb, ": ");
    if (disk->transport[i].number)
      sb_printf (sb, "%s", disk->transport[i].value);
    else
      sb_json_string (sb, disk->transport[i].value);
  }
  pthread_mutex_unlock (&disk->transport_lock);
  sb_printf (sb, "}%s}\n", j->nl);
}

char *
blkemu_disk_stats_json (struct blkemu_disk *disk, bool pretty)
{
  blkemu_transport_refresh_fn refresh =
    __atomic_load_n (&disk->transport_refresh, __ATOMIC_ACQUIRE);
  if (refresh)
    refresh (__atomic_load_n (&disk->transport_refresh_arg, __ATOMIC_RELAXED));
  struct stats *st = snapshot (disk);
  struct size_slot *slots = malloc (SIZE_SLOTS * sizeof *slots);
  struct strbuf sb = { 0 };
  const struct json_out j = {
    .sb = &sb,
    .nl = pretty ? "\n" : "",
    .in1 = pretty ? "  " : "",
    .in2 = pretty ? "    " : "",
    .in3 = pretty ? "      " : "",
  };
  if (!st || !slots) {
    free (st);
    free (slots);
    return NULL;
  }
  double elapsed = (double) (clock_now_ns () - st->start_ns) / 1e9;
  sb_printf (&sb,
             "{%s%s\"version\": \"%s\",%s%s\"elapsed_s\": %.3f,%s"
             "%s\"active_s\": %.6f,%s",
             j.nl, j.in1, BLKEMU_VERSION, j.nl, j.in1, elapsed, j.nl, j.in1,
             active_seconds (st), j.nl);
  json_config (&j, disk);
  sb_printf (&sb, "%s\"ops\": {", j.in1);
  for (int op = 0; op < BLKEMU_OP_COUNT; op++) {
    sb_printf (&sb, "%s%s%s\"%s\": {%s", op ? "," : "", j.nl, j.in2,
               stats_op_name ((enum blkemu_op) op), j.nl);
    json_op (&j, &st->op[op], slots);
    sb_printf (&sb, "%s}", j.in2);
  }
  sb_printf (&sb, "%s%s},%s", j.nl, j.in1, j.nl);
  json_counters (&j, st);
  sb_printf (&sb, "%s\"in_flight\": %llu,%s", j.in1,
             (unsigned long long) __atomic_load_n (&disk->in_flight,
                                                   __ATOMIC_RELAXED),
             j.nl);
  /* How requests are admitted now: without the disk lock (plain) or
   * under it (locked: the disk has model time, faults, zones, a cache or
   * a view to consult).
   */
  sb_printf (&sb, "%s\"admission\": \"%s\",%s", j.in1,
             __atomic_load_n (&disk->plain, __ATOMIC_RELAXED) ? "plain"
                                                              : "locked",
             j.nl);
  json_trace_cache (&j, disk);
  report_devices_json (&sb, j.in1, j.nl, disk);
  json_zones (&j, disk, st);
  json_queue_transport (&j, disk, st);
  free (slots);
  free (st);
  return sb_take (&sb);
}

int
blkemu_write_file_atomic (const char *path, const char *text)
{
  /* The target is a regular file or nothing: a rename would replace a
   * link, FIFO or device planted at PATH, and what another user links
   * there must not be written through.
   */
  struct stat st;
  if (lstat (path, &st) == 0 && !S_ISREG (st.st_mode)) {
    errno = S_ISLNK (st.st_mode) ? ELOOP : EEXIST;
    return -1;
  }
  /* The temporary beside it, under a name nobody can predict, created
   * exclusively (mkostemp: O_CREAT | O_EXCL, so never through a link or
   * into a FIFO).
   */
  char tmp[PATH_MAX];
  const char *slash = strrchr (path, '/');
  int dirlen = slash ? (int) (slash - path + 1) : 0;
  if (snprintf (tmp, sizeof tmp, "%.*s.%s.XXXXXX", dirlen, path,
                slash ? slash + 1 : path) >= (int) sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkostemp (tmp, O_CLOEXEC);
  if (fd == -1)
    return -1;
  FILE *fp = fdopen (fd, "w");
  if (!fp) {
    int e = errno;
    close (fd);
    unlink (tmp);
    errno = e;
    return -1;
  }
  /* mkostemp makes it 0600; a stats file is for whoever reads the disk's
   * figures, as before.
   */
  bool ok = fchmod (fd, 0644) == 0 && fputs (text, fp) >= 0;
  if (fclose (fp) != 0 || !ok || rename (tmp, path) != 0) {
    int e = errno;
    unlink (tmp);
    errno = e ? e : EIO;
    return -1;
  }
  return 0;
}

static int
write_stats (struct blkemu_disk *disk, char *err)
{
  const char *path = disk->cfg.str[K_STATS];
  if (!path) {
    set_err (err, "stats: no stats=PATH was given");
    return -1;
  }
  trace_flush (&disk->trace);
  char *json = blkemu_disk_stats_json (disk, true);
  if (!json) {
    set_err (err, "stats=%s: out of memory", path);
    return -1;
  }
  /* Readers never see half a file. */
  int r = blkemu_write_file_atomic (path, json);
  if (r == -1)
    set_err (err, "stats=%s: %s", path,
             errno == ELOOP    ? "is a symbolic link: name the file itself"
             : errno == EEXIST ? "exists and is not a regular file"
                               : strerrordesc_np (errno));
  free (json);
  return r;
}

int
blkemu_disk_write_stats (struct blkemu_disk *disk, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (write_stats (disk, e), e, err, errlen);
}

/* ---- the human summary ------------------------------------------- */

#define BAR_WIDTH 40

static void
summary_histogram (struct strbuf *sb, const char *opname,
                   const struct op_stats *os, struct size_slot *slots)
{
  size_t n = sorted_sizes (os, slots);
  if (n == 0)
    return;
  uint64_t max = 0;
  for (size_t i = 0; i < n; i++)
    if (slots[i].count > max)
      max = slots[i].count;
  sb_printf (sb, "\n%s request sizes (as the device saw them):\n", opname);
  /* Long tails of rare sizes go into one line. */
  uint64_t rest = 0, rest_kinds = 0;
  for (size_t i = 0; i < n; i++) {
    if (n > 16 && slots[i].count * 100 < max) {
      rest += slots[i].count;
      rest_kinds++;
      continue;
    }
    char sz[32];
    blkemu_format_size (slots[i].size, sz, sizeof sz);
    int bar = (int) ((slots[i].count * BAR_WIDTH + max - 1) / max);
    sb_printf (sb, "  %8s |%.*s%*s %llu\n", sz, bar,
               "########################################", BAR_WIDTH - bar, "",
               (unsigned long long) slots[i].count);
  }
  if (rest)
    sb_printf (sb, "  %8s  %llu requests in %llu other sizes\n", "...",
               (unsigned long long) rest, (unsigned long long) rest_kinds);
  /* Where they started: one line, the largest power of two each offset
   * is a multiple of, as a share of the requests.
   */
  uint64_t total = 0;
  for (int b = 0; b < SIZE_LOG2_BUCKETS; b++)
    total += os->align_log2[b];
  if (total == 0)
    return;
  sb_printf (sb, "  aligned to:");
  for (int b = 0; b < SIZE_LOG2_BUCKETS; b++)
    if (os->align_log2[b]) {
      char v[32];
      align_label (b, v, sizeof v);
      sb_printf (sb, " %s%s %.1f%%", v,
                 b == SIZE_LOG2_BUCKETS - 1 ? " (offset)" : "",
                 100.0 * (double) os->align_log2[b] / (double) total);
    }
  sb_printf (sb, "\n");
}

/* The iostat-style table: one line per op that saw requests, rates over
 * SECS.
 */
static void
summary_table (struct strbuf *sb, const struct stats *st, double secs)
{
  sb_printf (sb, "%-6s %9s %9s %9s %9s %9s %9s %9s %9s %9s %7s\n", "op",
             "requests", "IOPS", "MiB", "MiB/s", "avg-KiB", "lat-mean",
             "lat-p50", "lat-p99", "lat-max", "errors");
  for (int op = 0; op < BLKEMU_OP_COUNT; op++) {
    const struct op_stats *os = &st->op[op];
    if (os->requests == 0)
      continue;
    uint64_t ok = os->requests - os->errors;
    sb_printf (sb,
               "%-6s %9llu %9.1f %9.2f %9.2f %9.1f %9.1f %9.1f %9.1f "
               "%9.1f %7llu\n",
               stats_op_name ((enum blkemu_op) op),
               (unsigned long long) os->requests, (double) os->requests / secs,
               (double) os->bytes / 1048576.0,
               (double) os->bytes / 1048576.0 / secs,
               ok ? (double) os->bytes / 1024.0 / (double) ok : 0.0,
               os->lat_count ? us (os->lat_sum_ns) / (double) os->lat_count
                             : 0.0,
               us (stats_latency_percentile (os, 50)),
               us (stats_latency_percentile (os, 99)), us (os->lat_max_ns),
               (unsigned long long) os->errors);
  }
  sb_printf (sb, "(latencies in microseconds, arrival to completion)\n");
}

/* The counters: oversize, boundary, discard, faults, queue depth. */
static void
summary_counters (struct strbuf *sb, const struct stats *st)
{
  sb_printf (sb,
             "oversize: %llu rejected, %llu split into %llu pieces, "
             "%llu allowed; misaligned %llu; out of range %llu\n",
             (unsigned long long) st->oversize_rejected,
             (unsigned long long) st->oversize_split,
             (unsigned long long) st->oversize_pieces,
             (unsigned long long) st->oversize_allowed,
             (unsigned long long) st->misaligned,
             (unsigned long long) st->out_of_range);
  if (st->boundary_crossed)
    sb_printf (sb,
               "boundary: %llu requests crossed one: %llu split, "
               "%llu rejected\n",
               (unsigned long long) st->boundary_crossed,
               (unsigned long long) st->boundary_split,
               (unsigned long long) st->boundary_rejected);
  if (st->discard_unaligned)
    sb_printf (sb,
               "discard: %llu trims not in whole units; %llu bytes "
               "outside them kept their data\n",
               (unsigned long long) st->discard_unaligned,
               (unsigned long long) st->discard_kept_bytes);
  const struct fault_counts *fc = &st->faults;
  if (fc->errors || fc->spikes || fc->stalled || fc->slowed || fc->dropped ||
      fc->offline || fc->crashes) {
    sb_printf (sb,
               "faults: %llu errors injected, %llu spikes, %llu stalled, "
               "%llu slowed, %llu connections dropped, %llu refused offline; "
               "%llu crashes lost %llu unflushed writes (%.1f MiB) and "
               "failed %llu requests in flight\n",
               (unsigned long long) fc->errors,
               (unsigned long long) fc->spikes,
               (unsigned long long) fc->stalled,
               (unsigned long long) fc->slowed,
               (unsigned long long) fc->dropped,
               (unsigned long long) fc->offline,
               (unsigned long long) fc->crashes,
               (unsigned long long) fc->lost_writes,
               (double) fc->lost_bytes / 1048576.0,
               (unsigned long long) fc->crash_aborted);
    if (fc->crashes && fc->last_mode != BLKEMU_CRASH_LOSE_ALL)
      sb_printf (sb,
                 "last crash: %s, seed %llu: %llu cached writes "
                 "persisted, %llu lost, %llu torn\n",
                 blkemu_crash_mode_name (fc->last_mode),
                 (unsigned long long) fc->last_seed,
                 (unsigned long long) fc->last_persisted,
                 (unsigned long long) fc->last_lost,
                 (unsigned long long) fc->last_torn);
  }
  sb_printf (sb,
             "queue depth at arrival: max %llu, mean %.2f; "
             "sequential %.1f%%\n",
             (unsigned long long) st->qd_max, qd_mean (st),
             st->rw_requests
               ? 100.0 * (double) st->seq_requests / (double) st->rw_requests
               : 0.0);
}

/* A zoned disk: its zones by condition, commands and what was refused. */
static void
summary_zones (struct strbuf *sb, struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->lock);
  const struct zones *z = &disk->zones;
  if (zones_on (z)) {
    uint64_t c[16];
    zones_count (z, c);
    sb_printf (sb,
               "zones: %llu (%llu conventional): %llu empty, %llu open "
               "(peak %llu), %llu closed, %llu full; %llu resets, %llu "
               "finishes, %llu appends; refused: %llu off the write "
               "pointer, %llu past a zone's end, %llu into full zones, %llu "
               "for open/active limits\n",
               (unsigned long long) z->nr, (unsigned long long) z->nr_conv,
               (unsigned long long) c[BLKEMU_ZONE_COND_EMPTY],
               (unsigned long long) (c[BLKEMU_ZONE_COND_IMP_OPEN] +
                                     c[BLKEMU_ZONE_COND_EXP_OPEN]),
               (unsigned long long) z->open_peak,
               (unsigned long long) c[BLKEMU_ZONE_COND_CLOSED],
               (unsigned long long) c[BLKEMU_ZONE_COND_FULL],
               (unsigned long long) (z->cmds[BLKEMU_ZONE_RESET] +
                                     z->cmds[BLKEMU_ZONE_RESET_ALL]),
               (unsigned long long) z->cmds[BLKEMU_ZONE_FINISH],
               (unsigned long long) z->appends,
               (unsigned long long) z->wp_violations,
               (unsigned long long) z->boundary_violations,
               (unsigned long long) z->full_violations,
               (unsigned long long) (z->open_refused + z->active_refused));
  }
  pthread_mutex_unlock (&disk->lock);
}

char *
blkemu_disk_summary_text (struct blkemu_disk *disk)
{
  struct stats *st = snapshot (disk);
  struct size_slot *slots = malloc (SIZE_SLOTS * sizeof *slots);
  struct strbuf sb = { 0 };
  char mt[32], name[128], pol[32];
  if (!st || !slots) {
    free (st);
    free (slots);
    return NULL;
  }
  pthread_mutex_lock (&disk->lock);
  config_format (&disk->cfg, K_MAX_TRANSFER, mt, sizeof mt);
  config_format (&disk->cfg, K_NAME, name, sizeof name);
  config_format (&disk->cfg, K_OVERSIZE, pol, sizeof pol);
  pthread_mutex_unlock (&disk->lock);

  /* Rates are over the active window (first arrival to last completion),
   * so idle time before and after a run does not dilute them.
   */
  double total = (double) (clock_now_ns () - st->start_ns) / 1e9;
  double secs = active_seconds (st);
  if (secs <= 0) /* nothing reached the device: rates over the uptime */
    secs = total > 0 ? total : 1e-9;
  sb_printf (&sb,
             "blkemu %s: %.3f s active of %.2f s, max-transfer %s, "
             "oversize=%s\n",
             name, secs, total, mt, pol);
  summary_table (&sb, st, secs);
  summary_counters (&sb, st);
  report_devices_summary (&sb, disk);
  summary_zones (&sb, disk);
  summary_histogram (&sb, "read", &st->op[BLKEMU_OP_READ], slots);
  summary_histogram (&sb, "write", &st->op[BLKEMU_OP_WRITE], slots);
  free (slots);
  free (st);
  return sb_take (&sb);
}

void
disk_write_summary (struct blkemu_disk *disk, FILE *fp)
{
  char *text = blkemu_disk_summary_text (disk);
  if (text) {
    fputs (text, fp);
    free (text);
  }
}
