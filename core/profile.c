/* Profiles: presets of keys in profiles/NAME.conf, found in
 * $BLKEMU_PROFILE_DIR, the source tree and the installed data directory.
 */
#include "keys.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

/* Where profiles are looked for, in order: $BLKEMU_PROFILE_DIR (your
 * own), the source tree this was built from (when it is still there),
 * and the installed data directory.
 */
#ifndef BLKEMU_PROFILE_DIR
#define BLKEMU_PROFILE_DIR NULL /* a package: no source tree */
#endif
#ifndef BLKEMU_PROFILE_INSTALL_DIR
#define BLKEMU_PROFILE_INSTALL_DIR "/usr/local/share/blkemu/profiles"
#endif
#define PROFILE_DIRS 3

static void
profile_dirs (const char *dirs[PROFILE_DIRS])
{
  dirs[0] = getenv ("BLKEMU_PROFILE_DIR");
  dirs[1] = BLKEMU_PROFILE_DIR;
  dirs[2] = BLKEMU_PROFILE_INSTALL_DIR;
}

/* A profile is a short text file: reading stops at this size, so a
 * profile=/dev/zero or a huge file is an error, not a hang.
 */
#define PROFILE_MAX_BYTES (64 * 1024)

/* Where profile NAME lives: a path as given, or NAME.conf in the search
 * path.  Returns 0 with PATH filled, or -1 (PATH holds the last tried).
 */
static int
find_profile (const char *name, char *path, size_t pathlen)
{
  if (strchr (name, '/') || strstr (name, ".conf")) {
    snprintf (path, pathlen, "%s", name);
    return access (path, F_OK);
  }
  const char *dirs[PROFILE_DIRS];
  profile_dirs (dirs);
  for (size_t i = 0; i < PROFILE_DIRS; i++) {
    if (!dirs[i])
      continue;
    snprintf (path, pathlen, "%s/%s.conf", dirs[i], name);
    if (access (path, F_OK) == 0)
      return 0;
  }
  return -1;
}

/* Read PATH whole into a NUL-terminated malloc'd buffer: a regular file
 * of at most PROFILE_MAX_BYTES with no NUL bytes in it.
 */
static char *
read_profile_file (const char *name, const char *path, char *err)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd == -1) {
    set_err (err, "profile=%s: cannot open %s: %s", name, path,
             strerrordesc_np (errno));
    return NULL;
  }
  if (fstat (fd, &st) == -1 || !S_ISREG (st.st_mode)) {
    set_err (err, "profile=%s: %s is not a regular file", name, path);
    close (fd);
    return NULL;
  }
  char *text = malloc (PROFILE_MAX_BYTES + 1);
  size_t have = 0;
  ssize_t r = 0;
  while (text && have <= PROFILE_MAX_BYTES &&
         (r = read (fd, text + have, PROFILE_MAX_BYTES + 1 - have)) > 0)
    have += (size_t) r;
  close (fd);
  if (!text || r < 0) {
    set_err (err, "profile=%s: reading %s: %s", name, path,
             text ? strerrordesc_np (errno) : "out of memory");
    free (text);
    return NULL;
  }
  if (have > PROFILE_MAX_BYTES) {
    set_err (err,
             "profile=%s: %s is larger than %d bytes (a profile is a "
             "short key = value file)",
             name, path, PROFILE_MAX_BYTES);
    free (text);
    return NULL;
  }
  if (memchr (text, '\0', have)) {
    set_err (err, "profile=%s: %s holds a NUL byte (not a text file)", name,
             path);
    free (text);
    return NULL;
  }
  text[have] = '\0';
  return text;
}

static char *trim (char *s);

/* The one-line description: the first comment, "# NAME: text". */
static void
profile_description (const char *path, const char *name, char *out, size_t len)
{
  char line[512];
  FILE *fp = fopen (path, "r");
  *out = '\0';
  if (!fp)
    return;
  if (fgets (line, sizeof line, fp) && line[0] == '#') {
    char *text = trim (line + 1);
    size_t n = strlen (name);
    if (strncmp (text, name, n) == 0 && text[n] == ':')
      text = trim (text + n + 1);
    snprintf (out, len, "%s", text);
  }
  fclose (fp);
}

static int
is_profile_file (const struct dirent *e)
{
  size_t l = strlen (e->d_name);
  return l > 5 && strcmp (e->d_name + l - 5, ".conf") == 0;
}

int
blkemu_profiles_print (FILE *fp)
{
  const char *dirs[PROFILE_DIRS];
  profile_dirs (dirs);
  int shown = 0;
  for (size_t d = 0; d < PROFILE_DIRS; d++) {
    /* Each directory once (the source tree may be the installed one). */
    bool seen = !dirs[d];
    for (size_t e = 0; e < d && !seen; e++)
      seen = dirs[e] && strcmp (dirs[e], dirs[d]) == 0;
    if (seen)
      continue;
    struct dirent **list;
    int n = scandir (dirs[d], &list, is_profile_file, alphasort);
    if (n < 0)
      continue;
    fprintf (fp, "profiles in %s:\n", dirs[d]);
    for (int i = 0; i < n; i++) {
      char name[sizeof list[i]->d_name], path[4096], desc[400];
      snprintf (name, sizeof name, "%.*s", (int) strlen (list[i]->d_name) - 5,
                list[i]->d_name);
      snprintf (path, sizeof path, "%s/%s.conf", dirs[d], name);
      profile_description (path, name, desc, sizeof desc);
      fprintf (fp, "  %-22s %s\n", name, desc);
      free (list[i]);
      shown++;
    }
    free (list);
  }
  return shown;
}

static char *
trim (char *s)
{
  while (isspace ((unsigned char) *s))
    s++;
  char *e = s + strlen (s);
  while (e > s && isspace ((unsigned char) e[-1]))
    *--e = '\0';
  return s;
}

int
config_apply_profile_text (struct blkemu_config *cfg, const char *path,
                           char *text, char *err)
{
  int lineno = 0;
  for (char *line = text, *next; line; line = next) {
    lineno++;
    next = strchr (line, '\n');
    if (next)
      *next++ = '\0';
    char *hash = strchr (line, '#');
    if (hash)
      *hash = '\0';
    char *s = trim (line);
    if (*s == '\0')
      continue;
    char *eq = strchr (s, '=');
    if (!eq) {
      set_err (err, "profile %s:%d: expected key=value", path, lineno);
      return -1;
    }
    *eq = '\0';
    char *key = trim (s), *value = trim (eq + 1);
    int id = config_key_lookup (key);
    char sub[BLKEMU_ERR_MAX];
    if (id < 0 || id == K_PROFILE) {
      set_err (err, "profile %s:%d: unknown key '%.64s'", path, lineno, key);
      return -1;
    }
    if (config_apply_value (cfg, id, value, sub) == -1) {
      set_err (err, "profile %s:%d: %s", path, lineno, sub);
      return -1;
    }
  }
  return 0;
}

int
load_profile (struct blkemu_config *cfg, const char *name, char *err)
{
  char path[4096];
  if (find_profile (name, path, sizeof path) == -1) {
    set_err (err, "profile=%s: no such profile (looked for %s): %s", name,
             path, strerrordesc_np (errno));
    return -1;
  }
  char *text = read_profile_file (name, path, err);
  if (!text)
    return -1;
  int r = config_apply_profile_text (cfg, path, text, err);
  free (text);
  return r;
}
