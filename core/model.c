/* What the models share: the registry behind model=, their states'
 * life cycle and the service slots of the models that serve several
 * requests at once.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

void *
model_create (const struct model_ops *m, const struct blkemu_config *cfg)
{
  return m->create ? m->create (cfg) : calloc (1, m->state_size);
}

void
model_destroy (const struct model_ops *m, void *state)
{
  if (m->destroy)
    m->destroy (state);
  else
    free (state);
}

void
model_reset (const struct model_ops *m, void *state)
{
  if (m->reset)
    m->reset (state);
  else
    memset (state, 0, m->state_size);
}

unsigned
model_service_slots (const struct blkemu_config *cfg)
{
  uint64_t qd = cfg->num[K_QUEUE_DEPTH];
  uint64_t ch = cfg->num[K_CHANNELS];
  uint64_t n = ch == 0 || ch > qd ? qd : ch;
  return n > BLKEMU_MAX_CHANNELS ? BLKEMU_MAX_CHANNELS : (unsigned) n;
}
