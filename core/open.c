/* A disk's life as the frontends see it: the disk (disk.c) with its
 * service (control.c) above it — the control socket bound at open, before
 * a frontend forks; the thread started after; stats= written at close.
 * The layering keeps disk.c free of the service: the service calls the
 * disk, never the other way round.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"
#include "carriage.h"
#include "control.h"
#include "disk.h"
#include "error.h"

static struct blkemu_disk *
disk_open (const struct blkemu_spec *spec, const struct blkemu_frontend *fe,
           char *err)
{
  struct blkemu_disk *disk = disk_create (spec, err);
  if (!disk)
    return NULL;
  disk->frontend = fe;
  if (carriage_admit (fe, &disk->cfg, err) == -1) {
    disk_destroy (disk);
    return NULL;
  }
  /* Paths that can fail are checked and the socket bound now, before a
   * frontend forks or reports itself ready.
   */
  if (service_prepare (disk, err) == -1) {
    disk_destroy (disk);
    return NULL;
  }
  if (fe) {
    blkemu_disk_set_transport (disk, "frontend", fe->id);
    /* No thread of the disk's runs yet: its settings need no lock. */
    char list[1024];
    if (carriage_uncarried (fe, &disk->cfg, list, sizeof list)) {
      fprintf (stderr, "%s: %s: not carried by %s, no effect there: %s\n",
               fe->prog, blkemu_disk_name (disk), fe->name, list);
      blkemu_disk_set_transport (disk, "not_carried", list);
    }
  }
  return disk;
}

struct blkemu_disk *
blkemu_disk_open (const struct blkemu_spec *spec,
                  const struct blkemu_frontend *fe, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result_ptr (disk_open (spec, fe, e), e, err, errlen);
}

static struct blkemu_disk *
disk_open_spec (const char *list, size_t index,
                const struct blkemu_frontend *fe, char *err)
{
  struct blkemu_spec *spec = blkemu_spec_new ();
  if (!spec) {
    set_err (err, "out of memory");
    return NULL;
  }
  struct blkemu_disk *disk = NULL;
  if (blkemu_spec_set_list (spec, list, err, BLKEMU_ERR_MAX) == -1)
    goto out;
  const char *name = blkemu_spec_get (spec, "name");
  char defname[32];
  if (!name) {
    snprintf (defname, sizeof defname, "d%zu", index);
    if (blkemu_spec_set (spec, "name", defname, err, BLKEMU_ERR_MAX) == -1)
      goto out;
    name = defname;
  }
  /* It names a file, a device and a line in logs: no paths. */
  if (!*name || strchr (name, '/') || !strcmp (name, ".") ||
      !strcmp (name, "..")) {
    set_err (err, "name=%s: must be a plain file name (no '/', not . or ..)",
             name);
    goto out;
  }
  disk = disk_open (spec, fe, err);
out:
  blkemu_spec_free (spec);
  return disk;
}

struct blkemu_disk *
blkemu_disk_open_spec (const char *list, size_t index,
                       const struct blkemu_frontend *fe, char *err,
                       size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result_ptr (disk_open_spec (list, index, fe, e), e, err, errlen);
}

void
blkemu_disk_abandon (struct blkemu_disk *disk)
{
  service_abandon (disk);
}

int
blkemu_disk_start (struct blkemu_disk *disk, char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (service_start (disk, e), e, err, errlen);
}

int
blkemu_disk_close (struct blkemu_disk *disk)
{
  char err[BLKEMU_ERR_MAX];
  int r = 0;
  if (!disk)
    return 0;
  blkemu_disk_cancel (disk);
  service_stop (disk);
  if (disk->cfg.str[K_STATS] &&
      blkemu_disk_write_stats (disk, err, sizeof err) == -1) {
    fprintf (stderr, "blkemu: %s\n", err);
    r = -1;
  }
  if (disk->cfg.num[K_SUMMARY])
    disk_write_summary (disk, stderr);
  disk_destroy (disk);
  return r;
}
