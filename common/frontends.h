/* The frontends, listed once: each descriptor (struct blkemu_frontend)
 * lives beside its frontend (nbd/, fuse/, ublk/, scsi/, qemu/
 * descriptor.c, which its folder's meson.build adds to all_descriptors).
 * A new frontend is a folder with a descriptor.c and one entry here;
 * blkemu-ctl's carriage and frontends commands, and through them
 * blkemu-vm and the man pages' tables, read the list.  The shape checkers
 * (tests/layering.py, test-format.sh, test-doc-keys.sh) find the folders
 * by their descriptor.c.
 */
#ifndef BLKEMU_FRONTENDS_H
#define BLKEMU_FRONTENDS_H

#include "blkemu/blkemu.h"

/* X (NAME): the descriptor is blkemu_NAME_frontend.  nvme, sata and
 * virtio_blk are qemu's controllers over the nbdkit plugin
 * (qemu/descriptor.c).
 */
#define BLKEMU_FRONTEND_LIST(X)                                               \
  X (nbd) X (fuse) X (ublk) X (scsi) X (nvme) X (sata) X (virtio_blk)

#define BLKEMU_FRONTEND_EXTERN(name)                                          \
  extern const struct blkemu_frontend blkemu_##name##_frontend;
BLKEMU_FRONTEND_LIST (BLKEMU_FRONTEND_EXTERN)
#undef BLKEMU_FRONTEND_EXTERN

/* Inside an array's braces: a pointer to every descriptor, in the list's
 * order (a program using it links every descriptor: all_descriptors).
 */
#define BLKEMU_FRONTEND_POINTER(name) &blkemu_##name##_frontend,
#define BLKEMU_ALL_FRONTENDS BLKEMU_FRONTEND_LIST (BLKEMU_FRONTEND_POINTER)

#endif
