/* blkemu-fiemap: where a file's bytes lie on the disk under its file
 * system, as byte ranges of that disk, for blkemu's error rules and bad
 * ranges ("fail the write of this page").  FIEMAP through the file
 * system, the partition's start added, and a refusal wherever the answer
 * would be a guess: a file system not on the disk named, extents whose
 * data is not at a fixed place on it (delayed allocation, inline,
 * encoded, unwritten), file systems whose FIEMAP gives addresses of
 * their own (btrfs).  See docs/blkemu-fiemap.1.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#define PROG "blkemu-fiemap"
#define EXTENTS_A_CALL 256

static void
usage (FILE *fp)
{
  fprintf (
    fp,
    "usage: " PROG " [--dev DEV] [--keys] FILE [OFFSET LENGTH]\n"
    "\n"
    "Prints where FILE's data (or its bytes OFFSET..OFFSET+LENGTH) lies on\n"
    "the block device under its file system, one range a line:\n"
    "  DISK_OFFSET LENGTH FILE_OFFSET      (bytes)\n"
    "with the partition's start added, so the ranges are the whole disk's,\n"
    "as blkemu's keys take them.  Sync the file first: data still in the\n"
    "page cache has no place on the disk yet.\n"
    "\n"
    "  --dev DEV   refuse unless the file system is on DEV (a disk, or a\n"
    "              partition of it)\n"
    "  --keys      print blkemu's keys for the one range instead:\n"
    "              error-offset=N error-length=N (refused if the bytes lie\n"
    "              in more than one range)\n"
    "  -h, --help  this help\n"
    "\n"
    "Refused, with the reason: a file system on a device-mapper, md or\n"
    "loop device when DEV is what lies under it; btrfs (its FIEMAP gives\n"
    "its own logical addresses); extents delayed, inline, encoded,\n"
    "unwritten or of unknown place; holes in the range.\n"
    "\n"
    "Example: fail the checkpoint's write of a PostgreSQL heap page once:\n"
    "  blkemu-ctl SOCK set error-op=write error-mode=once \\\n"
    "    $(" PROG " --dev /dev/ublkb0 --keys $PGDATA/base/5/16384 0 8192)\n"
    "\n"
    "Exit status: 0, 1 when refused, 2 on usage errors.\n");
}

static int
refuse (const char *fmt, const char *a, const char *b)
{
  fprintf (stderr, PROG ": ");
  fprintf (stderr, fmt, a, b);
  fputc ('\n', stderr);
  return 1;
}

/* The partition DEV starts at, in bytes (0 for a whole disk), and the
 * whole disk's device number in *DISK.  From sysfs.
 */
static int
partition_start (dev_t dev, uint64_t *start, dev_t *disk)
{
  char path[PATH_MAX], buf[64];
  *start = 0;
  *disk = dev;
  snprintf (path, sizeof path, "/sys/dev/block/%u:%u/partition", major (dev),
            minor (dev));
  if (access (path, F_OK) != 0)
    return 0;
  snprintf (path, sizeof path, "/sys/dev/block/%u:%u/start", major (dev),
            minor (dev));
  FILE *f = fopen (path, "re");
  unsigned long long sectors;
  bool ok =
    f && fgets (buf, sizeof buf, f) && sscanf (buf, "%llu", &sectors) == 1;
  if (f)
    fclose (f);
  snprintf (path, sizeof path, "/sys/dev/block/%u:%u/../dev", major (dev),
            minor (dev));
  f = fopen (path, "re");
  unsigned maj, min;
  ok = ok && f && fgets (buf, sizeof buf, f) &&
       sscanf (buf, "%u:%u", &maj, &min) == 2;
  if (f)
    fclose (f);
  if (!ok)
    return -1;
  *start = (uint64_t) sectors * 512;
  *disk = makedev (maj, min);
  return 0;
}

/* Why an extent with FLAGS has no fixed place on the disk, or NULL. */
static const char *
unplaced (uint32_t flags)
{
  if (flags & FIEMAP_EXTENT_DELALLOC)
    return "delayed allocation (not written yet: sync the file)";
  if (flags & FIEMAP_EXTENT_UNKNOWN)
    return "of unknown place";
  if (flags & (FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL |
               FIEMAP_EXTENT_NOT_ALIGNED))
    return "inline in metadata";
  if (flags & (FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED))
    return "encoded (compressed or encrypted)";
  if (flags & FIEMAP_EXTENT_UNWRITTEN)
    return "unwritten (allocated, reads as zeroes)";
  return NULL;
}

struct range {
  uint64_t disk, len, file;
};

/* What the command line asks. */
struct request {
  const char *file, *dev_path;
  bool keys;
  uint64_t from, want; /* want UINT64_MAX: to the file's end */
};

/* Returns 0, or the exit status (usage, 2). */
static int
parse_args (int argc, char **argv, struct request *rq)
{
  int i = 1;
  *rq = (struct request){ .want = UINT64_MAX };
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp (argv[i], "-h") || !strcmp (argv[i], "--help")) {
      usage (stdout);
      exit (0);
    }
    else if (!strcmp (argv[i], "--keys"))
      rq->keys = true;
    else if (!strcmp (argv[i], "--dev") && i + 1 < argc)
      rq->dev_path = argv[++i];
    else {
      fprintf (stderr, PROG ": unknown option '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (argc - i != 1 && argc - i != 3) {
    usage (stderr);
    return 2;
  }
  rq->file = argv[i];
  if (argc - i == 3) {
    char *end1, *end2;
    errno = 0;
    rq->from = strtoull (argv[i + 1], &end1, 0);
    rq->want = strtoull (argv[i + 2], &end2, 0);
    if (errno || *end1 || *end2 || !rq->want || argv[i + 1][0] == '-' ||
        argv[i + 2][0] == '-') {
      fprintf (stderr,
               PROG ": OFFSET %s LENGTH %s: must be numbers of bytes, "
                    "LENGTH at least 1\n",
               argv[i + 1], argv[i + 2]);
      return 2;
    }
  }
  return 0;
}

/* Open RQ's file and check it can be mapped to RQ's device: its fd, and
 * in *START what to add to FIEMAP's offsets; -1 when refused (said).
 */
static int
open_mapped (struct request *rq, uint64_t *start)
{
  const char *file = rq->file;
  int fd = open (file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  struct statfs sf;
  dev_t disk;
  if (fd == -1 || fstat (fd, &st) == -1 || fstatfs (fd, &sf) == -1)
    refuse ("%s: %s", file, strerror (errno));
  else if (!S_ISREG (st.st_mode))
    refuse ("%s: %s", file, "not a regular file");
  else if (sf.f_type == BTRFS_SUPER_MAGIC)
    refuse ("%s: %s", file,
            "btrfs: its FIEMAP gives btrfs's logical addresses, not the "
            "disk's");
  else if (partition_start (st.st_dev, start, &disk) == -1)
    refuse ("%s: %s", file, "cannot read its partition from sysfs");
  else {
    if (rq->want == UINT64_MAX)
      rq->want = (uint64_t) st.st_size > rq->from
                   ? (uint64_t) st.st_size - rq->from
                   : 0;
    if (!rq->want || rq->from + rq->want > (uint64_t) st.st_size) {
      refuse ("%s: %s", file, "the range is empty or past the file's end");
      goto fail;
    }
    if (!rq->dev_path)
      return fd;
    struct stat ds;
    if (stat (rq->dev_path, &ds) == -1 || !S_ISBLK (ds.st_mode))
      refuse ("--dev %s: %s", rq->dev_path, "not a block device");
    else if (ds.st_rdev == st.st_dev) {
      *start = 0; /* offsets into DEV itself, a partition or a disk */
      return fd;
    }
    else if (ds.st_rdev == disk)
      return fd;
    else
      fprintf (stderr,
               PROG ": %s: its file system is on device %u:%u, not on %s "
                    "(a mapping through dm, md or loop is not followed)\n",
               file, major (st.st_dev), minor (st.st_dev), rq->dev_path);
  }
fail:
  if (fd != -1)
    close (fd);
  return -1;
}

/* Append the disk range of LEN bytes at file offset AT, DISK_AT on the
 * disk, merging it with the last when contiguous there.  -1 without
 * memory.
 */
static int
add_range (struct range **out, size_t *n, uint64_t disk_at, uint64_t len,
           uint64_t at)
{
  if (*n && (*out)[*n - 1].disk + (*out)[*n - 1].len == disk_at) {
    (*out)[*n - 1].len += len;
    return 0;
  }
  struct range *more = realloc (*out, (*n + 1) * sizeof **out);
  if (!more)
    return -1;
  *out = more;
  (*out)[(*n)++] = (struct range){ disk_at, len, at };
  return 0;
}

/* FIEMAP over RQ's range of FD: the disk ranges in *OUT (*N of them).
 * Returns 0, or 1 when refused (said).
 */
static int
map_range (int fd, const struct request *rq, uint64_t start,
           struct range **out, size_t *n)
{
  size_t size =
    sizeof (struct fiemap) + EXTENTS_A_CALL * sizeof (struct fiemap_extent);
  struct fiemap *fm = calloc (1, size);
  uint64_t at = rq->from, end = rq->from + rq->want;
  const char *hole = "a hole in the range (no data there)";
  int status = fm ? 0 : refuse ("%s: %s", rq->file, "out of memory");
  while (!status && at < end) {
    memset (fm, 0, size);
    fm->fm_start = at;
    fm->fm_length = end - at;
    /* No FIEMAP_FLAG_SYNC: writing the file back would change what the
     * workload under test left dirty; delayed extents are refused.
     */
    fm->fm_extent_count = EXTENTS_A_CALL;
    if (ioctl (fd, FS_IOC_FIEMAP, fm) == -1) {
      status = refuse ("%s: FIEMAP: %s", rq->file, strerror (errno));
      break;
    }
    if (!fm->fm_mapped_extents) {
      status = refuse ("%s: %s", rq->file, hole);
      break;
    }
    bool last = false;
    for (uint32_t e = 0; e < fm->fm_mapped_extents && at < end; e++) {
      const struct fiemap_extent *x = &fm->fm_extents[e];
      const char *why = unplaced (x->fe_flags);
      last = x->fe_flags & FIEMAP_EXTENT_LAST;
      if (x->fe_logical > at || why) {
        status = why ? refuse ("%s: an extent is %s", rq->file, why)
                     : refuse ("%s: %s", rq->file, hole);
        break;
      }
      uint64_t skip = at - x->fe_logical;
      if (skip >= x->fe_length)
        continue;
      uint64_t len =
        x->fe_length - skip < end - at ? x->fe_length - skip : end - at;
      if (add_range (out, n, start + x->fe_physical + skip, len, at) == -1) {
        status = refuse ("%s: %s", rq->file, "out of memory");
        break;
      }
      at += len;
    }
    if (!status && at < end && last)
      status = refuse ("%s: %s", rq->file, hole);
  }
  free (fm);
  return status;
}

int
main (int argc, char **argv)
{
  struct request rq;
  int status = parse_args (argc, argv, &rq);
  if (status)
    return status;
  uint64_t start;
  int fd = open_mapped (&rq, &start);
  if (fd == -1)
    return 1;
  struct range *out = NULL;
  size_t n = 0;
  status = map_range (fd, &rq, start, &out, &n);
  close (fd);
  if (!status && rq.keys && n != 1) {
    fprintf (stderr,
             PROG ": %s: the bytes lie in %zu ranges on the disk; --keys "
                  "takes one (leave it out to list them)\n",
             rq.file, n);
    status = 1;
  }
  for (size_t r = 0; !status && r < n; r++) {
    if (rq.keys)
      printf ("error-offset=%" PRIu64 " error-length=%" PRIu64 "\n",
              out[r].disk, out[r].len);
    else
      printf ("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", out[r].disk, out[r].len,
              out[r].file);
  }
  free (out);
  return status;
}
