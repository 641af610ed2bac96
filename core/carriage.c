/* How far each frontend carries the limit keys.  Everything the device
 * does (timing, faults, caches, the checks in disk.c) works the same on
 * every frontend; what differs is whether the layer above — the NBD
 * client, the kernel's FUSE and loop drivers, the kernel's block layer
 * under ublk — is told a limit and splits by it.  The man pages' tables
 * and the frontends' start-up warnings come from this one table.
 */
#include <stdio.h>
#include <string.h>

#include "disk.h"
#include "error.h"
#include "keys.h"

#define T BLKEMU_CARRY_TOLD
#define D BLKEMU_CARRY_DEVICE

/* Keys absent here are enforced by the device alone, on every frontend. */
static const struct {
  int key;
  unsigned carry[3];   /* indexed by enum blkemu_frontend: nbd, fuse, ublk */
} carriage[] = {
  /* NBD: minimum block size; the device refuses misaligned requests. */
  { K_LOGICAL_BLOCK_SIZE,  { T | D, D, T | D } },
  /* NBD: the preferred block size (with opt-io). */
  { K_PHYSICAL_BLOCK_SIZE, { T, 0, T } },
  { K_MIN_IO,              { 0, 0, T } },
  { K_OPT_IO,              { T, 0, T } },
  /* NBD: the maximum block size.  FUSE caps requests on its own. */
  { K_MAX_TRANSFER,        { T | D, D, T | D } },
  { K_MAX_DISCARD,         { D, D, T | D } },
  { K_MAX_WRITE_ZEROES,    { D, D, T | D } },
  { K_BOUNDARY,            { D, D, T | D } },
  { K_ROTATIONAL,          { T, 0, T } },
  { K_QUEUE_DEPTH,         { D, D, T | D } },
  { K_VIRT_BOUNDARY,       { 0, 0, T } },
  { K_DISCARD_GRANULARITY, { D, D, T | D } },
  { K_DISCARD_ALIGNMENT,   { D, D, T | D } },
  /* Every frontend delivers one range per discard. */
  { K_MAX_DISCARD_SEGMENTS, { 0, 0, T } },
  { K_MAX_SEGMENTS,        { 0, 0, T } },
  { K_MAX_SEGMENT_SIZE,    { 0, 0, T } },
  { K_SEGMENT_BOUNDARY,    { 0, 0, T } },
  { K_DMA_ALIGNMENT,       { 0, 0, T } },
  /* Zones need zone commands, reports and append: only ublk has them
   * (NBD and FUSE refuse a zoned disk, blkemu_disk_check_frontend).
   */
  { K_ZONED,               { 0, 0, T | D } },
};
#define NCARRIAGE (sizeof carriage / sizeof carriage[0])

static unsigned
carriage_of (int id, enum blkemu_frontend frontend)
{
  for (size_t i = 0; i < NCARRIAGE; i++)
    if (carriage[i].key == id)
      return carriage[i].carry[frontend];
  return D;
}

static const char *
carriage_name (unsigned carry)
{
  switch (carry) {
  case T | D: return "told+device";
  case T:     return "told";
  case D:     return "device";
  default:    return "not-carried";
  }
}

void
blkemu_carriage_print (FILE *fp)
{
  fprintf (fp, "%-22s %-12s %-12s %s\n", "key", "nbd", "fuse", "ublk");
  for (size_t i = 0; i < NCARRIAGE; i++)
    fprintf (fp, "%-22s %-12s %-12s %s\n", config_keys[carriage[i].key].name,
             carriage_name (carriage[i].carry[BLKEMU_FRONTEND_NBD]),
             carriage_name (carriage[i].carry[BLKEMU_FRONTEND_FUSE]),
             carriage_name (carriage[i].carry[BLKEMU_FRONTEND_UBLK]));
}

static const char *const frontend_names[] = { "NBD", "FUSE", "ublk" };

int
blkemu_disk_check_frontend (struct blkemu_disk *disk,
                            enum blkemu_frontend frontend, char *err,
                            size_t errlen)
{
  pthread_mutex_lock (&disk->lock);
  bool zoned = disk->cfg.num[K_ZONED] != 0;
  pthread_mutex_unlock (&disk->lock);
  if (zoned && !(carriage_of (K_ZONED, frontend) & T)) {
    char e[BLKEMU_ERR_MAX];
    set_err (e, "zoned=host-managed: %s has no zone commands, zone "
             "reports or zone append; serve a zoned disk with blkemu-ublk",
             frontend_names[frontend]);
    return err_result (-1, e, err, errlen);
  }
  return 0;
}

int
blkemu_disk_warn_uncarried (struct blkemu_disk *disk,
                            enum blkemu_frontend frontend, const char *prog,
                            FILE *fp)
{
  char list[1024] = "";
  size_t used = 0;
  int count = 0;
  pthread_mutex_lock (&disk->lock);
  for (size_t i = 0; i < NCARRIAGE; i++) {
    int id = carriage[i].key;
    if (carriage[i].carry[frontend] != 0)
      continue;
    char v[64];
    config_format (&disk->cfg, id, v, sizeof v);
    const char *def = config_keys[id].def ? config_keys[id].def : "";
    if (!strcmp (v, def))
      continue;
    int w = snprintf (list + used, sizeof list - used, "%s%s=%s",
                      used ? " " : "", config_keys[id].name, v);
    if (w < 0 || (size_t) w >= sizeof list - used)
      break;
    used += (size_t) w;
    count++;
  }
  pthread_mutex_unlock (&disk->lock);
  if (count) {
    fprintf (fp, "%s: %s: not carried by %s, no effect there: %s\n", prog,
             blkemu_disk_name (disk), frontend_names[frontend], list);
    blkemu_disk_set_transport (disk, "not_carried", list);
  }
  return count;
}
