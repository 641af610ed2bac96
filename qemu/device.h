/* qemu's -device for a disk blkemu serves through one of qemu's own
 * controllers (descriptor.c).
 */
#ifndef BLKEMU_QEMU_DEVICE_H
#define BLKEMU_QEMU_DEVICE_H

#include <stddef.h>

#include "blkemu/blkemu.h"

/* The longest serial number the three controllers all keep (NVMe SN,
 * ATA words 10-19, virtio-blk's ID): the guest finds a disk by it.
 */
#define QEMU_SERIAL_MAX 20

/* Write into OUT qemu's -device values presenting DISK through FE (one
 * of the controllers of descriptor.c), one a line: "ide-hd,serial=d0,
 * ...", or for NVMe the controller and its namespace ("nvme,serial=d0,
 * id=blkemu-ctrl-d0,mdts=5\nnvme-ns,bus=blkemu-ctrl-d0,ms=8,..."), every
 * field derived from the disk's keys.  The last line holds the drive:
 * the caller adds drive= to it (and a SATA port's bus=).  Returns 0, or -1
 * with ERR naming the key, its value and what the controller cannot express.
 */
int qemu_device_string (const struct blkemu_frontend *fe,
                        struct blkemu_disk *disk, char *out, size_t len,
                        char *err, size_t errlen);

/* The controller whose descriptor .id is ID, or NULL. */
const struct blkemu_frontend *qemu_controller (const char *id);

#endif
