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
}

void
faults_key_set (struct faults *f, const struct blkemu_config *cfg,
                const char *key, uint64_t now)
{
  if (strncmp (key, "error-", 6) == 0) {
    f->matched = 0;
    f->fired = false;
  }
  else if (strcmp (key, "stall") == 0)
    f->stall_until_ns = cfg->num[K_STALL] ? now + cfg->num[K_STALL] : 0;
  else if (strcmp (key, "slowdown") == 0)
    f->slow_base_ns = now;
}
