/* What blkemu-scsi carries (see struct blkemu_frontend): the limits the
 * sd driver reads from the Block Limits VPD page (max-transfer as
 * MAXIMUM TRANSFER LENGTH, opt-io as OPTIMAL TRANSFER LENGTH, min-io as
 * its granularity, the unmap and write-same limits), the block sizes
 * from READ CAPACITY(16), rotational from the Block Device
 * Characteristics page.  The device still checks what it is sent.
 */
#include "frontends.h"

#define T BLKEMU_CARRY_TOLD
#define D BLKEMU_CARRY_DEVICE

static const struct blkemu_carry scsi_carries[] = {
  { "logical-block-size", T | D },
  { "physical-block-size", T },
  { "min-io", T },
  { "opt-io", T },
  { "max-transfer", T | D },
  { "max-discard", T | D },
  { "max-write-zeroes", T | D },
  { "boundary", D },
  { "discard-granularity", T | D },
  { "discard-alignment", T | D },
  /* MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT: each descriptor a trim. */
  { "max-discard-segments", T | D },
  /* A ZBC device (type 0x14): REPORT ZONES, the zone actions, VPD 0xB6
   * (max-open-zones); max-active-zones has no SCSI field and
   * zone-capacity reports as gap zones.
   */
  { "zoned", T | D },
  /* Block Limits' atomic fields; WRITE ATOMIC(16) checked against them */
  { "atomic-write-max", T | D },
  { "atomic-write-granularity", T | D },
  { "queue-depth", D },
  { "rotational", T },
  /* model=hdd's spindle speed as the MEDIUM ROTATION RATE (VPD 0xB1) */
  { "rpm", T | D },
  /* INQUIRY: /sys/block/sdX/device/{vendor,model,rev} */
  { "vendor", T },
  { "product", T },
  { "revision", T },
  { NULL, 0 },
};

const struct blkemu_frontend blkemu_scsi_frontend = {
  .name = "SCSI (TCMU)",
  .id = "scsi",
  .prog = "blkemu-scsi",
  .carries = scsi_carries,
  .ops = BLKEMU_FE_ZONES | BLKEMU_FE_MULTI_DISCARD,
  .max_transfer_bytes = 0,
};
