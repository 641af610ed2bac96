/* backend=file: a regular file or a block device.
 *
 * flush is fdatasync; FUA writes use RWF_DSYNC (or fdatasync where the
 * kernel lacks it); trim punches a hole; write-zeroes uses ZERO_RANGE or
 * PUNCH_HOLE, falling back to writing zeros; extents come from
 * SEEK_DATA/SEEK_HOLE.  A missing file is created at size=.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend.h"
#include "error.h"
#include "paths.h"

struct file {
  int fd;
  bool is_block;
  bool can_punch; /* cleared after the first EOPNOTSUPP */
  bool can_zero_range;
  bool can_dsync;                 /* pwritev2 RWF_DSYNC works */
  bool nowait_read, nowait_write; /* RWF_NOWAIT works (cleared if not) */
  bool in_memory; /* tmpfs or ramfs: reads and writes never wait on I/O */
};

/* tmpfs and ramfs keep the data in memory: nothing to wait for but
 * memory (they take no RWF_NOWAIT either, as of Linux 6.12).
 */
static bool
in_memory_fs (int fd)
{
  struct statfs fs;
  return fstatfs (fd, &fs) == 0 &&
         (fs.f_type == 0x01021994 /* TMPFS_MAGIC */ ||
          fs.f_type == (__fsword_t) 0x858458f6 /* RAMFS_MAGIC */);
}

/* size= against the file's own HAVE bytes: take it when size= is unset,
 * grow a regular file to it; a block device cannot grow.  Returns 0 or
 * -1 with ERR filled.
 */
static int
file_fit_size (struct blkemu_config *cfg, int fd, bool is_block, uint64_t have,
               char *err)
{
  const char *path = cfg->str[K_FILE];
  uint64_t want = cfg->num[K_SIZE];
  if (want == 0) {
    if (have == 0) {
      set_err (err, "file=%s: is empty (give size= to extend it)", path);
      return -1;
    }
    cfg->num[K_SIZE] = have;
    return 0;
  }
  if (want <= have)
    return 0;
  if (is_block) {
    set_err (err,
             "size=%llu: larger than the block device file=%s (%llu "
             "bytes)",
             (unsigned long long) want, path, (unsigned long long) have);
    return -1;
  }
  if (ftruncate (fd, (off_t) want) == -1) {
    set_err (err, "file=%s: %s", path, strerrordesc_np (errno));
    return -1;
  }
  return 0;
}

static int
file_open (struct blkemu_config *cfg, void **state, char *err)
{
  const char *path = cfg->str[K_FILE];
  uint64_t want = cfg->num[K_SIZE];
  struct stat sb;
  int flags = O_RDWR | O_CLOEXEC;

  if (want)
    flags |= O_CREAT;
  /* /proc/self/status opened read-write "worked" as a disk. */
  if (path_is_kernel_interface (path)) {
    set_err (err,
             "file=%s: is a kernel interface (/proc, /sys ...), not "
             "storage",
             path);
    return -1;
  }
  int fd = open (path, flags, 0644);
  if (fd == -1) {
    set_err (err, "file=%s: %s%s", path, strerrordesc_np (errno),
             errno == ENOENT ? " (give size= to create it)" : "");
    return -1;
  }
  if (fstat (fd, &sb) == -1)
    goto fail_errno;

  uint64_t have;
  bool is_block = S_ISBLK (sb.st_mode);
  if (is_block) {
    if (ioctl (fd, BLKGETSIZE64, &have) == -1)
      goto fail_errno;
  }
  else if (S_ISREG (sb.st_mode))
    have = (uint64_t) sb.st_size;
  else {
    set_err (err, "file=%s: must be a regular file or a block device", path);
    close (fd);
    return -1;
  }

  if (file_fit_size (cfg, fd, is_block, have, err) == -1) {
    close (fd);
    return -1;
  }

  struct file *f = calloc (1, sizeof *f);
  if (!f) {
    set_err (err, "file=%s: out of memory", path);
    close (fd);
    return -1;
  }
  f->fd = fd;
  f->is_block = is_block;
  f->can_punch = !is_block;
  f->can_zero_range = !is_block;
  f->can_dsync = true;
  f->nowait_read = f->nowait_write = true;
  f->in_memory = !is_block && in_memory_fs (fd);
  *state = f;
  return 0;

fail_errno:
  set_err (err, "file=%s: %s", path, strerrordesc_np (errno));
  close (fd);
  return -1;
}

static void
file_close (void *state)
{
  struct file *f = state;
  close (f->fd);
  free (f);
}

static int
file_pread (void *state, void *buf, uint64_t len, uint64_t offset)
{
  struct file *f = state;
  char *p = buf;
  while (len > 0) {
    ssize_t r = pread (f->fd, p, len, (off_t) offset);
    if (r == -1) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (r == 0) { /* past the end of a shorter file: zeros */
      memset (p, 0, len);
      return 0;
    }
    p += r;
    offset += (uint64_t) r;
    len -= (uint64_t) r;
  }
  return 0;
}

static int file_pread (void *state, void *buf, uint64_t len, uint64_t offset);
static int file_pwrite (void *state, const void *buf, uint64_t len,
                        uint64_t offset, bool fua);

/* RWF_NOWAIT: served from the page cache, or EAGAIN (a short transfer
 * counts as EAGAIN too: the rest would block).  A file in memory is
 * served whole.
 */
static int
file_try_rw (void *state, bool write, void *buf, uint64_t len, uint64_t offset)
{
  struct file *f = state;
  if (f->in_memory)
    return write ? file_pwrite (state, buf, len, offset, false)
                 : file_pread (state, buf, len, offset);
  bool *works = write ? &f->nowait_write : &f->nowait_read;
  if (!*works)
    return EAGAIN;
  struct iovec iov = { .iov_base = buf, .iov_len = len };
  ssize_t r = write ? pwritev2 (f->fd, &iov, 1, (off_t) offset, RWF_NOWAIT)
                    : preadv2 (f->fd, &iov, 1, (off_t) offset, RWF_NOWAIT);
  if (r == -1) {
    if (errno == EOPNOTSUPP || errno == EINVAL)
      *works = false;
    return errno == EAGAIN || errno == EINTR || !*works ? EAGAIN : errno;
  }
  return (uint64_t) r == len ? 0 : EAGAIN;
}

static int
file_pwrite (void *state, const void *buf, uint64_t len, uint64_t offset,
             bool fua)
{
  struct file *f = state;
  const char *p = buf;
  bool dsync = fua && f->can_dsync;
  while (len > 0) {
    struct iovec iov = { .iov_base = (void *) p, .iov_len = len };
    ssize_t r =
      pwritev2 (f->fd, &iov, 1, (off_t) offset, dsync ? RWF_DSYNC : 0);
    if (r == -1) {
      if (errno == EINTR)
        continue;
      if (dsync && (errno == EOPNOTSUPP || errno == EINVAL)) {
        f->can_dsync = false;
        dsync = false;
        continue;
      }
      return errno;
    }
    p += r;
    offset += (uint64_t) r;
    len -= (uint64_t) r;
  }
  if (fua && !dsync && fdatasync (f->fd) == -1)
    return errno;
  return 0;
}

static int
file_flush (void *state)
{
  struct file *f = state;
  return fdatasync (f->fd) == -1 ? errno : 0;
}

static int
file_trim (void *state, uint64_t len, uint64_t offset)
{
  struct file *f = state;
  if (!f->can_punch)
    return 0; /* trim is advisory: nothing to do is a valid answer */
  if (fallocate (f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                 (off_t) offset, (off_t) len) == -1) {
    if (errno == EOPNOTSUPP) {
      f->can_punch = false;
      return 0;
    }
    return errno;
  }
  return 0;
}

static int
write_zeros (struct file *f, uint64_t len, uint64_t offset)
{
  static const char zeros[65536];
  while (len > 0) {
    uint64_t n = len < sizeof zeros ? len : sizeof zeros;
    int r = file_pwrite (f, zeros, n, offset, false);
    if (r)
      return r;
    offset += n;
    len -= n;
  }
  return 0;
}

static int
file_zero (void *state, uint64_t len, uint64_t offset, bool may_trim)
{
  struct file *f = state;
  if (may_trim && f->can_punch) {
    if (fallocate (f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                   (off_t) offset, (off_t) len) == 0)
      return 0;
    if (errno != EOPNOTSUPP)
      return errno;
    f->can_punch = false;
  }
  if (f->can_zero_range) {
    if (fallocate (f->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
                   (off_t) offset, (off_t) len) == 0)
      return 0;
    if (errno != EOPNOTSUPP)
      return errno;
    f->can_zero_range = false;
  }
  return write_zeros (f, len, offset);
}

static int
file_extents (void *state, uint64_t offset, uint64_t len, blkemu_extent_cb cb,
              void *opaque)
{
  struct file *f = state;
  uint64_t end = offset + len;
  while (offset < end) {
    off_t data = lseek (f->fd, (off_t) offset, SEEK_DATA);
    if (data == -1 && errno == ENXIO)
      data = (off_t) end; /* only a hole is left */
    else if (data == -1) {
      cb (opaque, offset, end - offset, false); /* no SEEK_DATA: all data */
      return 0;
    }
    if ((uint64_t) data > offset) {
      uint64_t stop = (uint64_t) data < end ? (uint64_t) data : end;
      if (cb (opaque, offset, stop - offset, true) == -1)
        return 0;
      offset = stop;
      continue;
    }
    off_t hole = lseek (f->fd, (off_t) offset, SEEK_HOLE);
    uint64_t stop =
      hole == -1 || (uint64_t) hole > end ? end : (uint64_t) hole;
    if (cb (opaque, offset, stop - offset, false) == -1)
      return 0;
    offset = stop;
  }
  return 0;
}

const struct backend_ops backend_file_ops = {
  .name = "file",
  .persistent = true,
  .blocking = true,
  .try_rw = file_try_rw,
  .can_trim = true,
  .can_zero = true,
  .can_extents = true,
  .open = file_open,
  .close = file_close,
  .pread = file_pread,
  .pwrite = file_pwrite,
  .flush = file_flush,
  .trim = file_trim,
  .zero = file_zero,
  .extents = file_extents,
};
