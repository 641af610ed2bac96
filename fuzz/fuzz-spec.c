/* Fuzz the spec: "key=value,..." lists through the public API, then every
 * key's value on its own with a round-trip check: whatever is accepted
 * prints canonically, and the canonical text parses to the same value.
 * Paths (file=, stats=, trace=, control=, profile=) are left out: the
 * harness must not create files; so is summary= (a page on stderr per
 * run).  Disks bigger than 1T use backend=null.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blkemu/blkemu.h"
#include "fuzz.h"
#include "config.h"

static const char *const path_keys[] = { "file",    "stats",   "trace",
                                         "control", "profile", "summary" };

static int
has_path_key (const char *list)
{
  for (size_t i = 0; i < sizeof path_keys / sizeof path_keys[0]; i++)
    if (strstr (list, path_keys[i]))
      return 1;
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *list = fuzz_text (data, size, 4096);
  if (!list)
    return 0;
  if (strlen (list) != size || has_path_key (list)) {
    free (list);
    return 0;
  }
  char err[BLKEMU_ERR_MAX];

  /* The whole list, and a disk when it is valid. */
  struct blkemu_spec *spec = blkemu_spec_new ();
  if (blkemu_spec_set_list (spec, list, err, sizeof err) == 0) {
    const char *sz = blkemu_spec_get (spec, "size");
    struct blkemu_config probe;
    if (config_build (&probe, spec, err) == 0) {
      if (probe.num[K_SIZE] > (1ull << 40))
        blkemu_spec_set (spec, "backend", "null", err, sizeof err);
      config_free (&probe);
      struct blkemu_disk *disk =
        blkemu_disk_open (spec, NULL, err, sizeof err);
      if (disk) {
        struct blkemu_geometry geo;
        blkemu_disk_geometry (disk, &geo);
        if (geo.size_bytes == 0 || geo.size_bytes > (1ull << 62) ||
            geo.max_transfer_bytes == 0 ||
            geo.max_transfer_bytes % geo.logical_block_size)
          abort ();
        char *json = blkemu_disk_stats_json (disk, false);
        if (!json)
          abort ();
        free (json);
        blkemu_disk_close (disk);
      }
    }
    (void) sz;
  }
  if (strlen (err) >= BLKEMU_ERR_MAX)
    abort ();
  blkemu_spec_free (spec);

  /* Each key with the first "key=value" pair's value: accepted values
   * round-trip through their canonical spelling.
   */
  char *eq = strchr (list, '=');
  if (eq) {
    const char *value = eq + 1;
    for (int id = 0; id < K_COUNT; id++) {
      const char *key = config_key_name (id);
      struct blkemu_config a, b;
      memset (&a, 0, sizeof a);
      memset (&b, 0, sizeof b);
      if (config_apply_value (&a, id, value, err) != 0)
        continue;
      char canon[CONFIG_TEXT_MAX];
      config_format (&a, id, canon, sizeof canon);
      if (config_apply_value (&b, id, canon, err) != 0 ||
          a.num[id] != b.num[id]) {
        fprintf (stderr, "%s=%s -> '%s' does not round-trip\n", key, value,
                 canon);
        abort ();
      }
      config_free (&a);
      config_free (&b);
    }
  }
  free (list);
  return 0;
}
