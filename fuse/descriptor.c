/* What blkemu-fuse carries (see struct blkemu_frontend).  The kernel's
 * FUSE driver splits by its own max_pages and loop tells its block
 * layer nothing of the file: the device enforces what it can, and no
 * hint reaches anyone.
 */
#include "frontends.h"

static const struct blkemu_carry fuse_carries[] = {
  { "zoned", 0 }, /* no zone commands (BLKEMU_FE_ZONES is not in ops) */
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
