/* What the nbdkit plugin carries (see struct blkemu_frontend).  NBD
 * tells a client three block sizes and a few flags; everything else
 * the device enforces alone, or nobody does.
 */
#include "frontends.h"

#define T BLKEMU_CARRY_TOLD
#define D BLKEMU_CARRY_DEVICE

static const struct blkemu_carry nbd_carries[] = {
  /* The minimum block size; the device refuses misaligned requests. */
  { "logical-block-size", T | D },
  /* The preferred block size: the larger of these. */
  { "physical-block-size", T },
  { "opt-io", T },
  /* The maximum block size. */
  { "max-transfer", T | D },
  { "rotational", T },
  /* No kernel queue limits travel over NBD. */
  { "min-io", 0 },
  { "virt-boundary", 0 },
  { "max-discard-segments", 0 },
  { "max-segments", 0 },
  { "max-segment-size", 0 },
  { "segment-boundary", 0 },
  { "dma-alignment", 0 },
  { "zoned", 0 },
  { NULL, 0 },
};

const struct blkemu_frontend blkemu_nbd_frontend = {
  .name = "NBD",
  .id = "nbd",
  .prog = "nbdkit-blkemu-plugin",
  .carries = nbd_carries,
  .ops = 0,
  /* The largest request nbdkit passes on (and portable NBD clients send). */
  .max_transfer_bytes = 32u << 20,
};
