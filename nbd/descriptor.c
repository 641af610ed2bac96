/* What the nbdkit plugin carries (see struct blkemu_frontend).  NBD
 * tells a client three block sizes and a few flags; the kernel's other
 * queue limits do not travel over it.
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
  /* No zone commands, reports or append (the core refuses a zoned disk:
   * BLKEMU_FE_ZONES is not in ops).
   */
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
