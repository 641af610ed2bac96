/* Power: loss and return, crash states, and crash views.
 *
 * A crash (blkemu_disk_crash_state) takes the disk offline and leaves the
 * medium in one crash state of the writes the cache held.  A power-off
 * (blkemu_disk_power_off) takes it offline and keeps those writes, so
 * that crash views can show one crash state after another of the same
 * epoch: each view serves the state through an overlay (core/overlay.h)
 * in front of the untouched medium, takes the checker's writes into it,
 * and is thrown away when it ends.  Then a crash picks the state the
 * disk keeps, or a power-on brings everything back.
 *
 * power_lock makes one power operation at a time; the lock order is
 * disk.h's.  The disk lock is never held across the medium's I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "admission.h"
#include "clock.h"
#include "disk.h"
#include "error.h"

/* Ranges collected under one lock, acted on under another (or none). */
struct ranges {
  struct {
    uint64_t offset, len;
  } * r;
  size_t n, cap;
  bool lost; /* out of memory: some were not kept */
};

static void
ranges_add (void *arg, uint64_t offset, uint64_t len)
{
  struct ranges *rs = arg;
  if (rs->n == rs->cap) {
    size_t cap = rs->cap ? rs->cap * 2 : 64;
    void *r = realloc (rs->r, cap * sizeof *rs->r);
    if (!r) {
      rs->lost = true;
      return;
    }
    rs->r = r;
    rs->cap = cap;
  }
  rs->r[rs->n].offset = offset;
  rs->r[rs->n++].len = len;
}

/* Power loss.  The disk goes offline under the disk lock (no request is
 * admitted after that), the undo log's I/O runs under the cache's lock
 * alone (the disk lock is never held across I/O), then the write
 * pointers follow the data under the disk lock again.  POWER_LOCK keeps
 * a power-on from serving before all of it is done.
 */
static const char *const crash_mode_names[BLKEMU_CRASH_MODE_COUNT] = {
  "lose-all", "subset", "torn", "interrupted", "pick",
};

const char *
blkemu_crash_mode_name (enum blkemu_crash_mode mode)
{
  return (unsigned) mode < BLKEMU_CRASH_MODE_COUNT ? crash_mode_names[mode]
                                                   : NULL;
}

int
blkemu_crash_mode_parse (const char *name, enum blkemu_crash_mode *mode)
{
  for (unsigned i = 0; i < BLKEMU_CRASH_MODE_COUNT; i++)
    if (!strcmp (name, crash_mode_names[i])) {
      *mode = (enum blkemu_crash_mode) i;
      return 0;
    }
  return -1;
}

int
blkemu_crash_args (const char *what, const char *mode_text,
                   const char *seed_text, enum blkemu_crash_mode *mode,
                   uint64_t *seed, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  if (blkemu_crash_mode_parse (mode_text, mode) == -1) {
    set_err (e,
             "%s %s: MODE must be lose-all, subset, torn, interrupted "
             "or pick",
             what, mode_text);
    return err_result (-1, e, err, errlen);
  }
  if (seed_text) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull (seed_text, &end, 10);
    if (errno || *end || end == seed_text || seed_text[0] == '-') {
      set_err (e, "%s %s %s: SEED must be a whole number below 2^64", what,
               mode_text, seed_text);
      return err_result (-1, e, err, errlen);
    }
    *seed = v;
  }
  else if (getrandom (seed, sizeof *seed, GRND_NONBLOCK) != sizeof *seed)
    *seed = clock_now_ns (); /* told back: replayable all the same */
  return 0;
}

/* Each cached write's fate, as a trace comment: which writes a crash
 * state kept, lost or tore, so that a failing state can be read.
 */
static void
trace_fate (void *arg, uint64_t offset, uint64_t len,
            enum blkemu_crash_fate fate)
{
  static const char *const names[] = { "lost", "persisted", "torn" };
  trace_note (arg, "# crash-write %llu %llu %s\n", (unsigned long long) offset,
              (unsigned long long) len, names[fate]);
}

/* The sequential zone holding OFFSET, or UINT64_MAX (conventional). */
static uint64_t
sequential_zone (void *arg, uint64_t offset)
{
  const struct zones *z = arg;
  uint64_t i = offset / z->zone_size;
  return i < z->nr_conv ? UINT64_MAX : i;
}

/* The state's parameters, common to a crash and a VIEW (which names the
 * command in messages).  Returns 0 or -1 with ERR filled.  Disk lock held.
 */
static int
state_setup (struct blkemu_disk *disk, bool view, enum blkemu_crash_mode mode,
             uint64_t seed, struct wcache_crash *c, char *err)
{
  const char *what = view ? "view" : "crash";
  if ((unsigned) mode >= BLKEMU_CRASH_MODE_COUNT) {
    set_err (err,
             "%s: no such mode (lose-all, subset, torn, interrupted, "
             "pick)",
             what);
    return -1;
  }
  if (view && mode == BLKEMU_CRASH_INTERRUPTED) {
    set_err (err, "view interrupted: a view shows data; the sectors an "
                  "interrupted write leaves unreadable are the crash's (crash "
                  "interrupted), not a view's");
    return -1;
  }
  *c = (struct wcache_crash){
    .mode = mode,
    .seed = seed,
    .unit = disk_atomic_unit (disk),
  };
  /* A sequential zone keeps a prefix of its writes: holes below the
   * write pointer are no state a zoned drive produces.
   */
  if (zones_on (&disk->zones)) {
    c->region = sequential_zone;
    c->region_arg = &disk->zones;
  }
  if (trace_wants_notes (&disk->trace)) {
    c->fate = trace_fate;
    c->fate_arg = &disk->trace;
  }
  return 0;
}

/* The state's walk, between its trace lines. */
static int
state_walk (struct blkemu_disk *disk, struct wcache_crash *c, bool view)
{
  const char *what = view ? "view" : "crash";
  struct trace *t = &disk->trace;
  trace_note (t, "# %s %.6f mode=%s seed=%llu\n", what,
              (double) (clock_now_ns () - t->start_ns) / 1e9,
              crash_mode_names[c->mode], (unsigned long long) c->seed);
  int r = view ? wcache_crash_state (&disk->wcache, c)
               : wcache_crash (&disk->wcache, c);
  trace_note (t, "# %s persisted=%llu lost=%llu torn=%llu\n",
              view ? "view-state" : "crash-end",
              (unsigned long long) c->persisted, (unsigned long long) c->lost,
              (unsigned long long) c->torn);
  return r;
}

static void
report_state (struct blkemu_crash_report *report, const struct wcache_crash *c)
{
  if (report)
    *report = (struct blkemu_crash_report){
      .mode = c->mode,
      .seed = c->seed,
      .persisted = c->persisted,
      .lost = c->lost,
      .torn = c->torn,
      .lost_bytes = c->lost_bytes,
    };
}

/* End a view, LOCK held: the disk is off again, the overlay's data gone,
 * and a request still in flight in the view fails with EIO.
 */
static void
view_end_locked (struct blkemu_disk *disk)
{
  disk->viewing = false;
  badranges_clear_all (&disk->view_bad);
  disk->faults.offline = true;
  wcache_power_cut (&disk->wcache);
  overlay_reset (&disk->view, false);
  zones_view_end (&disk->zones);
}

static int
disk_crash (struct blkemu_disk *disk, enum blkemu_crash_mode mode,
            uint64_t seed, struct blkemu_crash_report *report, char *err)
{
  struct ranges undone = { 0 }, finished = { 0 };
  bool zoned = zones_on (&disk->zones);
  struct wcache_crash c;
  pthread_mutex_lock (&disk->power_lock);
  disk_change_lock (disk);
  if (state_setup (disk, false, mode, seed, &c, err) == -1) {
    disk_change_unlock (disk);
    pthread_mutex_unlock (&disk->power_lock);
    return -1;
  }
  if (disk->viewing)
    view_end_locked (disk);
  disk->faults.offline = true;
  disk->held = false;
  disk_change_unlock (disk);
  /* Before the walk: the writes in flight now are the interrupted ones. */
  uint64_t interrupted = 0;
  if (mode == BLKEMU_CRASH_INTERRUPTED)
    disk_interrupt_writes (disk, &interrupted);
  if (zoned) {
    c.undone = ranges_add;
    c.arg = &undone;
  }
  c.unreadable = &disk->bad;
  int r = state_walk (disk, &c, false);
  if (zoned) {
    disk_change_lock (disk);
    for (size_t i = 0; i < undone.n; i++)
      zones_rollback (&disk->zones, undone.r[i].offset, undone.r[i].len);
    zones_power_cycle (&disk->zones, ranges_add, &finished);
    disk_change_unlock (disk);
    zones_sidecar_sync (&disk->zones, &disk->lock);
    /* A zone finished to keep within max-active-zones: what lies past its
     * old write pointer reads zeroes.
     */
    for (size_t i = 0; i < finished.n && disk->backend.ops->can_trim; i++)
      backend_io (&disk->backend, BLKEMU_OP_TRIM, NULL, finished.r[i].len,
                  finished.r[i].offset, 0);
  }
  pthread_mutex_unlock (&disk->power_lock);
  bool lost = undone.lost || finished.lost;
  free (undone.r);
  free (finished.r);
  pthread_mutex_lock (&disk->stats.lock);
  struct fault_counts *fc = &disk->stats.faults;
  fc->crashes++;
  fc->lost_writes += c.lost + c.torn;
  fc->lost_bytes += c.lost_bytes;
  fc->persisted_writes += c.persisted;
  fc->torn_writes += c.torn;
  fc->interrupted += interrupted;
  fc->last_mode = mode;
  fc->last_seed = seed;
  fc->last_persisted = c.persisted;
  fc->last_lost = c.lost;
  fc->last_torn = c.torn;
  pthread_mutex_unlock (&disk->stats.lock);
  report_state (report, &c);
  if (r) {
    set_err (err, "crash: undoing unflushed writes failed: %s",
             strerrordesc_np (r));
    return -1;
  }
  if (lost) {
    set_err (err, "crash: out of memory rolling the write pointers back");
    return -1;
  }
  return 0;
}

int
blkemu_disk_crash (struct blkemu_disk *disk, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (disk_crash (disk, BLKEMU_CRASH_LOSE_ALL, 0, NULL, e), e,
                     err, errlen);
}

int
blkemu_disk_crash_state (struct blkemu_disk *disk, enum blkemu_crash_mode mode,
                         uint64_t seed, struct blkemu_crash_report *report,
                         char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (disk_crash (disk, mode, seed, report, e), e, err, errlen);
}

void
blkemu_disk_power_on (struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->power_lock); /* after a crash's rollback */
  disk_change_lock (disk);
  if (disk->viewing)
    view_end_locked (disk);
  disk->held = false;
  disk->faults.offline = false;
  wcache_thaw (&disk->wcache);
  model_reset (disk->model, disk->model_state);
  __atomic_add_fetch (&disk->power_ons, 1, __ATOMIC_RELEASE);
  disk_change_unlock (disk);
  zones_sidecar_sync (&disk->zones, &disk->lock); /* held back by a view */
  pthread_mutex_unlock (&disk->power_lock);
}

uint64_t
blkemu_disk_power_ons (struct blkemu_disk *disk)
{
  return __atomic_load_n (&disk->power_ons, __ATOMIC_ACQUIRE);
}

bool
blkemu_disk_offline (struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->lock);
  bool off = disk->faults.offline;
  pthread_mutex_unlock (&disk->lock);
  return off;
}

int
blkemu_disk_power_off (struct blkemu_disk *disk, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  int r = 0;
  pthread_mutex_lock (&disk->power_lock);
  disk_change_lock (disk);
  if (disk->faults.offline) {
    set_err (e, "power-off: the disk is already off (crash, power-off or "
                "a view's end); power-on first");
    r = -1;
  }
  else {
    disk->faults.offline = true;
    disk->held = true;
    /* Requests and flushes in flight fail: they did not complete before
     * the power went.  Their writes stay in the cache, unflushed.
     */
    wcache_power_cut (&disk->wcache);
  }
  disk_change_unlock (disk);
  pthread_mutex_unlock (&disk->power_lock);
  return err_result (r, e, err, errlen);
}

static int
overlay_sink (void *arg, uint64_t offset, uint64_t len, const void *data)
{
  /* The crash walk puts back in increasing order, without overlap; the
   * log is left as it is while the disk is off: its bytes are borrowed.
   */
  return overlay_base_add (arg, offset, len, data);
}

static int
finished_zeroes (struct overlay *view, const struct ranges *finished)
{
  int r = finished->lost ? ENOMEM : 0;
  uint64_t epoch = overlay_epoch (view);
  for (size_t i = 0; i < finished->n && r == 0; i++)
    r = overlay_put (view, epoch, finished->r[i].offset, finished->r[i].len,
                     NULL);
  return r;
}

/* A zoned disk's view: the crash state's write pointers, on a copy of
 * the zone state (the live one comes back at the view's end), and what
 * a zone finished by the power cycle holds past its old pointer reads
 * zeroes in the view only.  Returns 0 or an errno.
 */
static int
view_zones (struct blkemu_disk *disk, const struct ranges *undone)
{
  if (undone->lost)
    return ENOMEM;
  struct ranges finished = { 0 };
  disk_change_lock (disk);
  int r = zones_view_begin (&disk->zones);
  if (r == 0) {
    for (size_t i = 0; i < undone->n; i++)
      zones_rollback (&disk->zones, undone->r[i].offset, undone->r[i].len);
    zones_power_cycle (&disk->zones, ranges_add, &finished);
  }
  disk_change_unlock (disk);
  if (r == 0)
    r = finished_zeroes (&disk->view, &finished);
  free (finished.r);
  if (r) {
    disk_change_lock (disk);
    zones_view_end (&disk->zones);
    disk_change_unlock (disk);
  }
  return r;
}

/* The view starts with the medium's unreadable sectors: a read of one
 * fails there as after the matching crash.  0 or ENOMEM.
 */
static int
view_bad_copy (struct blkemu_disk *disk)
{
  size_t total = 0;
  struct bad_range one;
  badranges_clear_all (&disk->view_bad);
  badranges_list (&disk->bad, 0, &one, 1, &total);
  if (total == 0)
    return 0;
  struct bad_range *all = calloc (total, sizeof *all);
  if (!all)
    return ENOMEM;
  size_t n = badranges_list (&disk->bad, 0, all, total, NULL);
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    r =
      badranges_add (&disk->view_bad, all[i].start, all[i].end - all[i].start);
  free (all);
  return r;
}

int
blkemu_disk_view_open (struct blkemu_disk *disk, enum blkemu_crash_mode mode,
                       uint64_t seed, struct blkemu_crash_report *report,
                       char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  struct wcache_crash c;
  pthread_mutex_lock (&disk->power_lock);
  disk_change_lock (disk);
  int r = state_setup (disk, true, mode, seed, &c, e);
  if (r == 0 && !disk->held) {
    set_err (e, "view: the disk must be powered off with its cache kept "
                "first (power-off)");
    r = -1;
  }
  else if (r == 0 && disk->viewing) {
    set_err (e, "view: a view is open; end it first (view end)");
    r = -1;
  }
  disk_change_unlock (disk);
  struct ranges undone = { 0 };
  if (r == 0 && view_bad_copy (disk) != 0) {
    set_err (e, "view: out of memory copying the unreadable ranges");
    r = -1;
  }
  if (r == 0) {
    overlay_reset (&disk->view, true);
    c.unreadable = &disk->view_bad;
    c.sink = overlay_sink;
    c.sink_arg = &disk->view;
    if (zones_on (&disk->zones)) {
      c.undone = ranges_add;
      c.arg = &undone;
    }
    int w = state_walk (disk, &c, true);
    if (w == 0 && zones_on (&disk->zones))
      w = view_zones (disk, &undone);
    free (undone.r);
    if (w) {
      overlay_reset (&disk->view, false);
      set_err (e, "view: building the crash state failed: %s",
               strerrordesc_np (w));
      r = -1;
    }
  }
  if (r == 0) {
    disk_change_lock (disk);
    disk->viewing = true;
    disk->faults.offline = false;
    model_reset (disk->model, disk->model_state);
    disk_change_unlock (disk);
    stats_count (&disk->stats, &disk->stats.faults.views);
    report_state (report, &c);
  }
  pthread_mutex_unlock (&disk->power_lock);
  return err_result (r, e, err, errlen);
}

int
blkemu_disk_view_close (struct blkemu_disk *disk, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  int r = 0;
  pthread_mutex_lock (&disk->power_lock);
  disk_change_lock (disk);
  if (disk->viewing)
    view_end_locked (disk);
  else {
    set_err (e, "view end: no view is open");
    r = -1;
  }
  disk_change_unlock (disk);
  pthread_mutex_unlock (&disk->power_lock);
  zones_sidecar_sync (&disk->zones, &disk->lock);
  if (r == 0)
    trace_note (&disk->trace, "# view-end\n");
  return err_result (r, e, err, errlen);
}
