/* The frontends' descriptors (struct blkemu_frontend): each lives beside
 * its frontend (nbd/, fuse/, ublk/, scsi/, qemu/ descriptor.c);
 * blkemu-ctl prints them side by side.  A new frontend adds its own here
 * and to that list.
 */
#ifndef BLKEMU_FRONTENDS_H
#define BLKEMU_FRONTENDS_H

#include "blkemu/blkemu.h"

extern const struct blkemu_frontend blkemu_nbd_frontend;
extern const struct blkemu_frontend blkemu_fuse_frontend;
extern const struct blkemu_frontend blkemu_ublk_frontend;
extern const struct blkemu_frontend blkemu_scsi_frontend;
/* qemu's controllers over the nbdkit plugin (qemu/descriptor.c) */
extern const struct blkemu_frontend blkemu_nvme_frontend;
extern const struct blkemu_frontend blkemu_sata_frontend;
extern const struct blkemu_frontend blkemu_virtio_blk_frontend;

#endif
