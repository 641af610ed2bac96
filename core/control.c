/* The service thread: the control socket (control=PATH) and stats dumps
 * on SIGUSR1.  One line per command, one line per reply:
 *
 *   get KEY            -> ok VALUE
 *   get                -> ok key=value key=value ...
 *   set KEY=VALUE ...  -> ok            (all applied, or none)
 *   stats              -> ok {JSON}
 *   summary            -> ok, then the human summary, then a line "."
 *   reset              -> ok            (stats cleared)
 *   crash              -> ok            (unflushed writes lost, disk off)
 *   power-on           -> ok            (the crashed disk serves again)
 *   drop               -> ok            (the next request drops its link)
 *   dump               -> ok PATH       (stats= written now)
 *   keys               -> ok KEY ...    (the runtime-changeable keys)
 *   help               -> ok COMMAND ...
 * Errors reply "error: MESSAGE".  Documented in docs/blkemu-control.7.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "disk.h"
#include "error.h"
#include "strbuf.h"

struct service {
  pthread_t thread;
  int listen_fd;       /* -1: no control socket */
  int stop_pipe[2];    /* written by service_stop */
  uint64_t usr1_seen;  /* SIGUSR1 generation already handled */
};

/* SIGUSR1 is process-wide; every disk's service thread compares this
 * generation with the last one it handled.
 */
static uint64_t usr1_generation;
static int usr1_pipe[2] = { -1, -1 };
static pthread_once_t usr1_once = PTHREAD_ONCE_INIT;

static void
on_usr1 (int sig)
{
  (void) sig;
  int saved = errno;
  __atomic_add_fetch (&usr1_generation, 1, __ATOMIC_RELAXED);
  if (write (usr1_pipe[1], "u", 1) < 0) {
    /* Pipe full: the threads are awake already. */
  }
  errno = saved;
}

static void
usr1_setup (void)
{
  if (pipe2 (usr1_pipe, O_CLOEXEC | O_NONBLOCK) == -1)
    return;
  struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGUSR1, &sa, NULL);
}

static void
reply (int fd, const char *s, size_t n)
{
  while (n > 0) {
    ssize_t w = send (fd, s, n, MSG_NOSIGNAL);
    if (w <= 0) {
      if (w < 0 && errno == EINTR)
        continue;
      return;
    }
    s += w;
    n -= (size_t) w;
  }
}

/* Run one command line; append the reply to SB. */
static void
run_command (struct blkemu_disk *disk, char *line, struct strbuf *sb)
{
  char err[BLKEMU_ERR_MAX];
  char *save = NULL;
  char *cmd = strtok_r (line, " \t", &save);

  if (!cmd) {
    sb_printf (sb, "error: empty command (try 'help')\n");
  }
  else if (!strcmp (cmd, "get")) {
    char *key = strtok_r (NULL, " \t", &save);
    char v[4200];
    if (key) {
      if (blkemu_disk_get (disk, key, v, sizeof v, err) == -1)
        sb_printf (sb, "error: %s\n", err);
      else
        sb_printf (sb, "ok %s\n", v);
    }
    else {
      sb_printf (sb, "ok");
      for (size_t i = 0; blkemu_key_name (i); i++) {
        blkemu_disk_get (disk, blkemu_key_name (i), v, sizeof v, err);
        sb_printf (sb, " %s=%s", blkemu_key_name (i), v);
      }
      sb_printf (sb, "\n");
    }
  }
  else if (!strcmp (cmd, "set")) {
    char *pairs[DISK_SET_MAX + 1];   /* one more: too many is an error */
    int npairs = 0;
    for (char *p = strtok_r (NULL, " \t", &save); p && npairs <= DISK_SET_MAX;
         p = strtok_r (NULL, " \t", &save))
      pairs[npairs++] = p;
    if (npairs == 0)
      sb_printf (sb, "error: set needs KEY=VALUE\n");
    else if (disk_set_pairs (disk, pairs, npairs, err) == -1)
      sb_printf (sb, "error: %s\n", err);
    else
      sb_printf (sb, "ok\n");
  }
  else if (!strcmp (cmd, "stats")) {
    char *json = blkemu_disk_stats_json (disk, false);
    if (json) {
      sb_printf (sb, "ok %s", json);
      free (json);
    }
    else
      sb_printf (sb, "error: out of memory\n");
  }
  else if (!strcmp (cmd, "summary")) {
    char *text = blkemu_disk_summary_text (disk);
    sb_printf (sb, "ok\n%s.\n", text ? text : "");
    free (text);
  }
  else if (!strcmp (cmd, "reset")) {
    blkemu_disk_reset_stats (disk);
    sb_printf (sb, "ok\n");
  }
  else if (!strcmp (cmd, "dump")) {
    if (blkemu_disk_write_stats (disk, err) == -1)
      sb_printf (sb, "error: %s\n", err);
    else
      sb_printf (sb, "ok %s\n", disk->cfg.str[K_STATS]);
  }
  else if (!strcmp (cmd, "crash")) {
    if (disk_crash (disk, err) == -1)
      sb_printf (sb, "error: %s\n", err);
    else
      sb_printf (sb, "ok\n");
  }
  else if (!strcmp (cmd, "power-on")) {
    disk_power_on (disk);
    sb_printf (sb, "ok\n");
  }
  else if (!strcmp (cmd, "drop")) {
    disk_drop_connection (disk);
    sb_printf (sb, "ok\n");
  }
  else if (!strcmp (cmd, "keys")) {
    sb_printf (sb, "ok");
    for (size_t i = 0; blkemu_key_name (i); i++)
      if (blkemu_key_is_runtime (blkemu_key_name (i)))
        sb_printf (sb, " %s", blkemu_key_name (i));
    sb_printf (sb, "\n");
  }
  else if (!strcmp (cmd, "help")) {
    sb_printf (sb, "ok get [KEY] | set KEY=VALUE... | stats | summary | "
               "reset | dump | crash | power-on | drop | keys | help\n");
  }
  else
    sb_printf (sb, "error: unknown command '%s' (try 'help')\n", cmd);
}

/* Serve one connection: commands until EOF.  Lines are short; a client
 * that sends more than 64 KiB without a newline is dropped.
 */
static void
serve_connection (struct blkemu_disk *disk, int fd)
{
  char buf[65536];
  size_t have = 0;
  struct timeval tv = { .tv_sec = 5 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (;;) {
    char *nl;
    while ((nl = memchr (buf, '\n', have)) != NULL) {
      *nl = '\0';
      if (nl > buf && nl[-1] == '\r')
        nl[-1] = '\0';
      struct strbuf sb = { 0 };
      run_command (disk, buf, &sb);
      char *out = sb_take (&sb);
      if (out) {
        reply (fd, out, strlen (out));
        free (out);
      }
      have -= (size_t) (nl + 1 - buf);
      memmove (buf, nl + 1, have);
    }
    if (have == sizeof buf)
      return;
    ssize_t r = recv (fd, buf + have, sizeof buf - have, 0);
    if (r <= 0)
      return;
    have += (size_t) r;
  }
}

static void *
service_main (void *arg)
{
  struct blkemu_disk *disk = arg;
  struct service *sv = disk->service;
  char err[BLKEMU_ERR_MAX];

  for (;;) {
    struct pollfd pfd[3] = {
      { .fd = sv->stop_pipe[0], .events = POLLIN },
      { .fd = usr1_pipe[0], .events = POLLIN },
      { .fd = sv->listen_fd, .events = POLLIN },
    };
    /* The timeout lets every disk notice a SIGUSR1 another one drained. */
    int n = poll (pfd, 3, 200);
    if (n < 0 && errno != EINTR)
      break;
    if (pfd[0].revents)
      break;
    if (pfd[1].revents & POLLIN) {
      char drain[64];
      while (read (usr1_pipe[0], drain, sizeof drain) > 0)
        ;
    }
    uint64_t gen = __atomic_load_n (&usr1_generation, __ATOMIC_RELAXED);
    if (gen != sv->usr1_seen) {
      sv->usr1_seen = gen;
      if (disk->cfg.str[K_STATS] && blkemu_disk_write_stats (disk, err) == -1)
        fprintf (stderr, "blkemu: %s\n", err);
    }
    if (pfd[2].revents & POLLIN) {
      int fd = accept4 (sv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) {
        serve_connection (disk, fd);
        close (fd);
      }
    }
  }
  return NULL;
}

static int
listen_unix (const char *path, char *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path) {
    set_err (err, "control=%s: path longer than %zu bytes",
              path, sizeof sa.sun_path - 1);
    return -1;
  }
  strcpy (sa.sun_path, path);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd == -1) {
    set_err (err, "control=%s: socket: %s", path,
              strerrordesc_np (errno));
    return -1;
  }
  /* A stale socket from an earlier run is replaced; anything else stays. */
  unlink (path);
  if (bind (fd, (struct sockaddr *) &sa, sizeof sa) == -1 ||
      listen (fd, 16) == -1) {
    set_err (err, "control=%s: %s", path, strerrordesc_np (errno));
    close (fd);
    return -1;
  }
  return fd;
}

/* Close what service_start opened (the thread, if any, has stopped). */
static void
service_free (struct blkemu_disk *disk, struct service *sv)
{
  if (sv->listen_fd >= 0) {
    close (sv->listen_fd);
    unlink (disk->cfg.str[K_CONTROL]);
  }
  close (sv->stop_pipe[0]);
  close (sv->stop_pipe[1]);
  free (sv);
}

int
service_start (struct blkemu_disk *disk, char *err)
{
  struct service *sv = calloc (1, sizeof *sv);
  if (!sv) {
    set_err (err, "out of memory");
    return -1;
  }
  sv->listen_fd = -1;
  pthread_once (&usr1_once, usr1_setup);
  sv->usr1_seen = __atomic_load_n (&usr1_generation, __ATOMIC_RELAXED);
  if (pipe2 (sv->stop_pipe, O_CLOEXEC) == -1) {
    set_err (err, "pipe: %s", strerrordesc_np (errno));
    free (sv);
    return -1;
  }
  if (disk->cfg.str[K_CONTROL]) {
    sv->listen_fd = listen_unix (disk->cfg.str[K_CONTROL], err);
    if (sv->listen_fd == -1)
      goto fail;
  }
  disk->service = sv;
  int r = pthread_create (&sv->thread, NULL, service_main, disk);
  if (r != 0) {
    set_err (err, "pthread_create: %s", strerrordesc_np (r));
    disk->service = NULL;
    goto fail;
  }
  return 0;

fail:
  service_free (disk, sv);
  return -1;
}

void
service_stop (struct blkemu_disk *disk)
{
  struct service *sv = disk->service;
  if (!sv)
    return;
  if (write (sv->stop_pipe[1], "x", 1) == 1)
    pthread_join (sv->thread, NULL);
  service_free (disk, sv);
  disk->service = NULL;
}
