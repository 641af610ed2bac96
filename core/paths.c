/* Output and backing paths: see paths.h. */
#include "paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "error.h"

/* The magic numbers of linux/magic.h, for the file systems that are the
 * kernel's interfaces rather than storage.
 */
static const unsigned long kernel_fs_magic[] = {
  0x9fa0,     /* PROC_SUPER_MAGIC */
  0x62656572, /* SYSFS_MAGIC */
  0x64626720, /* DEBUGFS_MAGIC */
  0x74726163, /* TRACEFS_MAGIC */
  0x73636673, /* SECURITYFS_MAGIC */
  0x27e0eb,   /* CGROUP_SUPER_MAGIC */
  0x63677270, /* CGROUP2_SUPER_MAGIC */
  0x62656570, /* CONFIGFS_MAGIC */
};

static bool
magic_is_kernel (unsigned long magic)
{
  for (size_t i = 0; i < sizeof kernel_fs_magic / sizeof kernel_fs_magic[0];
       i++)
    if (magic == kernel_fs_magic[i])
      return true;
  return false;
}

bool
path_fd_is_kernel_interface (int fd)
{
  struct statfs fs;
  return fstatfs (fd, &fs) == 0 && magic_is_kernel ((unsigned long) fs.f_type);
}

/* PATH's directory, in DIR (PATH_MAX bytes). */
static void
dir_of (const char *path, char *dir)
{
  const char *slash = strrchr (path, '/');
  if (!slash)
    snprintf (dir, PATH_MAX, ".");
  else if (slash == path)
    snprintf (dir, PATH_MAX, "/");
  else
    snprintf (dir, PATH_MAX, "%.*s", (int) (slash - path), path);
}

bool
path_is_kernel_interface (const char *path)
{
  struct statfs fs;
  char dir[PATH_MAX];
  if (statfs (path, &fs) == 0)
    return magic_is_kernel ((unsigned long) fs.f_type);
  dir_of (path, dir);
  return statfs (dir, &fs) == 0 && magic_is_kernel ((unsigned long) fs.f_type);
}

int
path_check_output (const char *key, const char *path, bool char_dev, char *err)
{
  struct stat st;
  if (path_is_kernel_interface (path)) {
    set_err (err,
             "%s=%s: is a kernel interface (/proc, /sys ...), not a "
             "file to write",
             key, path);
    return -1;
  }
  /* A link is followed only to a character device (/dev/stdout): one
   * another user planted, pointing at a file, must not be written
   * through.
   */
  if (lstat (path, &st) == 0 && S_ISLNK (st.st_mode) &&
      !(char_dev && stat (path, &st) == 0 && S_ISCHR (st.st_mode))) {
    set_err (err, "%s=%s: is a symbolic link%s: name the file itself", key,
             path,
             char_dev ? " to something other than a character device" : "");
    return -1;
  }
  if (stat (path, &st) == 0) {
    if (!S_ISREG (st.st_mode) && !(char_dev && S_ISCHR (st.st_mode))) {
      set_err (err, "%s=%s: exists and is not a regular file%s%s", key, path,
               char_dev ? " or a character device" : "",
               S_ISFIFO (st.st_mode) ? " (a FIFO: it would block until a "
                                       "reader came)"
                                     : "");
      return -1;
    }
    if (access (path, W_OK) == -1) {
      set_err (err, "%s=%s: %s", key, path, strerrordesc_np (errno));
      return -1;
    }
    return 0;
  }
  if (errno != ENOENT) {
    set_err (err, "%s=%s: %s", key, path, strerrordesc_np (errno));
    return -1;
  }
  char dir[PATH_MAX];
  dir_of (path, dir);
  if (access (dir, W_OK) == -1) {
    set_err (err, "%s=%s: cannot write in %s: %s", key, path, dir,
             strerrordesc_np (errno));
    return -1;
  }
  return 0;
}

int
path_open_output (const char *key, const char *path, bool char_dev, char *err)
{
  if (path_check_output (key, path, char_dev, err) == -1)
    return -1;
  /* Non-blocking: what stat saw may have been replaced by a FIFO; and
   * never through a link that appeared since, except to a character
   * device, which is opened as it is (no O_CREAT, no O_TRUNC) and
   * refused below if it is anything else.
   */
  int flags = O_WRONLY | O_NONBLOCK | O_CLOEXEC;
  struct stat lst;
  bool via_link = char_dev && lstat (path, &lst) == 0 && S_ISLNK (lst.st_mode);
  int fd = via_link
             ? open (path, flags)
             : open (path, flags | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd == -1) {
    set_err (err, "%s=%s: %s", key, path,
             errno == ELOOP ? "is a symbolic link: name the file itself"
                            : strerrordesc_np (errno));
    return -1;
  }
  struct stat st;
  if (fstat (fd, &st) == -1 ||
      !((S_ISREG (st.st_mode) && !via_link) ||
        (char_dev && S_ISCHR (st.st_mode))) ||
      fcntl (fd, F_SETFL, 0) == -1) {
    set_err (err, "%s=%s: not a regular file%s", key, path,
             char_dev ? " or a character device" : "");
    close (fd);
    return -1;
  }
  return fd;
}
