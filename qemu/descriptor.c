/* What qemu's own disk controllers carry when blkemu serves their drive
 * (see struct blkemu_frontend): blkemu-vm --frontend nvme|sata|virtio-blk
 * runs the nbdkit plugin on the host with controller=ID, and the guest
 * sees qemu's NVMe, AHCI (SATA) or virtio-blk device over that drive.
 * "Told" here means the controller reports the key in a field the
 * guest's driver reads (device.c writes those fields); every request
 * still reaches the disk through qemu's NBD client, which the plugin
 * tells max-transfer as its maximum block size, so the device checks
 * and splits what the controller does not express.  Measured against
 * Debian 12's qemu 7.2 and kernels 6.1 and 6.12: docs/blkemu-vm.1.md.
 */
#include "frontends.h"

#define T BLKEMU_CARRY_TOLD
#define D BLKEMU_CARRY_DEVICE

/* NVMe: the LBA format (block size, metadata bytes and protection
 * information, which qemu keeps after the data and checks: the device
 * sees them as data), and MDTS as a power-of-two multiple of the 4K
 * page.  qemu 7.2 reports no NPWG/NOWS (physical block, min-io, opt-io),
 * no atomic fields and no rotational bit; its zoned namespace keeps its
 * own zone state, so blkemu's zones cannot be carried.
 */
static const struct blkemu_carry nvme_carries[] = {
  { "logical-block-size", T | D },
  { "max-transfer", T | D },
  { "metadata-size", T },
  { "protection", T },
  { "zoned", 0 },
  { NULL, 0 },
};

const struct blkemu_frontend blkemu_nvme_frontend = {
  .name = "NVMe (qemu)",
  .id = "nvme",
  .prog = "blkemu-vm",
  .carries = nvme_carries,
  .ops = BLKEMU_FE_METADATA,
  /* What one NBD request moves (nbdkit's and qemu's client's limit). */
  .max_transfer_bytes = 32u << 20,
};

/* SATA: an ide-hd on an AHCI port.  IDENTIFY DEVICE has 512-byte logical
 * sectors (device.c refuses others), the physical sector size, the
 * nominal media rotation rate (1: not rotating) and the model and
 * firmware strings; libata's own limits decide the request size and NCQ
 * the depth (32).
 */
static const struct blkemu_carry sata_carries[] = {
  { "logical-block-size", T | D },
  { "physical-block-size", T },
  { "rotational", T },
  { "rpm", T | D },
  { "product", T },
  { "revision", T },
  { "zoned", 0 },
  { NULL, 0 },
};

const struct blkemu_frontend blkemu_sata_frontend = {
  .name = "SATA (qemu AHCI)",
  .id = "sata",
  .prog = "blkemu-vm",
  .carries = sata_carries,
  .ops = 0,
  .max_transfer_bytes = 32u << 20,
};

/* virtio-blk: the block sizes, min-io and opt-io in its config space,
 * and the discard and write-zeroes maxima.  It has no maximum transfer
 * (the driver's max_hw_sectors is unlimited), no FUA and no rotational
 * flag.
 */
static const struct blkemu_carry virtio_blk_carries[] = {
  { "logical-block-size", T | D },
  { "physical-block-size", T },
  { "min-io", T },
  { "opt-io", T },
  { "max-discard", T | D },
  { "max-write-zeroes", T | D },
  { "zoned", 0 },
  { NULL, 0 },
};

const struct blkemu_frontend blkemu_virtio_blk_frontend = {
  .name = "virtio-blk (qemu)",
  .id = "virtio-blk",
  .prog = "blkemu-vm",
  .carries = virtio_blk_carries,
  .ops = 0,
  .max_transfer_bytes = 32u << 20,
};
