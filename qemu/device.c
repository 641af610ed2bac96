/* qemu's -device for a disk on one of qemu's controllers.  The keys a
 * controller's descriptor marks as told are exactly the fields written
 * here: each has a row in FIELDS, which turns the disk's value into the
 * controller's property (or refuses a value the controller cannot
 * express), so descriptor.c, this file and the carriage table cannot
 * disagree.  Property names and ranges are qemu 7.2's (hw/nvme/ctrl.c,
 * hw/ide/qdev.c, hw/block/virtio-blk.c).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "frontends.h"

/* The output, grown a property at a time. */
struct out {
  char *buf;
  size_t len, used;
  bool full;
};

static void
put (struct out *o, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  int w = vsnprintf (o->buf + o->used, o->len - o->used, fmt, ap);
  va_end (ap);
  if (w < 0 || (size_t) w >= o->len - o->used)
    o->full = true;
  else
    o->used += (size_t) w;
}

/* What a row sees of the disk. */
struct ctx {
  struct blkemu_disk *disk;
  struct blkemu_geometry geo;
  const struct blkemu_frontend *fe;
  char *err;
  size_t errlen;
};

static void
value_of (const struct ctx *c, const char *key, char *v, size_t len)
{
  char err[BLKEMU_ERR_MAX];
  if (blkemu_disk_get (c->disk, key, v, len, err, sizeof err) == -1)
    v[0] = '\0';
}

/* Refuse KEY's value: "KEY=VALUE: CONTROLLER WHY".  Returns -1. */
static int
refuse_key (const struct ctx *c, const char *key, const char *why)
{
  char v[BLKEMU_VALUE_MAX];
  value_of (c, key, v, sizeof v);
  snprintf (c->err, c->errlen, "%s=%s: %s %s", key, v, c->fe->name, why);
  return -1;
}

/* A string property: qemu's option parser takes ',' as its separator
 * (",," for a comma), so a value holding one is refused, not mangled.
 */
static int
put_string (const struct ctx *c, struct out *o, const char *prop,
            const char *key, const char *v, size_t max)
{
  if (strchr (v, ',') || strlen (v) > max) {
    snprintf (c->err, c->errlen,
              "%s=%s: %s takes at most %zu characters and no comma", key, v,
              c->fe->name, max);
    return -1;
  }
  put (o, ",%s=%s", prop, v);
  return 0;
}

static int
lbs_any (const struct ctx *c, struct out *o)
{
  put (o, ",logical_block_size=%" PRIu32, c->geo.logical_block_size);
  return 0;
}

/* qemu checks the physical block is no smaller than the logical one,
 * though its NVMe namespace reports neither NPWG nor NOWS from it.  The
 * block sizes, like the metadata below, are the namespace's.
 */
static int
lbs_nvme (const struct ctx *c, struct out *o)
{
  put (o, ",logical_block_size=%" PRIu32 ",physical_block_size=%" PRIu32,
       c->geo.logical_block_size, c->geo.physical_block_size);
  return 0;
}

/* ATA's IDENTIFY describes 512-byte logical sectors only in qemu's ide. */
static int
lbs_512 (const struct ctx *c, struct out *o)
{
  if (c->geo.logical_block_size != 512)
    return refuse_key (c, "logical-block-size",
                       "has 512-byte logical sectors only (a larger "
                       "physical-block-size is carried)");
  put (o, ",logical_block_size=512");
  return 0;
}

static int
pbs (const struct ctx *c, struct out *o)
{
  put (o, ",physical_block_size=%" PRIu32, c->geo.physical_block_size);
  return 0;
}

/* MDTS: the largest transfer is the 4K page (CAP.MPSMIN 0) << MDTS, 0
 * meaning no limit.  The controller says the largest power-of-two
 * multiple of the page that fits max-transfer; the device still takes
 * up to max-transfer itself.
 */
static int
mdts (const struct ctx *c, struct out *o)
{
  uint32_t max = c->geo.max_transfer_bytes;
  if (max == 0) {
    put (o, ",mdts=0");
    return 0;
  }
  if (max < 4096)
    return refuse_key (c, "max-transfer",
                       "expresses a maximum transfer as 4K << MDTS: at "
                       "least one 4K page");
  unsigned m = 0;
  while ((4096ull << (m + 1)) <= max)
    m++;
  put (o, ",mdts=%u", m);
  return 0;
}

/* The LBA format's metadata bytes (MS), kept in separate buffers
 * (mset=0: the kernel's nvme driver sends them by metadata pointer).
 * qemu stores them after the namespace's data, in the same drive.
 */
static int
metadata (const struct ctx *c, struct out *o)
{
  put (o, ",ms=%" PRIu32 ",mset=0", c->geo.metadata_bytes);
  return 0;
}

/* DPS: the protection type (0 none, 1-3), its 8 bytes last in the
 * metadata (pil=0); qemu generates and checks the guard and tags.
 */
static int
protection (const struct ctx *c, struct out *o)
{
  put (o, ",pi=%" PRIu32 ",pil=0", c->geo.protection_type);
  return 0;
}

/* min_io_size and opt_io_size are bytes to qemu; virtio-blk's config
 * holds them in logical blocks (min_io_size in 16 bits).
 */
static int
io_size (const struct ctx *c, struct out *o, const char *prop, const char *key,
         uint32_t bytes, uint64_t max_blocks)
{
  if (!bytes)
    return 0;
  if (bytes / c->geo.logical_block_size > max_blocks) {
    char why[80];
    snprintf (why, sizeof why,
              "holds at most %" PRIu64 " logical blocks there", max_blocks);
    return refuse_key (c, key, why);
  }
  put (o, ",%s=%" PRIu32, prop, bytes);
  return 0;
}

static int
min_io (const struct ctx *c, struct out *o)
{
  return io_size (c, o, "min_io_size", "min-io", c->geo.min_io_bytes,
                  UINT16_MAX);
}

static int
opt_io (const struct ctx *c, struct out *o)
{
  return io_size (c, o, "opt_io_size", "opt-io", c->geo.opt_io_bytes,
                  UINT32_MAX);
}

/* virtio-blk's maxima are 512-byte sectors, 1 .. 2^30-1 (qemu's
 * BDRV_REQUEST_MAX_SECTORS bound); unlimited (0) leaves qemu's default,
 * which is that bound.
 */
static int
sectors (struct out *o, const char *prop, uint64_t bytes)
{
  const uint64_t most = (1ull << 30) - 1;
  if (!bytes)
    return 0;
  uint64_t s = bytes / 512;
  put (o, ",%s=%" PRIu64, prop, s < most ? s : most);
  return 0;
}

static int
max_discard (const struct ctx *c, struct out *o)
{
  return sectors (o, "max-discard-sectors", c->geo.max_discard_bytes);
}

static int
max_write_zeroes (const struct ctx *c, struct out *o)
{
  return sectors (o, "max-write-zeroes-sectors",
                  c->geo.max_write_zeroes_bytes);
}

/* IDENTIFY word 217: 1 is a non-rotating medium, else the spindle's
 * rpm.  One field carries both keys: rotational writes it, rpm's row
 * (rpm_in_rotation) has nothing of its own to add.
 */
static int
rotation (const struct ctx *c, struct out *o)
{
  char v[BLKEMU_VALUE_MAX];
  value_of (c, "rpm", v, sizeof v);
  put (o, ",rotation_rate=%s", c->geo.rotational ? v : "1");
  return 0;
}

static int
rpm_in_rotation (const struct ctx *c, struct out *o)
{
  (void) c;
  (void) o;
  return 0;
}

/* The model string: product= (ATA's 40 characters), else the name. */
static int
model (const struct ctx *c, struct out *o)
{
  char v[BLKEMU_VALUE_MAX];
  value_of (c, "product", v, sizeof v);
  if (!v[0])
    snprintf (v, sizeof v, "%s", blkemu_disk_name (c->disk));
  return put_string (c, o, "model", "product", v, 40);
}

/* The firmware revision (ATA's 8 characters), when set. */
static int
firmware (const struct ctx *c, struct out *o)
{
  char v[BLKEMU_VALUE_MAX];
  value_of (c, "revision", v, sizeof v);
  return v[0] ? put_string (c, o, "ver", "revision", v, 8) : 0;
}

/* Where a field goes: the controller's -device, or the one holding the
 * drive (NVMe's nvme-ns; the other controllers' only -device).
 */
enum part { CONTROLLER, DRIVE };

static const struct {
  const char *controller; /* descriptor .id */
  const char *key;        /* a key its descriptor marks told */
  int (*write) (const struct ctx *c, struct out *o);
  enum part part;
} fields[] = {
  { "nvme", "logical-block-size", lbs_nvme, DRIVE },
  { "nvme", "max-transfer", mdts, CONTROLLER },
  { "nvme", "metadata-size", metadata, DRIVE },
  { "nvme", "protection", protection, DRIVE },
  { "sata", "logical-block-size", lbs_512, DRIVE },
  { "sata", "physical-block-size", pbs, DRIVE },
  { "sata", "rotational", rotation, DRIVE },
  { "sata", "rpm", rpm_in_rotation, DRIVE },
  { "sata", "product", model, DRIVE },
  { "sata", "revision", firmware, DRIVE },
  { "virtio-blk", "logical-block-size", lbs_any, DRIVE },
  { "virtio-blk", "physical-block-size", pbs, DRIVE },
  { "virtio-blk", "min-io", min_io, DRIVE },
  { "virtio-blk", "opt-io", opt_io, DRIVE },
  { "virtio-blk", "max-discard", max_discard, DRIVE },
  { "virtio-blk", "max-write-zeroes", max_write_zeroes, DRIVE },
};

static const struct {
  const struct blkemu_frontend *fe;
  const char *driver;    /* qemu's -device driver */
  const char *namespace; /* a second -device holding the drive, or NULL */
} controllers[] = {
  { &blkemu_nvme_frontend, "nvme", "nvme-ns" },
  { &blkemu_sata_frontend, "ide-hd", NULL },
  { &blkemu_virtio_blk_frontend, "virtio-blk-pci", NULL },
};

const struct blkemu_frontend *
qemu_controller (const char *id)
{
  for (size_t i = 0; i < sizeof controllers / sizeof controllers[0]; i++)
    if (!strcmp (controllers[i].fe->id, id))
      return controllers[i].fe;
  return NULL;
}

/* qemu's ids take letters, digits, '-', '.' and '_'. */
static int
put_id (const struct ctx *c, struct out *o, const char *prop, const char *name)
{
  for (const char *p = name; *p; p++)
    if (!isalnum ((unsigned char) *p) && !strchr ("-._", *p)) {
      snprintf (c->err, c->errlen,
                "name=%s: %s names its namespace's bus after the disk: "
                "letters, digits, '-', '.' and '_' only",
                name, c->fe->name);
      return -1;
    }
  put (o, ",%s=blkemu-ctrl-%s", prop, name);
  return 0;
}

/* Every field FE's descriptor marks told, each into its part. */
static int
put_fields (const struct ctx *c, struct out *parts[2])
{
  for (const struct blkemu_carry *k = c->fe->carries; k->key; k++) {
    if (!(k->how & BLKEMU_CARRY_TOLD))
      continue;
    bool written = false;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
      if (!strcmp (fields[i].controller, c->fe->id) &&
          !strcmp (fields[i].key, k->key)) {
        if (fields[i].write (c, parts[fields[i].part]) == -1)
          return -1;
        written = true;
      }
    if (!written) {
      snprintf (c->err, c->errlen,
                "%s: the descriptor tells %s but no field "
                "carries it (qemu/device.c)",
                c->fe->name, k->key);
      return -1;
    }
  }
  return 0;
}

int
qemu_device_string (const struct blkemu_frontend *fe, struct blkemu_disk *disk,
                    char *out, size_t len, char *err, size_t errlen)
{
  size_t which = sizeof controllers / sizeof controllers[0];
  for (size_t i = 0; i < sizeof controllers / sizeof controllers[0]; i++)
    if (controllers[i].fe == fe)
      which = i;
  if (which == sizeof controllers / sizeof controllers[0] || !len) {
    snprintf (err, errlen, "%s is not one of qemu's controllers", fe->name);
    return -1;
  }
  struct ctx c = { .disk = disk, .fe = fe, .err = err, .errlen = errlen };
  blkemu_disk_geometry (disk, &c.geo);
  char ns_buf[512];
  struct out o = { .buf = out, .len = len };
  struct out ns = { .buf = ns_buf, .len = sizeof ns_buf };
  const char *ns_driver = controllers[which].namespace;
  /* Without a namespace device, the controller's holds every field. */
  struct out *parts[2] = { &o, ns_driver ? &ns : &o };
  out[0] = ns_buf[0] = '\0';
  put (&o, "%s", controllers[which].driver);
  /* The guest finds the disk by its serial number: the disk's name. */
  const char *name = blkemu_disk_name (disk);
  if (put_string (&c, &o, "serial", "name", name, QEMU_SERIAL_MAX) == -1)
    return -1;
  if (ns_driver) {
    put (&ns, "%s", ns_driver);
    if (put_id (&c, &o, "id", name) == -1 ||
        put_id (&c, &ns, "bus", name) == -1)
      return -1;
  }
  if (put_fields (&c, parts) == -1)
    return -1;
  /* The volatile write cache the guest sees (NVMe VWC, ATA's IDENTIFY,
   * VIRTIO_BLK_F_FLUSH's writeback mode) is the drive's: a guest that
   * sees none sends writes FUA instead of flushing.
   */
  char wc[BLKEMU_VALUE_MAX];
  value_of (&c, "write-cache", wc, sizeof wc);
  put (parts[DRIVE], ",write-cache=%s", !strcmp (wc, "yes") ? "on" : "off");
  if (ns_driver)
    put (&o, "\n%s", ns_buf);
  if (o.full || ns.full) {
    snprintf (err, errlen, "%s: the -device string is longer than %zu bytes",
              fe->name, len);
    return -1;
  }
  return 0;
}
