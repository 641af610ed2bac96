/* Injected faults: see faults.h. */
#include "faults.h"

#include <errno.h>
#include <string.h>

#include "trace.h"

void
faults_init (struct faults *f, const struct blkemu_config *cfg, uint64_t now)
{
  memset (f, 0, sizeof *f);
  if (cfg->num[K_STALL])
    f->stall_until_ns = now + cfg->num[K_STALL];
  f->slow_base_ns = now;
}

static bool
op_matches (enum error_op rule, enum blkemu_op op)
{
  switch (rule) {
  case ERROR_OP_ANY: return true;
  case ERROR_OP_READ: return op == BLKEMU_OP_READ;
  case ERROR_OP_WRITE: return op == BLKEMU_OP_WRITE;
  case ERROR_OP_FLUSH: return op == BLKEMU_OP_FLUSH;
  case ERROR_OP_TRIM: return op == BLKEMU_OP_TRIM;
  case ERROR_OP_ZERO: return op == BLKEMU_OP_ZERO;
  }
  return false;
}

/* Does the request touch the rule's byte range?  A flush touches all. */
static bool
range_matches (const struct blkemu_config *cfg, enum blkemu_op op,
               uint64_t offset, uint64_t len)
{
  if (op == BLKEMU_OP_FLUSH)
    return true;
  uint64_t start = cfg->num[K_ERROR_OFFSET];
  uint64_t end = cfg->num[K_SIZE];
  /* A length past the end means "to the end", never a wrapped range. */
  if (cfg->num[K_ERROR_LENGTH] && cfg->num[K_ERROR_LENGTH] < end - start)
    end = start + cfg->num[K_ERROR_LENGTH];
  return offset < end && offset + len > start;
}

static int
error_rule (struct faults *f, const struct blkemu_config *cfg, struct rng *rng,
            enum blkemu_op op, uint64_t offset, uint64_t len)
{
  enum error_mode mode = (enum error_mode) cfg->num[K_ERROR_MODE];
  if (mode == ERROR_OFF ||
      !op_matches ((enum error_op) cfg->num[K_ERROR_OP], op) ||
      !range_matches (cfg, op, offset, len))
    return 0;
  if (++f->matched <= cfg->num[K_ERROR_AFTER])
    return 0;
  if (mode == ERROR_ONCE && f->fired)
    return 0;
  if (!(mode == ERROR_STICKY && f->fired) &&
      !rng_chance (rng, cfg->num[K_ERROR_PROBABILITY]))
    return 0;
  f->fired = true;
  return config_error_errno (cfg);
}

/* A silent fault for a read or write of LEN bytes at OFFSET, drawn only
 * when its probability is set (the generator's sequence, and so every
 * seeded run without these keys, stays as it was).
 */
static void
silent_check (const struct blkemu_config *cfg, struct rng *rng,
              enum blkemu_op op, uint64_t offset, uint64_t len,
              struct fault_verdict *v)
{
  const uint64_t *n = cfg->num;
  if (op == BLKEMU_OP_READ && rng_chance (rng, n[K_BIT_FLIP_PROBABILITY])) {
    v->silent = SILENT_FLIP;
    v->silent_at = rng_next (rng) % (len * 8);
  }
  else if (op == BLKEMU_OP_WRITE &&
           rng_chance (rng, n[K_LOST_WRITE_PROBABILITY]))
    v->silent = SILENT_LOST;
  else if (op == BLKEMU_OP_WRITE && len < n[K_SIZE] &&
           rng_chance (rng, n[K_MISDIRECTED_WRITE_PROBABILITY])) {
    /* Another place for the same blocks: never the intended one. */
    uint64_t lbs = n[K_LOGICAL_BLOCK_SIZE];
    uint64_t slots = (n[K_SIZE] - len) / lbs + 1;
    uint64_t at = rng_next (rng) % slots * lbs;
    if (at == offset)
      at = (at + lbs) % (slots * lbs);
    v->silent = SILENT_MISDIRECT;
    v->silent_at = at;
  }
  if (v->silent)
    v->marks |= TRACE_CORRUPT;
}

void
faults_check (struct faults *f, const struct blkemu_config *cfg,
              struct rng *rng, enum blkemu_op op, uint64_t offset,
              uint64_t len, uint64_t now, struct fault_verdict *v)
{
  memset (v, 0, sizeof *v);
  if (f->offline) {
    v->err = EIO;
    v->refused = true;
    v->marks = TRACE_OFFLINE;
    return;
  }
  if (f->drop_armed) {
    f->drop_armed = false;
    v->err = BLKEMU_ERR_DROP;
    v->refused = true;
    v->marks = TRACE_DROP;
    return;
  }
  v->err = error_rule (f, cfg, rng, op, offset, len);
  if (v->err)
    v->marks |= TRACE_FAULT;
  if (rng_chance (rng, cfg->num[K_SPIKE_PROBABILITY])) {
    v->extra_ns = cfg->num[K_SPIKE_LATENCY];
    v->marks |= TRACE_SPIKE;
  }
  if (f->stall_until_ns > now) {
    v->not_before = f->stall_until_ns;
    v->marks |= TRACE_STALL;
  }
  if (v->err == 0 && len)
    silent_check (cfg, rng, op, offset, len, v);
}

void
faults_rearm (struct faults *f)
{
  f->matched = 0;
  f->fired = false;
}
