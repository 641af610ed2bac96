/* The service thread: the control socket (control=PATH) and stats dumps
 * on SIGUSR1, around the command interpreter of control.c.
 *
 * One thread per process (the hub) polls everything, for every disk: the
 * listening sockets, every connection (at most CONTROL_MAX_CLIENTS a
 * disk), each disk's done pipe, its own wake pipe and SIGUSR1's pipe
 * (64 disks: one thread, not 64 waking five times a second).  It starts
 * with the first disk's service and ends with the last.  It never blocks
 * on a client: sockets are non-blocking, replies wait in a
 * per-connection buffer, a client that stops reading is no longer read
 * from and is dropped when its buffer passes CONTROL_OUT_MAX, so a slow
 * or hostile client can delay neither other clients nor shutdown.  Idle
 * connections stay open (an interactive socat session is fine).  It
 * never waits for the disk either: a zone command (timed by
 * latency-zone, up to a minute) is submitted, its client waits for the
 * reply, and the reply comes back through the done pipe when the
 * command completes; other clients are served meanwhile.
 *
 * The socket is bound when the disk is opened (before nbdkit forks or
 * blkemu-fuse mounts: a bad path fails the start, and the socket exists
 * before the server is ready), owner-only unless control-mode says
 * otherwise; a path that holds anything but a stale socket is refused,
 * and only the socket this process bound is removed at exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "control_internal.h"
#include "units.h"
#include "disk.h"
#include "error.h"
#include "paths.h"
#include "strbuf.h"

#define CONTROL_MAX_CLIENTS 32
#define CONTROL_LINE_MAX 65536         /* a longer line drops the client */
#define CONTROL_OUT_MAX (16u << 20)    /* unread replies: drop beyond */
#define CONTROL_OUT_PAUSE (256u << 10) /* stop reading commands beyond */
#define CONTROL_LINES_TURN 8           /* commands per client per turn */

struct client {
  int fd; /* -1: free slot */
  char in[CONTROL_LINE_MAX];
  size_t have;
  char *out; /* replies not yet sent */
  size_t out_len, out_sent;
  uint64_t ticket; /* who holds the slot (deferred replies) */
  bool waiting;    /* a deferred reply is due: run nothing else */
  bool closing;    /* the client is done sending: close after it */
};

struct service {
  struct blkemu_disk *disk;
  struct service *next; /* on the hub's list */
  bool running;         /* on the hub (service_start) */
  bool linked;          /* the hub serves it; changed under hub.lock */
  bool removing;        /* service_stop waits for the hub to let go */
  int listen_fd;        /* -1: no control socket */
  pid_t owner;          /* the process that bound it */
  dev_t sock_dev;       /* the bound socket, removed only if still ours */
  ino_t sock_ino;
  int done_pipe[2]; /* struct deferral pointers, from completions */
  uint64_t next_ticket;
  uint64_t usr1_seen; /* SIGUSR1 generation already handled */
  struct client clients[CONTROL_MAX_CLIENTS];
};

/* SIGUSR1 is process-wide; the hub compares this generation with the
 * last one it handled for each disk.
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
client_close (struct client *c)
{
  if (c->fd >= 0)
    close (c->fd);
  free (c->out);
  c->fd = -1;
  c->out = NULL;
  c->have = c->out_len = c->out_sent = 0;
  c->waiting = c->closing = false;
}

/* Queue S for C; false if C has let too much pile up. */
static bool
client_queue (struct client *c, const char *s, size_t n)
{
  if (c->out_len - c->out_sent + n > CONTROL_OUT_MAX)
    return false;
  if (c->out_sent > 0) { /* compact what was sent */
    memmove (c->out, c->out + c->out_sent, c->out_len - c->out_sent);
    c->out_len -= c->out_sent;
    c->out_sent = 0;
  }
  char *grown = realloc (c->out, c->out_len + n);
  if (!grown)
    return false;
  c->out = grown;
  memcpy (c->out + c->out_len, s, n);
  c->out_len += n;
  return true;
}

/* Send what the socket takes now.  False: the client is gone. */
static bool
client_send (struct client *c)
{
  while (c->out_sent < c->out_len) {
    ssize_t w = send (c->fd, c->out + c->out_sent, c->out_len - c->out_sent,
                      MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    if (w <= 0)
      return false;
    c->out_sent += (size_t) w;
  }
  return true;
}

/* A complete command waits and C is reading its replies (and has no
 * reply still due).
 */
static bool
client_ready (const struct client *c)
{
  return c->fd >= 0 && !c->waiting &&
         c->out_len - c->out_sent < CONTROL_OUT_PAUSE &&
         memchr (c->in, '\n', c->have) != NULL;
}

/* Run up to CONTROL_LINES_TURN complete lines C has sent: one client's
 * burst of commands takes turns with everyone else's.  False: drop C.
 */
static void deferral_done (void *cookie, int result);

static bool
client_run_lines (struct blkemu_disk *disk, struct client *c)
{
  struct service *sv = disk->service;
  char *nl;
  for (int turn = 0; turn < CONTROL_LINES_TURN && !c->waiting &&
                     c->out_len - c->out_sent < CONTROL_OUT_PAUSE &&
                     (nl = memchr (c->in, '\n', c->have)) != NULL;
       turn++) {
    *nl = '\0';
    if (nl > c->in && nl[-1] == '\r')
      nl[-1] = '\0';
    struct strbuf sb = { 0 };
    struct deferral *later = malloc (sizeof *later);
    if (later)
      *later = (struct deferral){ .done = deferral_done,
                                  .sv = sv,
                                  .slot = (int) (c - sv->clients),
                                  .ticket = c->ticket };
    control_run (disk, c->in, &sb, later);
    bool deferred = later && later->used;
    if (deferred)
      c->waiting = true; /* deferral_done owns LATER now */
    else
      free (later);
    char *out = sb_take (&sb);
    /* A deferred command replies later: nothing to queue now. */
    bool ok = (deferred && (!out || !*out)) ||
              (out && client_queue (c, out, strlen (out)));
    free (out);
    if (!ok)
      return false;
    c->have -= (size_t) (nl + 1 - c->in);
    memmove (c->in, nl + 1, c->have);
  }
  return c->have < sizeof c->in;
}

/* From the completion of a deferred command (any thread): to the
 * service thread.  A pointer is written whole (less than PIPE_BUF); the
 * pipe holds far more than the clients' one pending command each.
 */
static void
deferral_done (void *cookie, int result)
{
  struct deferral *later = cookie;
  later->result = result;
  if (write (later->sv->done_pipe[1], &later, sizeof later) != sizeof later)
    free (later); /* the service is gone: nobody to tell */
}

/* On the service thread: the deferred replies that came in, each to its
 * client, which may then run its next commands, or close if it had
 * finished sending.
 */
static void
deliver_deferred (struct blkemu_disk *disk, struct service *sv)
{
  struct deferral *later;
  while (read (sv->done_pipe[0], &later, sizeof later) == sizeof later) {
    struct client *c = &sv->clients[later->slot];
    if (c->fd >= 0 && c->ticket == later->ticket) {
      struct strbuf sb = { 0 };
      if (later->result)
        sb_printf (&sb, "error: %s: %s\n", later->what,
                   strerrordesc_np (later->result));
      else
        sb_printf (&sb, "ok\n");
      char *out = sb_take (&sb);
      c->waiting = false;
      bool ok = out && client_queue (c, out, strlen (out));
      free (out);
      if (!ok || !client_send (c) || c->closing ||
          (client_ready (c) && !client_run_lines (disk, c))) {
        if (c->closing)
          client_send (c);
        client_close (c);
      }
    }
    free (later);
  }
}

static void
client_readable (struct blkemu_disk *disk, struct client *c)
{
  ssize_t r =
    recv (c->fd, c->in + c->have, sizeof c->in - c->have, MSG_DONTWAIT);
  if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
    return;
  if (r <= 0) {
    /* End of commands: a last one without its newline is still one
     * (it used to get no reply); then send what is owed, best effort,
     * and close.
     */
    if (r == 0 && c->have > 0 && c->have < sizeof c->in &&
        c->in[c->have - 1] != '\n') {
      c->in[c->have++] = '\n';
      client_run_lines (disk, c);
    }
    client_send (c);
    if (r == 0 && c->waiting) {
      c->closing = true; /* closed when its deferred reply is sent */
      return;
    }
    client_close (c);
    return;
  }
  c->have += (size_t) r;
  if (!client_run_lines (disk, c) || !client_send (c))
    client_close (c);
}

static void
accept_clients (struct service *sv)
{
  for (;;) {
    int fd = accept4 (sv->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      return;
    struct client *slot = NULL;
    for (int i = 0; i < CONTROL_MAX_CLIENTS && !slot; i++)
      if (sv->clients[i].fd < 0)
        slot = &sv->clients[i];
    if (!slot) {
      static const char busy[] = "error: too many control connections\n";
      if (send (fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* It is closed either way. */
      }
      close (fd);
      continue;
    }
    slot->fd = fd;
    slot->ticket = ++sv->next_ticket;
  }
}

/* The hub: the one thread that serves every disk's control socket.
 * Services join its list at service_start; service_stop marks one
 * removing and waits until the hub has let go of it (the hub alone
 * unlinks, at the top of a turn, so what it polls stays valid through
 * the turn without the lock).  The last service_stop ends the thread.
 */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t changed; /* a service unlinked, or the thread ended */
  struct service *list;
  int wake[2]; /* a byte: look at the list again */
  pthread_t thread;
  bool live; /* the thread runs */
  bool quit; /* ... and is told to end (the list is empty) */
} hub = { .lock = PTHREAD_MUTEX_INITIALIZER,
          .changed = PTHREAD_COND_INITIALIZER,
          .wake = { -1, -1 } };

static void
hub_wake (void)
{
  if (write (hub.wake[1], "w", 1) < 0) {
    /* Full: the hub will look anyway. */
  }
}

/* One disk's part of a turn of the hub: SIGUSR1's dump, deferred
 * replies, then its clients and new connections.  PFD[0] is its
 * listening socket, PFD[1] its done pipe, then WHO's clients.
 */
static void
service_turn (struct service *sv, const struct pollfd *pfd,
              struct client *const *who, int n)
{
  struct blkemu_disk *disk = sv->disk;
  char err[BLKEMU_ERR_MAX];
  uint64_t gen = __atomic_load_n (&usr1_generation, __ATOMIC_RELAXED);
  if (gen != sv->usr1_seen) {
    sv->usr1_seen = gen;
    if (disk->cfg.str[K_STATS] &&
        blkemu_disk_write_stats (disk, err, sizeof err) == -1)
      fprintf (stderr, "blkemu: %s\n", err);
  }
  if (pfd[1].revents & POLLIN)
    deliver_deferred (disk, sv);
  for (int i = 2; i < n; i++) {
    struct client *c = who[i];
    if (pfd[i].revents & (POLLERR | POLLNVAL)) {
      client_close (c);
      continue;
    }
    if ((pfd[i].revents & POLLOUT) && !client_send (c)) {
      client_close (c);
      continue;
    }
    /* Its next turn of commands (some may have waited for room). */
    if (client_ready (c) && !client_run_lines (disk, c)) {
      client_close (c);
      continue;
    }
    if (pfd[i].revents & (POLLIN | POLLHUP))
      client_readable (disk, c);
  }
  if (pfd[0].revents & POLLIN)
    accept_clients (sv);
}

/* Add SV's descriptors at PFD + *N; returns whether a client has a
 * command waiting already (the hub must not sleep).
 */
static bool
service_fds (struct service *sv, struct pollfd *pfd, struct client **who,
             int *n)
{
  bool pending = false;
  pfd[(*n)++] = (struct pollfd){ .fd = sv->listen_fd, .events = POLLIN };
  pfd[(*n)++] = (struct pollfd){ .fd = sv->done_pipe[0], .events = POLLIN };
  for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
    struct client *c = &sv->clients[i];
    if (c->fd < 0 || (c->closing && c->out_sent == c->out_len))
      continue; /* closing: its hang-up would spin us */
    short ev = 0;
    if (c->out_len - c->out_sent < CONTROL_OUT_PAUSE && !c->closing)
      ev |= POLLIN;
    if (c->out_sent < c->out_len)
      ev |= POLLOUT;
    who[*n] = c;
    pfd[(*n)++] = (struct pollfd){ .fd = c->fd, .events = ev };
    pending |= client_ready (c);
  }
  return pending;
}

#define HUB_SLOTS (2 + CONTROL_MAX_CLIENTS) /* per service */

/* hub.lock held: let go of the services being stopped (their clients
 * closed, their stoppers told); returns how many stay.
 */
static size_t
hub_unlink_removing (void)
{
  size_t count = 0;
  for (struct service **p = &hub.list; *p;) {
    struct service *sv = *p;
    if (sv->removing) {
      *p = sv->next;
      for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
        client_close (&sv->clients[i]);
      sv->linked = false;
      pthread_cond_broadcast (&hub.changed);
    }
    else {
      p = &sv->next;
      count++;
    }
  }
  return count;
}

/* The hub's arrays, for COUNT services: grown (doubled) when they have
 * less room.  Returns how many services they have room for.
 */
struct hub_arrays {
  struct pollfd *pfd;
  struct client **who;
  struct service **turn; /* the services of this turn */
  int *first;            /* where each one's descriptors start */
  size_t cap;
};

static size_t
hub_room (struct hub_arrays *a, size_t count)
{
  if (count <= a->cap && a->cap)
    return count;
  size_t want = count > 2 ? count * 2 : 4;
  struct pollfd *np = realloc (a->pfd, (2 + want * HUB_SLOTS) * sizeof *np);
  if (np)
    a->pfd = np;
  struct client **nw = realloc (a->who, (2 + want * HUB_SLOTS) * sizeof *nw);
  if (nw)
    a->who = nw;
  struct service **nt = realloc (a->turn, want * sizeof *nt);
  if (nt)
    a->turn = nt;
  int *nf = realloc (a->first, (want + 1) * sizeof *nf);
  if (nf)
    a->first = nf;
  if (np && nw && nt && nf)
    a->cap = want;
  return count < a->cap ? count : a->cap; /* out of memory: those that fit */
}

static void *
hub_main (void *arg)
{
  (void) arg;
  struct hub_arrays a = { 0 };

  for (;;) {
    pthread_mutex_lock (&hub.lock);
    size_t count = hub_unlink_removing ();
    if (hub.quit) {
      pthread_mutex_unlock (&hub.lock);
      break;
    }
    count = hub_room (&a, count);
    if (a.cap == 0) {
      /* Not even room for the wake pipe: keep unlinking, try again. */
      pthread_mutex_unlock (&hub.lock);
      nanosleep (&(struct timespec){ .tv_nsec = 100000000 }, NULL);
      continue;
    }
    int n = 0;
    a.pfd[n++] = (struct pollfd){ .fd = hub.wake[0], .events = POLLIN };
    a.pfd[n++] = (struct pollfd){ .fd = usr1_pipe[0], .events = POLLIN };
    bool pending = false;
    size_t k = 0;
    for (struct service *sv = hub.list; sv && k < count; sv = sv->next) {
      a.turn[k] = sv;
      a.first[k++] = n;
      pending |= service_fds (sv, a.pfd, a.who, &n);
    }
    a.first[k] = n;
    pthread_mutex_unlock (&hub.lock);

    /* Only quit ends the loop: a stopper waits for the hub to let go. */
    int r = poll (a.pfd, (nfds_t) n, pending ? 0 : -1);
    if (r < 0 && errno != EINTR)
      nanosleep (&(struct timespec){ .tv_nsec = 10000000 }, NULL);
    char drain[64];
    if (r > 0 && (a.pfd[0].revents & POLLIN))
      while (read (hub.wake[0], drain, sizeof drain) > 0)
        ;
    if (r > 0 && (a.pfd[1].revents & POLLIN))
      while (read (usr1_pipe[0], drain, sizeof drain) > 0)
        ;
    for (size_t i = 0; i < k && r >= 0; i++)
      service_turn (a.turn[i], a.pfd + a.first[i], a.who + a.first[i],
                    a.first[i + 1] - a.first[i]);
  }
  free (a.pfd);
  free (a.who);
  free (a.turn);
  free (a.first);
  return NULL;
}

/* PATH may be taken only if nothing is there or a socket nobody answers
 * on (a server that died) is.  Returns 0, or -1 with ERR filled.
 */
static int
claim_socket_path (const char *path, const struct sockaddr_un *sa, char *err)
{
  struct stat st;
  if (lstat (path, &st) == -1) {
    if (errno == ENOENT)
      return 0;
    set_err (err, "control=%s: %s", path, strerrordesc_np (errno));
    return -1;
  }
  if (!S_ISSOCK (st.st_mode)) {
    set_err (err,
             "control=%s: exists and is not a socket (refusing to "
             "replace it)",
             path);
    return -1;
  }
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd == -1) {
    set_err (err, "control=%s: socket: %s", path, strerrordesc_np (errno));
    return -1;
  }
  int r = connect (fd, (const struct sockaddr *) sa, sizeof *sa);
  int e = errno;
  close (fd);
  if (r == 0) {
    set_err (err, "control=%s: another server is listening on it", path);
    return -1;
  }
  if (e != ECONNREFUSED) {
    set_err (err, "control=%s: cannot tell whether it is in use: %s", path,
             strerrordesc_np (e));
    return -1;
  }
  if (unlink (path) == -1 && errno != ENOENT) {
    set_err (err, "control=%s: removing the stale socket: %s", path,
             strerrordesc_np (errno));
    return -1;
  }
  return 0;
}

static int
listen_unix (struct service *sv, const char *path, unsigned mode, char *err)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path) {
    set_err (err, "control=%s: path longer than %zu bytes", path,
             sizeof sa.sun_path - 1);
    return -1;
  }
  strcpy (sa.sun_path, path);
  if (claim_socket_path (path, &sa, err) == -1)
    return -1;
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd == -1) {
    set_err (err, "control=%s: socket: %s", path, strerrordesc_np (errno));
    return -1;
  }
  /* Owner-only from the first moment, whatever the umask (frontends
   * open disks before they start threads, so the umask is ours here).
   */
  mode_t old = umask (0177);
  int r = bind (fd, (struct sockaddr *) &sa, sizeof sa);
  int e = errno;
  umask (old);
  struct stat st;
  if (r == -1) {
    set_err (err, "control=%s: %s", path, strerrordesc_np (e));
    close (fd);
    return -1;
  }
  if (chmod (path, mode) == -1 || stat (path, &st) == -1 ||
      listen (fd, 16) == -1) {
    set_err (err, "control=%s: %s", path, strerrordesc_np (errno));
    close (fd);
    unlink (path);
    return -1;
  }
  sv->sock_dev = st.st_dev;
  sv->sock_ino = st.st_ino;
  sv->owner = getpid ();
  return fd;
}

/* Close what service_prepare opened (the thread, if any, has stopped). */
static void
service_free (struct blkemu_disk *disk, struct service *sv)
{
  if (sv->listen_fd >= 0) {
    close (sv->listen_fd);
    /* Remove the socket only if it is still the one this process bound
     * (not a forked parent's copy, not a successor's socket).
     */
    struct stat st;
    if (sv->owner == getpid () && lstat (disk->cfg.str[K_CONTROL], &st) == 0 &&
        st.st_dev == sv->sock_dev && st.st_ino == sv->sock_ino)
      unlink (disk->cfg.str[K_CONTROL]);
  }
  /* Deferred replies nobody took (the disk was cancelled before the
   * thread stopped: every one has come back).
   */
  struct deferral *later;
  while (sv->done_pipe[0] >= 0 &&
         read (sv->done_pipe[0], &later, sizeof later) == sizeof later)
    free (later);
  if (sv->done_pipe[0] >= 0) {
    close (sv->done_pipe[0]);
    close (sv->done_pipe[1]);
  }
  free (sv);
}

int
service_prepare (struct blkemu_disk *disk, char *err)
{
  if (!disk->cfg.str[K_CONTROL] && !disk->cfg.str[K_STATS])
    return 0;
  /* stats=PATH must be writable now, not only when the server exits;
   * a regular file only (it is replaced by rename).
   */
  if (disk->cfg.str[K_STATS] &&
      path_check_output ("stats", disk->cfg.str[K_STATS], false, err) == -1)
    return -1;
  struct service *sv = calloc (1, sizeof *sv);
  if (!sv) {
    set_err (err, "out of memory");
    return -1;
  }
  sv->listen_fd = -1;
  for (int i = 0; i < CONTROL_MAX_CLIENTS; i++)
    sv->clients[i].fd = -1;
  sv->done_pipe[0] = sv->done_pipe[1] = -1;
  sv->disk = disk;
  if (pipe2 (sv->done_pipe, O_CLOEXEC | O_NONBLOCK) == -1) {
    set_err (err, "pipe: %s", strerrordesc_np (errno));
    service_free (disk, sv);
    return -1;
  }
  if (disk->cfg.str[K_CONTROL]) {
    sv->listen_fd =
      listen_unix (sv, disk->cfg.str[K_CONTROL],
                   (unsigned) disk->cfg.num[K_CONTROL_MODE], err);
    if (sv->listen_fd == -1) {
      service_free (disk, sv);
      return -1;
    }
  }
  disk->service = sv;
  return 0;
}

void
service_abandon (struct blkemu_disk *disk)
{
  struct service *sv = disk->service;
  if (!sv || sv->listen_fd < 0)
    return;
  const char *path = disk->cfg.str[K_CONTROL];
  struct stat st;
  if (lstat (path, &st) == -1 || st.st_dev != sv->sock_dev ||
      st.st_ino != sv->sock_ino)
    return; /* gone, or a successor's */
  if (sv->running && sv->owner == getpid ()) {
    unlink (path); /* served here, and here it ends */
    return;
  }
  /* Bound here, never served here: a forked child (nbdkit's daemon, its
   * captive nbdkit) may hold the socket and serve it.  With our copy
   * closed, a connection is refused only if nobody holds it.
   */
  close (sv->listen_fd);
  sv->listen_fd = -1;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd == -1)
    return;
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) == -1 &&
      errno == ECONNREFUSED)
    unlink (path);
  close (fd);
}

int
service_start (struct blkemu_disk *disk, char *err)
{
  struct service *sv = disk->service;
  if (!sv || sv->running)
    return 0;
  pthread_once (&usr1_once, usr1_setup);
  sv->owner = getpid (); /* the serving process, after any fork */
  sv->usr1_seen = __atomic_load_n (&usr1_generation, __ATOMIC_RELAXED);
  pthread_mutex_lock (&hub.lock);
  while (hub.quit) /* the last one's hub is ending */
    pthread_cond_wait (&hub.changed, &hub.lock);
  if (!hub.live) {
    int r = 0;
    if (hub.wake[0] < 0 && pipe2 (hub.wake, O_CLOEXEC | O_NONBLOCK) == -1)
      r = errno;
    if (r == 0 &&
        (r = pthread_create (&hub.thread, NULL, hub_main, NULL)) == 0)
      pthread_setname_np (hub.thread, "blkemu-control"); /* for top -H */
    if (r != 0) {
      pthread_mutex_unlock (&hub.lock);
      set_err (err, "control thread: %s", strerrordesc_np (r));
      return -1;
    }
    hub.live = true;
  }
  sv->next = hub.list;
  hub.list = sv;
  sv->linked = true;
  pthread_mutex_unlock (&hub.lock);
  hub_wake ();
  sv->running = true;
  return 0;
}

void
service_stop (struct blkemu_disk *disk)
{
  struct service *sv = disk->service;
  if (!sv)
    return;
  if (sv->running) {
    pthread_mutex_lock (&hub.lock);
    sv->removing = true;
    hub_wake ();
    while (sv->linked)
      pthread_cond_wait (&hub.changed, &hub.lock);
    /* The last one ends the thread (a start meanwhile waits for it). */
    if (!hub.list && hub.live && !hub.quit) {
      hub.quit = true;
      hub_wake ();
      pthread_t t = hub.thread;
      pthread_mutex_unlock (&hub.lock);
      pthread_join (t, NULL);
      pthread_mutex_lock (&hub.lock);
      hub.live = hub.quit = false;
      pthread_cond_broadcast (&hub.changed);
    }
    pthread_mutex_unlock (&hub.lock);
  }
  service_free (disk, sv);
  disk->service = NULL;
}
