/* The control commands: one line per command, one line per reply (on the
 * control socket, control_hub.c, or from the fuzz harness):
 *
 *   get KEY            -> ok VALUE
 *   get                -> ok key=value key=value ...
 *   set KEY=VALUE ...  -> ok            (all applied, or none)
 *   stats              -> ok {JSON}
 *   summary            -> ok, then the human summary, then a line "."
 *   reset              -> ok            (stats cleared)
 *   crash              -> ok            (unflushed writes lost, disk off)
 *   crash MODE [SEED]  -> ok mode=M seed=S persisted=N lost=N torn=N
 *                                       (a seeded crash state, disk off)
 *   power-on           -> ok            (the crashed disk serves again)
 *   power-off          -> ok            (disk off, unflushed writes kept)
 *   view MODE [SEED]   -> ok mode=M ... (serve that crash state, scratch
 *                                        writes; the disk is kept)
 *   view end           -> ok            (the view and its writes gone)
 *   bad                -> ok N RANGES   (unreadable sectors: OFFSET+LEN)
 *   bad add|clear OFFSET LENGTH -> ok   (make them unreadable, or heal)
 *   stuck              -> ok N OFFSET:BIT=V ...  (stuck bits)
 *   stuck add OFFSET BIT 0|1 | stuck clear -> ok
 *   precondition sequential|random [SEED] -> ok (model=ssd's FTL filled)
 *   drop               -> ok            (the next request drops its link)
 *   zones [FROM [COUNT]] -> ok, a table of the zones from byte FROM
 *   zone open|close|finish|reset OFFSET | zone reset-all
 *                      -> ok            (when the command completes)
 *   zone read-only|offline|online OFFSET -> ok (a zone failing, or back)
 *   dump               -> ok PATH       (stats= written now, trace= flushed)
 *   keys               -> ok KEY ...    (the runtime-changeable keys)
 *   help               -> ok COMMAND ...
 *   NAME ARG...        -> a frontend's own (blkemu_disk_add_command:
 *                         blkemu-scsi's path I down|up), its reply
 * Errors reply "error: MESSAGE".  Documented in docs/blkemu-ctl.1.md.
 *
 * The socket and the thread that serves it are control_hub.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "control_internal.h"
#include "disk.h"
#include "error.h"
#include "strbuf.h"
#include "units.h"

/* Run one command line; append the reply to SB. */
/* The commands: each takes the rest of the line (tokenized with SAVE)
 * and appends its reply.
 */
typedef void (*command_fn) (struct blkemu_disk *disk, char **save,
                            struct strbuf *sb, struct deferral *later);

static void
reply_result (struct strbuf *sb, int r, const char *err)
{
  if (r == -1)
    sb_printf (sb, "error: %s\n", err);
  else
    sb_printf (sb, "ok\n");
}

static void
cmd_get (struct blkemu_disk *disk, char **save, struct strbuf *sb,
         struct deferral *later)
{
  (void) later;
  char err[BLKEMU_ERR_MAX], v[CONFIG_TEXT_MAX];
  char *key = strtok_r (NULL, " \t", save);
  if (key) {
    if (blkemu_disk_get (disk, key, v, sizeof v, err, sizeof err) == -1)
      sb_printf (sb, "error: %s\n", err);
    else
      sb_printf (sb, "ok %s\n", v);
    return;
  }
  sb_printf (sb, "ok");
  for (size_t i = 0; blkemu_key_name (i); i++) {
    blkemu_disk_get (disk, blkemu_key_name (i), v, sizeof v, err, sizeof err);
    /* A value with a space (product=WDC WD5001FXYZ-0) is quoted, so
     * the line still splits at spaces into pairs.
     */
    if (strchr (v, ' '))
      sb_printf (sb, " %s=\"%s\"", blkemu_key_name (i), v);
    else
      sb_printf (sb, " %s=%s", blkemu_key_name (i), v);
  }
  sb_printf (sb, "\n");
}

static void
cmd_set (struct blkemu_disk *disk, char **save, struct strbuf *sb,
         struct deferral *later)
{
  (void) later;
  char err[BLKEMU_ERR_MAX];
  char *pairs[DISK_SET_MAX + 1]; /* one more: too many is an error */
  int npairs = 0;
  for (char *p = strtok_r (NULL, " \t", save); p && npairs <= DISK_SET_MAX;
       p = strtok_r (NULL, " \t", save))
    pairs[npairs++] = p;
  if (npairs == 0)
    sb_printf (sb, "error: set needs KEY=VALUE\n");
  else
    reply_result (sb, disk_set_pairs (disk, pairs, npairs, err), err);
}

static void
cmd_stats (struct blkemu_disk *disk, char **save, struct strbuf *sb,
           struct deferral *later)
{
  (void) later;
  (void) save;
  char *json = blkemu_disk_stats_json (disk, false);
  if (json)
    sb_printf (sb, "ok %s", json);
  else
    sb_printf (sb, "error: out of memory\n");
  free (json);
}

static void
cmd_summary (struct blkemu_disk *disk, char **save, struct strbuf *sb,
             struct deferral *later)
{
  (void) later;
  (void) save;
  char *text = blkemu_disk_summary_text (disk);
  sb_printf (sb, "ok\n%s.\n", text ? text : "");
  free (text);
}

static void
cmd_reset (struct blkemu_disk *disk, char **save, struct strbuf *sb,
           struct deferral *later)
{
  (void) later;
  (void) save;
  blkemu_disk_reset_stats (disk);
  sb_printf (sb, "ok\n");
}

static void
cmd_dump (struct blkemu_disk *disk, char **save, struct strbuf *sb,
          struct deferral *later)
{
  (void) later;
  (void) save;
  char err[BLKEMU_ERR_MAX];
  const char *stats = disk->cfg.str[K_STATS], *trace = disk->cfg.str[K_TRACE];
  /* The trace is made whole on disk whether or not there is a stats
   * file: a reader of trace= (blkemu-crashcheck's write fates) needs
   * what was recorded up to now.
   */
  if (!stats && trace) {
    trace_flush (&disk->trace);
    sb_printf (sb, "ok %s\n", trace);
  }
  else if (blkemu_disk_write_stats (disk, err, sizeof err) == -1)
    sb_printf (sb, "error: %s\n", err);
  else
    sb_printf (sb, "ok %s\n", stats);
}

/* crash MODE [SEED] and view MODE [SEED]: the state by MAKE, and the
 * reply saying what it did.
 */
static void
make_state (struct blkemu_disk *disk, const char *what, const char *mode_name,
            char **save, struct strbuf *sb,
            int (*make) (struct blkemu_disk *, enum blkemu_crash_mode,
                         uint64_t, struct blkemu_crash_report *, char *,
                         size_t))
{
  char err[BLKEMU_ERR_MAX];
  enum blkemu_crash_mode mode;
  uint64_t seed;
  struct blkemu_crash_report r;
  if (blkemu_crash_args (what, mode_name, strtok_r (NULL, " \t", save), &mode,
                         &seed, err, sizeof err) == -1 ||
      make (disk, mode, seed, &r, err, sizeof err) == -1) {
    sb_printf (sb, "error: %s\n", err);
    return;
  }
  sb_printf (sb, "ok mode=%s seed=%llu persisted=%llu lost=%llu torn=%llu\n",
             blkemu_crash_mode_name (r.mode), (unsigned long long) r.seed,
             (unsigned long long) r.persisted, (unsigned long long) r.lost,
             (unsigned long long) r.torn);
}

static void
cmd_crash (struct blkemu_disk *disk, char **save, struct strbuf *sb,
           struct deferral *later)
{
  (void) later;
  char err[BLKEMU_ERR_MAX];
  const char *mode_name = strtok_r (NULL, " \t", save);
  if (!mode_name) {
    reply_result (sb, blkemu_disk_crash (disk, err, sizeof err), err);
    return;
  }
  make_state (disk, "crash", mode_name, save, sb, blkemu_disk_crash_state);
}

/* The reply to a listing (bad, stuck): "ok COUNT LIST", LIST malloc'd
 * (freed here; NULL: out of memory).
 */
static void
reply_list (struct strbuf *sb, const char *what, char *list, uint64_t count)
{
  if (!list)
    sb_printf (sb, "error: %s: out of memory\n", what);
  else
    sb_printf (sb, "ok %llu%s%s\n", (unsigned long long) count,
               *list ? " " : "", list);
  free (list);
}

/* bad | bad add OFFSET LENGTH | bad clear OFFSET LENGTH */
static void
cmd_bad (struct blkemu_disk *disk, char **save, struct strbuf *sb,
         struct deferral *later)
{
  (void) later;
  char err[BLKEMU_ERR_MAX];
  const char *what = strtok_r (NULL, " \t", save);
  const char *off_text = strtok_r (NULL, " \t", save);
  const char *len_text = strtok_r (NULL, " \t", save);
  uint64_t count;
  if (!what) {
    char *list = blkemu_disk_bad_list (disk, &count);
    reply_list (sb, "bad", list, count);
    return;
  }
  reply_result (sb,
                blkemu_disk_bad_args (disk, what, off_text, len_text, err,
                                      sizeof err),
                err);
}

/* stuck | stuck add OFFSET BIT 0|1 | stuck clear */
static void
cmd_stuck (struct blkemu_disk *disk, char **save, struct strbuf *sb,
           struct deferral *later)
{
  (void) later;
  char err[BLKEMU_ERR_MAX];
  const char *what = strtok_r (NULL, " \t", save);
  const char *off_text = strtok_r (NULL, " \t", save);
  const char *bit_text = strtok_r (NULL, " \t", save);
  const char *value_text = strtok_r (NULL, " \t", save);
  uint64_t count;
  if (!what) {
    char *list = blkemu_disk_stuck_list (disk, &count);
    reply_list (sb, "stuck", list, count);
    return;
  }
  reply_result (sb,
                blkemu_disk_stuck_args (disk, what, off_text, bit_text,
                                        value_text, err, sizeof err),
                err);
}

static void
cmd_power_off (struct blkemu_disk *disk, char **save, struct strbuf *sb,
               struct deferral *later)
{
  (void) later;
  (void) save;
  char err[BLKEMU_ERR_MAX];
  reply_result (sb, blkemu_disk_power_off (disk, err, sizeof err), err);
}

static void
cmd_view (struct blkemu_disk *disk, char **save, struct strbuf *sb,
          struct deferral *later)
{
  (void) later;
  char err[BLKEMU_ERR_MAX];
  const char *mode_name = strtok_r (NULL, " \t", save);
  if (!mode_name) {
    sb_printf (sb, "error: view needs MODE [SEED] or end\n");
    return;
  }
  if (!strcmp (mode_name, "end")) {
    if (strtok_r (NULL, " \t", save))
      sb_printf (sb, "error: view end: takes no SEED\n");
    else
      reply_result (sb, blkemu_disk_view_close (disk, err, sizeof err), err);
    return;
  }
  make_state (disk, "view", mode_name, save, sb, blkemu_disk_view_open);
}

static void
cmd_power_on (struct blkemu_disk *disk, char **save, struct strbuf *sb,
              struct deferral *later)
{
  (void) later;
  (void) save;
  blkemu_disk_power_on (disk);
  sb_printf (sb, "ok\n");
}

static void
cmd_drop (struct blkemu_disk *disk, char **save, struct strbuf *sb,
          struct deferral *later)
{
  (void) later;
  (void) save;
  blkemu_disk_drop (disk);
  sb_printf (sb, "ok\n");
}

/* precondition sequential|random [SEED] */
static void
cmd_precondition (struct blkemu_disk *disk, char **save, struct strbuf *sb,
                  struct deferral *later)
{
  (void) later;
  char err[BLKEMU_ERR_MAX];
  const char *mode = strtok_r (NULL, " \t", save);
  const char *seed = strtok_r (NULL, " \t", save);
  reply_result (sb, disk_precondition (disk, mode, seed, err, sizeof err),
                err);
}

static const char *const zone_cond_names[16] = {
  [BLKEMU_ZONE_COND_NOT_WP] = "not-wp",
  [BLKEMU_ZONE_COND_EMPTY] = "empty",
  [BLKEMU_ZONE_COND_IMP_OPEN] = "implicit-open",
  [BLKEMU_ZONE_COND_EXP_OPEN] = "explicit-open",
  [BLKEMU_ZONE_COND_CLOSED] = "closed",
  [BLKEMU_ZONE_COND_FULL] = "full",
  [BLKEMU_ZONE_COND_READONLY] = "read-only",
  [BLKEMU_ZONE_COND_OFFLINE] = "offline",
};

/* zones [FROM [COUNT]]: a report like blkzone's, from the disk's side. */
static void
cmd_zones (struct blkemu_disk *disk, char **save, struct strbuf *sb,
           struct deferral *later)
{
  (void) later;
  struct blkemu_zoned zg;
  blkemu_disk_zoned (disk, &zg);
  if (!zg.nr_zones) {
    sb_printf (sb, "error: zones: this disk is not zoned (zoned=none)\n");
    return;
  }
  const char *from = strtok_r (NULL, " \t", save);
  const char *count = strtok_r (NULL, " \t", save);
  const char *why = NULL;
  uint64_t off = 0, n = zg.nr_zones;
  if (from && blkemu_parse_size (from, &off, &why) == -1) {
    sb_printf (sb, "error: zones %s: FROM %s\n", from, why);
    return;
  }
  if (count && (blkemu_parse_size (count, &n, &why) == -1 || n == 0)) {
    sb_printf (sb, "error: zones %s %s: COUNT must be a number >= 1\n", from,
               count);
    return;
  }
  sb_printf (sb, "ok\n%6s %12s %8s %8s %12s %-4s %s\n", "zone", "start", "len",
             "cap", "wp", "type", "cond");
  struct blkemu_zone z[64];
  while (n > 0) {
    unsigned got =
      blkemu_zone_report (disk, off, z, n < 64 ? (unsigned) n : 64);
    if (got == 0)
      break;
    for (unsigned i = 0; i < got; i++) {
      char start[32], len[32], cap[32], wp[32];
      blkemu_format_size (z[i].start, start, sizeof start);
      blkemu_format_size (z[i].len, len, sizeof len);
      blkemu_format_size (z[i].capacity, cap, sizeof cap);
      if (z[i].type == BLKEMU_ZONE_TYPE_CONVENTIONAL)
        snprintf (wp, sizeof wp, "-");
      else {
        wp[0] = '+';
        blkemu_format_size (z[i].wp - z[i].start, wp + 1, sizeof wp - 1);
      }
      const char *cond = zone_cond_names[z[i].cond & 15];
      sb_printf (sb, "%6llu %12s %8s %8s %12s %-4s %s\n",
                 (unsigned long long) (z[i].start / zg.zone_size), start, len,
                 cap, wp,
                 z[i].type == BLKEMU_ZONE_TYPE_CONVENTIONAL ? "conv" : "seq",
                 cond ? cond : "?");
    }
    n -= got;
    off = z[got - 1].start + z[got - 1].len;
  }
  sb_printf (sb, ".\n");
}

static void
zone_reply (struct strbuf *sb, int r, const char *what, const char *at)
{
  if (r)
    sb_printf (sb, "error: zone %s %s: %s\n", what, at ? at : "",
               strerrordesc_np (r));
  else
    sb_printf (sb, "ok\n");
}

/* zone open|close|finish|reset|reset-all OFFSET: a zone command, as the
 * host would send it (timed by latency-zone).
 */
/* zone read-only|offline|online OFFSET: a zone failing as media does,
 * or brought back empty.
 */
static void
zone_condition (struct blkemu_disk *disk, struct strbuf *sb, const char *what,
                const char *at)
{
  char err[BLKEMU_ERR_MAX];
  uint64_t off;
  const char *why = NULL;
  if (!at || blkemu_parse_size (at, &off, &why) == -1) {
    sb_printf (sb, "error: zone %s needs OFFSET (a zone's start)%s%s\n", what,
               why ? ": " : "", why ? why : "");
    return;
  }
  unsigned cond = !strcmp (what, "read-only") ? BLKEMU_ZONE_COND_READONLY
                  : !strcmp (what, "offline") ? BLKEMU_ZONE_COND_OFFLINE
                                              : BLKEMU_ZONE_COND_EMPTY;
  reply_result (sb,
                blkemu_zone_set_condition (disk, off, cond, err, sizeof err),
                err);
}

static void
cmd_zone (struct blkemu_disk *disk, char **save, struct strbuf *sb,
          struct deferral *later)
{
  static const char *const ops[BLKEMU_ZONE_OP_COUNT] = {
    "open", "close", "finish", "reset", "reset-all",
  };
  const char *what = strtok_r (NULL, " \t", save);
  const char *at = strtok_r (NULL, " \t", save);
  if (what && (!strcmp (what, "read-only") || !strcmp (what, "offline") ||
               !strcmp (what, "online")))
    return zone_condition (disk, sb, what, at);
  int op = -1;
  for (int i = 0; what && i < BLKEMU_ZONE_OP_COUNT; i++)
    if (!strcmp (what, ops[i]))
      op = i;
  uint64_t off = 0;
  const char *why = NULL;
  if (op < 0 ||
      (op != BLKEMU_ZONE_RESET_ALL &&
       (!at || blkemu_parse_size (at, &off, &why) == -1)) ||
      (op == BLKEMU_ZONE_RESET_ALL && at)) {
    sb_printf (sb, "error: zone needs open|close|finish|reset OFFSET or "
                   "reset-all\n");
    return;
  }
  if (later) {
    /* The service thread never waits out latency-zone: the reply goes
     * out when the command completes (LATER->done).
     */
    snprintf (later->what, sizeof later->what, "zone %s %s", what,
              at ? at : "");
    later->used = true;
    int r = blkemu_zone_submit (disk, (enum blkemu_zone_op) op, off,
                                later->done, later);
    if (r != BLKEMU_QUEUED)
      later->done (later, r); /* refused, or due at once */
    return;
  }
  zone_reply (sb, blkemu_zone_command (disk, (enum blkemu_zone_op) op, off),
              what, at);
}

static void
cmd_keys (struct blkemu_disk *disk, char **save, struct strbuf *sb,
          struct deferral *later)
{
  (void) later;
  (void) disk;
  (void) save;
  sb_printf (sb, "ok");
  for (size_t i = 0; blkemu_key_name (i); i++)
    if (blkemu_key_is_runtime (blkemu_key_name (i)))
      sb_printf (sb, " %s", blkemu_key_name (i));
  sb_printf (sb, "\n");
}

static void cmd_help (struct blkemu_disk *disk, char **save, struct strbuf *sb,
                      struct deferral *later);

/* Each command with the most arguments it takes (-1: any number) and
 * its usage, for the refusal of anything more ('crash now' crashed the
 * disk, 'stats x' ran as 'stats').
 */
static const struct {
  const char *name;
  command_fn run;
  int max_args;
  const char *usage;
} commands[] = {
  { "get", cmd_get, 1, "get [KEY]" },
  { "set", cmd_set, -1, "set KEY=VALUE..." },
  { "stats", cmd_stats, 0, "stats" },
  { "summary", cmd_summary, 0, "summary" },
  { "reset", cmd_reset, 0, "reset" },
  { "dump", cmd_dump, 0, "dump" },
  { "crash", cmd_crash, 2,
    "crash [lose-all|subset|torn|interrupted|pick [SEED]]" },
  { "power-on", cmd_power_on, 0, "power-on" },
  { "power-off", cmd_power_off, 0, "power-off" },
  { "view", cmd_view, 2, "view lose-all|subset|torn|pick [SEED] | view end" },
  { "drop", cmd_drop, 0, "drop" },
  { "bad", cmd_bad, 3, "bad [add|clear OFFSET LENGTH]" },
  { "stuck", cmd_stuck, 4, "stuck [add OFFSET BIT 0|1 | clear]" },
  { "precondition", cmd_precondition, 2,
    "precondition sequential|random [SEED]" },
  { "zones", cmd_zones, 2, "zones [FROM [COUNT]]" },
  { "zone", cmd_zone, 2,
    "zone open|close|finish|reset|read-only|offline|online OFFSET | zone "
    "reset-all" },
  { "keys", cmd_keys, 0, "keys" },
  { "help", cmd_help, 0, "help" },
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* The usages, from the table (and the frontend's): one list, not two. */
static void
cmd_help (struct blkemu_disk *disk, char **save, struct strbuf *sb,
          struct deferral *later)
{
  (void) later;
  (void) save;
  sb_printf (sb, "ok");
  for (size_t i = 0; i < NCOMMANDS; i++)
    sb_printf (sb, "%s %s", i ? " |" : "", commands[i].usage);
  unsigned n = __atomic_load_n (&disk->ncommands, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    sb_printf (sb, " | %s", disk->commands[i].usage);
  sb_printf (sb, "\n");
}

int
blkemu_disk_add_command (struct blkemu_disk *disk, const char *name,
                         int max_args, const char *usage,
                         blkemu_command_fn run, void *arg, char *err,
                         size_t errlen)
{
  char e[BLKEMU_ERR_MAX];
  unsigned n = disk->ncommands;
  bool taken = false;
  for (size_t i = 0; i < NCOMMANDS; i++)
    taken |= !strcmp (name, commands[i].name);
  for (unsigned i = 0; i < n; i++)
    taken |= !strcmp (name, disk->commands[i].name);
  if (taken)
    set_err (e, "control command %s: the name is taken", name);
  else if (n == BLKEMU_COMMANDS_MAX)
    set_err (e,
             "control command %s: a disk takes at most %d of a "
             "frontend's own",
             name, BLKEMU_COMMANDS_MAX);
  else if (max_args > BLKEMU_COMMAND_ARGS)
    set_err (e, "control command %s: at most %d arguments", name,
             BLKEMU_COMMAND_ARGS);
  else {
    disk->commands[n] = (struct frontend_command){
      .name = name,
      .usage = usage,
      .max_args = max_args < 0 ? BLKEMU_COMMAND_ARGS : max_args,
      .run = run,
      .arg = arg,
    };
    __atomic_store_n (&disk->ncommands, n + 1, __ATOMIC_RELEASE);
    return 0;
  }
  return err_result (-1, e, err, errlen);
}

/* A frontend's command: its words, its reply. */
static bool
run_frontend_command (struct blkemu_disk *disk, const char *cmd, char **save,
                      struct strbuf *sb)
{
  unsigned n = __atomic_load_n (&disk->ncommands, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++) {
    const struct frontend_command *c = &disk->commands[i];
    if (strcmp (cmd, c->name))
      continue;
    char *argv[BLKEMU_COMMAND_ARGS + 1];
    int argc = 0;
    char *word;
    while ((word = strtok_r (NULL, " \t", save))) {
      if (argc == c->max_args) {
        sb_printf (sb, "error: %s: takes at most %d argument%s (usage: %s)\n",
                   cmd, c->max_args, c->max_args == 1 ? "" : "s", c->usage);
        return true;
      }
      argv[argc++] = word;
    }
    argv[argc] = NULL;
    char reply[BLKEMU_ERR_MAX] = "";
    c->run (c->arg, argc, argv, reply, sizeof reply);
    sb_printf (sb, "%s\n",
               reply[0] ? reply : "error: the command gave no answer");
    return true;
  }
  return false;
}

/* Words left in S (blank-separated), not modifying it. */
static int
count_words (const char *s)
{
  int n = 0;
  bool in_word = false;
  for (; s && *s; s++) {
    bool blank = *s == ' ' || *s == '\t';
    n += !blank && !in_word;
    in_word = !blank;
  }
  return n;
}

void
control_run (struct blkemu_disk *disk, char *line, struct strbuf *sb,
             struct deferral *later)
{
  char *save = NULL;
  char *cmd = strtok_r (line, " \t", &save);
  if (!cmd) {
    sb_printf (sb, "error: empty command (try 'help')\n");
    return;
  }
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp (cmd, commands[i].name)) {
      int args = count_words (save);
      if (commands[i].max_args >= 0 && args > commands[i].max_args) {
        sb_printf (sb,
                   "error: %s: takes %s%d argument%s, got %d (usage: "
                   "%s)\n",
                   cmd, commands[i].max_args ? "at most " : "",
                   commands[i].max_args, commands[i].max_args == 1 ? "" : "s",
                   args, commands[i].usage);
        return;
      }
      commands[i].run (disk, &save, sb, later);
      return;
    }
  if (!run_frontend_command (disk, cmd, &save, sb))
    sb_printf (sb, "error: unknown command '%s' (try 'help')\n", cmd);
}

void
control_run_command (struct blkemu_disk *disk, char *line, struct strbuf *sb)
{
  control_run (disk, line, sb, NULL);
}
