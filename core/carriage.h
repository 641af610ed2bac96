/* A frontend's descriptor against a disk's settings (carriage.c).
 * Internal to core/.
 */
#ifndef BLKEMU_CARRIAGE_H
#define BLKEMU_CARRIAGE_H

#include <stdio.h>

#include "config.h"

struct blkemu_disk;

/* Can FE (NULL: the C API, everything) serve a disk set as CFG?  At
 * open, and on every runtime change.  Returns 0, or -1 with ERR
 * "KEY=VALUE: FE ...".
 */
int carriage_admit (const struct blkemu_frontend *fe,
                    const struct blkemu_config *cfg, char *err);

/* At open, once admitted: the warning and transport.not_carried for the
 * keys DISK's frontend leaves without effect.  Returns how many.
 */
int carriage_warn (struct blkemu_disk *disk, FILE *fp);

#endif
