/* key_hooks.c: the keys whose runtime change does more than set a value
 * (see key_hooks.h).  One entry per key, beside what it does.
 */
#include "key_hooks.h"

#include <stdbool.h>
#include <string.h>

#include "disk.h"
#include "error.h"
#include "model.h"

/* error-*: the rule starts counting again (error-after, mode once). */
static void
error_rule_rearm (struct blkemu_disk *disk, uint64_t now)
{
  (void) now;
  faults_rearm (&disk->faults);
}

/* stall=T: requests wait until T from now (0: the stall ends). */
static void
stall_start (struct blkemu_disk *disk, uint64_t now)
{
  uint64_t t = disk->cfg.num[K_STALL];
  disk->faults.stall_until_ns = t ? now + t : 0;
}

/* slowdown=N: time dilates from now, and the model's times, on the old
 * clock, start over.
 */
static void
slowdown_restart (struct blkemu_disk *disk, uint64_t now)
{
  disk->faults.slow_base_ns = now;
  model_reset (disk->model, disk->model_state);
}

/* Without power the cache's contents belong to the crash to come (or to
 * the view being served): neither may be written back, nor may the
 * rules the crash state is drawn under change.
 */
static int
write_cache_check (struct blkemu_disk *disk, const struct blkemu_config *trial,
                   char *err)
{
  bool now_on = trial->num[K_WRITE_CACHE] != 0;
  if ((disk->cfg.num[K_WRITE_CACHE] != 0) == now_on ||
      !(disk->faults.offline || disk->viewing))
    return 0;
  set_err (err, "write-cache=%s: the disk is powered off (power-on first)",
           now_on ? "yes" : "no");
  return -1;
}

/* A drive whose cache is turned off writes back what it holds (ATA's SET
 * FEATURES, SCSI's WCE=0): what was acknowledged before is durable once
 * the change is.  Writes in flight keep the mode they arrived in.
 */
static int
write_cache_after (struct blkemu_disk *disk, uint64_t old, char *err)
{
  if (!old || disk->cfg.num[K_WRITE_CACHE])
    return 0;
  int ferr =
    wcache_flush_run (&disk->wcache, wcache_generation (&disk->wcache));
  if (!ferr)
    return 0;
  set_err (err, "write-cache=no: writing back the cache failed: %s",
           strerror (ferr));
  return -1;
}

const struct key_hook key_hooks[K_COUNT] = {
  [K_ERROR_MODE] = { .apply = error_rule_rearm },
  [K_ERROR_OP] = { .apply = error_rule_rearm },
  [K_ERROR_OFFSET] = { .apply = error_rule_rearm },
  [K_ERROR_LENGTH] = { .apply = error_rule_rearm },
  [K_ERROR_ERRNO] = { .apply = error_rule_rearm },
  [K_ERROR_PROBABILITY] = { .apply = error_rule_rearm },
  [K_ERROR_AFTER] = { .apply = error_rule_rearm },
  [K_STALL] = { .apply = stall_start },
  [K_SLOWDOWN] = { .apply = slowdown_restart },
  [K_WRITE_CACHE] = { .check = write_cache_check, .after = write_cache_after },
};
