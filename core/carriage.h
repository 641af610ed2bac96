/* A frontend's descriptor against a disk's settings (carriage.c).
 * Internal to core/.
 */
#ifndef BLKEMU_CARRIAGE_H
#define BLKEMU_CARRIAGE_H

#include <stdio.h>

#include "config.h"

/* Can FE (NULL: the C API, everything) serve a disk set as CFG?  At
 * open, and on every runtime change.  Returns 0, or -1 with ERR
 * "KEY=VALUE: FE ...".
 */
int carriage_admit (const struct blkemu_frontend *fe,
                    const struct blkemu_config *cfg, char *err);

/* The keys CFG sets away from their defaults that FE neither tells nor
 * enforces, as "key=value ..." in LIST (LEN bytes; the keys that do not
 * fit are left out).  Returns how many are listed.
 */
int carriage_uncarried (const struct blkemu_frontend *fe,
                        const struct blkemu_config *cfg, char *list,
                        size_t len);

#endif
