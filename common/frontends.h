/* The frontends' descriptors (struct blkemu_frontend): each lives beside
 * its frontend (nbd/, fuse/, ublk/, scsi/ descriptor.c); blkemu-ctl prints
 * them side by side.  A new frontend adds its own here and to that list.
 */
#ifndef BLKEMU_FRONTENDS_H
#define BLKEMU_FRONTENDS_H

#include "blkemu/blkemu.h"

extern const struct blkemu_frontend blkemu_nbd_frontend;
extern const struct blkemu_frontend blkemu_fuse_frontend;
extern const struct blkemu_frontend blkemu_ublk_frontend;
extern const struct blkemu_frontend blkemu_scsi_frontend;

#endif
