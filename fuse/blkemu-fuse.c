/* blkemu-fuse: emulated disks as files, with sysfs-like live attributes.
 *
 *   blkemu-fuse [FUSE options] MOUNTPOINT --disk 'name=d0,size=1G,...' ...
 *
 *   MOUNTPOINT/d0                     the disk, a regular file of size bytes
 *   MOUNTPOINT/.blkemu/d0/stats       the stats JSON, current at every read
 *   MOUNTPOINT/.blkemu/d0/summary     the human summary
 *   MOUNTPOINT/.blkemu/d0/reset       write 1 to clear the stats
 *   MOUNTPOINT/.blkemu/d0/KEY         one file per spec key: read the value,
 *                                     write a new one (runtime keys)
 *
 * A thin frontend: reads, writes, fsync and fallocate become
 * blkemu_submit() calls answered from the core's completion thread at
 * their deadlines; attribute files call the same control functions as
 * the control socket.  Low-level API, a few workers that never wait out
 * a latency.  See docs/blkemu-fuse.1.md.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "frontend.h"
#include "frontends.h"
#include "fuse-disk.h"

/* Inode layout: the root, one file per disk, the .blkemu directory, and
 * per disk a directory with attr_slots () inodes: the directory, the
 * fixed files and one per spec key (sized from the key table: a fixed 64
 * slots once made d0's last keys d1's first ones).
 */
#define FUSE_WORKERS 8 /* libfuse workers: they only submit */
#define MAX_DISKS 64
#define INO_ROOT FUSE_ROOT_ID
#define INO_DISK0 2
#define INO_CTLDIR (INO_DISK0 + MAX_DISKS)
#define INO_ATTR_BASE 1024
#define CTLDIR_NAME ".blkemu"

/* The largest request libfuse can receive: its read buffer holds 256
 * pages (FUSE_MAX_MAX_PAGES in libfuse 3.14), and the kernel refuses a
 * reader whose buffer is smaller than max_write.  The kernel caps it
 * again at fs.fuse.max_pages_limit.
 */
#define LIBFUSE_MAX_PAGES 256

/* The mount: the session's userdata (fuse_req_userdata), every request's. */
struct emu_mount {
  struct disk disks[MAX_DISKS]; /* given with --disk, in order */
  size_t ndisks;
  /* The session's connection info, kept to report the negotiated cap. */
  struct fuse_conn_info *conn_info;
  bool transport_recorded;    /* that cap, in every disk's stats */
  struct timespec mount_time; /* shown as every inode's times */
};

/* Spec keys: counted once in main, before the session's threads start. */
static size_t key_count;

static size_t
nkeys (void)
{
  return key_count;
}

/* Inodes per disk under .blkemu. */
static uint64_t
attr_slots (void)
{
  return ATTR_KEY0 + nkeys ();
}

static fuse_ino_t
disk_ino (size_t i)
{
  return INO_DISK0 + i;
}
static fuse_ino_t
attr_ino (size_t i, unsigned attr)
{
  assert (attr < attr_slots ());
  return INO_ATTR_BASE + i * attr_slots () + attr;
}

/* Keys named like a fixed attribute (stats=, summary=) are reached
 * through the fixed file only.
 */
static bool
attr_listed (unsigned attr)
{
  if (attr < ATTR_KEY0)
    return true;
  const char *name = attr_name (attr);
  return strcmp (name, "stats") && strcmp (name, "summary") &&
         strcmp (name, "reset") && strcmp (name, "power") &&
         strcmp (name, "view") && strcmp (name, "bad") &&
         strcmp (name, "stuck");
}

/* Decode an attribute inode: returns false if INO is not one. */
static bool
attr_decode (const struct emu_mount *m, fuse_ino_t ino, size_t *disk,
             unsigned *attr)
{
  if (ino < INO_ATTR_BASE)
    return false;
  *disk = (ino - INO_ATTR_BASE) / attr_slots ();
  *attr = (unsigned) ((ino - INO_ATTR_BASE) % attr_slots ());
  return *disk < m->ndisks && attr_listed (*attr);
}

/* The FUSE transport cap, as negotiated, goes into every disk's stats. */
static void
record_transport (struct emu_mount *m)
{
  unsigned max_write = m->conn_info ? m->conn_info->max_write : 0;
  unsigned page = (unsigned) sysconf (_SC_PAGESIZE);
  unsigned limit_pages = 0;
  FILE *fp = fopen ("/proc/sys/fs/fuse/max_pages_limit", "r");
  if (fp) {
    if (fscanf (fp, "%u", &limit_pages) != 1)
      limit_pages = 0;
    fclose (fp);
  }
  if (limit_pages && max_write > limit_pages * page)
    max_write = limit_pages * page;
  for (size_t i = 0; i < m->ndisks; i++) {
    blkemu_disk_set_transport_count (m->disks[i].emu, "fuse_max_request",
                                     max_write);
    blkemu_disk_set_transport_count (m->disks[i].emu, "fuse_max_pages",
                                     max_write / page);
    if (m->conn_info)
      blkemu_disk_set_transport_count (m->disks[i].emu, "fuse_max_background",
                                       m->conn_info->max_background);
  }
  fprintf (stderr,
           "blkemu-fuse: kernel requests capped at %u bytes (%u "
           "pages); a max-transfer above that is split by the kernel first\n",
           max_write, max_write / page);
}

/* ---- attributes of inodes ---------------------------------------- */

static int
fill_stat (const struct emu_mount *m, fuse_ino_t ino, struct stat *st)
{
  size_t d;
  unsigned attr;
  memset (st, 0, sizeof *st);
  st->st_ino = ino;
  st->st_uid = getuid ();
  st->st_gid = getgid ();
  st->st_nlink = 1;
  st->st_atim = st->st_mtim = st->st_ctim = m->mount_time;
  if (ino == INO_ROOT || ino == INO_CTLDIR) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  }
  else if (ino >= INO_DISK0 && ino < INO_DISK0 + m->ndisks) {
    const struct disk *dk = &m->disks[ino - INO_DISK0];
    st->st_mode = S_IFREG | 0644;
    st->st_size = (off_t) dk->geo.size_bytes;
    st->st_blksize = (blksize_t) dk->geo.physical_block_size;
    st->st_blocks = (blkcnt_t) (dk->geo.size_bytes / 512);
  }
  else if (attr_decode (m, ino, &d, &attr)) {
    if (attr == ATTR_DIR) {
      st->st_mode = S_IFDIR | 0755;
      st->st_nlink = 2;
    }
    else if (attr == ATTR_RESET)
      st->st_mode = S_IFREG | 0200;
    else if (attr == ATTR_POWER || attr == ATTR_VIEW || attr == ATTR_BAD ||
             attr == ATTR_STUCK)
      st->st_mode = S_IFREG | 0644;
    else if (attr >= ATTR_KEY0 && blkemu_key_is_runtime (attr_name (attr)))
      st->st_mode = S_IFREG | 0644;
    else
      st->st_mode = S_IFREG | 0444;
    st->st_size = 0; /* generated on read; opened with direct_io */
  }
  else
    return ENOENT;
  return 0;
}

static void
reply_entry (fuse_req_t req, fuse_ino_t ino)
{
  struct emu_mount *m = fuse_req_userdata (req);
  struct fuse_entry_param e = { .ino = ino,
                                .attr_timeout = 1.0,
                                .entry_timeout = 1.0 };
  int r = fill_stat (m, ino, &e.attr);
  if (r)
    fuse_reply_err (req, r);
  else
    fuse_reply_entry (req, &e);
}

static void
op_init (void *userdata, struct fuse_conn_info *conn)
{
  struct emu_mount *m = userdata;
  m->conn_info = conn;
  /* Ask for the largest requests and a deep async queue, so the kernel's
   * own limits are what the disk sees, not FUSE defaults.
   */
  unsigned max = LIBFUSE_MAX_PAGES * (unsigned) sysconf (_SC_PAGESIZE);
  conn->max_write = max;
  conn->max_readahead = max;
  conn->max_background = 256;
  conn->congestion_threshold = 192;
  if (conn->capable & FUSE_CAP_ASYNC_DIO)
    conn->want |= FUSE_CAP_ASYNC_DIO;
  conn->want &= ~(unsigned) FUSE_CAP_WRITEBACK_CACHE;
}

static void
op_lookup (fuse_req_t req, fuse_ino_t parent, const char *name)
{
  struct emu_mount *m = fuse_req_userdata (req);
  if (parent == INO_ROOT) {
    if (!strcmp (name, CTLDIR_NAME))
      return reply_entry (req, INO_CTLDIR);
    for (size_t i = 0; i < m->ndisks; i++)
      if (!strcmp (name, m->disks[i].name))
        return reply_entry (req, disk_ino (i));
  }
  else if (parent == INO_CTLDIR) {
    for (size_t i = 0; i < m->ndisks; i++)
      if (!strcmp (name, m->disks[i].name))
        return reply_entry (req, attr_ino (i, ATTR_DIR));
  }
  else {
    size_t d;
    unsigned attr;
    if (attr_decode (m, parent, &d, &attr) && attr == ATTR_DIR)
      for (unsigned a = ATTR_STATS; a < ATTR_KEY0 + nkeys (); a++)
        if (attr_listed (a) && !strcmp (name, attr_name (a)))
          return reply_entry (req, attr_ino (d, a));
  }
  fuse_reply_err (req, ENOENT);
}

/* Writes (the disks, their attribute and command files) are the
 * mounting user's (and root's) alone: with -o allow_other another user
 * may look, not change a limit, write a disk or crash it.  The kernel
 * checks the modes too (default_permissions); this holds if it did not.
 */
static bool
may_write (fuse_req_t req)
{
  const struct fuse_ctx *c = fuse_req_ctx (req);
  return c->uid == 0 || c->uid == getuid ();
}

static void
op_getattr (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  (void) fi;
  struct stat st;
  int r = fill_stat (m, ino, &st);
  if (r)
    fuse_reply_err (req, r);
  else
    fuse_reply_attr (req, &st, 1.0);
}

/* Sizes cannot change; truncation to 0 of an attribute file (as `echo >`
 * does) is accepted and ignored.
 */
static void
op_setattr (fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
            struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  struct stat st;
  int r = fill_stat (m, ino, &st);
  if (r)
    return (void) fuse_reply_err (req, r);
  if ((to_set & FUSE_SET_ATTR_SIZE) && S_ISREG (st.st_mode) &&
      ino < INO_ATTR_BASE && (uint64_t) attr->st_size != (uint64_t) st.st_size)
    return (void) fuse_reply_err (req, EPERM);
  if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
    return (void) fuse_reply_err (req, EPERM);
  if (!may_write (req))
    return (void) fuse_reply_err (req, EACCES);
  op_getattr (req, ino, fi);
}

/* ---- directories ------------------------------------------------- */

struct dirbuf {
  char *p;
  size_t size;
};

static void
dirbuf_add (fuse_req_t req, struct dirbuf *b, const char *name, fuse_ino_t ino)
{
  struct emu_mount *m = fuse_req_userdata (req);
  struct stat st = { .st_ino = ino };
  fill_stat (m, ino, &st);
  size_t old = b->size;
  b->size += fuse_add_direntry (req, NULL, 0, name, NULL, 0);
  char *p = realloc (b->p, b->size);
  if (!p) {
    b->size = old;
    return;
  }
  b->p = p;
  fuse_add_direntry (req, b->p + old, b->size - old, name, &st,
                     (off_t) b->size);
}

/* A disk request in flight: the FUSE request to answer and, for a read,
 * the buffer the answer comes from.  Replies are sent from the core's
 * completion thread at the request's deadline (libfuse allows a reply
 * from any thread), so a worker never waits out a latency: a handful of
 * workers serve any queue depth.
 */
struct fuse_io {
  fuse_req_t req;
  enum blkemu_op op;
  size_t size;
  char buf[]; /* a read's data */
};

static void
io_done (void *cookie, int r)
{
  struct fuse_io *io = cookie;
  r = frontend_errno (r);
  if (r)
    fuse_reply_err (io->req, r);
  else if (io->op == BLKEMU_OP_READ)
    fuse_reply_buf (io->req, io->buf, io->size);
  else if (io->op == BLKEMU_OP_WRITE)
    fuse_reply_write (io->req, io->size);
  else
    fuse_reply_err (io->req, 0);
  free (io);
}

/* Submit a disk request answered by io_done: from the completion thread
 * when it was queued, here when blkemu_submit hands it back complete.
 * BUF is a write's data (used only until blkemu_submit returns); a read
 * gets a buffer of its own.
 */
static void
disk_submit (fuse_req_t req, struct blkemu_disk *emu, enum blkemu_op op,
             const char *buf, size_t size, uint64_t offset, unsigned flags)
{
  size_t room = op == BLKEMU_OP_READ ? size : 0;
  struct fuse_io *io = malloc (sizeof *io + room);
  if (!io)
    return (void) fuse_reply_err (req, ENOMEM);
  *io = (struct fuse_io){ .req = req, .op = op, .size = size };
  int r =
    blkemu_submit (emu, op, op == BLKEMU_OP_READ ? io->buf : (char *) buf,
                   size, offset, flags, io_done, io);
  if (r != BLKEMU_QUEUED)
    io_done (io, r);
}

static void
op_readdir (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
            struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  (void) fi;
  struct dirbuf b = { NULL, 0 };
  size_t d;
  unsigned attr;

  dirbuf_add (req, &b, ".", ino);
  if (ino == INO_ROOT) {
    dirbuf_add (req, &b, "..", INO_ROOT);
    dirbuf_add (req, &b, CTLDIR_NAME, INO_CTLDIR);
    for (size_t i = 0; i < m->ndisks; i++)
      dirbuf_add (req, &b, m->disks[i].name, disk_ino (i));
  }
  else if (ino == INO_CTLDIR) {
    dirbuf_add (req, &b, "..", INO_ROOT);
    for (size_t i = 0; i < m->ndisks; i++)
      dirbuf_add (req, &b, m->disks[i].name, attr_ino (i, ATTR_DIR));
  }
  else if (attr_decode (m, ino, &d, &attr) && attr == ATTR_DIR) {
    dirbuf_add (req, &b, "..", INO_CTLDIR);
    for (unsigned a = ATTR_STATS; a < ATTR_KEY0 + nkeys (); a++)
      if (attr_listed (a))
        dirbuf_add (req, &b, attr_name (a), attr_ino (d, a));
  }
  else {
    free (b.p);
    return (void) fuse_reply_err (req, ENOTDIR);
  }
  if ((size_t) off < b.size)
    fuse_reply_buf (req, b.p + off,
                    b.size - (size_t) off < size ? b.size - (size_t) off
                                                 : size);
  else
    fuse_reply_buf (req, NULL, 0);
  free (b.p);
}

/* ---- open files -------------------------------------------------- */

/* An attribute file's content, generated at open so that reads at any
 * offset see one consistent snapshot.
 */
struct attr_handle {
  char *text;
  size_t len;
};

static void
op_open (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  size_t d;
  unsigned attr;
  if ((fi->flags & O_ACCMODE) != O_RDONLY && !may_write (req))
    return (void) fuse_reply_err (req, EACCES);
  if (ino >= INO_DISK0 && ino < INO_DISK0 + m->ndisks) {
    if (!__atomic_exchange_n (&m->transport_recorded, true, __ATOMIC_ACQ_REL))
      record_transport (m);
    fi->keep_cache = 0;
    return (void) fuse_reply_open (req, fi);
  }
  if (!attr_decode (m, ino, &d, &attr) || attr == ATTR_DIR)
    return (void) fuse_reply_err (req, ino == INO_ROOT ? EISDIR : ENOENT);
  struct attr_handle *h = calloc (1, sizeof *h);
  if (!h)
    return (void) fuse_reply_err (req, ENOMEM);
  if ((fi->flags & O_ACCMODE) != O_WRONLY) {
    h->text = attr_text (&m->disks[d], attr);
    if (!h->text) {
      free (h);
      return (void) fuse_reply_err (req, ENOMEM);
    }
    h->len = strlen (h->text);
  }
  fi->fh = (uint64_t) (uintptr_t) h;
  fi->direct_io = 1; /* size 0 in getattr; content is generated */
  fuse_reply_open (req, fi);
}

static void
op_release (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  if (ino >= INO_ATTR_BASE) {
    struct attr_handle *h = (struct attr_handle *) (uintptr_t) fi->fh;
    if (h)
      free (h->text);
    free (h);
  }
  fuse_reply_err (req, 0);
}

/* Clamp a disk request to the end of the disk, as a block device file. */
static size_t
clamp (const struct disk *dk, size_t size, off_t off)
{
  if ((uint64_t) off >= dk->geo.size_bytes)
    return 0;
  if (size > dk->geo.size_bytes - (uint64_t) off)
    return (size_t) (dk->geo.size_bytes - (uint64_t) off);
  return size;
}

static void
op_read (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
         struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  if (ino >= INO_ATTR_BASE) {
    struct attr_handle *h = (struct attr_handle *) (uintptr_t) fi->fh;
    if (!h->text)
      return (void) fuse_reply_err (req, EBADF);
    if ((size_t) off >= h->len)
      return (void) fuse_reply_buf (req, NULL, 0);
    size_t n = h->len - (size_t) off < size ? h->len - (size_t) off : size;
    /* Reply from a copy this thread owns: once the kernel has the reply,
     * the reader may close and another thread free H in op_release while
     * this one is still returning from writev (whose sanitizer hook reads
     * the buffer after the call: a use-after-free report, and a real one
     * for anything that looked later).
     */
    char *copy = malloc (n ? n : 1);
    if (!copy)
      return (void) fuse_reply_err (req, ENOMEM);
    memcpy (copy, h->text + off, n);
    fuse_reply_buf (req, copy, n);
    free (copy);
    return;
  }
  const struct disk *dk = &m->disks[ino - INO_DISK0];
  size = clamp (dk, size, off);
  if (size == 0)
    return (void) fuse_reply_buf (req, NULL, 0);
  disk_submit (req, dk->emu, BLKEMU_OP_READ, NULL, size, (uint64_t) off, 0);
}

static void
op_write (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
          off_t off, struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  (void) fi;
  size_t d;
  unsigned attr;
  if (attr_decode (m, ino, &d, &attr)) {
    int r = off == 0 ? attr_write (&m->disks[d], attr, buf, size) : EINVAL;
    if (r)
      fuse_reply_err (req, r);
    else
      fuse_reply_write (req, size);
    return;
  }
  const struct disk *dk = &m->disks[ino - INO_DISK0];
  if ((uint64_t) off >= dk->geo.size_bytes || clamp (dk, size, off) != size)
    return (void) fuse_reply_err (req, ENOSPC);
  unsigned flags = fi->flags & (O_SYNC | O_DSYNC) ? BLKEMU_FLAG_FUA : 0;
  disk_submit (req, dk->emu, BLKEMU_OP_WRITE, buf, size, (uint64_t) off,
               flags);
}

static void
op_fsync (fuse_req_t req, fuse_ino_t ino, int datasync,
          struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  (void) datasync;
  (void) fi;
  if (ino < INO_DISK0 || ino >= INO_DISK0 + m->ndisks)
    return (void) fuse_reply_err (req, 0);
  disk_submit (req, m->disks[ino - INO_DISK0].emu, BLKEMU_OP_FLUSH, NULL, 0, 0,
               0);
}

static void
op_flush (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
  (void) ino;
  (void) fi;
  fuse_reply_err (req, 0); /* close(2), not a cache flush: fsync is */
}

static void
op_fallocate (fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
              struct fuse_file_info *fi)
{
  struct emu_mount *m = fuse_req_userdata (req);
  (void) fi;
  if (ino < INO_DISK0 || ino >= INO_DISK0 + m->ndisks)
    return (void) fuse_reply_err (req, EOPNOTSUPP);
  struct disk *dk = &m->disks[ino - INO_DISK0];
  if (!(mode & FALLOC_FL_KEEP_SIZE) &&
      (uint64_t) (off + len) > dk->geo.size_bytes)
    return (void) fuse_reply_err (req, EFBIG);
  size_t n = clamp (dk, (size_t) len, off);
  if (mode & FALLOC_FL_PUNCH_HOLE)
    disk_submit (req, dk->emu, BLKEMU_OP_TRIM, NULL, n, (uint64_t) off, 0);
  else if (mode & FALLOC_FL_ZERO_RANGE)
    disk_submit (req, dk->emu, BLKEMU_OP_ZERO, NULL, n, (uint64_t) off, 0);
  else if (mode & ~FALLOC_FL_KEEP_SIZE)
    fuse_reply_err (req, EOPNOTSUPP);
  else
    fuse_reply_err (req, 0); /* the disk is always fully "allocated" */
}

static void
op_statfs (fuse_req_t req, fuse_ino_t ino)
{
  struct emu_mount *m = fuse_req_userdata (req);
  (void) ino;
  struct statvfs sv = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255 };
  uint64_t total = 0;
  for (size_t i = 0; i < m->ndisks; i++)
    total += m->disks[i].geo.size_bytes;
  sv.f_blocks = total / 4096;
  sv.f_files = m->ndisks;
  fuse_reply_statfs (req, &sv);
}

static const struct fuse_lowlevel_ops ops = {
  .init = op_init,
  .lookup = op_lookup,
  .getattr = op_getattr,
  .setattr = op_setattr,
  .readdir = op_readdir,
  .open = op_open,
  .release = op_release,
  .read = op_read,
  .write = op_write,
  .fsync = op_fsync,
  .flush = op_flush,
  .fallocate = op_fallocate,
  .statfs = op_statfs,
};

/* ---- command line ------------------------------------------------ */

struct options {
  char *disk_specs[MAX_DISKS];
  size_t ndisk_specs;
  int show_help, show_version, list_keys, list_profiles;
};

enum { KEY_DISK, KEY_HELP, KEY_VERSION, KEY_KEYS, KEY_PROFILES };

static const struct fuse_opt option_table[] = {
  FUSE_OPT_KEY ("--disk ", KEY_DISK),
  FUSE_OPT_KEY ("--disk=", KEY_DISK),
  FUSE_OPT_KEY ("-h", KEY_HELP),
  FUSE_OPT_KEY ("--help", KEY_HELP),
  FUSE_OPT_KEY ("-V", KEY_VERSION),
  FUSE_OPT_KEY ("--version", KEY_VERSION),
  FUSE_OPT_KEY ("--list-keys", KEY_KEYS),
  FUSE_OPT_KEY ("--list-profiles", KEY_PROFILES),
  FUSE_OPT_END
};

static int
option_proc (void *data, const char *arg, int key, struct fuse_args *outargs)
{
  struct options *o = data;
  (void) outargs;
  switch (key) {
  case KEY_DISK:
    if (o->ndisk_specs == MAX_DISKS) {
      fprintf (stderr, "blkemu-fuse: at most %d disks\n", MAX_DISKS);
      return -1;
    }
    arg += strlen ("--disk");
    if (*arg == '=')
      arg++;
    o->disk_specs[o->ndisk_specs++] = strdup (arg);
    return 0;
  case KEY_HELP: o->show_help = 1; return 0;
  case KEY_VERSION: o->show_version = 1; return 0;
  case KEY_KEYS: o->list_keys = 1; return 0;
  case KEY_PROFILES: o->list_profiles = 1; return 0;
  }
  return 1; /* keep: for fuse_parse_cmdline */
}

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: blkemu-fuse [options] MOUNTPOINT --disk SPEC [--disk SPEC ...]\n"
    "\n"
    "Serves each disk as the file MOUNTPOINT/NAME and its live attributes\n"
    "under MOUNTPOINT/.blkemu/NAME/ (stats, summary, reset, one file per "
    "key).\n"
    "\n"
    "SPEC is name=NAME,key=value,... with the keys below (the same as the\n"
    "nbdkit plugin's); name= defaults to d0, d1, ...\n"
    "\n"
    "blkemu-fuse options:\n"
    "  --disk SPEC          add a disk (repeatable)\n");
  frontend_print_common_options (fp);
  fprintf (fp, "\nFUSE options:\n");
  if (fp == stdout)
    fuse_cmdline_help ();
  fprintf (fp, "\nDisk keys:\n");
  blkemu_spec_print_help (fp, "  ");
  fprintf (
    fp,
    "\nThe kernel caps FUSE requests at max_pages (1 MiB here at best); a\n"
    "max-transfer above the cap is never seen: the kernel splits first.\n"
    "Use losetup --direct-io=on on a disk file to see the block layer's\n"
    "requests; without it the page cache reshapes them.\n");
}

static int
open_disks (struct emu_mount *m, struct options *o)
{
  struct blkemu_disk *emu[MAX_DISKS];
  if (frontend_open_disks ("blkemu-fuse", &blkemu_fuse_frontend, o->disk_specs,
                           o->ndisk_specs, CTLDIR_NAME, emu) == -1)
    return -1;
  for (m->ndisks = 0; m->ndisks < o->ndisk_specs; m->ndisks++) {
    m->disks[m->ndisks].emu = emu[m->ndisks];
    m->disks[m->ndisks].name = blkemu_disk_name (emu[m->ndisks]);
    pthread_mutex_init (&m->disks[m->ndisks].said_lock, NULL);
    strcpy (m->disks[m->ndisks].power_said, "on\n");
    strcpy (m->disks[m->ndisks].view_said, "none\n");
    blkemu_disk_geometry (emu[m->ndisks], &m->disks[m->ndisks].geo);
  }
  return 0;
}

/* -1 if a disk's stats= could not be written (the exit status says so). */
static int
close_disks (struct emu_mount *m)
{
  int r = 0;
  for (size_t i = 0; i < m->ndisks; i++)
    if (blkemu_disk_close (m->disks[i].emu) == -1)
      r = -1;
  m->ndisks = 0;
  return r;
}

/* A clear message for the mount point problems people hit most. */
static int
check_mountpoint (const char *mp)
{
  struct stat st, parent;
  char up[PATH_MAX];
  if (stat (mp, &st) == -1) {
    fprintf (stderr, "blkemu-fuse: mount point %s: %s\n", mp,
             strerror (errno));
    return -1;
  }
  if (!S_ISDIR (st.st_mode)) {
    fprintf (stderr, "blkemu-fuse: mount point %s: not a directory\n", mp);
    return -1;
  }
  snprintf (up, sizeof up, "%s/..", mp);
  if (stat (up, &parent) == 0 && parent.st_dev != st.st_dev &&
      parent.st_ino != st.st_ino) {
    fprintf (stderr,
             "blkemu-fuse: mount point %s: already a mount point "
             "(busy); unmount it first\n",
             mp);
    return -1;
  }
  return 0;
}

/* Serve until unmounted or signalled.  Returns the exit status. */
static int
serve (struct fuse_session *se, const struct fuse_cmdline_opts *fo)
{
  int r;
  if (fo->singlethread)
    r = fuse_session_loop (se);
  else {
    struct fuse_loop_config *cfg = fuse_loop_cfg_create ();
    fuse_loop_cfg_set_clone_fd (cfg, fo->clone_fd);
    if (fo->max_idle_threads != UINT_MAX)
      fuse_loop_cfg_set_idle_threads (cfg, fo->max_idle_threads);
    /* Workers only submit (replies come from the completion threads):
     * a few cover the file backend's blocking syscalls.
     */
    fuse_loop_cfg_set_max_threads (cfg, FUSE_WORKERS);
    r = fuse_session_loop_mt (se, cfg);
    fuse_loop_cfg_destroy (cfg);
  }
  return r < 0 ? 1 : 0;
}

/* --help, --version, --list-keys, --list-profiles: the exit status, or
 * -1 when none was given.
 */
static int
info_options (const struct options *o)
{
  char lib[64];
  snprintf (lib, sizeof lib, "(libfuse %s)", fuse_pkgversion ());
  if (o->show_help) {
    usage (stdout);
    return 0;
  }
  if (o->show_version)
    return frontend_print_version ("blkemu-fuse", lib);
  if (o->list_keys)
    return frontend_list_keys ();
  if (o->list_profiles)
    return frontend_list_profiles ();
  return -1;
}

int
main (int argc, char **argv)
{
  struct fuse_args args = FUSE_ARGS_INIT (argc, argv);
  struct options o = { 0 };
  struct fuse_cmdline_opts fo = { 0 };
  int status = 1;
  struct emu_mount *m = calloc (1, sizeof *m);
  if (!m)
    return 1;

  if (fuse_opt_parse (&args, &o, option_table, option_proc) == -1)
    goto out_args;
  if ((status = info_options (&o)) != -1)
    goto out_args;
  status = 1;
  if (fuse_parse_cmdline (&args, &fo) != 0)
    goto out_args;
  if (!fo.mountpoint) {
    usage (stderr);
    fprintf (stderr, "\nblkemu-fuse: no mount point given\n");
    goto out_args;
  }
  clock_gettime (CLOCK_REALTIME, &m->mount_time);
  while (blkemu_key_name (key_count))
    key_count++;
  if (check_mountpoint (fo.mountpoint) == -1 || open_disks (m, &o) == -1)
    goto out_disks;

  /* The kernel enforces the modes fill_stat reports (0644 disks and
   * attributes owned by the mounting user): without it, -o allow_other
   * would let any user write anything here.
   */
  if (fuse_opt_add_arg (&args, "-odefault_permissions") != 0)
    goto out_disks;
  struct fuse_session *se = fuse_session_new (&args, &ops, sizeof ops, m);
  if (!se)
    goto out_disks;
  if (fuse_set_signal_handlers (se) != 0)
    goto out_session;
  if (fuse_session_mount (se, fo.mountpoint) != 0) {
    fprintf (stderr, "blkemu-fuse: cannot mount on %s\n", fo.mountpoint);
    goto out_signals;
  }
  fuse_daemonize (fo.foreground);

  /* Service threads (control sockets, SIGUSR1) start after the fork. */
  char err[BLKEMU_ERR_MAX];
  for (size_t i = 0; i < m->ndisks; i++)
    if (blkemu_disk_start (m->disks[i].emu, err, sizeof err) == -1) {
      fprintf (stderr, "blkemu-fuse: disk %s: %s\n", m->disks[i].name, err);
      goto out_unmount;
    }
  for (size_t i = 0; i < m->ndisks; i++)
    fprintf (stderr, "blkemu-fuse: %s/%s: %llu bytes\n", fo.mountpoint,
             m->disks[i].name,
             (unsigned long long) m->disks[i].geo.size_bytes);

  status = serve (se, &fo);
  /* Answer what is still pending (a stall=3600s) now, with ESHUTDOWN,
   * while the kernel can still take the replies.
   */
  for (size_t i = 0; i < m->ndisks; i++)
    blkemu_disk_cancel (m->disks[i].emu);

out_unmount:
  fuse_session_unmount (se);
out_signals:
  fuse_remove_signal_handlers (se);
out_session:
  fuse_session_destroy (se);
out_disks:
  if (close_disks (m) == -1 && status == 0)
    status = 1;
  free (fo.mountpoint);
out_args:
  for (size_t i = 0; i < o.ndisk_specs; i++)
    free (o.disk_specs[i]);
  fuse_opt_free_args (&args);
  free (m);
  return status;
}
