/* The registry of timing models: model= names a choice (MODEL_LIST in
 * config.h), this table gives its ops.  Apart from model.c's helpers so
 * that the models build on those and the registry on the models, one
 * way only.
 */
#include "model.h"

/* Each model= choice's ops (MODEL_LIST in config.h names them). */
static const struct model_ops *const model_table[] = {
  [MODEL_FIXED] = &model_fixed_ops, [MODEL_HDD] = &model_hdd_ops,
  [MODEL_SSD] = &model_ssd_ops,     [MODEL_ARRAY] = &model_array_ops,
  [MODEL_LINK] = &model_fixed_ops, /* instant with zero latencies */
};
_Static_assert(sizeof model_table / sizeof model_table[0] == MODEL_COUNT,
               "every model= choice has its ops in model_table");

const struct model_ops *
model_lookup (enum model_kind kind)
{
  return (unsigned) kind < MODEL_COUNT ? model_table[kind] : NULL;
}
