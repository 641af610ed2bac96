/* Spec keys: lookup, parsing of one value, the raw spec (key=value pairs
 * before validation) and the help table.
 */
#include "keys.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "units.h"

/* Key ids in name order, for a binary search: every spec, `get`, `set`
 * and attribute file looks keys up by name, and `get` of all of them
 * did K_COUNT linear scans.
 */
static int keys_by_name[K_COUNT];
static pthread_once_t keys_by_name_once = PTHREAD_ONCE_INIT;

static int
cmp_key_id (const void *a, const void *b)
{
  return strcmp (config_keys[*(const int *) a].name,
                 config_keys[*(const int *) b].name);
}

static void
sort_keys_by_name (void)
{
  for (int i = 0; i < K_COUNT; i++)
    keys_by_name[i] = i;
  qsort (keys_by_name, K_COUNT, sizeof keys_by_name[0], cmp_key_id);
}

int
config_key_lookup (const char *key)
{
  pthread_once (&keys_by_name_once, sort_keys_by_name);
  size_t lo = 0, hi = K_COUNT;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp (key, config_keys[keys_by_name[mid]].name);
    if (c == 0)
      return keys_by_name[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return -1;
}

const char *
config_key_name (int id)
{
  return config_keys[id].name;
}

const char *
blkemu_key_name (size_t n)
{
  return n < K_COUNT ? config_keys[n].name : NULL;
}

bool
blkemu_key_is_runtime (const char *key)
{
  int id = config_key_lookup (key);
  return id >= 0 && config_keys[id].runtime;
}

static int
enum_index (const char *choices, const char *value)
{
  size_t vlen = strlen (value);
  int idx = 0;
  for (const char *p = choices; *p; idx++) {
    const char *bar = strchr (p, '|');
    size_t n = bar ? (size_t) (bar - p) : strlen (p);
    if (n == vlen && strncmp (p, value, n) == 0)
      return idx;
    p += n + (bar ? 1 : 0);
  }
  return -1;
}

/* A string key's value: not empty; a bounded one (max: its length)
 * printable ASCII, as INQUIRY's fields are.
 */
static int
check_string (const struct key_def *k, const char *value, char *err)
{
  if (*value == '\0') {
    set_err (err, "%s=: must not be empty", k->name);
    return -1;
  }
  if (k->max == NOMAX)
    return 0;
  if (strlen (value) > k->max) {
    set_err (err, "%s=%s: must be at most %llu characters", k->name, value,
             (unsigned long long) k->max);
    return -1;
  }
  for (const char *c = value; *c; c++)
    if (*c < 0x20 || *c > 0x7e) {
      set_err (err, "%s=%s: must be printable ASCII", k->name, value);
      return -1;
    }
  return 0;
}

/* Parse VALUE for key ID into *num (numeric and enum keys).  Checks the
 * per-key rules; cross-key rules come later in config_validate.
 */
static int
parse_value (int id, const char *value, uint64_t *num, char *err)
{
  const struct key_def *k = &config_keys[id];
  const char *why = NULL;
  int r = 0;

  switch (k->type) {
  case T_SIZE: r = blkemu_parse_size (value, num, &why); break;
  case T_DURATION: r = blkemu_parse_duration (value, num, &why); break;
  case T_RATE: r = blkemu_parse_rate (value, num, &why); break;
  case T_UINT: r = blkemu_parse_uint (value, num, &why); break;
  case T_PROB: r = blkemu_parse_fraction (value, num, &why); break;
  case T_ENUM: {
    int i = enum_index (k->choices, value);
    if (i < 0) {
      set_err (err, "%s=%s: must be one of %s", k->name, value, k->choices);
      return -1;
    }
    *num = (uint64_t) i;
    return 0;
  }
  case T_BOOL:
    if (!strcmp (value, "yes") || !strcmp (value, "on") ||
        !strcmp (value, "1") || !strcmp (value, "true"))
      *num = 1;
    else if (!strcmp (value, "no") || !strcmp (value, "off") ||
             !strcmp (value, "0") || !strcmp (value, "false"))
      *num = 0;
    else {
      set_err (err, "%s=%s: must be yes or no", k->name, value);
      return -1;
    }
    return 0;
  case T_MODE: {
    char *end;
    errno = 0;
    unsigned long m = strtoul (value, &end, 8);
    if (!*value || *end || errno || m > 0777 || (m & 0111) ||
        value[0] == '-' || value[0] == '+' || value[0] == ' ') {
      set_err (err,
               "%s=%s: must be an octal mode with read/write bits only, "
               "like 0600 or 0660",
               k->name, value);
      return -1;
    }
    *num = m;
    return 0;
  }
  case T_STRING: return check_string (k, value, err);
  }
  if (r == -1) {
    set_err (err, "%s=%s: %s", k->name, value, why);
    return -1;
  }
  /* Zero is "unset/unlimited" for keys whose minimum is 0. */
  if (*num < k->min) {
    char lim[32];
    if (k->type == T_DURATION)
      blkemu_format_duration (k->min, lim, sizeof lim);
    else
      blkemu_format_size (k->min, lim, sizeof lim);
    set_err (err, "%s=%s: must be at least %s", k->name, value, lim);
    return -1;
  }
  if (k->max != NOMAX && *num > k->max) {
    char lim[32];
    if (k->type == T_DURATION)
      blkemu_format_duration (k->max, lim, sizeof lim);
    else if (k->type == T_UINT)
      snprintf (lim, sizeof lim, "%llu", (unsigned long long) k->max);
    else
      blkemu_format_size (k->max, lim, sizeof lim);
    set_err (err, "%s=%s: must be at most %s", k->name, value, lim);
    return -1;
  }
  return 0;
}

int
config_apply_value (struct blkemu_config *cfg, int id, const char *value,
                    char *err)
{
  uint64_t num = 0;
  if (parse_value (id, value, &num, err) == -1)
    return -1;
  if (config_keys[id].type == T_STRING) {
    char *copy = strdup (value);
    if (!copy) {
      set_err (err, "%s: out of memory", config_keys[id].name);
      return -1;
    }
    free (cfg->str[id]);
    cfg->str[id] = copy;
  }
  else
    cfg->num[id] = num;
  return 0;
}

struct blkemu_spec *
blkemu_spec_new (void)
{
  return calloc (1, sizeof (struct blkemu_spec));
}

void
blkemu_spec_free (struct blkemu_spec *spec)
{
  if (!spec)
    return;
  for (int i = 0; i < K_COUNT; i++)
    free (spec->val[i]);
  free (spec);
}

static int
spec_set (struct blkemu_spec *spec, const char *key, const char *value,
          char *err)
{
  int id = config_key_lookup (key);
  uint64_t num;
  if (id < 0) {
    set_err (err, "unknown key '%s' (see --help for the list of keys)", key);
    return -1;
  }
  if (parse_value (id, value, &num, err) == -1)
    return -1;
  char *copy = strdup (value);
  if (!copy) {
    set_err (err, "%s: out of memory", key);
    return -1;
  }
  free (spec->val[id]);
  spec->val[id] = copy;
  return 0;
}

/* Split "key=value" at the first '='. */
static int
split_pair (char *pair, char **key, char **value, char *err)
{
  char *eq = strchr (pair, '=');
  if (!eq || eq == pair) {
    set_err (err, "'%s': expected key=value", pair);
    return -1;
  }
  *eq = '\0';
  *key = pair;
  *value = eq + 1;
  return 0;
}

int
blkemu_spec_set (struct blkemu_spec *spec, const char *key, const char *value,
                 char *err, size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (spec_set (spec, key, value, e), e, err, errlen);
}

static int
spec_set_list (struct blkemu_spec *spec, const char *list, char *err)
{
  char *copy = strdup (list), *save = NULL;
  int r = 0;
  if (!copy) {
    set_err (err, "out of memory");
    return -1;
  }
  for (char *tok = strtok_r (copy, ",", &save); tok && r == 0;
       tok = strtok_r (NULL, ",", &save)) {
    char *key, *value;
    r = split_pair (tok, &key, &value, err);
    if (r == 0)
      r = spec_set (spec, key, value, err);
  }
  free (copy);
  return r;
}

int
blkemu_spec_set_list (struct blkemu_spec *spec, const char *list, char *err,
                      size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  return err_result (spec_set_list (spec, list, e), e, err, errlen);
}

const char *
blkemu_spec_get (const struct blkemu_spec *spec, const char *key)
{
  int id = config_key_lookup (key);
  return id >= 0 ? spec->val[id] : NULL;
}

void
blkemu_spec_print_help (FILE *fp, const char *indent)
{
  for (int i = 0; i < K_COUNT; i++) {
    const struct key_def *k = &config_keys[i];
    static const char *type_names[] = {
      [T_SIZE] = "SIZE",  [T_DURATION] = "TIME", [T_RATE] = "RATE",
      [T_UINT] = "N",     [T_ENUM] = NULL,       [T_BOOL] = "yes|no",
      [T_STRING] = "STR", [T_PROB] = "P",        [T_MODE] = "MODE",
    };
    const char *t = k->type == T_ENUM ? k->choices : type_names[k->type];
    if (i == K_FILE || i == K_PROFILE || i == K_STATS || i == K_TRACE ||
        i == K_CONTROL)
      t = i == K_PROFILE ? "NAME|PATH" : "PATH";
    fprintf (fp, "%s%s=%s\n%s    %s", indent, k->name, t, indent, k->help);
    if (k->def && strcmp (k->def, "0") != 0)
      fprintf (fp, " [default %s]", k->def);
    if (k->runtime)
      fprintf (fp, " [runtime]");
    fputc ('\n', fp);
  }
  fprintf (fp, "%s(which frontend carries which key: blkemu-ctl carriage)\n",
           indent);
}
