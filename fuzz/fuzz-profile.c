/* Fuzz a profile's text (key = value lines, # comments) as profile=FILE
 * would apply it over the defaults, then the cross-key rules.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"
#include "fuzz.h"
#include "config.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = fuzz_text (data, size, 65536);
  if (!text)
    return 0;
  char err[BLKEMU_ERR_MAX];
  struct blkemu_spec *spec = blkemu_spec_new ();
  struct blkemu_config cfg;
  blkemu_spec_set (spec, "size", "1G", err, sizeof err);
  if (config_build (&cfg, spec, err) != 0)
    abort ();
  if (config_apply_profile_text (&cfg, "fuzz.conf", text, err) == 0)
    config_validate (&cfg, err);
  if (strlen (err) >= BLKEMU_ERR_MAX)
    abort ();
  config_free (&cfg);
  blkemu_spec_free (spec);
  free (text);
  return 0;
}
