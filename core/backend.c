/* One request's data movement on a backend: see backend.h. */
#include "backend.h"

#include <errno.h>

int
backend_io (const struct backend *b, enum blkemu_op op, void *buf,
            uint64_t len, uint64_t offset, unsigned flags)
{
  const struct backend_ops *o = b->ops;
  switch (op) {
  case BLKEMU_OP_READ: return o->pread (b->state, buf, len, offset);
  case BLKEMU_OP_WRITE:
    return o->pwrite (b->state, buf, len, offset, flags & BLKEMU_FLAG_FUA);
  case BLKEMU_OP_FLUSH: return o->flush (b->state);
  case BLKEMU_OP_TRIM:
    return o->can_trim ? o->trim (b->state, len, offset) : 0;
  case BLKEMU_OP_ZERO: {
    int r = o->zero (b->state, len, offset, flags & BLKEMU_FLAG_MAY_TRIM);
    if (r == 0 && (flags & BLKEMU_FLAG_FUA))
      r = o->flush (b->state);
    return r;
  }
  default: return EINVAL;
  }
}

int
backend_try_io (const struct backend *b, enum blkemu_op op, void *buf,
                uint64_t len, uint64_t offset, unsigned flags)
{
  const struct backend_ops *o = b->ops;
  if (!o->try_rw || (op != BLKEMU_OP_READ && op != BLKEMU_OP_WRITE) ||
      (flags & BLKEMU_FLAG_FUA))
    return EAGAIN;
  return o->try_rw (b->state, op == BLKEMU_OP_WRITE, buf, len, offset);
}
