/* Timing models: given a request and the device's state, when does it
 * complete?  One ops table per model (like fio's engines); the disk calls
 * through it under its lock, so a model sees requests in arrival order and
 * may keep any state it likes (channels, head position, caches).
 */
#ifndef BLKEMU_MODEL_H
#define BLKEMU_MODEL_H

#include <stdint.h>

#include "config.h"

struct model_req {
  enum blkemu_op op;
  uint64_t offset;
  uint64_t len;
  unsigned flags;
  uint64_t arrival_ns;   /* when the frontend handed it over */
};

struct model_ops {
  const char *name;
  void *(*create) (const struct blkemu_config *cfg);
  void (*destroy) (void *state);
  /* Completion deadline (CLOCK_MONOTONIC ns) of REQ.  Called under the disk
   * lock, in arrival order; the model commits REQ to its state.
   */
  uint64_t (*schedule) (void *state, const struct blkemu_config *cfg,
                        const struct model_req *req);
  /* Forget history (after a stats reset or a configuration change). */
  void (*reset) (void *state);
};

extern const struct model_ops model_fixed_ops;

const struct model_ops *model_lookup (enum model_kind kind);

/* Transfer time of LEN bytes at BYTES_PER_S (0: instant). */
static inline uint64_t
model_transfer_ns (uint64_t len, uint64_t bytes_per_s)
{
  if (bytes_per_s == 0)
    return 0;
  return (uint64_t) ((unsigned __int128) len * 1000000000u / bytes_per_s);
}

#endif
