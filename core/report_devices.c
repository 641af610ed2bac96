/* The stats of the device models that keep their own: the volume
 * throttle (model_volume.c), model=ssd's flash translation layer (ftl.c)
 * and SLC cache, as the JSON's "volume", "ftl" and "slc" objects and the
 * summary's lines (blkemu-stats(5)).  Each reads its model's state under
 * the disk lock.
 */
#include "report_devices.h"

#include "clock.h"
#include "disk.h"
#include "ftl.h"

/* Now on the models' clock (slowdown= stretches it). */
static uint64_t
device_now (struct blkemu_disk *disk)
{
  return faults_to_device_time (&disk->faults, disk->cfg.num[K_SLOWDOWN],
                                clock_now_ns ());
}

/* volume: null unless a volume-* key throttles the disk. */
static void
json_volume (struct strbuf *sb, const char *in1, const char *nl,
             struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->lock);
  if (!volume_throttles (&disk->cfg)) {
    pthread_mutex_unlock (&disk->lock);
    sb_printf (sb, "%s\"volume\": null,%s", in1, nl);
    return;
  }
  struct volume_state *v = link_volume (disk->model_state);
  sb_printf (sb,
             "%s\"volume\": {\"baseline_iops\": %llu, \"ios\": %llu, "
             "\"delayed\": %llu, \"delayed_ms\": %.3f, \"credits\": %.0f, "
             "\"burst_bytes\": %.0f},%s",
             in1, (unsigned long long) volume_baseline_iops (&disk->cfg),
             (unsigned long long) v->units, (unsigned long long) v->delayed,
             (double) v->delayed_ns / 1e6,
             volume_credits (v, &disk->cfg, device_now (disk)),
             volume_burst_bytes (v, &disk->cfg, device_now (disk)), nl);
  pthread_mutex_unlock (&disk->lock);
}

static double
ftl_waf (const struct ftl *f)
{
  return f->host_pages
           ? (double) (f->host_pages + f->gc_pages) / (double) f->host_pages
           : 0.0;
}

/* ftl: null unless model=ssd has over-provisioning. */
static void
json_ftl (struct strbuf *sb, const char *in1, const char *nl,
          struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->lock);
  struct ftl *f = disk_ftl (disk);
  if (!f) {
    pthread_mutex_unlock (&disk->lock);
    sb_printf (sb, "%s\"ftl\": null,%s", in1, nl);
    return;
  }
  uint32_t emin, emax;
  double emean;
  ftl_erase_stats (f, &emin, &emean, &emax);
  sb_printf (sb,
             "%s\"ftl\": {\"host_pages\": %llu, \"flash_pages\": %llu, "
             "\"waf\": %.3f, \"gc_relocations\": %llu, \"gc_runs\": %llu, "
             "\"erases\": %llu, \"free_blocks\": %u, \"erase_count\": "
             "{\"min\": %u, \"mean\": %.2f, \"max\": %u}},%s",
             in1, (unsigned long long) f->host_pages,
             (unsigned long long) (f->host_pages + f->gc_pages), ftl_waf (f),
             (unsigned long long) f->gc_pages, (unsigned long long) f->gc_runs,
             (unsigned long long) f->erase_total, f->nfree, emin, emean, emax,
             nl);
  pthread_mutex_unlock (&disk->lock);
}

/* model=ssd's SLC cache, or NULL (its state in *SSD).  Under the lock. */
static struct ssd_slc *
disk_slc (struct blkemu_disk *disk, void **ssd)
{
  if (disk->cfg.num[K_MODEL] != MODEL_SSD || !ssd_slc_on (&disk->cfg))
    return NULL;
  *ssd = link_device (disk->model_state);
  /* What folded while idle up to now, not just up to the last request. */
  ssd_slc_settle (*ssd, &disk->cfg, device_now (disk));
  return ssd_slc (*ssd);
}

/* slc: null unless model=ssd has an SLC cache. */
static void
json_slc (struct strbuf *sb, const char *in1, const char *nl,
          struct blkemu_disk *disk)
{
  void *ssd;
  pthread_mutex_lock (&disk->lock);
  struct ssd_slc *c = disk_slc (disk, &ssd);
  if (!c)
    sb_printf (sb, "%s\"slc\": null,%s", in1, nl);
  else
    sb_printf (sb,
               "%s\"slc\": {\"capacity\": %llu, \"used\": %llu, "
               "\"written_fast\": %llu, \"written_native\": %llu, "
               "\"folded\": %llu},%s",
               in1, (unsigned long long) ssd_slc_capacity (ssd, &disk->cfg),
               (unsigned long long) c->used, (unsigned long long) c->fast,
               (unsigned long long) c->native, (unsigned long long) c->folded,
               nl);
  pthread_mutex_unlock (&disk->lock);
}

void
report_devices_json (struct strbuf *sb, const char *in1, const char *nl,
                     struct blkemu_disk *disk)
{
  json_volume (sb, in1, nl, disk);
  json_ftl (sb, in1, nl, disk);
  json_slc (sb, in1, nl, disk);
}

static void
summary_volume (struct strbuf *sb, struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->lock);
  if (volume_throttles (&disk->cfg)) {
    struct volume_state *v = link_volume (disk->model_state);
    sb_printf (sb,
               "volume: %llu I/Os counted, baseline %llu IOPS; %llu requests "
               "held by the throttle, %.1f ms in all; %.0f burst credits "
               "and %.0f MiB of throughput burst left\n",
               (unsigned long long) v->units,
               (unsigned long long) volume_baseline_iops (&disk->cfg),
               (unsigned long long) v->delayed, (double) v->delayed_ns / 1e6,
               volume_credits (v, &disk->cfg, device_now (disk)),
               volume_burst_bytes (v, &disk->cfg, device_now (disk)) /
                 1048576.0);
  }
  pthread_mutex_unlock (&disk->lock);
}

static void
summary_ftl (struct strbuf *sb, struct blkemu_disk *disk)
{
  pthread_mutex_lock (&disk->lock);
  struct ftl *f = disk_ftl (disk);
  if (f) {
    uint32_t emin, emax;
    double emean;
    ftl_erase_stats (f, &emin, &emean, &emax);
    sb_printf (sb,
               "flash: %llu pages written by the host, %llu moved by "
               "garbage collection (WAF %.2f), %llu blocks erased, %u "
               "free; erase counts %u/%.1f/%u (min/mean/max)\n",
               (unsigned long long) f->host_pages,
               (unsigned long long) f->gc_pages, ftl_waf (f),
               (unsigned long long) f->erase_total, f->nfree, emin, emean,
               emax);
  }
  pthread_mutex_unlock (&disk->lock);
}

static void
summary_slc (struct strbuf *sb, struct blkemu_disk *disk)
{
  void *ssd;
  pthread_mutex_lock (&disk->lock);
  struct ssd_slc *c = disk_slc (disk, &ssd);
  if (c)
    sb_printf (sb,
               "slc: %.1f of %.1f MiB cached; %.1f MiB written fast, %.1f "
               "MiB at the native rate, %.1f MiB folded while idle\n",
               (double) c->used / 1048576.0,
               (double) ssd_slc_capacity (ssd, &disk->cfg) / 1048576.0,
               (double) c->fast / 1048576.0, (double) c->native / 1048576.0,
               (double) c->folded / 1048576.0);
  pthread_mutex_unlock (&disk->lock);
}

void
report_devices_summary (struct strbuf *sb, struct blkemu_disk *disk)
{
  summary_volume (sb, disk);
  summary_ftl (sb, disk);
  summary_slc (sb, disk);
}
