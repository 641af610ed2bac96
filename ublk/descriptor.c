/* What blkemu-ublk carries (see struct blkemu_frontend): the kernel's
 * queue limits, set through ublk's parameters, so the block layer
 * above splits and merges by them; the device still checks.
 */
#include "frontends.h"

#define T BLKEMU_CARRY_TOLD
#define D BLKEMU_CARRY_DEVICE

static const struct blkemu_carry ublk_carries[] = {
  { "logical-block-size", T | D },
  { "physical-block-size", T },
  { "min-io", T },
  { "opt-io", T },
  { "max-transfer", T | D },
  { "max-discard", T | D },
  { "max-write-zeroes", T | D },
  { "boundary", T | D },
  { "virt-boundary", T },
  { "discard-granularity", T | D },
  { "discard-alignment", T | D },
  /* Told, but ublk_drv passes one range per discard: more is refused. */
  { "max-discard-segments", T },
  { "max-segments", T },
  { "max-segment-size", T },
  { "segment-boundary", T },
  { "dma-alignment", T },
  { "zoned", T | D },
  { "queue-depth", T | D },
  { "rotational", T },
  { NULL, 0 },
};

const struct blkemu_frontend blkemu_ublk_frontend = {
  .name = "ublk",
  .id = "ublk",
  .prog = "blkemu-ublk",
  .carries = ublk_carries,
  .ops = BLKEMU_FE_ZONES | BLKEMU_FE_ZERO_READS,
  .max_transfer_bytes = 0,
};
