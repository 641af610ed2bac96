/* The request pipeline (pipeline.c): every read, write, flush, trim,
 * write-zeroes, zone command and zone append from arrival to completion.
 * Internal to core/.
 */
#ifndef BLKEMU_PIPELINE_H
#define BLKEMU_PIPELINE_H

#include "blkemu/blkemu.h"
#include "engine.h"

/* The completion engine's callback: a request is due (CANCEL_ERR 0) or
 * the engine stops (CANCEL_ERR: what the request completes with).
 */
void pipeline_fire (struct engine_entry *entry, int cancel_err);
/* A queued request submitted with COOKIE that an abort ends: one the
 * device is only timing, not one a stall holds (firmware that stopped
 * answering answers no abort either).
 */
bool pipeline_abortable (const struct engine_entry *entry, void *cookie);

/* blkemu_submit on TL: fired by its engine, counted in its stats, the
 * request taken from its pool.
 */
struct blkemu_timeline;
int pipeline_submit_on (struct blkemu_timeline *tl, enum blkemu_op op,
                        void *buf, uint64_t len, uint64_t offset,
                        unsigned flags, blkemu_done_cb done, void *cookie);
/* blkemu_submit_append and blkemu_zone_submit, on TL (NULL: the disk's
 * completion thread).
 */
int pipeline_append_on (struct blkemu_disk *disk, struct blkemu_timeline *tl,
                        const void *buf, uint64_t len, uint64_t zone_offset,
                        unsigned flags, uint64_t *written_at,
                        blkemu_done_cb done, void *cookie);
int pipeline_zone_submit_on (struct blkemu_disk *disk,
                             struct blkemu_timeline *tl,
                             enum blkemu_zone_op op, uint64_t offset,
                             blkemu_done_cb done, void *cookie);
/* TL's pooled requests freed; none may be outstanding. */
void pipeline_pool_free (struct blkemu_timeline *tl);

#endif
