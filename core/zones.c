/* Host-managed zones: see zones.h.  The condition machine follows ZBC-2
 * and NVMe ZNS as Linux's null_blk models them: a write to an empty or
 * closed zone opens it implicitly (closing another implicitly open zone
 * when the open limit is reached), an explicit open holds a zone open
 * until it is closed, finished or reset, and every zone that is open or
 * closed is active.
 */
#include "zones.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "keys.h"
#include "units.h"

#define C_NOT_WP BLKEMU_ZONE_COND_NOT_WP
#define C_EMPTY BLKEMU_ZONE_COND_EMPTY
#define C_IMP_OPEN BLKEMU_ZONE_COND_IMP_OPEN
#define C_EXP_OPEN BLKEMU_ZONE_COND_EXP_OPEN
#define C_CLOSED BLKEMU_ZONE_COND_CLOSED
#define C_FULL BLKEMU_ZONE_COND_FULL
#define C_READONLY BLKEMU_ZONE_COND_READONLY
#define C_OFFLINE BLKEMU_ZONE_COND_OFFLINE
/* Read-only and offline zones take no write and no zone command. */
#define FAILED(cond) ((cond) == C_READONLY || (cond) == C_OFFLINE)

/* The sidecar: a header naming the geometry, then one record per zone. */
#define SIDECAR_MAGIC "BLKEMUZ1"
struct sidecar_header {
  char magic[8];
  uint64_t zone_size, capacity, nr, nr_conv;
  uint64_t reserved[3];
};
struct sidecar_record {
  uint64_t wp;
  uint32_t cond;
  uint32_t reserved;
};

static int zones_validate_count (const struct blkemu_config *cfg,
                                 uint64_t size, char *err);

int
zones_validate (const struct blkemu_config *cfg, uint64_t size, char *err)
{
  const uint64_t *n = cfg->num;
  char v[64], w[64];
  if (n[K_ZONED] == 0) {
    static const int zoned_only[] = {
      K_ZONE_SIZE,      K_ZONE_CAPACITY,    K_CONVENTIONAL_ZONES,
      K_MAX_OPEN_ZONES, K_MAX_ACTIVE_ZONES, K_MAX_ZONE_APPEND,
    };
    for (size_t i = 0; i < sizeof zoned_only / sizeof zoned_only[0]; i++)
      if (n[zoned_only[i]]) {
        config_format (cfg, zoned_only[i], v, sizeof v);
        set_err (err, "%s=%s: only for a zoned disk (zoned=host-managed)",
                 config_keys[zoned_only[i]].name, v);
        return -1;
      }
    return 0;
  }
  uint64_t zs = n[K_ZONE_SIZE], lbs = n[K_LOGICAL_BLOCK_SIZE];
  uint64_t pbs = n[K_PHYSICAL_BLOCK_SIZE] ? n[K_PHYSICAL_BLOCK_SIZE] : lbs;
  config_format (cfg, K_ZONE_SIZE, v, sizeof v);
  if (!is_pow2 (zs) || zs < pbs || zs < 4096) {
    set_err (err,
             "zone-size=%s: must be a power of two of at least 4K and "
             "the physical block (the kernel's chunk_sectors)",
             v);
    return -1;
  }
  if (n[K_BOUNDARY] && n[K_BOUNDARY] != zs) {
    config_format (cfg, K_BOUNDARY, w, sizeof w);
    set_err (err,
             "boundary=%s: a zoned disk's boundary is its zone-size "
             "(%s); leave boundary unset",
             w, v);
    return -1;
  }
  uint64_t cap = n[K_ZONE_CAPACITY];
  if (cap && (cap > zs || cap % pbs)) {
    config_format (cfg, K_ZONE_CAPACITY, w, sizeof w);
    set_err (err,
             "zone-capacity=%s: must be a multiple of the physical "
             "block, at most zone-size (%s)",
             w, v);
    return -1;
  }
  uint64_t za = n[K_MAX_ZONE_APPEND];
  if (za && (za % lbs || za > n[K_MAX_TRANSFER])) {
    config_format (cfg, K_MAX_ZONE_APPEND, w, sizeof w);
    set_err (err,
             "max-zone-append=%s: must be a multiple of "
             "logical-block-size, at most max-transfer",
             w);
    return -1;
  }
  if (n[K_MAX_OPEN_ZONES] && n[K_MAX_ACTIVE_ZONES] &&
      n[K_MAX_OPEN_ZONES] > n[K_MAX_ACTIVE_ZONES]) {
    set_err (err,
             "max-open-zones=%llu: must be at most max-active-zones "
             "(%llu): an open zone is active",
             (unsigned long long) n[K_MAX_OPEN_ZONES],
             (unsigned long long) n[K_MAX_ACTIVE_ZONES]);
    return -1;
  }
  return size ? zones_validate_count (cfg, size, err) : 0;
}

/* The rules that need the disk's size: a whole number of zones, one
 * sequential at least, open/active limits within them.
 */
static int
zones_validate_count (const struct blkemu_config *cfg, uint64_t size,
                      char *err)
{
  const uint64_t *n = cfg->num;
  uint64_t zs = n[K_ZONE_SIZE];
  char v[64], w[64];
  config_format (cfg, K_ZONE_SIZE, v, sizeof v);
  if (size % zs) {
    config_format (cfg, K_SIZE, w, sizeof w);
    set_err (err,
             "size=%s: a zoned disk's size must be a whole number of "
             "zones (zone-size=%s)",
             w, v);
    return -1;
  }
  uint64_t nr = size / zs;
  if (nr > UINT32_MAX) {
    set_err (err, "zone-size=%s: %llu zones is too many (at most 2^32 - 1)", v,
             (unsigned long long) nr);
    return -1;
  }
  if (n[K_CONVENTIONAL_ZONES] >= nr) {
    set_err (err,
             "conventional-zones=%llu: must leave at least one "
             "sequential zone (the disk has %llu zones of %s)",
             (unsigned long long) n[K_CONVENTIONAL_ZONES],
             (unsigned long long) nr, v);
    return -1;
  }
  uint64_t seq = nr - n[K_CONVENTIONAL_ZONES];
  static const int limits[] = { K_MAX_OPEN_ZONES, K_MAX_ACTIVE_ZONES };
  for (size_t i = 0; i < 2; i++)
    if (n[limits[i]] > seq) {
      set_err (err, "%s=%llu: must be at most the sequential zones (%llu)",
               config_keys[limits[i]].name, (unsigned long long) n[limits[i]],
               (unsigned long long) seq);
      return -1;
    }
  return 0;
}

/* --- sidecar -------------------------------------------------------- */

/* Zone I changed: queue its record for zones_sidecar_sync (under the
 * caller's lock; the write itself happens outside it).
 */
static void
sidecar_put (struct zones *z, uint64_t i)
{
  if (z->sidecar_fd < 0 || z->viewing || z->z[i].queued)
    return;
  z->z[i].queued = true;
  z->dirty[z->ndirty++] = i;
}

#define SIDECAR_BATCH 64

void
zones_sidecar_sync (struct zones *z, pthread_mutex_t *state_lock)
{
  if (z->sidecar_fd < 0)
    return;
  /* One writer at a time, so a record taken later is written later: the
   * file never goes back to an older state.
   */
  pthread_mutex_lock (&z->sidecar_lock);
  for (;;) {
    uint64_t at[SIDECAR_BATCH];
    struct sidecar_record rec[SIDECAR_BATCH];
    unsigned n = 0;
    if (state_lock)
      pthread_mutex_lock (state_lock);
    /* In a crash view the records wait: Z->Z is the view's. */
    while (n < SIDECAR_BATCH && z->ndirty && !z->viewing) {
      uint64_t i = z->dirty[--z->ndirty];
      z->z[i].queued = false;
      at[n] = sizeof (struct sidecar_header) + i * sizeof rec[0];
      rec[n++] =
        (struct sidecar_record){ .wp = z->z[i].wp, .cond = z->z[i].cond };
    }
    if (state_lock)
      pthread_mutex_unlock (state_lock);
    if (n == 0)
      break;
    /* The page cache keeps it across SIGKILL; a failed write leaves the
     * old record, which a restart reports (the data is still there).
     */
    for (unsigned k = 0; k < n; k++)
      if (pwrite (z->sidecar_fd, &rec[k], sizeof rec[k], (off_t) at[k]) !=
          (ssize_t) sizeof rec[k])
        continue;
  }
  pthread_mutex_unlock (&z->sidecar_lock);
}

/* Read the zone records of an existing sidecar FD (PATH) into Z;
 * *ACTIVE: how many zones they leave active.  Returns 0, or -1 with ERR
 * when a record is damaged.
 */
static int
sidecar_load (struct zones *z, int fd, const char *path, uint64_t *active,
              char *err)
{
  *active = 0;
  for (uint64_t i = z->nr_conv; i < z->nr; i++) {
    struct sidecar_record r;
    off_t at = (off_t) (sizeof (struct sidecar_header) + i * sizeof r);
    uint64_t start = i * z->zone_size;
    if (pread (fd, &r, sizeof r, at) != (ssize_t) sizeof r || r.wp < start ||
        r.wp > start + z->capacity ||
        (r.cond != C_EMPTY && r.cond != C_IMP_OPEN && r.cond != C_EXP_OPEN &&
         r.cond != C_CLOSED && r.cond != C_FULL && !FAILED (r.cond))) {
      set_err (err,
               "zoned: %s: zone %llu's record is damaged; delete the "
               "file to start with empty zones",
               path, (unsigned long long) i);
      return -1;
    }
    z->z[i].wp = r.wp;
    z->z[i].cond = (uint8_t) r.cond;
    *active += r.cond != C_EMPTY && r.cond != C_FULL && r.wp > start;
  }
  return 0;
}

static int
sidecar_open (struct zones *z, const char *file, char *err)
{
  char path[BLKEMU_VALUE_MAX + 8];
  snprintf (path, sizeof path, "%s.zones", file);
  int fd = open (path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd == -1) {
    set_err (err, "zoned: cannot open the zone state file %s: %s", path,
             strerrordesc_np (errno));
    return -1;
  }
  struct sidecar_header want = {
    .zone_size = z->zone_size,
    .capacity = z->capacity,
    .nr = z->nr,
    .nr_conv = z->nr_conv,
  };
  memcpy (want.magic, SIDECAR_MAGIC, 8);
  struct sidecar_header have;
  ssize_t got = pread (fd, &have, sizeof have, 0);
  if (got == 0) {
    /* New: every sequential zone empty. */
    if (pwrite (fd, &want, sizeof want, 0) != (ssize_t) sizeof want) {
      set_err (err, "zoned: writing %s: %s", path, strerrordesc_np (errno));
      close (fd);
      return -1;
    }
    z->sidecar_fd = fd;
    for (uint64_t i = z->nr_conv; i < z->nr; i++)
      sidecar_put (z, i);
    zones_sidecar_sync (z, NULL); /* before any thread: no lock */
    return 0;
  }
  if (got != (ssize_t) sizeof have || memcmp (have.magic, SIDECAR_MAGIC, 8)) {
    set_err (err, "zoned: %s is not a blkemu zone state file; move it away",
             path);
    close (fd);
    return -1;
  }
  if (have.zone_size != want.zone_size || have.capacity != want.capacity ||
      have.nr != want.nr || have.nr_conv != want.nr_conv) {
    set_err (err,
             "zoned: %s holds %llu zones of %llu bytes (capacity %llu, "
             "%llu conventional), not this spec's %llu of %llu (capacity "
             "%llu, %llu conventional); delete it to start with empty zones",
             path, (unsigned long long) have.nr,
             (unsigned long long) have.zone_size,
             (unsigned long long) have.capacity,
             (unsigned long long) have.nr_conv, (unsigned long long) want.nr,
             (unsigned long long) want.zone_size,
             (unsigned long long) want.capacity,
             (unsigned long long) want.nr_conv);
    close (fd);
    return -1;
  }
  uint64_t active; /* closed after the power cycle below */
  if (sidecar_load (z, fd, path, &active, err) == -1) {
    close (fd);
    return -1;
  }
  /* Refused before anything is written back: the file stays as it was. */
  if (z->max_active && active > z->max_active) {
    set_err (err,
             "zoned: %s holds %llu active zones, more than "
             "max-active-zones=%llu; raise it, or delete the file to start "
             "with empty zones",
             path, (unsigned long long) active,
             (unsigned long long) z->max_active);
    close (fd);
    return -1;
  }
  z->sidecar_fd = fd;
  /* A restart is a power cycle: open zones come back closed. */
  zones_power_cycle (z, NULL, NULL);
  zones_sidecar_sync (z, NULL);
  return 0;
}

/* --- state ---------------------------------------------------------- */

int
zones_init (struct zones *z, const struct blkemu_config *cfg, const char *file,
            char *err)
{
  const uint64_t *n = cfg->num;
  memset (z, 0, sizeof *z);
  z->sidecar_fd = -1;
  if (n[K_ZONED] == 0)
    return 0;
  z->zone_size = n[K_ZONE_SIZE];
  z->capacity = n[K_ZONE_CAPACITY] ? n[K_ZONE_CAPACITY] : z->zone_size;
  z->nr = n[K_SIZE] / z->zone_size;
  z->nr_conv = n[K_CONVENTIONAL_ZONES];
  z->max_open = n[K_MAX_OPEN_ZONES];
  z->max_active = n[K_MAX_ACTIVE_ZONES];
  z->max_append =
    n[K_MAX_ZONE_APPEND] ? n[K_MAX_ZONE_APPEND] : n[K_MAX_TRANSFER];
  z->z = calloc (z->nr, sizeof *z->z);
  if (!z->z) {
    set_err (err, "zoned: out of memory for %llu zones",
             (unsigned long long) z->nr);
    z->nr = 0;
    return -1;
  }
  for (uint64_t i = 0; i < z->nr; i++) {
    z->z[i].wp = i * z->zone_size;
    z->z[i].cond = i < z->nr_conv ? C_NOT_WP : C_EMPTY;
  }
  pthread_mutex_init (&z->sidecar_lock, NULL);
  if (file) {
    z->dirty = malloc (z->nr * sizeof *z->dirty);
    if (!z->dirty) {
      set_err (err, "zoned: out of memory for %llu zones",
               (unsigned long long) z->nr);
      zones_destroy (z);
      return -1;
    }
  }
  if (file && sidecar_open (z, file, err) == -1) {
    zones_destroy (z);
    return -1;
  }
  return 0;
}

void
zones_destroy (struct zones *z)
{
  if (z->nr == 0)
    return;
  zones_sidecar_sync (z, NULL);
  if (z->sidecar_fd >= 0)
    close (z->sidecar_fd);
  z->sidecar_fd = -1;
  free (z->z);
  free (z->live);
  free (z->dirty);
  z->z = NULL;
  z->live = NULL;
  z->dirty = NULL;
  z->nr = 0;
  pthread_mutex_destroy (&z->sidecar_lock);
}

int
zones_view_begin (struct zones *z)
{
  if (!z->live && !(z->live = malloc (z->nr * sizeof *z->live)))
    return ENOMEM;
  memcpy (z->live, z->z, z->nr * sizeof *z->z);
  z->live_imp_open = z->imp_open;
  z->live_exp_open = z->exp_open;
  z->live_closed = z->closed;
  z->live_excursions = z->excursions;
  z->viewing = true;
  return 0;
}

void
zones_view_end (struct zones *z)
{
  if (!z->viewing)
    return;
  /* Records queued before the view keep their flags: the next sync
   * writes their live state.
   */
  memcpy (z->z, z->live, z->nr * sizeof *z->z);
  z->imp_open = z->live_imp_open;
  z->exp_open = z->live_exp_open;
  z->closed = z->live_closed;
  z->excursions = z->live_excursions;
  z->viewing = false;
}

static uint64_t
zone_start (const struct zones *z, uint64_t i)
{
  return i * z->zone_size;
}

/* Leave condition COND: the counters follow. */
static void
cond_leave (struct zones *z, uint8_t cond)
{
  switch (cond) {
  case C_IMP_OPEN: z->imp_open--; break;
  case C_EXP_OPEN: z->exp_open--; break;
  case C_CLOSED: z->closed--; break;
  default: break;
  }
}

static void
cond_enter (struct zones *z, uint8_t cond)
{
  switch (cond) {
  case C_IMP_OPEN: z->imp_open++; break;
  case C_EXP_OPEN: z->exp_open++; break;
  case C_CLOSED: z->closed++; break;
  default: break;
  }
  uint64_t open = z->imp_open + z->exp_open;
  if (open > z->open_peak)
    z->open_peak = open;
  if (open + z->closed > z->active_peak)
    z->active_peak = open + z->closed;
}

static void
set_cond (struct zones *z, uint64_t i, uint8_t cond)
{
  if (z->z[i].cond == cond)
    return;
  cond_leave (z, z->z[i].cond);
  z->z[i].cond = cond;
  cond_enter (z, cond);
}

/* A zone neither open nor full: closed, or empty if nothing is written. */
static uint8_t
idle_cond (const struct zones *z, uint64_t i)
{
  return z->z[i].wp == zone_start (z, i) ? C_EMPTY : C_CLOSED;
}

/* What close does. */
static void
close_zone (struct zones *z, uint64_t i)
{
  set_cond (z, i, idle_cond (z, i));
  sidecar_put (z, i);
}

/* Room for one more active zone?  Only an empty zone needs it. */
static int
check_active (struct zones *z, uint64_t i)
{
  if (z->z[i].cond != C_EMPTY || !z->max_active)
    return 0;
  if (z->imp_open + z->exp_open + z->closed < z->max_active)
    return 0;
  z->active_refused++;
  return EOVERFLOW;
}

/* Room for one more open zone?  At the limit an implicitly open zone is
 * closed to make room, as a device does; with only explicit ones open
 * the command fails.
 */
static int
check_open (struct zones *z, uint64_t i)
{
  if (!z->max_open || z->z[i].cond == C_IMP_OPEN || z->z[i].cond == C_EXP_OPEN)
    return 0;
  if (z->imp_open + z->exp_open < z->max_open)
    return 0;
  if (z->imp_open) {
    for (uint64_t j = z->nr_conv; j < z->nr; j++)
      if (z->z[j].cond == C_IMP_OPEN) {
        close_zone (z, j);
        return 0;
      }
  }
  z->open_refused++;
  return ETOOMANYREFS;
}

int
zones_write (struct zones *z, uint64_t *offset, uint64_t len, bool append)
{
  uint64_t i = *offset / z->zone_size;
  if (i >= z->nr)
    return EINVAL;
  if (i < z->nr_conv) {
    if (append) {
      z->cond_refused++;
      return EINVAL; /* append needs a write pointer */
    }
    /* A conventional write must not run into a sequential zone. */
    if (*offset + len > zone_start (z, z->nr_conv)) {
      z->boundary_violations++;
      return EIO;
    }
    z->writes_conv++;
    return 0;
  }
  struct zone *zn = &z->z[i];
  uint64_t start = zone_start (z, i);
  if (append) {
    if (*offset != start) {
      z->wp_violations++;
      return EINVAL; /* a zone append names the zone's first sector */
    }
    if (len > z->max_append) {
      z->cond_refused++;
      return EINVAL;
    }
  }
  if (zn->cond == C_FULL) {
    z->full_violations++;
    return EIO;
  }
  if (FAILED (zn->cond)) {
    z->cond_refused++;
    return EIO;
  }
  uint64_t at = append ? zn->wp : *offset;
  if (at != zn->wp) {
    z->wp_violations++;
    return EIO;
  }
  if (at + len > start + z->capacity) {
    z->boundary_violations++;
    return EIO;
  }
  int r;
  if ((r = check_active (z, i)) || (r = check_open (z, i)))
    return r;
  if (zn->cond == C_EMPTY || zn->cond == C_CLOSED)
    set_cond (z, i, C_IMP_OPEN);
  zn->wp = at + len;
  if (zn->wp == start + z->capacity)
    set_cond (z, i, C_FULL);
  sidecar_put (z, i);
  *offset = at;
  z->writes_seq++;
  z->appends += append;
  return 0;
}

int
zones_trim (struct zones *z, uint64_t offset, uint64_t len)
{
  if (offset + len <= zone_start (z, z->nr_conv))
    return 0;
  z->cond_refused++;
  return EINVAL;
}

static void
reset_zone (struct zones *z, uint64_t i)
{
  set_cond (z, i, C_EMPTY);
  z->z[i].wp = zone_start (z, i);
  sidecar_put (z, i);
}

int
zones_command (struct zones *z, enum blkemu_zone_op op, uint64_t offset,
               struct zone_span *span)
{
  span->lo = span->hi = span->unwritten = offset;
  if (op == BLKEMU_ZONE_RESET_ALL) {
    for (uint64_t i = z->nr_conv; i < z->nr; i++)
      if (z->z[i].cond != C_EMPTY && !FAILED (z->z[i].cond))
        reset_zone (z, i);
    z->cmds[op]++;
    span->lo = span->unwritten = zone_start (z, z->nr_conv);
    span->hi = zone_start (z, z->nr);
    return 0;
  }
  uint64_t i = offset / z->zone_size;
  if (i >= z->nr || offset % z->zone_size)
    return EINVAL;
  if (i < z->nr_conv) {
    z->cond_refused++;
    return EIO; /* conventional zones take no zone command */
  }
  struct zone *zn = &z->z[i];
  int r = 0;
  span->lo = span->hi = span->unwritten = zone_start (z, i);
  if (FAILED (zn->cond)) {
    z->cond_refused++;
    return EIO;
  }
  switch (op) {
  case BLKEMU_ZONE_OPEN:
    if (zn->cond == C_EXP_OPEN)
      break;
    if (zn->cond == C_FULL) {
      r = EIO;
      break;
    }
    if ((r = check_active (z, i)) || (r = check_open (z, i)))
      return r;
    set_cond (z, i, C_EXP_OPEN);
    sidecar_put (z, i);
    break;
  case BLKEMU_ZONE_CLOSE:
    if (zn->cond == C_IMP_OPEN || zn->cond == C_EXP_OPEN)
      close_zone (z, i);
    else if (zn->cond != C_CLOSED && zn->cond != C_EMPTY)
      r = EIO;
    break;
  case BLKEMU_ZONE_FINISH:
    span->unwritten = zn->wp; /* a full zone's writes settle too */
    span->hi = zone_start (z, i + 1);
    if (zn->cond == C_FULL)
      break;
    if ((r = check_active (z, i)) != 0)
      return r;
    set_cond (z, i, C_FULL);
    zn->wp = zone_start (z, i) + z->capacity;
    sidecar_put (z, i);
    break;
  case BLKEMU_ZONE_RESET:
    reset_zone (z, i);
    span->hi = zone_start (z, i + 1);
    break;
  default: r = EINVAL;
  }
  if (r)
    z->cond_refused++;
  else
    z->cmds[op]++;
  return r;
}

unsigned
zones_read_limits (const struct zones *z, uint64_t offset, uint64_t len,
                   uint64_t *zone_end, uint64_t *data_end, unsigned max)
{
  uint64_t end = offset + len;
  unsigned n = 0;
  for (uint64_t i = offset / z->zone_size;
       i < z->nr && zone_start (z, i) < end; i++, n++) {
    if (n == max)
      return 0;
    zone_end[n] = zone_start (z, i) + z->zone_size;
    data_end[n] = i < z->nr_conv ? zone_end[n] : z->z[i].wp;
  }
  return n;
}

void
zones_mask_read (const struct zones *z, void *buf, uint64_t len,
                 uint64_t offset)
{
  uint64_t end = offset + len;
  for (uint64_t i = offset / z->zone_size;
       i < z->nr && zone_start (z, i) < end; i++) {
    if (i < z->nr_conv)
      continue;
    uint64_t zend = zone_start (z, i) + z->zone_size;
    uint64_t lo = z->z[i].wp > offset ? z->z[i].wp : offset;
    uint64_t hi = zend < end ? zend : end;
    if (lo < hi)
      memset ((char *) buf + (lo - offset), 0, hi - lo);
  }
}

unsigned
zones_report (const struct zones *z, uint64_t offset, struct blkemu_zone *out,
              unsigned nr)
{
  unsigned n = 0;
  for (uint64_t i = offset / z->zone_size; i < z->nr && n < nr; i++, n++) {
    bool conv = i < z->nr_conv;
    out[n] = (struct blkemu_zone){
      .start = zone_start (z, i),
      .len = z->zone_size,
      .capacity = conv ? z->zone_size : z->capacity,
      .wp = conv ? zone_start (z, i) + z->zone_size : z->z[i].wp,
      .type =
        conv ? BLKEMU_ZONE_TYPE_CONVENTIONAL : BLKEMU_ZONE_TYPE_SEQWRITE_REQ,
      .cond = z->z[i].cond,
    };
    /* Linux reports a full zone's write pointer at its end. */
    if (!conv && z->z[i].cond == C_FULL)
      out[n].wp = zone_start (z, i) + z->zone_size;
  }
  return n;
}

void
zones_rollback (struct zones *z, uint64_t offset, uint64_t len)
{
  (void) len;
  uint64_t i = offset / z->zone_size;
  if (i < z->nr_conv || i >= z->nr || offset >= z->z[i].wp ||
      FAILED (z->z[i].cond))
    return;
  z->z[i].wp = offset;
  /* Rolled back below the end: no longer full; to the start: empty.  An
   * open zone stays open until the power cycle closes it.
   */
  if (z->z[i].cond == C_FULL || offset == zone_start (z, i))
    set_cond (z, i, idle_cond (z, i));
  sidecar_put (z, i);
}

unsigned
zones_power_cycle (struct zones *z,
                   void (*finished) (void *arg, uint64_t from, uint64_t len),
                   void *arg)
{
  z->imp_open = z->exp_open = z->closed = 0;
  for (uint64_t i = z->nr_conv; i < z->nr; i++) {
    struct zone *zn = &z->z[i];
    if (zn->cond == C_IMP_OPEN || zn->cond == C_EXP_OPEN ||
        zn->cond == C_CLOSED) {
      uint8_t c = idle_cond (z, i);
      if (c != zn->cond) {
        zn->cond = c;
        sidecar_put (z, i);
      }
    }
    z->closed += zn->cond == C_CLOSED;
  }
  /* A rollback can turn full zones back into closed ones, past the
   * limit: the device finishes the last of them.
   */
  unsigned n = 0;
  for (uint64_t i = z->nr;
       i-- > z->nr_conv && z->max_active && z->closed > z->max_active;) {
    struct zone *zn = &z->z[i];
    if (zn->cond != C_CLOSED)
      continue;
    uint64_t end = zone_start (z, i) + z->zone_size;
    if (finished)
      finished (arg, zn->wp, end - zn->wp);
    zn->wp = zone_start (z, i) + z->capacity;
    zn->cond = C_FULL;
    z->closed--;
    sidecar_put (z, i);
    n++;
  }
  z->excursions += n;
  return n;
}

void
zones_count (const struct zones *z, uint64_t by_cond[16])
{
  memset (by_cond, 0, 16 * sizeof by_cond[0]);
  for (uint64_t i = 0; i < z->nr; i++)
    by_cond[z->z[i].cond & 15]++;
}

void
zones_reset_counters (struct zones *z)
{
  z->wp_violations = z->boundary_violations = z->full_violations = 0;
  z->open_refused = z->active_refused = z->cond_refused = 0;
  z->appends = z->writes_seq = z->writes_conv = z->excursions = 0;
  memset (z->cmds, 0, sizeof z->cmds);
  z->open_peak = z->imp_open + z->exp_open;
  z->active_peak = z->open_peak + z->closed;
}

int
zones_read (struct zones *z, uint64_t offset, uint64_t len)
{
  for (uint64_t i = offset / z->zone_size;
       i < z->nr && zone_start (z, i) < offset + len; i++)
    if (z->z[i].cond == C_OFFLINE) {
      z->cond_refused++;
      return EIO;
    }
  return 0;
}

int
zones_set_condition (struct zones *z, uint64_t offset, uint8_t cond)
{
  uint64_t i = offset / z->zone_size;
  if (i >= z->nr || offset % z->zone_size || i < z->nr_conv)
    return EINVAL;
  if (cond == C_EMPTY)
    reset_zone (z, i);
  else if (FAILED (cond)) {
    set_cond (z, i, cond);
    sidecar_put (z, i);
  }
  else
    return EINVAL;
  return 0;
}
