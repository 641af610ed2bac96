/* What blkemu-fuse carries (see struct blkemu_frontend).  The kernel's
 * FUSE driver splits by its own max_pages and loop tells its block
 * layer nothing of the file: every limit is the device's alone.
 */
#include "frontends.h"

static const struct blkemu_carry fuse_carries[] = {
  { "physical-block-size", 0 },
  { "min-io", 0 },
  { "opt-io", 0 },
  { "rotational", 0 },
  { "virt-boundary", 0 },
  { "max-discard-segments", 0 },
  { "max-segments", 0 },
  { "max-segment-size", 0 },
  { "segment-boundary", 0 },
  { "dma-alignment", 0 },
  { "zoned", 0 },
  { NULL, 0 },
};

const struct blkemu_frontend blkemu_fuse_frontend = {
  .name = "FUSE",
  .id = "fuse",
  .prog = "blkemu-fuse",
  .carries = fuse_carries,
  .ops = 0,
  .max_transfer_bytes = 0, /* FUSE caps requests itself (max_pages) */
};
