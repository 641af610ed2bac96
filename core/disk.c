/* A disk's life and settings: creating it from a spec (backend, model,
 * cache, zones, trace), its geometry for the frontends, the zone report,
 * cancelling its waits, extents and runtime get/set.  Requests travel
 * through pipeline.c.
 */
#include "disk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "carriage.h"
#include "clock.h"
#include "engine.h"
#include "error.h"
#include "ftl.h"
#include "key_hooks.h"
#include "pipeline.h"
#include "units.h"

/* Each backend= choice's ops (BACKEND_LIST in config.h names them). */
static const struct backend_ops *const backend_table[] = {
  [BACKEND_MEMORY] = &backend_memory_ops,
  [BACKEND_FILE] = &backend_file_ops,
  [BACKEND_NULL] = &backend_null_ops,
};
_Static_assert(sizeof backend_table / sizeof backend_table[0] ==
                 COUNT_OF (BACKEND_LIST),
               "every backend= choice has its ops in backend_table");

static const struct backend_ops *
backend_lookup (enum backend_kind kind)
{
  return (unsigned) kind < COUNT_OF (BACKEND_LIST) ? backend_table[kind]
                                                   : NULL;
}

/* Every request takes the disk lock for a short while (checks, model,
 * admission): contended by two queues, spinning briefly before the
 * futex costs less than sleeping at once (core-bench: two queues
 * 1.25-1.35M req/s with a plain mutex, 1.53-1.74M adaptive).
 */
static void
spinning_mutex_init (pthread_mutex_t *m)
{
  pthread_mutexattr_t spin;
  pthread_mutexattr_init (&spin);
  pthread_mutexattr_settype (&spin, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init (m, &spin);
  pthread_mutexattr_destroy (&spin);
}

/* What disk_create makes after the backend, undone: its failure past
 * the model and disk_destroy share it, so neither forgets a part. */
static void
disk_parts_destroy (struct blkemu_disk *disk)
{
  engine_destroy (&disk->engine);
  timelines_destroy (disk);
  iowork_destroy (&disk->iowork);
  wcache_destroy (&disk->wcache);
  overlay_destroy (&disk->view);
  badranges_destroy (&disk->bad);
  badranges_destroy (&disk->view_bad);
  stuckbits_destroy (&disk->stuck);
  pthread_mutex_destroy (&disk->inflight_lock);
  zones_destroy (&disk->zones);
  model_destroy (disk->model, disk->model_state);
}

/* What disk_create makes before the backend, and the disk itself. */
static void
disk_free (struct blkemu_disk *disk)
{
  stats_destroy (&disk->stats);
  for (size_t i = 0; i < disk->ntransport; i++) {
    free (disk->transport[i].key);
    free (disk->transport[i].value);
  }
  free (disk->transport);
  pthread_mutex_destroy (&disk->transport_lock);
  pthread_mutex_destroy (&disk->power_lock);
  pthread_mutex_destroy (&disk->lock);
  config_free (&disk->cfg);
  free (disk);
}

struct blkemu_disk *
disk_create (const struct blkemu_spec *spec, char *err)
{
  struct blkemu_disk *disk = calloc (1, sizeof *disk);
  if (!disk) {
    set_err (err, "out of memory");
    return NULL;
  }
  if (config_build (&disk->cfg, spec, err) == -1) {
    free (disk);
    return NULL;
  }
  spinning_mutex_init (&disk->lock);
  pthread_mutex_init (&disk->power_lock, NULL);
  pthread_mutex_init (&disk->transport_lock, NULL);
  stats_init (&disk->stats);

  disk->backend.ops =
    backend_lookup ((enum backend_kind) disk->cfg.num[K_BACKEND]);
  if (disk->backend.ops->open (&disk->cfg, &disk->backend.state, err) == -1)
    goto fail_backend;
  /* The backend may have filled in size=; check the rules again. */
  if (config_validate (&disk->cfg, err) == -1)
    goto fail_model;
  /* A zoned disk's chunk boundary is its zone size. */
  if (disk->cfg.num[K_ZONED])
    disk->cfg.num[K_BOUNDARY] = disk->cfg.num[K_ZONE_SIZE];
  if (zones_init (&disk->zones, &disk->cfg,
                  disk->cfg.num[K_BACKEND] == BACKEND_FILE
                    ? disk->cfg.str[K_FILE]
                    : NULL,
                  err) == -1)
    goto fail_model;

  disk->model = &model_link_ops;
  disk->model_state = model_create (disk->model, &disk->cfg);
  if (!disk->model_state) {
    set_err (err, "model: out of memory");
    zones_destroy (&disk->zones);
    goto fail_model;
  }
  rng_seed (&disk->rng, disk->cfg.num[K_SEED]);
  faults_init (&disk->faults, &disk->cfg, clock_now_ns ());
  wcache_init (&disk->wcache, &disk->backend, &disk->bad);
  overlay_init (&disk->view);
  badranges_init (&disk->bad);
  badranges_init (&disk->view_bad);
  stuckbits_init (&disk->stuck);
  pthread_mutex_init (&disk->inflight_lock, NULL);
  engine_init (&disk->engine, pipeline_fire);
  pthread_mutex_init (&disk->timeline_lock, NULL);
  iowork_init (&disk->iowork);
  if (trace_open (&disk->trace, disk->cfg.str[K_TRACE],
                  (enum trace_format) disk->cfg.num[K_TRACE_FORMAT],
                  disk->cfg.str[K_NAME], disk->stats.start_ns,
                  disk->cfg.num[K_TRACE_MAX_SIZE], err) == -1)
    goto fail_trace;
  if (zones_on (&disk->zones))
    trace_note_zone_size (&disk->trace, disk->zones.zone_size);
  disk->plain = disk_is_plain (disk, clock_now_ns ());
  return disk;

fail_trace:
  disk_parts_destroy (disk);
fail_model:
  disk->backend.ops->close (disk->backend.state);
fail_backend:
  disk_free (disk);
  return NULL;
}

void
disk_destroy (struct blkemu_disk *disk)
{
  trace_close (&disk->trace);
  disk_parts_destroy (disk);
  disk->backend.ops->close (disk->backend.state);
  disk_free (disk);
}

const char *
blkemu_disk_name (const struct blkemu_disk *disk)
{
  return disk->cfg.str[K_NAME] ? disk->cfg.str[K_NAME] : "disk0";
}

bool
blkemu_disk_lends_reads (const struct blkemu_disk *disk)
{
  return disk->backend.ops->read_to != NULL;
}

void
blkemu_disk_set_read_sink (struct blkemu_disk *disk, blkemu_read_sink sink)
{
  disk->read_sink = blkemu_disk_lends_reads (disk) ? sink : NULL;
}

void
blkemu_disk_set_write_source (struct blkemu_disk *disk,
                              blkemu_write_source source)
{
  disk->write_source = source;
}

void
blkemu_disk_geometry (struct blkemu_disk *disk, struct blkemu_geometry *geo)
{
  pthread_mutex_lock (&disk->lock);
  const uint64_t *n = disk->cfg.num;
  geo->size_bytes = n[K_SIZE];
  geo->logical_block_size = (uint32_t) n[K_LOGICAL_BLOCK_SIZE];
  geo->physical_block_size =
    (uint32_t) (n[K_PHYSICAL_BLOCK_SIZE] ? n[K_PHYSICAL_BLOCK_SIZE]
                                         : n[K_LOGICAL_BLOCK_SIZE]);
  geo->min_io_bytes = (uint32_t) n[K_MIN_IO];
  geo->opt_io_bytes = (uint32_t) n[K_OPT_IO];
  geo->max_transfer_bytes = (uint32_t) n[K_MAX_TRANSFER];
  geo->queue_depth = (uint32_t) n[K_QUEUE_DEPTH];
  geo->boundary_bytes = n[K_BOUNDARY];
  geo->max_discard_bytes = n[K_MAX_DISCARD];
  geo->max_write_zeroes_bytes = n[K_MAX_WRITE_ZEROES];
  geo->virt_boundary_bytes = n[K_VIRT_BOUNDARY];
  geo->discard_granularity = (uint32_t) n[K_DISCARD_GRANULARITY];
  geo->discard_alignment = (uint32_t) n[K_DISCARD_ALIGNMENT];
  geo->max_discard_segments = (uint32_t) n[K_MAX_DISCARD_SEGMENTS];
  geo->max_segments = (uint32_t) n[K_MAX_SEGMENTS];
  geo->max_segment_size = (uint32_t) n[K_MAX_SEGMENT_SIZE];
  geo->segment_boundary_bytes = n[K_SEGMENT_BOUNDARY];
  geo->dma_alignment = (uint32_t) n[K_DMA_ALIGNMENT];
  geo->rotational = n[K_ROTATIONAL] != 0;
  geo->atomic_write_max_bytes = (uint32_t) n[K_ATOMIC_WRITE_MAX];
  geo->atomic_write_granularity =
    (uint32_t) (n[K_ATOMIC_WRITE_GRANULARITY] ? n[K_ATOMIC_WRITE_GRANULARITY]
                                              : geo->physical_block_size);
  geo->metadata_bytes = (uint32_t) n[K_METADATA_SIZE];
  /* protection's choices are none, type1, type2, type3: the index. */
  geo->protection_type = (uint32_t) n[K_PROTECTION];
  bool zoned = n[K_ZONED] != 0;
  pthread_mutex_unlock (&disk->lock);
  geo->can_flush = true;
  geo->can_fua = true;
  /* Sequential zones are freed by resets, not discards (the pipeline
   * refuses those there): a zoned disk advertises none.
   */
  geo->can_trim = disk->backend.ops->can_trim && !zoned;
  geo->can_zero = disk->backend.ops->can_zero;
  geo->can_extents = disk->backend.ops->can_extents;
  /* One disk behind every connection: a flush covers all of them. */
  geo->can_multi_conn = true;
  geo->persistent = disk->backend.ops->persistent;
}

/* KEY's fact set to VALUE (a number's text when NUMBER), appended when
 * new.
 */
static int
set_fact (struct blkemu_disk *disk, const char *key, const char *value,
          bool number)
{
  char *v = strdup (value);
  if (!v)
    return -1;
  pthread_mutex_lock (&disk->transport_lock);
  size_t i = 0;
  while (i < disk->ntransport && strcmp (disk->transport[i].key, key))
    i++;
  if (i == disk->ntransport) {
    struct transport_fact *t = realloc (disk->transport, (i + 1) * sizeof *t);
    char *k = strdup (key);
    if (!t || !k) {
      if (t)
        disk->transport = t;
      pthread_mutex_unlock (&disk->transport_lock);
      free (k);
      free (v);
      return -1;
    }
    disk->transport = t;
    t[i] = (struct transport_fact){ .key = k };
    disk->ntransport++;
  }
  free (disk->transport[i].value);
  disk->transport[i].value = v;
  disk->transport[i].number = number;
  pthread_mutex_unlock (&disk->transport_lock);
  return 0;
}

int
blkemu_disk_set_transport (struct blkemu_disk *disk, const char *key,
                           const char *value)
{
  return set_fact (disk, key, value, false);
}

int
blkemu_disk_set_transport_count (struct blkemu_disk *disk, const char *key,
                                 uint64_t count)
{
  char v[24];
  snprintf (v, sizeof v, "%llu", (unsigned long long) count);
  return set_fact (disk, key, v, true);
}

void
blkemu_disk_set_transport_refresh (struct blkemu_disk *disk,
                                   blkemu_transport_refresh_fn refresh,
                                   void *arg)
{
  /* The argument first: a reader that sees the function sees it. */
  __atomic_store_n (&disk->transport_refresh_arg, arg, __ATOMIC_RELAXED);
  __atomic_store_n (&disk->transport_refresh, refresh, __ATOMIC_RELEASE);
}

unsigned
blkemu_zone_report (struct blkemu_disk *disk, uint64_t offset,
                    struct blkemu_zone *out, unsigned nr)
{
  pthread_mutex_lock (&disk->lock);
  unsigned n =
    zones_on (&disk->zones) ? zones_report (&disk->zones, offset, out, nr) : 0;
  pthread_mutex_unlock (&disk->lock);
  return n;
}

int
blkemu_zone_set_condition (struct blkemu_disk *disk, uint64_t offset,
                           unsigned cond, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  if (cond != BLKEMU_ZONE_COND_READONLY && cond != BLKEMU_ZONE_COND_OFFLINE &&
      cond != BLKEMU_ZONE_COND_EMPTY) {
    set_err (e, "zone condition %u: must be read-only, offline or empty",
             cond);
    return err_result (-1, e, err, errlen);
  }
  disk_change_lock (disk);
  uint64_t zs = disk->zones.zone_size;
  int r = zones_on (&disk->zones)
            ? zones_set_condition (&disk->zones, offset, (uint8_t) cond)
            : EINVAL;
  disk_change_unlock (disk);
  zones_sidecar_sync (&disk->zones, &disk->lock);
  if (r == 0)
    return 0;
  if (!zs)
    set_err (e, "zone condition: the disk is not zoned");
  else
    set_err (e,
             "zone condition at %llu: must be the start of a sequential "
             "zone (zone-size=%llu)",
             (unsigned long long) offset, (unsigned long long) zs);
  return err_result (-1, e, err, errlen);
}

void
blkemu_disk_zoned (struct blkemu_disk *disk, struct blkemu_zoned *zg)
{
  pthread_mutex_lock (&disk->lock);
  const struct zones *z = &disk->zones;
  *zg = (struct blkemu_zoned){
    .zone_size = z->zone_size,
    .zone_capacity = z->capacity,
    .nr_zones = (uint32_t) z->nr,
    .nr_conventional = (uint32_t) z->nr_conv,
    .max_open = (uint32_t) z->max_open,
    .max_active = (uint32_t) z->max_active,
    .max_append_bytes = (uint32_t) z->max_append,
  };
  pthread_mutex_unlock (&disk->lock);
}

void
blkemu_disk_cancel (struct blkemu_disk *disk)
{
  clock_cancel (&disk->cancelled);
  engine_stop (&disk->engine, ESHUTDOWN);
  timelines_stop (disk, ESHUTDOWN);
  /* Requests whose transfer was still queued complete from the worker. */
  iowork_drain (&disk->iowork);
}

size_t
blkemu_disk_abort (struct blkemu_disk *disk, void *cookie)
{
  return engine_take_if (&disk->engine, pipeline_abortable, cookie, ECANCELED);
}

void
blkemu_disk_interrupt (struct blkemu_disk *disk)
{
  /* An atomic store and a futex wake: both async-signal-safe. */
  clock_cancel (&disk->cancelled);
}

int
blkemu_extents (struct blkemu_disk *disk, uint64_t offset, uint64_t len,
                blkemu_extent_cb cb, void *opaque)
{
  /* A crash view's overlay may hold data where the medium has a hole,
   * and a stuck bit reads 1 there.
   */
  pthread_mutex_lock (&disk->lock);
  bool viewing = disk->viewing;
  pthread_mutex_unlock (&disk->lock);
  if (!disk->backend.ops->can_extents || viewing ||
      stuckbits_any (&disk->stuck)) {
    cb (opaque, offset, len, false);
    return 0;
  }
  return disk->backend.ops->extents (disk->backend.state, offset, len, cb,
                                     opaque);
}

/* ---- runtime control --------------------------------------------- */

int
blkemu_disk_get (struct blkemu_disk *disk, const char *key, char *out,
                 size_t outlen, char *err, size_t errlen)
{
  int id = config_key_lookup (key);
  if (id < 0) {
    if (err && errlen)
      snprintf (err, errlen, "unknown key '%s'", key);
    return -1;
  }
  pthread_mutex_lock (&disk->lock);
  config_format (&disk->cfg, id, out, outlen);
  pthread_mutex_unlock (&disk->lock);
  return 0;
}

int
disk_set_pairs (struct blkemu_disk *disk, char **pairs, int npairs, char *err)
{
  if (npairs > DISK_SET_MAX) {
    set_err (err, "set: at most %d KEY=VALUE pairs at once", DISK_SET_MAX);
    return -1;
  }
  /* Split each "key=value" once, in place: pairs[i] becomes the key. */
  const char *values[DISK_SET_MAX];
  for (int i = 0; i < npairs; i++) {
    char *eq = strchr (pairs[i], '=');
    if (!eq) {
      set_err (err, "'%s': expected KEY=VALUE", pairs[i]);
      return -1;
    }
    *eq = '\0';
    values[i] = eq + 1;
  }

  /* Validate every pair on a copy first: all or nothing. */
  struct blkemu_config trial;
  int r = 0, ids[DISK_SET_MAX];
  uint64_t old[DISK_SET_MAX];
  disk_change_lock (disk);
  config_copy (&trial, &disk->cfg);
  for (int i = 0; i < npairs && r == 0; i++) {
    r = config_set_runtime (&trial, pairs[i], values[i], err);
    ids[i] = r == 0 ? config_key_lookup (pairs[i]) : -1;
  }
  if (r == 0)
    r = carriage_admit (disk->frontend, &trial, err);
  for (int i = 0; i < npairs && r == 0; i++)
    if (key_hooks[ids[i]].check)
      r = key_hooks[ids[i]].check (disk, &trial, err);
  if (r == 0) {
    for (int i = 0; i < npairs; i++)
      old[i] = disk->cfg.num[ids[i]];
    memcpy (disk->cfg.num, trial.num, sizeof trial.num);
    uint64_t now = clock_now_ns ();
    for (int i = 0; i < npairs; i++)
      if (key_hooks[ids[i]].apply)
        key_hooks[ids[i]].apply (disk, now);
  }
  disk_change_unlock (disk);
  config_free (&trial);
  /* Each key's after hook once, with its value from before the set. */
  for (int i = 0; i < npairs && r == 0; i++) {
    bool again = false;
    for (int j = 0; j < i; j++)
      again |= ids[j] == ids[i];
    if (key_hooks[ids[i]].after && !again)
      r = key_hooks[ids[i]].after (disk, old[i], err);
  }
  return r;
}

int
blkemu_disk_set (struct blkemu_disk *disk, const char *key, const char *value,
                 char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  size_t n = strlen (key) + strlen (value) + 2;
  char *pair = malloc (n);
  if (!pair) {
    set_err (e, "out of memory");
    return err_result (-1, e, err, errlen);
  }
  snprintf (pair, n, "%s=%s", key, value);
  int r = disk_set_pairs (disk, &pair, 1, e);
  free (pair);
  return err_result (r, e, err, errlen);
}

void
blkemu_disk_drop (struct blkemu_disk *disk)
{
  disk_change_lock (disk);
  disk->faults.drop_armed = true;
  disk_change_unlock (disk);
}

void
blkemu_disk_reset_stats (struct blkemu_disk *disk)
{
  timelines_stats_reset (disk);
  pthread_mutex_lock (&disk->lock);
  zones_reset_counters (&disk->zones);
  pthread_mutex_unlock (&disk->lock);
}

struct ftl *
disk_ftl (struct blkemu_disk *disk)
{
  return disk->cfg.num[K_MODEL] == MODEL_SSD
           ? ssd_ftl (link_device (disk->model_state))
           : NULL;
}

int
disk_precondition (struct blkemu_disk *disk, const char *mode,
                   const char *seed, char *err, size_t errlen)
{
  bool random = mode && strcmp (mode, "random") == 0;
  if (!mode || (!random && strcmp (mode, "sequential") != 0)) {
    snprintf (err, errlen,
              "usage: precondition sequential|random [SEED] (got '%s')",
              mode ? mode : "");
    return -1;
  }
  uint64_t s = disk->cfg.num[K_SEED];
  const char *why = NULL;
  if (seed && blkemu_parse_uint (seed, &s, &why) == -1) {
    snprintf (err, errlen, "precondition %s %s: SEED %s", mode, seed, why);
    return -1;
  }
  int r = 0;
  disk_change_lock (disk);
  struct ftl *ftl = disk_ftl (disk);
  if (!ftl) {
    snprintf (err, errlen,
              "precondition: needs model=ssd with over-provisioning (a flash "
              "translation layer to fill)");
    r = -1;
  }
  else
    ftl_precondition (ftl, random, s);
  disk_change_unlock (disk);
  return r;
}
