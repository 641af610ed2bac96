/* How far a frontend carries the keys, from the descriptor it passed at
 * open (struct blkemu_frontend).  Everything the device does (timing,
 * faults, caches, the checks of the request pipeline) works the same on
 * every frontend; what differs is whether the layer above — an NBD
 * client, the kernel's FUSE and loop drivers, the kernel's block layer
 * under ublk — is told a limit and splits by it, and which operations
 * the frontend can express at all.  The core names no frontend: what it
 * says about one comes from its descriptor.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "carriage.h"
#include "error.h"
#include "keys.h"

#define T BLKEMU_CARRY_TOLD
#define D BLKEMU_CARRY_DEVICE

/* Keys whose setting needs an operation of the frontend.  A zoned disk
 * is usable only with zone commands (its zones fill up and are reset),
 * whatever is told; more than one discard segment matters only where
 * the limit is told (the layer above then merges discards the frontend
 * must pass on as one).
 */
static const struct {
  int key;
  unsigned op; /* BLKEMU_FE_* */
  bool only_if_told;
  const char *lacks; /* "FE has no ..." */
} needs[] = {
  { K_ZONED, BLKEMU_FE_ZONES, false,
    "zone commands, zone reports or zone append" },
  { K_MAX_DISCARD_SEGMENTS, BLKEMU_FE_MULTI_DISCARD, true,
    "multi-range discards (at most 1)" },
  { K_METADATA_SIZE, BLKEMU_FE_METADATA, false, "per-block metadata" },
  { K_PROTECTION, BLKEMU_FE_METADATA, false,
    "per-block metadata for protection information" },
};

/* Hints to the layer above that the device itself cannot apply: a
 * frontend that does not tell them leaves them without effect.  Every
 * other key the device enforces on its own.
 */
static const int told_only[] = {
  K_PHYSICAL_BLOCK_SIZE,
  K_MIN_IO,
  K_OPT_IO,
  K_ROTATIONAL,
  K_VIRT_BOUNDARY,
  K_MAX_DISCARD_SEGMENTS,
  K_MAX_SEGMENTS,
  K_MAX_SEGMENT_SIZE,
  K_SEGMENT_BOUNDARY,
  K_DMA_ALIGNMENT,
  K_VENDOR,
  K_PRODUCT,
  K_REVISION,
  K_ATOMIC_WRITE_MAX,
  K_ATOMIC_WRITE_GRANULARITY,
};

/* How FE carries key ID: as its descriptor says, not at all when it
 * lacks the operation the key needs (it refuses the key), or else the
 * device's alone (a hint: nobody's).
 */
static unsigned
carriage_of (const struct blkemu_frontend *fe, int id)
{
  if (!fe)
    return T | D;
  for (const struct blkemu_carry *c = fe->carries; c && c->key; c++)
    if (!strcmp (c->key, config_keys[id].name))
      return c->how;
  for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
    if (needs[i].key == id && !needs[i].only_if_told &&
        !(fe->ops & needs[i].op))
      return 0;
  for (size_t i = 0; i < sizeof told_only / sizeof told_only[0]; i++)
    if (told_only[i] == id)
      return 0;
  return D;
}

static bool
is_default (const struct blkemu_config *cfg, int id)
{
  char v[64];
  config_format (cfg, id, v, sizeof v);
  const char *def = config_keys[id].def ? config_keys[id].def : "";
  return !strcmp (v, def);
}

int
carriage_admit (const struct blkemu_frontend *fe,
                const struct blkemu_config *cfg, char *err)
{
  if (!fe)
    return 0;
  /* A descriptor names itself (messages, stats) and lists its keys. */
  assert (fe->name && fe->id && fe->prog);
  for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
    int id = needs[i].key;
    if (is_default (cfg, id) || (fe->ops & needs[i].op))
      continue;
    if (needs[i].only_if_told && !(carriage_of (fe, id) & T))
      continue;
    char v[64];
    config_format (cfg, id, v, sizeof v);
    set_err (err,
             "%s=%s: %s has no %s: needs a frontend that carries it "
             "(blkemu-ctl carriage)",
             config_keys[id].name, v, fe->name, needs[i].lacks);
    return -1;
  }
  if (fe->max_transfer_bytes &&
      cfg->num[K_MAX_TRANSFER] > fe->max_transfer_bytes) {
    char v[64];
    config_format (cfg, K_MAX_TRANSFER, v, sizeof v);
    set_err (err, "max-transfer=%s: %s moves at most %u bytes a request", v,
             fe->name, fe->max_transfer_bytes);
    return -1;
  }
  return 0;
}

int
carriage_uncarried (const struct blkemu_frontend *fe,
                    const struct blkemu_config *cfg, char *list, size_t len)
{
  size_t used = 0;
  int count = 0;
  if (len)
    list[0] = '\0';
  for (int id = 0; fe && id < K_COUNT; id++) {
    if (carriage_of (fe, id) != 0 || is_default (cfg, id))
      continue;
    char v[64];
    config_format (cfg, id, v, sizeof v);
    int w = snprintf (list + used, len - used, "%s%s=%s", used ? " " : "",
                      config_keys[id].name, v);
    if (w < 0 || (size_t) w >= len - used)
      break;
    used += (size_t) w;
    count++;
  }
  return count;
}

static const char *
carriage_name (unsigned carry)
{
  switch (carry) {
  case T | D: return "told+device";
  case T: return "told";
  case D: return "device";
  default: return "not-carried";
  }
}

void
blkemu_carriage_print (FILE *fp, const struct blkemu_frontend *const *fes,
                       size_t n)
{
  fprintf (fp, "%-22s", "key");
  for (size_t f = 0; f < n; f++)
    fprintf (fp, f + 1 < n ? " %-12s" : " %s", fes[f]->id);
  fputc ('\n', fp);
  for (int id = 0; id < K_COUNT; id++) {
    bool listed = false;
    for (size_t f = 0; f < n; f++)
      listed |= carriage_of (fes[f], id) != D;
    if (!listed)
      continue;
    fprintf (fp, "%-22s", config_keys[id].name);
    for (size_t f = 0; f < n; f++)
      fprintf (fp, f + 1 < n ? " %-12s" : " %s",
               carriage_name (carriage_of (fes[f], id)));
    fputc ('\n', fp);
  }
}
