/* The request pipeline (pipeline.c): every read, write, flush, trim,
 * write-zeroes, zone command and zone append from arrival to completion.
 * Internal to core/.
 */
#ifndef BLKEMU_PIPELINE_H
#define BLKEMU_PIPELINE_H

#include "engine.h"

/* The completion engine's callback: a request is due (CANCEL_ERR 0) or
 * the engine stops (CANCEL_ERR: what the request completes with).
 */
void pipeline_fire (struct engine_entry *entry, int cancel_err);

#endif
