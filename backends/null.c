/* backend=null: reads return zeros, writes are discarded.  For pure timing
 * experiments where the data does not matter.
 */
#include <string.h>

#include "backend.h"

static int
null_open (struct blkemu_config *cfg, void **state, char *err)
{
  (void) cfg;
  (void) err;
  *state = NULL;
  return 0;
}

static void
null_close (void *state)
{
  (void) state;
}

static int
null_pread (void *state, void *buf, uint64_t len, uint64_t offset)
{
  (void) state;
  (void) offset;
  memset (buf, 0, len);
  return 0;
}

static int
null_pwrite (void *state, const void *buf, uint64_t len, uint64_t offset,
             bool fua)
{
  (void) state;
  (void) buf;
  (void) len;
  (void) offset;
  (void) fua;
  return 0;
}

static int
null_flush (void *state)
{
  (void) state;
  return 0;
}

static int
null_trim (void *state, uint64_t len, uint64_t offset)
{
  (void) state;
  (void) len;
  (void) offset;
  return 0;
}

static int
null_zero (void *state, uint64_t len, uint64_t offset, bool may_trim)
{
  (void) state;
  (void) len;
  (void) offset;
  (void) may_trim;
  return 0;
}

static bool
null_reads_zero (void *state, uint64_t len, uint64_t offset)
{
  (void) state, (void) len, (void) offset;
  return true;
}

static int
null_extents (void *state, uint64_t offset, uint64_t len, blkemu_extent_cb cb,
              void *opaque)
{
  (void) state;
  cb (opaque, offset, len, true);
  return 0;
}

const struct backend_ops backend_null_ops = {
  .name = "null",
  .persistent = false,
  .can_trim = true,
  .can_zero = true,
  .can_extents = true,
  .open = null_open,
  .close = null_close,
  .pread = null_pread,
  .pwrite = null_pwrite,
  .flush = null_flush,
  .trim = null_trim,
  .zero = null_zero,
  .extents = null_extents,
  .reads_zero = null_reads_zero,
};
