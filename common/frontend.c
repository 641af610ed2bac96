/* Shared frontend pieces: see frontend.h. */
#include "frontend.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
frontend_open_disks (const char *prog, const struct blkemu_frontend *fe,
                     char *const *specs, size_t n, const char *reserved,
                     struct blkemu_disk **disks)
{
  char err[BLKEMU_ERR_MAX];
  if (n == 0) {
    fprintf (stderr,
             "%s: no disks: give at least one "
             "--disk 'name=d0,size=1G,...'\n",
             prog);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    disks[i] = blkemu_disk_open_spec (specs[i], i, fe, err, sizeof err);
    if (!disks[i]) {
      fprintf (stderr, "%s: --disk '%s': %s\n", prog, specs[i], err);
      frontend_close_disks (disks, i);
      return -1;
    }
    const char *name = blkemu_disk_name (disks[i]);
    bool clash = reserved && !strcmp (name, reserved);
    if (clash)
      fprintf (stderr, "%s: name=%s: reserved for the attribute directory\n",
               prog, name);
    for (size_t j = 0; j < i && !clash; j++)
      if (!strcmp (blkemu_disk_name (disks[j]), name)) {
        fprintf (stderr, "%s: name=%s: two disks with this name\n", prog,
                 name);
        clash = true;
      }
    if (clash) {
      frontend_close_disks (disks, i + 1);
      return -1;
    }
  }
  return 0;
}

int
frontend_close_disks (struct blkemu_disk **disks, size_t n)
{
  int r = 0;
  for (size_t i = 0; i < n; i++) {
    if (blkemu_disk_close (disks[i]) == -1)
      r = -1;
    disks[i] = NULL;
  }
  return r;
}

void
frontend_print_common_options (FILE *fp)
{
  fputs ("  --list-keys          print the disk keys and exit\n"
         "  --list-profiles      print the presets for profile=NAME and exit\n"
         "  -h, --help           print this help and exit\n"
         "  -V, --version        print the version and exit\n",
         fp);
}

int
frontend_list_keys (void)
{
  blkemu_spec_print_help (stdout, "");
  return 0;
}

int
frontend_list_profiles (void)
{
  return blkemu_profiles_print (stdout) > 0 ? 0 : 1;
}

int
frontend_print_version (const char *prog, const char *extra)
{
  printf ("%s %s%s%s\n", prog, BLKEMU_VERSION, extra ? " " : "",
          extra ? extra : "");
  return 0;
}
