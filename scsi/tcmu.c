/* A disk's life in LIO's configfs: a TCMU backstore in the HBA
 * user_2846 (every device there is blkemu-scsi's), exported through
 * tcm_loop as a local SCSI disk, or through LIO's iSCSI target as a
 * target of its own.  The kernel's tcmu-design document and the
 * fabrics' configfs layouts (tcm_loop, iscsi_target_mod) are the
 * references.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scsi.h"

#define CONFIGFS "/sys/kernel/config"
#define CORE CONFIGFS "/target/core"
#define LOOPBACK CONFIGFS "/target/loopback"
#define ISCSI CONFIGFS "/target/iscsi"
#define IQN_PREFIX "iqn.2026-12.org.blkemu:"
#define HBA CORE "/user_2846"

static int
write_text (const char *path, const char *text)
{
  int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd == -1)
    return -1;
  ssize_t n = write (fd, text, strlen (text));
  int saved = errno;
  close (fd);
  errno = saved;
  return n == (ssize_t) strlen (text) ? 0 : -1;
}

static int
read_text (const char *path, char *buf, size_t len)
{
  FILE *f = fopen (path, "re");
  if (!f)
    return -1;
  size_t n = fread (buf, 1, len - 1, f);
  fclose (f);
  buf[n] = 0;
  while (n && buf[n - 1] == '\n')
    buf[--n] = 0;
  return 0;
}

static int
modprobe (const char *module)
{
  char path[96];
  snprintf (path, sizeof path, "/sys/module/%s", module);
  if (access (path, F_OK) == 0)
    return 0;
  pid_t pid = fork ();
  if (pid == 0) {
    execlp ("modprobe", "modprobe", "-q", module, (char *) NULL);
    _exit (127);
  }
  int status;
  if (pid == -1 || waitpid (pid, &status, 0) == -1 || !WIFEXITED (status) ||
      WEXITSTATUS (status) != 0) {
    fprintf (stderr,
             "blkemu-scsi: the kernel module %s could not be loaded "
             "(modprobe %s): blkemu-scsi needs LIO's target_core_user, "
             "and tcm_loop and the sd driver, or iscsi_target_mod "
             "(--iscsi)\n",
             module, module);
    return -1;
  }
  return 0;
}

/* LIO's configfs, with the modules loaded and configfs mounted: the
 * iSCSI target's (ISCSI) or tcm_loop's.
 */
static int
configfs_ready (bool iscsi)
{
  if (geteuid () != 0) {
    fprintf (stderr, "blkemu-scsi: needs root (LIO's configfs)\n");
    return -1;
  }
  if (modprobe ("target_core_user") == -1)
    return -1;
  if (iscsi ? modprobe ("iscsi_target_mod") == -1
            : modprobe ("tcm_loop") == -1 ||
                modprobe ("sd_mod") ==
                  -1) /* udev would load it; not every host runs it */
    return -1;
  if (access (CORE, F_OK) == -1 &&
      mount ("configfs", CONFIGFS, "configfs", 0, NULL) == -1 &&
      errno != EBUSY) {
    fprintf (stderr, "blkemu-scsi: mounting configfs on %s: %s\n", CONFIGFS,
             strerror (errno));
    return -1;
  }
  if (access (CORE, F_OK) == -1) {
    fprintf (stderr, "blkemu-scsi: %s missing after loading the modules\n",
             CORE);
    return -1;
  }
  /* A fabric's directory appears when made (LIO then binds it). */
  const char *fabric = iscsi ? ISCSI : LOOPBACK;
  if (mkdir (fabric, 0755) == -1 && errno != EEXIST) {
    fprintf (stderr, "blkemu-scsi: mkdir %s: %s\n", fabric, strerror (errno));
    return -1;
  }
  return 0;
}

/* Take down an iSCSI target's portal group TPG (its LUN unlinked):
 * disabled (its sessions end), its portals, LUN 0, the group, the
 * target.  Returns the target's rmdir.
 */
static int
remove_iscsi_tpg (const char *tpg)
{
  char path[PATH_MAX];
  snprintf (path, sizeof path, "%s/enable", tpg);
  write_text (path, "0");
  glob_t g;
  snprintf (path, sizeof path, "%s/np/*", tpg);
  if (glob (path, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++)
      rmdir (g.gl_pathv[i]);
    globfree (&g);
  }
  /* The ACLs (--iscsi-auth initiators): their mapped LUNs first. */
  static const char *const acl_parts[] = { "acls/*/lun_*/*", "acls/*/lun_*",
                                           "acls/*" };
  for (size_t p = 0; p < 3; p++) {
    snprintf (path, sizeof path, "%s/%s", tpg, acl_parts[p]);
    if (glob (path, 0, NULL, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; i++)
        p == 0 ? unlink (g.gl_pathv[i]) : rmdir (g.gl_pathv[i]);
      globfree (&g);
    }
  }
  snprintf (path, sizeof path, "%s/lun/lun_0", tpg);
  rmdir (path);
  rmdir (tpg);
  snprintf (path, sizeof path, "%s", tpg);
  *strrchr (path, '/') = 0;
  return rmdir (path);
}

/* Take down tcm_loop's target portal group TPG (its LUN unlinked):
 * LUN 0, the nexus, the group, its wwn.  Returns the wwn's rmdir.
 */
static int
remove_tpg (const char *tpg)
{
  char path[PATH_MAX];
  snprintf (path, sizeof path, "%s/lun/lun_0", tpg);
  rmdir (path);
  snprintf (path, sizeof path, "%s/nexus", tpg);
  write_text (path, "NULL"); /* fails harmlessly when there is none */
  rmdir (tpg);
  snprintf (path, sizeof path, "%s", tpg);
  *strrchr (path, '/') = 0;
  return rmdir (path);
}

/* The export of a backstore: tcm_loop's wwn dir whose LUN 0 links to
 * CORE_DIR, or none.
 */
static int
remove_exports_of (const char *core_dir)
{
  glob_t g;
  int r = 0;
  int loop = glob (LOOPBACK "/naa.*/tpgt_1/lun/lun_0/*", 0, NULL, &g);
  if (glob (ISCSI "/" IQN_PREFIX "*/tpgt_1/lun/lun_0/*",
            loop == 0 ? GLOB_APPEND : 0, NULL, &g) != 0 &&
      loop != 0)
    return 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    char target[PATH_MAX];
    if (!realpath (g.gl_pathv[i], target) || strcmp (target, core_dir) != 0)
      continue;
    char *tpg = strdup (g.gl_pathv[i]);
    if (!tpg)
      continue;
    *strstr (tpg, "/lun/") = 0;
    unlink (g.gl_pathv[i]);
    if ((strncmp (tpg, ISCSI "/", strlen (ISCSI "/")) == 0
           ? remove_iscsi_tpg (tpg)
           : remove_tpg (tpg)) == -1)
      r = -1;
    free (tpg);
  }
  globfree (&g);
  return r;
}

/* The uio device the kernel made for disk NAME's backstore, or -1. */
static int
find_uio (const char *name)
{
  char want[256], text[256], path[320];
  snprintf (want, sizeof want, "tcm-user/2846/%s/blkemu/%s", name, name);
  DIR *dir = opendir ("/sys/class/uio");
  struct dirent *e;
  int found = -1;
  while (dir && (e = readdir (dir)))
    if (strncmp (e->d_name, "uio", 3) == 0) {
      snprintf (path, sizeof path, "/sys/class/uio/%s/name", e->d_name);
      if (read_text (path, text, sizeof text) == 0 && !strcmp (text, want))
        found = atoi (e->d_name + 3);
    }
  if (dir)
    closedir (dir);
  return found;
}

/* Remove a backstore a killed blkemu-scsi left.  Its ring is drained
 * while its exports go: the SCSI disk's removal sends commands
 * (SYNCHRONIZE CACHE) that nobody would answer, and each would wait out
 * TCMU's 30 s timeout and sd's retries (over 100 s measured).
 */
static int
remove_backstore (const char *core_dir)
{
  struct sdisk drain = { .name = strrchr (core_dir, '/') + 1,
                         .drain = true,
                         .uio_fd = -1,
                         .stop_fd = -1 };
  drain.uio_index = find_uio (drain.name);
  if (drain.uio_index >= 0)
    ring_start (&drain); /* or removed as before: slowly */
  remove_exports_of (core_dir);
  if (drain.uio_index >= 0)
    ring_stop (&drain);
  if (rmdir (core_dir) == -1 && errno != ENOENT) {
    fprintf (stderr, "blkemu-scsi: removing %s: %s\n", core_dir,
             strerror (errno));
    return -1;
  }
  return 0;
}

/* Whether a running blkemu-scsi serves disk NAME: some process holds
 * its uio device open (a killed server's closed with it).
 */
static bool
served (const char *name)
{
  int index = find_uio (name);
  if (index < 0)
    return false;
  char want[32], fds[64], link[PATH_MAX], target[64];
  snprintf (want, sizeof want, "/dev/uio%d", index);
  DIR *proc = opendir ("/proc");
  struct dirent *p;
  bool found = false;
  while (proc && !found && (p = readdir (proc))) {
    if (p->d_name[0] < '1' || p->d_name[0] > '9')
      continue;
    snprintf (fds, sizeof fds, "/proc/%.20s/fd", p->d_name);
    DIR *fd = opendir (fds);
    struct dirent *f;
    while (fd && !found && (f = readdir (fd))) {
      snprintf (link, sizeof link, "%s/%s", fds, f->d_name);
      ssize_t n = readlink (link, target, sizeof target - 1);
      if (n > 0) {
        target[n] = 0;
        found = strcmp (target, want) == 0;
      }
    }
    if (fd)
      closedir (fd);
  }
  if (proc)
    closedir (proc);
  return found;
}

int
tcmu_delete_stale (void)
{
  if (configfs_ready (false) == -1)
    return 1;
  glob_t g;
  int r = 0, n = 0;
  if (glob (HBA "/*/control", 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) {
      *strrchr (g.gl_pathv[i], '/') = 0;
      if (served (strrchr (g.gl_pathv[i], '/') + 1))
        continue; /* a running server's */
      if (remove_backstore (g.gl_pathv[i]) == -1)
        r = 1;
      else
        n++;
    }
    globfree (&g);
  }
  rmdir (HBA);
  fprintf (stderr, "blkemu-scsi: %d stale device%s removed\n", n,
           n == 1 ? "" : "s");
  return r;
}

static uint64_t
name_hash (const char *s)
{
  uint64_t h = 14695981039346656037ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 1099511628211ull;
  return h;
}

int
tcmu_create (struct sdisk *d)
{
  char path[PATH_MAX], control[320];
  if (configfs_ready (d->iscsi_portal != NULL) == -1)
    return -1;
  /* NAA 6: LIO's OUI 00-14-05, then the name's hash: stable per name. */
  d->naa = 6ull << 60 | 0x001405ull << 36 | (name_hash (d->name) >> 28);
  snprintf (d->core_dir, sizeof d->core_dir, HBA "/%s", d->name);
  if (access (d->core_dir, F_OK) == 0 && served (d->name)) {
    fprintf (stderr,
             "blkemu-scsi: %s: a running blkemu-scsi serves a disk "
             "of this name (%s)\n",
             d->name, d->core_dir);
    return -1;
  }
  if (access (d->core_dir, F_OK) == 0) {
    fprintf (stderr,
             "blkemu-scsi: %s: removing what an earlier "
             "blkemu-scsi left in %s\n",
             d->name, d->core_dir);
    if (remove_backstore (d->core_dir) == -1)
      return -1;
  }
  if ((mkdir (HBA, 0755) == -1 && errno != EEXIST) ||
      mkdir (d->core_dir, 0755) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: mkdir %s: %s\n", d->name, d->core_dir,
             strerror (errno));
    return -1;
  }
  d->core_made = true;
  const struct blkemu_geometry *g = &d->geo;
  snprintf (control, sizeof control,
            "dev_config=blkemu/%s,dev_size=%llu,hw_block_size=%u,"
            "hw_max_sectors=%u,nl_reply_supported=-1",
            d->name, (unsigned long long) g->size_bytes, g->logical_block_size,
            g->max_transfer_bytes / g->logical_block_size);
  snprintf (path, sizeof path, "%s/control", d->core_dir);
  if (write_text (path, control) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: %s: '%s': %s\n", d->name, path, control,
             strerror (errno));
    return -1;
  }
  /* TMR notifications (Linux 5.9+): the ring then carries the aborts
   * and resets the midlayer's error handler sends, which the disk
   * counts.  Without them the ring never hears of one.
   */
  snprintf (path, sizeof path, "%s/attrib/tmr_notification", d->core_dir);
  d->tmr_notify = write_text (path, "1") == 0;
  snprintf (path, sizeof path, "%s/enable", d->core_dir);
  if (write_text (path, "1") == -1) {
    fprintf (stderr, "blkemu-scsi: %s: enabling %s: %s\n", d->name,
             d->core_dir, strerror (errno));
    return -1;
  }
  if ((d->uio_index = find_uio (d->name)) < 0) {
    fprintf (stderr, "blkemu-scsi: %s: no uio device for %s\n", d->name,
             d->core_dir);
    return -1;
  }
  return 0;
}

/* The SCSI disk tcm_loop made of host HOST's target 1, LUN 0: path I. */
static int
find_disk (struct sdisk *d, unsigned i, const char *address)
{
  unsigned host, tgt;
  if (sscanf (address, "%u:%*u:%u", &host, &tgt) != 2)
    return -1;
  char pattern[128];
  snprintf (pattern, sizeof pattern,
            "/sys/class/scsi_device/%u:0:%u:0/device/block/*", host, tgt);
  glob_t g;
  int r = -1;
  if (glob (pattern, 0, NULL, &g) == 0) {
    snprintf (d->device[i], sizeof d->device[i], "%s",
              strrchr (g.gl_pathv[0], '/') + 1);
    r = 0;
    globfree (&g);
  }
  return r;
}

/* LUN 0 of path I's portal group (tpg_dir[I], either fabric), linked
 * to the disk's backstore.  Returns 0 or -1, said.
 */
static int
link_lun (struct sdisk *d, unsigned i)
{
  char path[PATH_MAX];
  snprintf (path, sizeof path, "%s/lun/lun_0", d->tpg_dir[i]);
  if (mkdir (path, 0755) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: mkdir %s: %s\n", d->name, path,
             strerror (errno));
    return -1;
  }
  snprintf (path, sizeof path, "%s/lun/lun_0/blkemu", d->tpg_dir[i]);
  if (symlink (d->core_dir, path) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: linking LUN 0 to %s: %s\n", d->name,
             d->core_dir, strerror (errno));
    return -1;
  }
  d->lun_linked[i] = true;
  return 0;
}

/* Path I: a tcm_loop target of its own (its wwn differs from path 0's
 * in bits 32-34; path 0's is the disk's NAA's low 36 bits), LUN 0 linked
 * to the backstore.
 */
static int
export_path (struct sdisk *d, unsigned i)
{
  char path[PATH_MAX], text[64];
  uint64_t wwn = ((d->naa ^ (uint64_t) i << 32)) & 0xfffffffffull;
  char *tpg_dir = d->tpg_dir[i];
  snprintf (tpg_dir, sizeof d->tpg_dir[i],
            LOOPBACK "/naa.5001405%09llx/tpgt_1", (unsigned long long) wwn);
  snprintf (path, sizeof path, "%s", tpg_dir);
  *strrchr (path, '/') = 0;
  if (mkdir (path, 0755) == -1 || mkdir (tpg_dir, 0755) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: mkdir %s: %s\n", d->name, tpg_dir,
             strerror (errno));
    return -1;
  }
  /* The nexus first: tcm_loop fails commands to a LUN without one. */
  snprintf (path, sizeof path, "%s/nexus", tpg_dir);
  snprintf (text, sizeof text, "naa.5001405%09llx",
            (unsigned long long) (wwn ^ 0xfffffffffull));
  if (write_text (path, text) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: %s: %s\n", d->name, path,
             strerror (errno));
    return -1;
  }
  if (link_lun (d, i) == -1)
    return -1;
  /* The midlayer adds the disk when the LUN appears; sd may probe it
   * asynchronously.
   */
  snprintf (path, sizeof path, "%s/address", tpg_dir);
  char address[64];
  for (int tries = 0; tries < 600; tries++) {
    if (read_text (path, address, sizeof address) == 0 &&
        find_disk (d, i, address) == 0)
      return 0;
    nanosleep (&(struct timespec){ .tv_nsec = 100000000 }, NULL);
  }
  fprintf (stderr, "blkemu-scsi: %s: no SCSI disk appeared for %s in 60 s\n",
           d->name, tpg_dir);
  return -1;
}

/* CHAP secrets into DIR/auth (a portal group's in demo mode, or an
 * ACL's).  Returns 0 or -1, said (the secrets are not).
 */
static int
set_chap (struct sdisk *d, const char *dir)
{
  const struct iscsi_auth *a = d->iscsi_auth;
  const char *const item[][2] = {
    { "userid", a->user },
    { "password", a->password },
    { "userid_mutual", a->mutual_user },
    { "password_mutual", a->mutual_password },
  };
  char path[PATH_MAX];
  for (size_t k = 0; k < 4 && item[k][1][0]; k++) {
    snprintf (path, sizeof path, "%s/auth/%s", dir, item[k][0]);
    if (write_text (path, item[k][1]) == -1) {
      fprintf (stderr, "blkemu-scsi: %s: %s: %s\n", d->name, path,
               strerror (errno));
      return -1;
    }
  }
  return 0;
}

/* An ACL: INITIATOR may log in to TPG_DIR and sees LUN 0 there (with
 * its CHAP secrets, if any).  Returns 0 or -1, said.
 */
static int
add_acl (struct sdisk *d, const char *tpg_dir, const char *initiator)
{
  char acl[512], path[PATH_MAX], lun[PATH_MAX];
  snprintf (acl, sizeof acl, "%s/acls/%s", tpg_dir, initiator);
  snprintf (path, sizeof path, "%s/lun_0", acl);
  snprintf (lun, sizeof lun, "%s/lun/lun_0", tpg_dir);
  if (mkdir (acl, 0755) == -1 || mkdir (path, 0755) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: initiator %s: mkdir %s: %s\n", d->name,
             initiator, path, strerror (errno));
    return -1;
  }
  snprintf (path, sizeof path, "%s/lun_0/lun_0", acl);
  if (symlink (lun, path) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: initiator %s: mapping LUN 0: %s\n",
             d->name, initiator, strerror (errno));
    return -1;
  }
  return d->iscsi_auth->user[0] ? set_chap (d, acl) : 0;
}

/* Path I of an iSCSI export: portal group tpgt_(I + 1) of the disk's
 * target, LUN 0 linked to the backstore, open to any initiator without
 * authentication (a test target: bind the portal to an address only the
 * tests reach), enabled on the portal's port + I (device[I]).  A path
 * is a target port: a multipath initiator logs in to each.
 */
static int
export_iscsi_path (struct sdisk *d, unsigned i)
{
  char path[PATH_MAX];
  char *tpg_dir = d->tpg_dir[i];
  const char *colon = strrchr (d->iscsi_portal, ':');
  snprintf (d->device[i], sizeof d->device[i], "%.*s:%lu",
            (int) (colon - d->iscsi_portal), d->iscsi_portal,
            strtoul (colon + 1, NULL, 10) + i);
  snprintf (tpg_dir, sizeof d->tpg_dir[i], ISCSI "/%s/tpgt_%u", d->iqn, i + 1);
  if (mkdir (tpg_dir, 0755) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: mkdir %s: %s\n", d->name, tpg_dir,
             strerror (errno));
    tpg_dir[0] = 0;
    return -1;
  }
  if (link_lun (d, i) == -1)
    return -1;
  const struct iscsi_auth *auth = d->iscsi_auth;
  bool acls = auth && auth->ninitiators > 0;
  bool chap = auth && auth->user[0];
  const char *const attrib[][2] = {
    { "authentication", chap ? "1" : "0" },
    /* No list of initiators: any (demo mode). */
    { "generate_node_acls", acls ? "0" : "1" },
    { "demo_mode_write_protect", "0" },
    { "cache_dynamic_acls", acls ? "0" : "1" },
  };
  for (size_t a = 0; a < sizeof attrib / sizeof attrib[0]; a++) {
    snprintf (path, sizeof path, "%s/attrib/%s", tpg_dir, attrib[a][0]);
    if (write_text (path, attrib[a][1]) == -1) {
      fprintf (stderr, "blkemu-scsi: %s: %s: %s\n", d->name, path,
               strerror (errno));
      return -1;
    }
  }
  if (acls) {
    for (unsigned k = 0; k < auth->ninitiators; k++)
      if (add_acl (d, tpg_dir, auth->initiators[k]) == -1)
        return -1;
  }
  else if (chap && set_chap (d, tpg_dir) == -1)
    return -1;
  snprintf (path, sizeof path, "%s/np/%s", tpg_dir, d->device[i]);
  if (mkdir (path, 0755) == -1) {
    fprintf (stderr,
             "blkemu-scsi: %s: --iscsi %s: the target cannot listen "
             "on %s: %s\n",
             d->name, d->iscsi_portal, d->device[i], strerror (errno));
    return -1;
  }
  snprintf (path, sizeof path, "%s/enable", tpg_dir);
  if (write_text (path, "1") == -1) {
    fprintf (stderr, "blkemu-scsi: %s: %s: %s\n", d->name, path,
             strerror (errno));
    return -1;
  }
  return 0;
}

/* The iSCSI export: target IQN_PREFIX + the name (lower case; what an
 * IQN does not take becomes '-'), one portal group per path.
 */
static int
export_iscsi (struct sdisk *d)
{
  char path[PATH_MAX];
  size_t n = (size_t) snprintf (d->iqn, sizeof d->iqn, IQN_PREFIX);
  for (const char *p = d->name; *p && n + 1 < sizeof d->iqn; p++) {
    char ch = *p >= 'A' && *p <= 'Z' ? (char) (*p - 'A' + 'a') : *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '-';
    d->iqn[n++] = ok ? ch : '-';
  }
  d->iqn[n] = 0;
  snprintf (path, sizeof path, ISCSI "/%s", d->iqn);
  if (mkdir (path, 0755) == -1) {
    fprintf (stderr, "blkemu-scsi: %s: mkdir %s: %s%s\n", d->name, path,
             strerror (errno),
             errno == EEXIST ? " (another disk's name maps to this IQN, or "
                               "a killed server left it: --delete-stale)"
                             : "");
    return -1;
  }
  for (unsigned i = 0; i < d->npaths; i++)
    if (export_iscsi_path (d, i) == -1) {
      if (i == 0 && !d->tpg_dir[0][0])
        rmdir (path); /* no group to remove it with */
      return -1;
    }
  return 0;
}

int
tcmu_export (struct sdisk *d)
{
  if (d->iscsi_portal)
    return export_iscsi (d);
  for (unsigned i = 0; i < d->npaths; i++)
    if (export_path (d, i) == -1)
      return -1;
  return 0;
}

void
tcmu_unexport (struct sdisk *d)
{
  char path[PATH_MAX];
  for (unsigned i = 0; i < d->npaths; i++) {
    if (d->lun_linked[i]) {
      snprintf (path, sizeof path, "%s/lun/lun_0/blkemu", d->tpg_dir[i]);
      if (unlink (path) == -1)
        fprintf (stderr, "blkemu-scsi: %s: unlink %s: %s\n", d->name, path,
                 strerror (errno));
      d->lun_linked[i] = false;
    }
    if (!d->tpg_dir[i][0])
      continue;
    if (d->iscsi_portal)
      remove_iscsi_tpg (d->tpg_dir[i]);
    else
      remove_tpg (d->tpg_dir[i]);
    d->tpg_dir[i][0] = 0;
  }
}

long long
tcmu_path_commands (struct sdisk *d, unsigned i)
{
  char path[PATH_MAX], text[32];
  snprintf (path, sizeof path, "%s/lun/lun_0/statistics/scsi_tgt_port/in_cmds",
            d->tpg_dir[i]);
  return read_text (path, text, sizeof text) == 0 ? atoll (text) : -1;
}

/* A path down: tcm_loop's port offline (its commands fail as a port
 * that lost its link), or an iSCSI portal group disabled (its sessions
 * dropped and logins refused until it is enabled again).
 */
int
tcmu_set_path (struct sdisk *d, unsigned i, bool up)
{
  char path[PATH_MAX];
  if (d->iscsi_portal) {
    snprintf (path, sizeof path, "%s/enable", d->tpg_dir[i]);
    return write_text (path, up ? "1" : "0") == -1 ? errno : 0;
  }
  snprintf (path, sizeof path, "%s/transport_status", d->tpg_dir[i]);
  return write_text (path, up ? "online" : "offline") == -1 ? errno : 0;
}

void
tcmu_destroy (struct sdisk *d)
{
  if (d->core_made && rmdir (d->core_dir) == -1)
    fprintf (stderr, "blkemu-scsi: %s: removing %s: %s\n", d->name,
             d->core_dir, strerror (errno));
  d->core_made = false;
  rmdir (HBA); /* fails while another disk is in it */
}
