/* The key table, the spec (raw key=value pairs), profiles, and the
 * validation that turns them into an effective configuration.
 */
#include "config.h"

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
#include "units.h"

enum key_type { T_SIZE, T_DURATION, T_RATE, T_UINT, T_ENUM, T_BOOL, T_STRING,
                T_PROB, T_MODE };

struct key_def {
  const char *name;
  enum key_type type;
  const char *def;        /* default, in the key's own syntax; NULL: unset */
  const char *choices;    /* T_ENUM: '|'-separated names, index = value */
  uint64_t min, max;      /* numeric bounds, inclusive (max 0: none) */
  bool runtime;           /* changeable through control */
  const char *help;
};

#define NOMAX 0
static const struct key_def keys[K_COUNT] = {
  [K_SIZE] = { "size", T_SIZE, NULL, NULL, 1, BLKEMU_MAX_SIZE, false,
    "capacity (required unless backend=file, where the file's size is used)" },
  [K_BACKEND] = { "backend", T_ENUM, "memory", "memory|file|null", 0, 0, false,
    "where data lives: memory (sparse), file (file=PATH), null (discard)" },
  [K_FILE] = { "file", T_STRING, NULL, NULL, 0, 0, false,
    "backing file or block device for backend=file (created if missing)" },
  [K_NAME] = { "name", T_STRING, "disk0", NULL, 0, 0, false,
    "the disk's name in stats, trace and FUSE paths" },
  [K_LOGICAL_BLOCK_SIZE] = { "logical-block-size", T_SIZE, "512", NULL,
    512, 65536, false,
    "smallest addressable unit: a power of two, 512..64K" },
  [K_PHYSICAL_BLOCK_SIZE] = { "physical-block-size", T_SIZE, "0", NULL,
    0, 1u << 20, false,
    "internal block size: a power of two >= logical (0: same as logical)" },
  [K_MIN_IO] = { "min-io", T_SIZE, "0", NULL, 0, 1u << 30, false,
    "minimum I/O hint, a multiple of the logical block size (0: none)" },
  [K_OPT_IO] = { "opt-io", T_SIZE, "0", NULL, 0, 1u << 30, false,
    "optimal I/O hint, a multiple of the logical block size (0: none)" },
  [K_MAX_TRANSFER] = { "max-transfer", T_SIZE, "32M", NULL,
    512, BLKEMU_MAX_TRANSFER, true,
    "largest read/write payload (max_hw_sectors_kb), a multiple of the "
    "logical block size, <= 32M" },
  [K_MAX_DISCARD] = { "max-discard", T_SIZE, "0", NULL, 0, NOMAX, true,
    "largest trim, a multiple of the logical block size (0: unlimited)" },
  [K_MAX_WRITE_ZEROES] = { "max-write-zeroes", T_SIZE, "0", NULL, 0, NOMAX,
    true,
    "largest write-zeroes, a multiple of the logical block size "
    "(0: unlimited)" },
  [K_OVERSIZE] = { "oversize", T_ENUM, "error", "error|split|allow", 0, 0,
    true,
    "a request above its limit: error (EINVAL), split (device splits it, "
    "each piece timed), allow (served whole); all counted" },
  [K_LATENCY_READ] = { "latency-read", T_DURATION, "0", NULL, 0,
    60000000000ull, true, "base service time of a read" },
  [K_LATENCY_WRITE] = { "latency-write", T_DURATION, "0", NULL, 0,
    60000000000ull, true, "base service time of a write or write-zeroes" },
  [K_LATENCY_FLUSH] = { "latency-flush", T_DURATION, "0", NULL, 0,
    60000000000ull, true,
    "base service time of a flush (which also waits for earlier writes)" },
  [K_LATENCY_TRIM] = { "latency-trim", T_DURATION, "0", NULL, 0,
    60000000000ull, true, "base service time of a trim" },
  [K_BANDWIDTH] = { "bandwidth", T_RATE, "0", NULL, 0, NOMAX, true,
    "media transfer rate shared by all requests, bytes/s (0: unlimited)" },
  [K_READ_BANDWIDTH] = { "read-bandwidth", T_RATE, "0", NULL, 0, NOMAX, true,
    "transfer rate for reads (0: use bandwidth)" },
  [K_WRITE_BANDWIDTH] = { "write-bandwidth", T_RATE, "0", NULL, 0, NOMAX,
    true, "transfer rate for writes (0: use bandwidth)" },
  [K_QUEUE_DEPTH] = { "queue-depth", T_UINT, "128", NULL, 1,
    BLKEMU_MAX_QUEUE_DEPTH, true,
    "requests the device holds at once; later ones wait for a slot" },
  [K_CHANNELS] = { "channels", T_UINT, "0", NULL, 0, BLKEMU_MAX_CHANNELS,
    true,
    "requests serviced in parallel (0: as many as queue-depth, up to 4096)" },
  [K_MODEL] = { "model", T_ENUM, "fixed", "fixed|hdd|ssd|array|link", 0, 0,
    false,
    "timing model: fixed (latency + size/bandwidth), hdd (seek, rotation, "
    "zones), ssd (dies behind channels), array (internal stripes, write-back "
    "cache), link (a network link to an instant device); see blkemu-models(7)" },
  [K_ROTATIONAL] = { "rotational", T_BOOL, "no", NULL, 0, 0, false,
    "advertise a rotational device (yes|no)" },
#define MAX_LAT 60000000000ull
  [K_LATENCY_DIST] = { "latency-dist", T_ENUM, "fixed",
    "fixed|uniform|normal|lognormal|percentiles", 0, 0, true,
    "how each base latency varies: fixed; uniform (+-latency-jitter); normal "
    "(sd latency-jitter); lognormal (mean the base, sd latency-jitter); "
    "percentiles (p50 the base, tail from latency-p99/-p999)" },
  [K_LATENCY_JITTER] = { "latency-jitter", T_DURATION, "0", NULL, 0, MAX_LAT,
    true, "spread of uniform, normal and lognormal latencies" },
  [K_LATENCY_P99] = { "latency-p99", T_DURATION, "0", NULL, 0, MAX_LAT, true,
    "latency-dist=percentiles: the 99th percentile of a read (other ops "
    "scale with their base)" },
  [K_LATENCY_P999] = { "latency-p999", T_DURATION, "0", NULL, 0, MAX_LAT, true,
    "latency-dist=percentiles: the 99.9th percentile of a read" },
  [K_SEED] = { "seed", T_UINT, "1", NULL, 0, NOMAX, false,
    "seed of the random draws (latencies, fault probabilities): same seed, "
    "same arrival order, same numbers" },
  [K_RPM] = { "rpm", T_UINT, "7200", NULL, 1000, 30000, true,
    "model=hdd: spindle speed; a revolution is 60/rpm seconds" },
  [K_SEEK_TRACK] = { "seek-track", T_DURATION, "1ms", NULL, 0, MAX_LAT, true,
    "model=hdd: track-to-track seek (the shortest non-zero seek)" },
  [K_SEEK_AVG] = { "seek-avg", T_DURATION, "8500us", NULL, 0, MAX_LAT, true,
    "model=hdd: average seek over random positions (datasheet figure)" },
  [K_SEEK_FULL] = { "seek-full", T_DURATION, "16ms", NULL, 0, MAX_LAT, true,
    "model=hdd: full-stroke seek; seek(d) = track + a*sqrt(d) + b*d with a, b "
    "fitted to the average" },
  [K_ZONE_RATE_OUTER] = { "zone-rate-outer", T_RATE, "150M", NULL, 1, NOMAX,
    true, "model=hdd: media rate at the start of the disk (outer tracks)" },
  [K_ZONE_RATE_INNER] = { "zone-rate-inner", T_RATE, "75M", NULL, 1, NOMAX,
    true, "model=hdd: media rate at the end of the disk (linear in between)" },
  [K_DIES] = { "dies", T_UINT, "1", NULL, 1, BLKEMU_MAX_CHANNELS, true,
    "model=ssd: dies per channel; channels x dies requests run in parallel" },
  [K_CHANNEL_BANDWIDTH] = { "channel-bandwidth", T_RATE, "0", NULL, 0, NOMAX,
    true, "model=ssd: transfer rate of each channel's bus (0: instant)" },
  [K_ARRAY_STRIPE] = { "array-stripe", T_SIZE, "1M", NULL, 512, NOMAX, true,
    "model=array: internal transfer size; a larger request is split inside "
    "the array into pieces served one after another" },
  [K_PIECE_OVERHEAD] = { "piece-overhead", T_DURATION, "0", NULL, 0, MAX_LAT,
    true, "model=array: cost of each internal piece" },
  [K_WRITE_CACHE] = { "write-cache", T_BOOL, "no", NULL, 0, 0, false,
    "volatile write cache: writes complete before reaching media, flush "
    "waits for them, and 'crash' discards what was not flushed" },
  [K_CACHE_SIZE] = { "cache-size", T_SIZE, "64M", NULL, 0, NOMAX, true,
    "write cache capacity (hdd, array): a write waits when the unwritten "
    "backlog exceeds it" },
  [K_DESTAGE_RATE] = { "destage-rate", T_RATE, "0", NULL, 0, NOMAX, true,
    "model=array: rate at which the write cache drains (0: bandwidth)" },
  [K_LINK_BANDWIDTH] = { "link-bandwidth", T_RATE, "0", NULL, 0, NOMAX, true,
    "link in front of the device: payload bytes/s each way (0: no link)" },
  [K_LINK_RTT] = { "link-rtt", T_DURATION, "0", NULL, 0, MAX_LAT, true,
    "link: round trip paid once per request" },
  [K_LINK_WINDOW] = { "link-window", T_UINT, "0", NULL, 0,
    BLKEMU_MAX_CHANNELS, true,
    "link: requests outstanding on the link at once (0: unlimited)" },
  [K_ERROR_MODE] = { "error-mode", T_ENUM, "off", "off|always|once|sticky", 0,
    0, true,
    "inject errors into matching requests: always (each with "
    "error-probability), once (the first hit, then off), sticky (after the "
    "first hit every match fails)" },
  [K_ERROR_OP] = { "error-op", T_ENUM, "any",
    "any|read|write|flush|trim|zero", 0, 0, true,
    "which requests the error rule matches" },
  [K_ERROR_OFFSET] = { "error-offset", T_SIZE, "0", NULL, 0, NOMAX, true,
    "start of the byte range the error rule matches" },
  [K_ERROR_LENGTH] = { "error-length", T_SIZE, "0", NULL, 0, NOMAX, true,
    "length of that range (0: to the end of the disk)" },
  [K_ERROR_ERRNO] = { "error-errno", T_ENUM, "EIO",
    "EIO|ENOSPC|EPERM|ENOMEM|EINVAL|EOVERFLOW|ENOTSUP|ESHUTDOWN", 0, 0, true,
    "the error an injected fault returns" },
  [K_ERROR_PROBABILITY] = { "error-probability", T_PROB, "1", NULL, 0, 0,
    true, "chance that a matching request fails (0..1 or N%)" },
  [K_ERROR_AFTER] = { "error-after", T_UINT, "0", NULL, 0, NOMAX, true,
    "matching requests that pass before the rule can fire" },
  [K_SPIKE_PROBABILITY] = { "spike-probability", T_PROB, "0", NULL, 0, 0,
    true, "chance that a request pays spike-latency on top" },
  [K_SPIKE_LATENCY] = { "spike-latency", T_DURATION, "0", NULL, 0, MAX_LAT,
    true, "extra service time of a latency spike" },
  [K_STALL] = { "stall", T_DURATION, "0", NULL, 0, 3600000000000ull, true,
    "hold every request until this long after the key was set (a hung "
    "device, to exercise timeouts)" },
  [K_SLOWDOWN] = { "slowdown", T_UINT, "1", NULL, 1, 1000, true,
    "the device runs N times slower: its clock is dilated, so queues and "
    "pipes stay consistent (a failing disk; or a time scale for slow hosts)" },
  [K_PROFILE] = { "profile", T_STRING, NULL, NULL, 0, 0, false,
    "preset: profiles/NAME.conf or a path; explicit keys override it" },
  [K_STATS] = { "stats", T_STRING, NULL, NULL, 0, 0, false,
    "JSON stats file, written at exit, on SIGUSR1 and on 'dump'" },
  [K_TRACE] = { "trace", T_STRING, NULL, NULL, 0, 0, false,
    "per-request trace file (see blkemu-trace(5))" },
  [K_TRACE_FORMAT] = { "trace-format", T_ENUM, "blkemu",
    "blkemu|blktrace|iolog", 0, 0, false,
    "what trace= writes: blkemu (text, blkemu-plot reads it), blktrace "
    "(binary events for blkparse, btt, iowatcher) or iolog (fio's iolog v3, "
    "for fio --read_iolog)" },
  [K_TRACE_MAX_SIZE] = { "trace-max-size", T_SIZE, "1G", NULL, 0, NOMAX,
    false,
    "the trace file stops at this size, with a last line saying so; later "
    "requests are counted in stats as trace.dropped (0: unlimited)" },
  [K_CONTROL] = { "control", T_STRING, NULL, NULL, 0, 0, false,
    "unix socket for runtime get/set/stats/reset (blkemu-ctl)" },
  [K_CONTROL_MODE] = { "control-mode", T_MODE, "0600", NULL, 0, 0666, false,
    "permissions of the control socket, octal (read/write bits only): "
    "0600 lets only the owner crash or reconfigure the disk, 0660 its group "
    "too" },
  [K_SUMMARY] = { "summary", T_BOOL, "no", NULL, 0, 0, false,
    "print an iostat-style summary and histograms on stderr at exit" },
};

struct blkemu_spec {
  char *val[K_COUNT];
};

int
config_key_lookup (const char *key)
{
  for (int i = 0; i < K_COUNT; i++)
    if (strcmp (keys[i].name, key) == 0)
      return i;
  return -1;
}

const char *
config_key_name (int id)
{
  return keys[id].name;
}

const char *
blkemu_key_name (size_t n)
{
  return n < K_COUNT ? keys[n].name : NULL;
}

bool
blkemu_key_is_runtime (const char *key)
{
  int id = config_key_lookup (key);
  return id >= 0 && keys[id].runtime;
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

/* Parse VALUE for key ID into *num (numeric and enum keys).  Checks the
 * per-key rules; cross-key rules come later in config_validate.
 */
static int
parse_value (int id, const char *value, uint64_t *num, char *err)
{
  const struct key_def *k = &keys[id];
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
    if (!*value || *end || errno || m > 0777 || (m & 0111) || value[0] == '-' ||
        value[0] == '+' || value[0] == ' ') {
      set_err (err, "%s=%s: must be an octal mode with read/write bits only, "
               "like 0600 or 0660", k->name, value);
      return -1;
    }
    *num = m;
    return 0;
  }
  case T_STRING:
    if (*value == '\0') {
      set_err (err, "%s=: must not be empty", k->name);
      return -1;
    }
    return 0;
  }
  if (r == -1) {
    set_err (err, "%s=%s: %s", k->name, value, why);
    return -1;
  }
  /* Zero is "unset/unlimited" for keys whose minimum is 0. */
  if (*num < k->min) {
    char lim[32];
    if (k->type == T_DURATION) blkemu_format_duration (k->min, lim, sizeof lim);
    else blkemu_format_size (k->min, lim, sizeof lim);
    set_err (err, "%s=%s: must be at least %s", k->name, value, lim);
    return -1;
  }
  if (k->max != NOMAX && *num > k->max) {
    char lim[32];
    if (k->type == T_DURATION) blkemu_format_duration (k->max, lim, sizeof lim);
    else if (k->type == T_UINT)
      snprintf (lim, sizeof lim, "%llu", (unsigned long long) k->max);
    else blkemu_format_size (k->max, lim, sizeof lim);
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
  if (keys[id].type == T_STRING) {
    char *copy = strdup (value);
    if (!copy) {
      set_err (err, "%s: out of memory", keys[id].name);
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

int
blkemu_spec_set (struct blkemu_spec *spec, const char *key, const char *value,
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
blkemu_spec_set_list (struct blkemu_spec *spec, const char *list, char *err)
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
      r = blkemu_spec_set (spec, key, value, err);
  }
  free (copy);
  return r;
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
    const struct key_def *k = &keys[i];
    static const char *type_names[] = {
      [T_SIZE] = "SIZE", [T_DURATION] = "TIME", [T_RATE] = "RATE",
      [T_UINT] = "N", [T_ENUM] = NULL, [T_BOOL] = "yes|no",
      [T_STRING] = "STR", [T_PROB] = "P", [T_MODE] = "MODE",
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
}

/* ---- profiles ---------------------------------------------------- */

/* Where profiles are looked for, in order: $BLKEMU_PROFILE_DIR (your
 * own), the source tree this was built from (when it is still there),
 * and the installed data directory.
 */
#ifndef BLKEMU_PROFILE_DIR
#define BLKEMU_PROFILE_DIR NULL   /* a package: no source tree */
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
    set_err (err, "profile=%s: %s is larger than %d bytes (a profile is a "
             "short key = value file)", name, path, PROFILE_MAX_BYTES);
    free (text);
    return NULL;
  }
  if (memchr (text, '\0', have)) {
    set_err (err, "profile=%s: %s holds a NUL byte (not a text file)",
             name, path);
    free (text);
    return NULL;
  }
  text[have] = '\0';
  return text;
}

static char *trim (char *s);

/* The one-line description: the first comment, "# NAME: text". */
static void
profile_description (const char *path, const char *name, char *out,
                     size_t len)
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
      snprintf (name, sizeof name, "%.*s",
                (int) strlen (list[i]->d_name) - 5, list[i]->d_name);
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

static int
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

/* ---- building and validating ------------------------------------- */

void
config_free (struct blkemu_config *cfg)
{
  for (int i = 0; i < K_COUNT; i++) {
    free (cfg->str[i]);
    cfg->str[i] = NULL;
  }
}

void
config_copy (struct blkemu_config *dst, const struct blkemu_config *src)
{
  memcpy (dst->num, src->num, sizeof dst->num);
  for (int i = 0; i < K_COUNT; i++)
    dst->str[i] = src->str[i] ? strdup (src->str[i]) : NULL;
}

static bool
is_pow2 (uint64_t v)
{
  return v && (v & (v - 1)) == 0;
}

/* Errors for the cross-key rules quote the value as the user wrote it. */
static void
rule_err (char *err, const struct blkemu_config *cfg, int id, const char *rule)
{
  char v[64];
  config_format (cfg, id, v, sizeof v);
  set_err (err, "%s=%s: %s", keys[id].name, v, rule);
}

int
config_validate (const struct blkemu_config *cfg, char *err)
{
  const uint64_t *n = cfg->num;
  uint64_t lbs = n[K_LOGICAL_BLOCK_SIZE];
  char rule[160];

  if (!is_pow2 (lbs)) {
    rule_err (err, cfg, K_LOGICAL_BLOCK_SIZE,
              "must be a power of two between 512 and 64K");
    return -1;
  }
  if (n[K_PHYSICAL_BLOCK_SIZE] &&
      (!is_pow2 (n[K_PHYSICAL_BLOCK_SIZE]) || n[K_PHYSICAL_BLOCK_SIZE] < lbs)) {
    rule_err (err, cfg, K_PHYSICAL_BLOCK_SIZE,
              "must be a power of two >= logical-block-size");
    return -1;
  }
  if (n[K_MAX_TRANSFER] < lbs) {
    snprintf (rule, sizeof rule, "must be at least logical-block-size (%llu)",
              (unsigned long long) lbs);
    rule_err (err, cfg, K_MAX_TRANSFER, rule);
    return -1;
  }
  snprintf (rule, sizeof rule,
            "must be a multiple of logical-block-size (%llu)",
            (unsigned long long) lbs);
  static const int multiples[] = { K_SIZE, K_MIN_IO, K_OPT_IO, K_MAX_TRANSFER,
                                   K_MAX_DISCARD, K_MAX_WRITE_ZEROES };
  for (size_t i = 0; i < sizeof multiples / sizeof multiples[0]; i++)
    if (n[multiples[i]] % lbs != 0) {
      rule_err (err, cfg, multiples[i], rule);
      return -1;
    }
  if (n[K_BACKEND] == BACKEND_FILE && !cfg->str[K_FILE]) {
    set_err (err, "backend=file: needs file=PATH");
    return -1;
  }
  if (n[K_BACKEND] != BACKEND_FILE && cfg->str[K_FILE]) {
    rule_err (err, cfg, K_BACKEND, "file= is only used with backend=file");
    return -1;
  }
  if (n[K_BACKEND] != BACKEND_FILE && n[K_SIZE] == 0) {
    set_err (err, "size: you must specify size=SIZE (e.g. size=1G)");
    return -1;
  }
  if (n[K_LATENCY_DIST] == DIST_PERCENTILES) {
    if (n[K_LATENCY_READ] == 0) {
      rule_err (err, cfg, K_LATENCY_READ,
                "latency-dist=percentiles needs a non-zero latency-read "
                "(the p50 the tail is scaled from)");
      return -1;
    }
    if (n[K_LATENCY_P99] < n[K_LATENCY_READ]) {
      rule_err (err, cfg, K_LATENCY_P99,
                "must be at least latency-read (the p50)");
      return -1;
    }
    if (n[K_LATENCY_P999] < n[K_LATENCY_P99]) {
      rule_err (err, cfg, K_LATENCY_P999, "must be at least latency-p99");
      return -1;
    }
  }
  if (n[K_MODEL] == MODEL_HDD) {
    uint64_t tr = n[K_SEEK_TRACK], avg = n[K_SEEK_AVG], full = n[K_SEEK_FULL];
    if (tr > full) {
      rule_err (err, cfg, K_SEEK_TRACK, "must be at most seek-full");
      return -1;
    }
    /* seek(d) = track + a*sqrt(d) + b*d over uniform random positions
     * averages track + 8a/15 + b/3; a, b >= 0 bounds the average.
     */
    uint64_t lo = tr + (full - tr) / 3, hi = tr + (full - tr) * 8 / 15;
    if (avg < lo || avg > hi) {
      char l[32], h[32];
      blkemu_format_duration (lo, l, sizeof l);
      blkemu_format_duration (hi, h, sizeof h);
      snprintf (rule, sizeof rule,
                "must lie between %s and %s for this seek-track and "
                "seek-full (a monotone seek curve)", l, h);
      rule_err (err, cfg, K_SEEK_AVG, rule);
      return -1;
    }
    if (n[K_ZONE_RATE_INNER] > n[K_ZONE_RATE_OUTER]) {
      rule_err (err, cfg, K_ZONE_RATE_INNER,
                "must be at most zone-rate-outer (outer tracks are faster)");
      return -1;
    }
  }
  if (n[K_MODEL] == MODEL_SSD) {
    uint64_t ch = n[K_CHANNELS] ? n[K_CHANNELS] : 1;
    if (ch * n[K_DIES] > BLKEMU_MAX_CHANNELS) {
      snprintf (rule, sizeof rule,
                "channels x dies must be at most %d", BLKEMU_MAX_CHANNELS);
      rule_err (err, cfg, K_DIES, rule);
      return -1;
    }
  }
  if (n[K_ERROR_OFFSET] > n[K_SIZE]) {
    rule_err (err, cfg, K_ERROR_OFFSET, "must lie inside the disk (<= size)");
    return -1;
  }
  return 0;
}

int
config_error_errno (const struct blkemu_config *cfg)
{
  static const int codes[] = { EIO, ENOSPC, EPERM, ENOMEM, EINVAL, EOVERFLOW,
                               ENOTSUP, ESHUTDOWN };
  uint64_t i = cfg->num[K_ERROR_ERRNO];
  return i < sizeof codes / sizeof codes[0] ? codes[i] : EIO;
}

int
config_build (struct blkemu_config *cfg, const struct blkemu_spec *spec,
              char *err)
{
  memset (cfg, 0, sizeof *cfg);
  for (int i = 0; i < K_COUNT; i++)
    if (keys[i].def && config_apply_value (cfg, i, keys[i].def, err) == -1)
      goto fail;
  /* file= alone implies backend=file. */
  if (spec->val[K_FILE] && !spec->val[K_BACKEND])
    cfg->num[K_BACKEND] = BACKEND_FILE;
  if (spec->val[K_PROFILE] && load_profile (cfg, spec->val[K_PROFILE], err))
    goto fail;
  for (int i = 0; i < K_COUNT; i++)
    if (spec->val[i] && config_apply_value (cfg, i, spec->val[i], err) == -1)
      goto fail;
  if (config_validate (cfg, err) == -1)
    goto fail;
  return 0;
fail:
  config_free (cfg);
  return -1;
}

int
config_set_runtime (struct blkemu_config *cfg, const char *key,
                    const char *value, char *err)
{
  int id = config_key_lookup (key);
  if (id < 0) {
    set_err (err, "unknown key '%s'", key);
    return -1;
  }
  if (!keys[id].runtime) {
    set_err (err, "%s=%s: cannot be changed at runtime", key, value);
    return -1;
  }
  uint64_t old = cfg->num[id];
  if (config_apply_value (cfg, id, value, err) == -1)
    return -1;
  if (config_validate (cfg, err) == -1) {
    cfg->num[id] = old;
    return -1;
  }
  return 0;
}

void
config_format (const struct blkemu_config *cfg, int id, char *buf, size_t len)
{
  const struct key_def *k = &keys[id];
  uint64_t v = cfg->num[id];
  switch (k->type) {
  case T_SIZE: case T_RATE: blkemu_format_size (v, buf, len); break;
  case T_DURATION: blkemu_format_duration (v, buf, len); break;
  case T_UINT: snprintf (buf, len, "%llu", (unsigned long long) v); break;
  case T_PROB: blkemu_format_fraction (v, buf, len); break;
  case T_BOOL: snprintf (buf, len, "%s", v ? "yes" : "no"); break;
  case T_MODE: snprintf (buf, len, "%04llo", (unsigned long long) v); break;
  case T_ENUM: {
    const char *p = k->choices;
    for (uint64_t i = 0; i < v && p; i++) {
      p = strchr (p, '|');
      if (p)
        p++;
    }
    size_t n = p ? strcspn (p, "|") : 0;
    snprintf (buf, len, "%.*s", (int) n, p ? p : "");
    break;
  }
  case T_STRING: snprintf (buf, len, "%s", cfg->str[id] ? cfg->str[id] : "");
    break;
  }
}
