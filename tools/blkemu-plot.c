/* blkemu-plot: a picture of a blkemu trace, as one SVG file.
 *
 *   blkemu-plot [-o OUT.svg] [--title TEXT] TRACE
 *
 * Four panels: where the requests went (offset over time), how long they
 * took (latency over time, log scale), the request sizes the device saw
 * (exact sizes when there are few, powers of two otherwise) and the
 * latency distribution (CDF) per operation.  The two time panels are
 * density maps, so a trace of millions of requests stays a small file.
 * See docs/blkemu-plot.1.md and blkemu-trace(5).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"

enum { OP_R, OP_W, OP_F, OP_T, OP_Z, NOPS };
static const char *const op_name[NOPS] = { "read", "write", "flush", "trim",
                                           "zero" };
static const char *const op_color[NOPS] = { "#1f77b4", "#ff7f0e", "#2ca02c",
                                            "#9467bd", "#8c564b" };
#define ERROR_COLOR "#d62728"

struct req {
  double t;      /* arrival, s */
  double lat_us; /* 0 for refused requests */
  uint64_t off, len;
  unsigned char op;
  bool err;
  bool reset; /* a zone reset (traced as a trim) */
};

struct trace {
  struct req *r;
  size_t n, cap;
  size_t count[NOPS], errors;
  double t_max, lat_min, lat_max;
  uint64_t end_max;
  uint64_t zone_size; /* "# zone_size N": a zoned disk's trace */
  size_t resets;
};

/* ---- reading --------------------------------------------------------- */

/* Where the reader's complaints go: stderr, or what the fuzz harness
 * sets (it feeds millions of bad traces).
 */
static FILE *diag_fp;
static FILE *
diag (void)
{
  return diag_fp ? diag_fp : stderr;
}

/* What a trace line may hold: times up to a year, latencies up to a day,
 * nothing below the trace's nanosecond resolution.
 */
#define TIME_MAX_S (365.0 * 86400)
#define LATENCY_MAX_US (86400.0 * 1e6)
#define LATENCY_MIN_US 0.001
#define TIME_MIN_SPAN_S 1e-6 /* the time axis spans at least this */

_Static_assert((int) OP_R == (int) BLKEMU_OP_READ &&
                 (int) OP_W == (int) BLKEMU_OP_WRITE &&
                 (int) OP_F == (int) BLKEMU_OP_FLUSH &&
                 (int) OP_T == (int) BLKEMU_OP_TRIM &&
                 (int) OP_Z == (int) BLKEMU_OP_ZERO,
               "the plot's ops are the core's");

/* The bit of the trace mark NAME in blkemu_trace_rec.marks. */
static unsigned
mark_bit (const char *name)
{
  for (unsigned i = 0; blkemu_trace_mark_name (i); i++)
    if (strcmp (blkemu_trace_mark_name (i), name) == 0)
      return 1u << i;
  return 0;
}

/* Read the trace from FP (PATH names it in messages) into TR, through
 * the core's reader (the rules blkemu-trace-convert applies too).  The
 * fuzz harness (fuzz/fuzz-plot.c) calls this and plot() on any bytes.
 */
static int
read_trace_fp (FILE *fp, const char *path, struct trace *tr)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_trace_reader *rd = blkemu_trace_reader_new (fp, path);
  if (!rd) {
    fprintf (diag (), "blkemu-plot: out of memory\n");
    return -1;
  }
  struct blkemu_trace_rec rec;
  int got, r = -1;
  tr->lat_min = INFINITY;
  while ((got = blkemu_trace_read (rd, &rec, err, sizeof err)) == 1) {
    double t = (double) rec.arrival_ns / 1e9;
    double lat = (double) rec.latency_ns / 1e3;
    /* What a plot can draw: beyond these the maps and ticks break. */
    if (t > TIME_MAX_S || lat > LATENCY_MAX_US) {
      fprintf (diag (), "blkemu-plot: %s:%zu: cannot plot a %s beyond %s\n",
               path, blkemu_trace_line (rd),
               t > TIME_MAX_S ? "time" : "latency",
               t > TIME_MAX_S ? "a year" : "a day");
      goto out;
    }
    if (tr->n == tr->cap) {
      size_t cap = tr->cap ? tr->cap * 2 : 4096;
      struct req *q = realloc (tr->r, cap * sizeof *q);
      if (!q) {
        fprintf (diag (), "blkemu-plot: out of memory at line %zu\n",
                 blkemu_trace_line (rd));
        goto out;
      }
      tr->r = q;
      tr->cap = cap;
    }
    int o = (int) rec.op;
    bool failed = rec.err != 0;
    bool reset = (rec.marks & mark_bit ("zone-reset")) != 0;
    /* The trace has nanosecond resolution: a smaller latency is a zero
     * one as far as the log axis is concerned.
     */
    if (lat < LATENCY_MIN_US)
      lat = 0;
    tr->r[tr->n++] = (struct req){ .t = t,
                                   .lat_us = lat,
                                   .off = rec.offset,
                                   .len = rec.len,
                                   .op = (unsigned char) o,
                                   .err = failed,
                                   .reset = reset };
    tr->resets += reset;
    tr->count[o]++;
    tr->errors += failed;
    if (t > tr->t_max)
      tr->t_max = t;
    uint64_t end =
      rec.offset + rec.len < rec.offset ? UINT64_MAX : rec.offset + rec.len;
    if (o != OP_F && end > tr->end_max) /* a flush has no place */
      tr->end_max = end;
    if (lat > 0 && lat < tr->lat_min)
      tr->lat_min = lat;
    if (lat > tr->lat_max)
      tr->lat_max = lat;
  }
  if (got == -1) {
    fprintf (diag (), "blkemu-plot: %s\n", err);
    goto out;
  }
  if (!blkemu_trace_has_header (rd) && tr->n == 0) {
    fprintf (diag (),
             "blkemu-plot: %s: not a blkemu trace (no '# blkemu "
             "trace' header, no requests)\n",
             path);
    goto out;
  }
  tr->zone_size = blkemu_trace_zone_size (rd);
  r = 0;
out:
  blkemu_trace_reader_free (rd);
  return r;
}

/* ---- drawing helpers ------------------------------------------------- */

struct panel {
  double x, y, w, h; /* plot area */
};

static void
human_bytes (double v, char *buf, size_t len)
{
  static const char *const unit[] = { "", "K", "M", "G", "T" };
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  snprintf (buf, len, "%.3g%s", v, unit[u]);
}

static void
frame (FILE *fp, const struct panel *p, const char *title, const char *xlabel,
       const char *ylabel)
{
  fprintf (fp,
           "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' "
           "fill='#fafafa' stroke='#888'/>\n",
           p->x, p->y, p->w, p->h);
  fprintf (fp, "<text x='%.1f' y='%.1f' class='t'>%s</text>\n", p->x, p->y - 8,
           title);
  fprintf (fp, "<text x='%.1f' y='%.1f' text-anchor='middle'>%s</text>\n",
           p->x + p->w / 2, p->y + p->h + 32, xlabel);
  fprintf (fp,
           "<text transform='translate(%.1f,%.1f) rotate(-90)' "
           "text-anchor='middle'>%s</text>\n",
           p->x - 48, p->y + p->h / 2, ylabel);
}

static void
xtick (FILE *fp, const struct panel *p, double frac, const char *label)
{
  double x = p->x + frac * p->w;
  fprintf (fp,
           "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#888'/>"
           "<text x='%.1f' y='%.1f' text-anchor='middle'>%s</text>\n",
           x, p->y + p->h, x, p->y + p->h + 4, x, p->y + p->h + 16, label);
}

static void
ytick (FILE *fp, const struct panel *p, double frac, const char *label)
{
  double y = p->y + p->h - frac * p->h;
  fprintf (fp,
           "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#888'/>"
           "<text x='%.1f' y='%.1f' text-anchor='end'>%s</text>\n",
           p->x - 4, y, p->x, y, p->x - 6, y + 4, label);
}

/* Latency on a log axis from 10^lo to 10^hi microseconds. */
static void
latency_range (const struct trace *tr, int *lo, int *hi)
{
  *lo = tr->lat_min < INFINITY ? (int) floor (log10 (tr->lat_min)) : 0;
  *hi = tr->lat_max > 0 ? (int) ceil (log10 (tr->lat_max)) : 1;
  if (*hi <= *lo)
    *hi = *lo + 1;
}

static double
lat_frac (double lat, int lo, int hi)
{
  if (lat <= 0)
    return 0;
  double f = (log10 (lat) - lo) / (hi - lo);
  return f < 0 ? 0 : f > 1 ? 1 : f;
}

#define COLS 240
#define ROWS 60

/* A density map: per op, requests counted in COLS x ROWS cells, each cell
 * drawn with an opacity that grows with the log of its count.  Errors get
 * their own layer on top, in red.
 */
static void
density (FILE *fp, const struct panel *p, const struct trace *tr,
         double (*yfrac) (const struct req *, const struct trace *, int, int),
         int lo, int hi)
{
  static unsigned cell[NOPS + 1][ROWS][COLS];
  memset (cell, 0, sizeof cell);
  unsigned cmax = 1;
  double tspan = tr->t_max > TIME_MIN_SPAN_S ? tr->t_max : TIME_MIN_SPAN_S;
  for (size_t i = 0; i < tr->n; i++) {
    const struct req *r = &tr->r[i];
    int cx = (int) (r->t / tspan * (COLS - 1) + 0.5);
    int cy = (int) (yfrac (r, tr, lo, hi) * (ROWS - 1) + 0.5);
    unsigned *c = &cell[r->err ? NOPS : r->op][cy][cx];
    if (++*c > cmax)
      cmax = *c;
  }
  double cw = p->w / COLS, ch = p->h / ROWS;
  for (int o = 0; o <= NOPS; o++) {
    fprintf (fp, "<g fill='%s'>\n", o == NOPS ? ERROR_COLOR : op_color[o]);
    for (int y = 0; y < ROWS; y++)
      for (int x = 0; x < COLS; x++)
        if (cell[o][y][x])
          fprintf (fp,
                   "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' "
                   "fill-opacity='%.2f'/>\n",
                   p->x + x * cw, p->y + p->h - (y + 1) * ch, cw, ch,
                   0.25 + 0.75 * log1p (cell[o][y][x]) / log1p (cmax));
    fprintf (fp, "</g>\n");
  }
}

static double
offset_frac (const struct req *r, const struct trace *tr, int lo, int hi)
{
  (void) lo;
  (void) hi;
  if (!tr->end_max || r->off >= tr->end_max) /* a flush, anywhere */
    return r->off && tr->end_max ? 1 : 0;
  return (double) r->off / (double) tr->end_max;
}

static double
latency_frac (const struct req *r, const struct trace *tr, int lo, int hi)
{
  (void) tr;
  return lat_frac (r->lat_us, lo, hi);
}

/* A round tick step (1, 2 or 5 times a power of ten) giving at most N
 * ticks over SPAN.
 */
static double
nice_step (double span, int n)
{
  double raw = span / n, p10 = pow (10, floor (log10 (raw)));
  for (int i = 0; i < 3; i++) {
    double step = (double[]){ 1, 2, 5 }[i] * p10;
    if (step >= raw)
      return step;
  }
  return 10 * p10;
}

static void
time_axis (FILE *fp, const struct panel *p, const struct trace *tr)
{
  char b[32];
  double span = tr->t_max > TIME_MIN_SPAN_S ? tr->t_max : TIME_MIN_SPAN_S;
  double step = nice_step (span, 8);
  for (int i = 0; i * step <= span * (1 + 1e-9); i++) {
    snprintf (b, sizeof b, "%g", i * step);
    xtick (fp, p, i * step / span, b);
  }
}

static void
latency_axis (FILE *fp, const struct panel *p, int lo, int hi, bool x)
{
  char b[32];
  for (int d = lo; d <= hi; d++) {
    /* 10^d us, spelled like the spec's durations ("100us", "1ms") */
    blkemu_format_duration ((uint64_t) llround (pow (10, d + 3)), b, sizeof b);
    if (x)
      xtick (fp, p, (double) (d - lo) / (hi - lo), b);
    else
      ytick (fp, p, (double) (d - lo) / (hi - lo), b);
  }
}

/* ---- the size panel -------------------------------------------------- */

#define SIZE_BARS 12 /* exact sizes shown; the rest is "other" */

struct bucket {
  uint64_t size; /* exact size; 0 for "other" */
  size_t count[NOPS];
  size_t total;
};

static int
cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

static int
cmp_total_desc (const void *a, const void *b)
{
  const struct bucket *x = a, *y = b;
  return x->total > y->total ? -1 : x->total < y->total;
}

static int
cmp_size (const void *a, const void *b)
{
  const struct bucket *x = a, *y = b;
  /* "other" (size 0) goes last */
  uint64_t sx = x->size ? x->size : UINT64_MAX,
           sy = y->size ? y->size : UINT64_MAX;
  return sx < sy ? -1 : sx > sy;
}

/* The exact sizes of reads, writes, trims and zeroes (127K must not hide in
 * a [64K, 128K) bucket): every size when there are at most SIZE_BARS, the
 * SIZE_BARS - 1 most frequent and "other" beyond that.  Returns the bars,
 * in size order, in a malloc'd array.
 */
static struct bucket *
size_buckets (const struct trace *tr, size_t *nbars)
{
  uint64_t *sizes = malloc ((tr->n + 1) * sizeof *sizes);
  struct bucket *b = NULL;
  size_t n = 0, distinct = 0;
  *nbars = 0;
  if (!sizes)
    return NULL;
  for (size_t i = 0; i < tr->n; i++)
    if (tr->r[i].op != OP_F && tr->r[i].len)
      sizes[n++] = tr->r[i].len;
  qsort (sizes, n, sizeof *sizes, cmp_u64);
  for (size_t i = 0; i < n; i++)
    distinct += i == 0 || sizes[i] != sizes[i - 1];
  b = calloc (distinct + 1, sizeof *b);
  if (!b) {
    free (sizes);
    return NULL;
  }
  size_t nb = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || sizes[i] != sizes[i - 1])
      b[nb++].size = sizes[i];
  free (sizes);
  for (size_t i = 0; i < tr->n; i++) {
    const struct req *r = &tr->r[i];
    if (r->op == OP_F || !r->len)
      continue;
    /* b is sorted by size: binary search */
    size_t lo = 0, hi = nb;
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (b[mid].size <= r->len)
        lo = mid;
      else
        hi = mid;
    }
    b[lo].count[r->op]++;
    b[lo].total++;
  }
  if (nb > SIZE_BARS) {
    qsort (b, nb, sizeof *b, cmp_total_desc);
    struct bucket other = { .size = 0 };
    for (size_t k = SIZE_BARS - 1; k < nb; k++) {
      for (int o = 0; o < NOPS; o++)
        other.count[o] += b[k].count[o];
      other.total += b[k].total;
    }
    nb = SIZE_BARS;
    b[nb - 1] = other;
    qsort (b, nb, sizeof *b, cmp_size);
  }
  *nbars = nb;
  return b;
}

static void
size_panel (FILE *fp, const struct panel *p, const struct trace *tr)
{
  size_t nb;
  struct bucket *b = size_buckets (tr, &nb);
  frame (fp, p, "request sizes the device saw (exact; the most frequent)",
         "size", "requests");
  if (nb == 0) {
    free (b);
    return;
  }
  size_t cmax = 1;
  for (size_t k = 0; k < nb; k++)
    for (int o = 0; o < NOPS; o++)
      if (b[k].count[o] > cmax)
        cmax = b[k].count[o];
  int ops[NOPS], nops = 0;
  for (int o = 0; o < NOPS; o++)
    if (o != OP_F && tr->count[o])
      ops[nops++] = o;
  double slot = p->w / (double) nb, bw = slot * 0.8 / (nops ? nops : 1);
  if (bw > 40)
    bw = 40;
  double pad = (slot - bw * nops) / 2; /* the bars centred in their slot */
  char label[32];
  for (size_t k = 0; k < nb; k++) {
    for (int j = 0; j < nops; j++) {
      size_t c = b[k].count[ops[j]];
      if (!c)
        continue;
      double h = p->h * 0.9 * (double) c / (double) cmax; /* room for labels */
      double x = p->x + k * slot + pad + j * bw;
      fprintf (fp,
               "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' "
               "fill='%s'><title>%s %llu bytes: %zu</title></rect>\n",
               x, p->y + p->h - h, bw, h, op_color[ops[j]], op_name[ops[j]],
               (unsigned long long) b[k].size, c);
      fprintf (fp,
               "<text x='%.1f' y='%.1f' text-anchor='middle' "
               "class='s'>%zu</text>\n",
               x + bw / 2, p->y + p->h - h - 3, c);
    }
    if (b[k].size)
      blkemu_format_size (b[k].size, label, sizeof label);
    else
      snprintf (label, sizeof label, "other");
    xtick (fp, p, (k + 0.5) / (double) nb, label);
  }
  free (b);
  char top[32];
  snprintf (top, sizeof top, "%zu", cmax);
  ytick (fp, p, 0.9, top);
  ytick (fp, p, 0, "0");
}

/* ---- zones ------------------------------------------------------------ */

/* Zone resets on the "where" panel: a dark stroke over the zones each
 * one emptied, at its time.
 */
static void
reset_marks (FILE *fp, const struct panel *p, const struct trace *tr)
{
  if (!tr->resets || !tr->end_max)
    return;
  double tspan = tr->t_max > TIME_MIN_SPAN_S ? tr->t_max : TIME_MIN_SPAN_S;
  fprintf (fp, "<g stroke='#222' stroke-width='1.5'>\n");
  for (size_t i = 0; i < tr->n; i++) {
    const struct req *r = &tr->r[i];
    if (!r->reset || r->err)
      continue;
    double x = p->x + r->t / tspan * p->w;
    double lo = (double) r->off / (double) tr->end_max;
    double hi = (double) (r->off + r->len) / (double) tr->end_max;
    if (hi > 1)
      hi = 1;
    fprintf (fp, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f'/>\n", x,
             p->y + p->h - lo * p->h, x, p->y + p->h - hi * p->h);
  }
  fprintf (fp, "</g>\n");
}

#define ZONE_BARS 256

/* Bytes written per zone (writes and write-zeroes that succeeded), with
 * the zones' resets: where a zoned filesystem put its data and how often
 * it reclaimed.  More zones than bars share a bar.
 */
static void
zone_panel (FILE *fp, const struct panel *p, const struct trace *tr)
{
  uint64_t nzones = (tr->end_max + tr->zone_size - 1) / tr->zone_size;
  if (nzones == 0)
    nzones = 1;
  uint64_t per = (nzones + ZONE_BARS - 1) / ZONE_BARS;
  size_t nb = (size_t) ((nzones + per - 1) / per);
  static double bytes[ZONE_BARS];
  static size_t resets[ZONE_BARS];
  memset (bytes, 0, sizeof bytes);
  memset (resets, 0, sizeof resets);
  for (size_t i = 0; i < tr->n; i++) {
    const struct req *r = &tr->r[i];
    if (r->err)
      continue;
    uint64_t b = r->off / tr->zone_size / per;
    if (b >= nb)
      continue;
    if (r->reset) {
      /* A reset-all covers many zones: each bar it reaches counts it. */
      uint64_t last =
        (r->off + (r->len ? r->len - 1 : 0)) / tr->zone_size / per;
      for (uint64_t k = b; k <= last && k < nb; k++)
        resets[k]++;
    }
    else if (r->op == OP_W || r->op == OP_Z)
      bytes[b] += (double) r->len;
  }
  double bmax = 1;
  for (size_t b = 0; b < nb; b++)
    if (bytes[b] > bmax)
      bmax = bytes[b];
  char title[128], lab[32];
  snprintf (title, sizeof title,
            "bytes written per zone (%llu zones of %s"
            "%s; dark ticks: resets, %zu)",
            (unsigned long long) nzones,
            (blkemu_format_size (tr->zone_size, lab, sizeof lab), lab),
            per > 1 ? ", several a bar" : "", tr->resets);
  frame (fp, p, title, "zone", "bytes");
  double bw = p->w / (double) nb;
  for (size_t b = 0; b < nb; b++) {
    double x = p->x + b * bw;
    if (bytes[b] > 0) {
      double h = p->h * 0.9 * bytes[b] / bmax;
      fprintf (fp,
               "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' "
               "fill='%s'><title>zone %llu: %.0f bytes, %zu resets</title>"
               "</rect>\n",
               x, p->y + p->h - h, bw > 2 ? bw - 1 : bw, h, op_color[OP_W],
               (unsigned long long) (b * per), bytes[b], resets[b]);
    }
    if (resets[b])
      fprintf (fp,
               "<rect x='%.1f' y='%.1f' width='%.1f' height='4' "
               "fill='#222'/>\n",
               x, p->y + p->h - 4, bw > 2 ? bw - 1 : bw);
  }
  for (int i = 0; i <= 4; i++) {
    snprintf (lab, sizeof lab, "%llu",
              (unsigned long long) (nzones * (uint64_t) i / 4));
    xtick (fp, p, i / 4.0, lab);
  }
  human_bytes (bmax, lab, sizeof lab);
  ytick (fp, p, 0.9, lab);
  ytick (fp, p, 0, "0");
}

/* ---- the latency CDF panel ------------------------------------------ */

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static void
cdf_panel (FILE *fp, const struct panel *p, const struct trace *tr, int lo,
           int hi)
{
  frame (fp, p, "latency distribution (CDF, served requests)", "latency",
         "fraction");
  latency_axis (fp, p, lo, hi, true);
  for (int i = 0; i <= 4; i++) {
    char b[8];
    snprintf (b, sizeof b, "%d%%", i * 25);
    ytick (fp, p, i / 4.0, b);
  }
  double *lat = malloc ((tr->n + 1) * sizeof *lat);
  if (!lat)
    return;
  for (int o = 0; o < NOPS; o++) {
    size_t n = 0;
    for (size_t i = 0; i < tr->n; i++)
      if (tr->r[i].op == o && !tr->r[i].err && tr->r[i].lat_us > 0)
        lat[n++] = tr->r[i].lat_us;
    if (n == 0)
      continue;
    qsort (lat, n, sizeof *lat, cmp_double);
    fprintf (fp,
             "<polyline fill='none' stroke='%s' stroke-width='2' "
             "points='",
             op_color[o]);
    size_t steps = n < 400 ? n : 400;
    for (size_t s = 0; s < steps; s++) {
      size_t i = (s + 1) * n / steps - 1;
      fprintf (fp, "%.1f,%.1f ", p->x + lat_frac (lat[i], lo, hi) * p->w,
               p->y + p->h - (double) (i + 1) / (double) n * p->h);
    }
    fprintf (fp, "'/>\n");
  }
  free (lat);
}

/* ---- the page -------------------------------------------------------- */

static void
xml_text (FILE *fp, const char *s)
{
  for (; *s; s++)
    switch (*s) {
    case '<': fputs ("&lt;", fp); break;
    case '>': fputs ("&gt;", fp); break;
    case '&': fputs ("&amp;", fp); break;
    case '\'': fputs ("&apos;", fp); break;
    default:
      /* XML 1.0 allows no control characters but tab and newlines. */
      if ((unsigned char) *s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
        fputc ('?', fp);
      else if (*s == 0x7f)
        fputc ('?', fp);
      else
        fputc (*s, fp);
    }
}

static void
plot (FILE *fp, const struct trace *tr, const char *title)
{
  const double W = 1000, H = tr->zone_size ? 1260 : 960;
  fprintf (fp,
           "<?xml version='1.0' encoding='UTF-8'?>\n"
           "<svg xmlns='http://www.w3.org/2000/svg' width='%g' height='%g' "
           "viewBox='0 0 %g %g' font-family='sans-serif' font-size='11'>\n"
           "<style>.t { font-weight: bold; font-size: 12px } "
           ".s { font-size: 9px }</style>\n"
           "<rect width='100%%' height='100%%' fill='white'/>\n",
           W, H, W, H);
  fprintf (fp, "<text x='20' y='24' font-size='15' font-weight='bold'>");
  xml_text (fp, title);
  fprintf (fp, "</text>\n<text x='20' y='42'>%zu requests over %.3f s", tr->n,
           tr->t_max);
  for (int o = 0; o < NOPS; o++)
    if (tr->count[o])
      fprintf (fp, " · <tspan fill='%s' font-weight='bold'>%s %zu</tspan>",
               op_color[o], op_name[o], tr->count[o]);
  fprintf (fp, " · <tspan fill='%s' font-weight='bold'>errors %zu</tspan>",
           ERROR_COLOR, tr->errors);
  if (tr->zone_size)
    fprintf (fp, " · <tspan font-weight='bold'>zone resets %zu</tspan>",
             tr->resets);
  fprintf (fp, "</text>\n");

  int lo, hi;
  latency_range (tr, &lo, &hi);
  char b[32];

  struct panel where = { 80, 80, 880, 220 };
  frame (fp, &where, "where: offset over time (density; red: failed)",
         "time (s)", "offset");
  density (fp, &where, tr, offset_frac, lo, hi);
  reset_marks (fp, &where, tr);
  time_axis (fp, &where, tr);
  for (int i = 0; i <= 4; i++) {
    human_bytes ((double) tr->end_max * i / 4, b, sizeof b);
    ytick (fp, &where, i / 4.0, b);
  }

  struct panel when = { 80, 360, 880, 220 };
  frame (fp, &when, "latency over time (log scale; arrival to completion)",
         "time (s)", "latency");
  density (fp, &when, tr, latency_frac, lo, hi);
  time_axis (fp, &when, tr);
  latency_axis (fp, &when, lo, hi, false);

  struct panel sizes = { 80, 660, 400, 220 };
  size_panel (fp, &sizes, tr);
  struct panel cdf = { 560, 660, 400, 220 };
  cdf_panel (fp, &cdf, tr, lo, hi);
  if (tr->zone_size) {
    struct panel zones = { 80, 960, 880, 220 };
    zone_panel (fp, &zones, tr);
  }
  fprintf (fp, "</svg>\n");
}

#ifndef BLKEMU_PLOT_FUZZ
static int
read_trace (const char *path, struct trace *tr)
{
  FILE *fp = strcmp (path, "-") ? fopen (path, "r") : stdin;
  if (!fp) {
    fprintf (stderr, "blkemu-plot: %s: %s\n", path, strerror (errno));
    return -1;
  }
  int r = read_trace_fp (fp, path, tr);
  if (fp != stdin)
    fclose (fp);
  return r;
}

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: blkemu-plot [-o OUT.svg] [--title TEXT] TRACE\n"
    "\n"
    "Draws a blkemu trace (trace=PATH, blkemu-trace(5); - reads stdin) as\n"
    "one SVG: offset over time, latency over time, the request sizes the\n"
    "device saw and the latency CDF per operation.  Errors are red.\n"
    "\n"
    "  -o, --output PATH    write the SVG to PATH (default: TRACE.svg, or\n"
    "                       standard output when TRACE is -)\n"
    "  -t, --title TEXT     the title (default: the trace's file name)\n"
    "  -h, --help           print this help and exit\n"
    "  -V, --version        print the version and exit\n");
}

int
main (int argc, char **argv)
{
  static const struct option longopts[] = {
    { "output", required_argument, NULL, 'o' },
    { "title", required_argument, NULL, 't' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  const char *out = NULL, *title = NULL;
  int c;
  while ((c = getopt_long (argc, argv, "o:t:hV", longopts, NULL)) != -1)
    switch (c) {
    case 'o': out = optarg; break;
    case 't': title = optarg; break;
    case 'h': usage (stdout); return 0;
    case 'V': printf ("blkemu-plot %s\n", BLKEMU_VERSION); return 0;
    default: usage (stderr); return 2;
    }
  if (argc - optind != 1) {
    usage (stderr);
    return 2;
  }
  const char *in = argv[optind];
  struct trace tr = { 0 };
  if (read_trace (in, &tr) == -1) {
    free (tr.r);
    return 1;
  }
  char def[4096];
  if (!out && strcmp (in, "-")) {
    snprintf (def, sizeof def, "%s.svg", in);
    out = def;
  }
  FILE *fp = out && strcmp (out, "-") ? fopen (out, "w") : stdout;
  if (!fp) {
    fprintf (stderr, "blkemu-plot: %s: %s\n", out, strerror (errno));
    free (tr.r);
    return 1;
  }
  char head[PATH_MAX + 32]; /* "blkemu trace: PATH" */
  snprintf (head, sizeof head, "blkemu trace: %s", in);
  plot (fp, &tr, title ? title : head);
  int r = 0;
  if (fp != stdout ? fclose (fp) != 0 : fflush (fp) != 0) {
    fprintf (stderr, "blkemu-plot: %s: %s\n", out ? out : "stdout",
             strerror (errno));
    r = 1;
  }
  else if (fp != stdout)
    fprintf (stderr, "blkemu-plot: %s: %zu requests drawn\n", out, tr.n);
  free (tr.r);
  return r;
}
#endif /* BLKEMU_PLOT_FUZZ */
