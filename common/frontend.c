/* Shared frontend pieces: see frontend.h. */
#include "frontend.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
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

int
frontend_parse_args (const struct frontend_cli *cli, int argc, char **argv,
                     struct frontend_args *a)
{
  static const struct option common[] = {
    { "disk", required_argument, NULL, 'd' },
    { "ready-file", required_argument, NULL, 'r' },
    { "delete-stale", no_argument, NULL, 's' },
    { "list-keys", no_argument, NULL, 'k' },
    { "list-profiles", no_argument, NULL, 'p' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
  };
  size_t ncommon = sizeof common / sizeof common[0], nextra = 0;
  while (cli->extra && cli->extra[nextra].name)
    nextra++;
  struct option *longopts = calloc (ncommon + nextra + 1, sizeof *longopts);
  *a = (struct frontend_args){ .specs =
                                 calloc (cli->max_disks, sizeof *a->specs) };
  if (!longopts || !a->specs) {
    fprintf (stderr, "%s: out of memory\n", cli->prog);
    free (longopts);
    frontend_args_free (a);
    return 1;
  }
  memcpy (longopts, common, sizeof common);
  if (nextra)
    memcpy (longopts + ncommon, cli->extra, nextra * sizeof *longopts);
  int c, status = -1;
  while (status == -1 &&
         (c = getopt_long (argc, argv, "hV", longopts, NULL)) != -1)
    switch (c) {
    case 'd':
      if (a->nspecs == cli->max_disks) {
        fprintf (stderr, "%s: at most %zu disks\n", cli->prog, cli->max_disks);
        status = 1;
        break;
      }
      a->specs[a->nspecs++] = optarg;
      break;
    case 'r': a->ready_file = optarg; break;
    case 's': a->delete_stale = true; break;
    case 'k': status = frontend_list_keys (); break;
    case 'p': status = frontend_list_profiles (); break;
    case 'h':
      cli->usage (stdout);
      status = 0;
      break;
    case 'V': status = frontend_print_version (cli->prog, NULL); break;
    case '?':
      cli->usage (stderr);
      status = 1;
      break;
    default: status = cli->take_extra ? cli->take_extra (c, optarg) : 1; break;
    }
  free (longopts);
  if (status == -1 && optind < argc) {
    fprintf (stderr, "%s: unexpected argument '%s'\n", cli->prog,
             argv[optind]);
    status = 1;
  }
  if (status == -1 && a->delete_stale && a->nspecs) {
    fprintf (stderr, "%s: --delete-stale takes no --disk\n", cli->prog);
    status = 1;
  }
  if (status != -1)
    frontend_args_free (a);
  return status;
}

void
frontend_args_free (struct frontend_args *a)
{
  free (a->specs);
  a->specs = NULL;
  a->nspecs = 0;
}

int
frontend_ready_add (const char *prog, struct frontend_ready *r,
                    const char *name, const char *device)
{
  size_t add = strlen (name) + strlen (device) + 2;
  char *text = realloc (r->text, r->len + add + 1);
  if (!text) {
    fprintf (stderr, "%s: out of memory\n", prog);
    return -1;
  }
  r->text = text;
  r->len +=
    (size_t) snprintf (text + r->len, add + 1, "%s %s\n", name, device);
  return 0;
}

int
frontend_ready_write (const char *prog, const char *path,
                      struct frontend_ready *r)
{
  const char *text = r->text ? r->text : "";
  fputs (text, stdout);
  fflush (stdout);
  int status = 0;
  if (path && blkemu_write_file_atomic (path, text) == -1) {
    fprintf (stderr, "%s: --ready-file %s: %s\n", prog, path,
             strerror (errno));
    status = -1;
  }
  free (r->text);
  *r = (struct frontend_ready){ 0 };
  return status;
}

void
frontend_block_stop (sigset_t *set)
{
  sigemptyset (set);
  sigaddset (set, SIGINT);
  sigaddset (set, SIGTERM);
  sigaddset (set, SIGHUP);
  pthread_sigmask (SIG_BLOCK, set, NULL);
}

void
frontend_wait_stop (const char *prog, const sigset_t *set, const char *what)
{
  int sig;
  sigwait (set, &sig);
  fprintf (stderr, "%s: %s: %s\n", prog, strsignal (sig), what);
}

int
frontend_serve (const struct frontend_server *s, const char *ready_file,
                const sigset_t *stop)
{
  int status = 1;
  char device[160]; /* one or more names: "/dev/sdb /dev/sdc" */
  const char *name;
  struct frontend_ready ready = { 0 };
  for (size_t i = 0; i < s->ndisks; i++)
    if (s->start (s->ctx, i, &name, device, sizeof device) == -1 ||
        frontend_ready_add (s->prog, &ready, name, device) == -1)
      goto out;
  if (frontend_ready_write (s->prog, ready_file, &ready) == -1)
    goto out;
  frontend_wait_stop (s->prog, stop, s->stopping);
  status = 0;

out:
  free (ready.text); /* what was not written */
  for (size_t i = s->ndisks; i-- > 0;)
    if (s->stop (s->ctx, i) == -1)
      status = 1; /* stats= could not be written */
  if (ready_file)
    unlink (ready_file);
  return status;
}
