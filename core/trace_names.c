/* The trace's vocabulary, shared by its writer (trace.c) and its
 * reader (trace_read.c): op letters and mark names.
 */
#include "trace.h"

const char trace_op_letter[BLKEMU_OP_COUNT] = { 'R', 'W', 'F', 'T', 'Z' };
static const char *const mark_names[] = {
  "split",   "oversize", "fua",    "fault",  "spike",    "stall",
  "offline", "drop",     "cached", "slow",   "boundary", "zone-reset",
  "append",  "crashed",  "medium", "corrupt"
};
_Static_assert(sizeof mark_names / sizeof mark_names[0] == TRACE_MARK_COUNT,
               "a name for every trace mark");

const char *
blkemu_trace_mark_name (unsigned i)
{
  return i < TRACE_MARK_COUNT ? mark_names[i] : NULL;
}
