/* blkemu-scsi's parts: a disk's TCMU device and tcm_loop export
 * (tcmu.c), its command ring (ring.c) and the SCSI commands it answers
 * (commands.c).  Built on include/blkemu/blkemu.h only.
 */
#ifndef BLKEMU_SCSI_H
#define BLKEMU_SCSI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "blkemu/blkemu.h"

#define MAX_DISKS 16
#define MAX_PATHS 8  /* --paths: targets (or iSCSI portals) per disk */
#define SENSE_LEN 18 /* fixed-format sense data */

/* --iscsi-auth FILE: who may log in to the iSCSI targets.  No
 * initiators: any (LIO's demo mode); else an ACL for each, the only
 * ones let in.  CHAP when user[0]: the initiator's name and secret, and
 * for mutual CHAP (mutual_user[0]) the target's own.
 */
#define MAX_INITIATORS 16
#define AUTH_MAX 256 /* LIO's longest CHAP name or secret, with the NUL */
struct iscsi_auth {
  char initiators[MAX_INITIATORS][224];
  unsigned ninitiators;
  char user[AUTH_MAX], password[AUTH_MAX];
  char mutual_user[AUTH_MAX], mutual_password[AUTH_MAX];
};
/* Parse FILE into A; 0, or -1 with the file, line and rule said. */
int iscsi_auth_load (const char *file, struct iscsi_auth *a);

/* One emulated disk: a TCMU backstore in configfs, exported as a SCSI
 * disk through tcm_loop, its command ring served by one thread.
 */
struct scmd;
struct sdisk {
  struct blkemu_disk *emu;
  /* Answers a finished command (ring.c's ring_complete; a harness's own):
   * the command code calls it, never the ring by name.
   */
  void (*complete) (struct scmd *c);
  const char *name;
  struct blkemu_geometry geo;
  unsigned index; /* its place on the command line */
  uint64_t naa;   /* the NAA-6 identifier (VPD 0x83) */
  /* INQUIRY's strings (vendor=, product=, revision=) and VPD 0xB1's
   * rotation rate (rpm= when rotational, else 1: non-rotating).
   */
  char vendor[9], product[17], revision[5];
  uint16_t rotation_rate;
  bool wce_default; /* the caching page's default WCE: write-cache at start */
  /* A host-managed zoned disk (zg.nr_zones > 0) is a ZBC device: type
   * 0x14, VPD 0xB6, REPORT ZONES and the zone actions.  A zone whose
   * capacity is below its size reports as a sequential zone of the
   * capacity followed by a gap zone (ZBC-2), as sd_zbc reads them.
   */
  struct blkemu_zoned zg;
  char core_dir[160]; /* configfs: target/core/user_N/NAME */
  bool core_made;
  /* Its paths: NPATHS tcm_loop targets exporting the one backstore, each
   * its own SCSI host with one sd disk, all with the disk's identifiers
   * (one WWID: what multipath groups by).  Per path: its configfs group
   * (target/loopback/naa.X/tpgt_1), the kernel's name for its disk
   * ("sdb"), its LUN's link, and whether 'path N down' took it offline
   * (the control thread's).
   */
  unsigned npaths;
  char tpg_dir[MAX_PATHS][160];
  /* Path I's /dev name (tcm_loop), or its portal (iSCSI). */
  char device[MAX_PATHS][64];
  bool lun_linked[MAX_PATHS];
  bool path_down[MAX_PATHS];
  /* Or exported through iSCSI (--iscsi): one target, IQN, with a
   * portal group per path (tpg_dir[I], LUN 0, listening on device[I]);
   * no local disk is made.
   */
  const char *iscsi_portal;            /* "ADDRESS:PORT", or NULL: tcm_loop */
  const struct iscsi_auth *iscsi_auth; /* NULL: anyone, no CHAP */
  char iqn[96];
  /* The ring (uio), mapped whole. */
  int uio_index; /* /dev/uioN */
  int uio_fd;
  unsigned char *map;
  size_t map_size;
  uint32_t cmdr_off, cmdr_size;
  uint32_t next;             /* the next entry to read */
  pthread_mutex_t tail_lock; /* completions write the entry at the tail */
  int stop_fd;               /* an eventfd: the ring thread returns */
  pthread_t thread;
  /* The ring thread's deadlines: what it submits completes on it when
   * it runs the timeline (NULL while draining: no disk).
   */
  struct blkemu_timeline *tl;
  bool thread_started;
  /* A killed server's disk being removed: every command is answered
   * NOT READY, MEDIUM NOT PRESENT at once (what sd takes as a gone
   * disk), so the removal does not wait out TCMU's command timeouts.
   */
  bool drain;
  bool unit_attention; /* the next command gets POWER ON, RESET */
  uint64_t power_ons;  /* blkemu_disk_power_ons when last looked */
  /* Media commands with the core (atomic): past the disk's queue-depth
   * a command is answered TASK SET FULL, and the kernel lowers the
   * device's queue depth as it does for an array's full queue.
   */
  uint32_t in_flight;
  uint64_t task_set_full; /* answered so (atomic) */
  uint64_t atomic_writes; /* WRITE ATOMIC(16) served (atomic) */
  /* Task management the kernel notified (the ring thread's alone):
   * commands named by ABORT TASK (SET) and CLEAR TASK SET, and LUN or
   * target resets.  They complete when the disk completes them, as on
   * a hung real disk.
   */
  bool tmr_notify;
  uint64_t aborted_commands, resets;
  uint64_t aborts_ended; /* of those, ended at the abort (not stalled) */
  /* The commands taken and not yet answered, for an abort to find by
   * its command id: added by the ring thread, removed by whichever
   * thread answers.
   */
  pthread_mutex_t cmds_lock;
  struct scmd *cmds;
};

/* One command, from its ring entry to its completion. */
struct scmd {
  struct sdisk *d;
  uint16_t cmd_id;
  uint8_t cdb[32];
  struct iovec *iov; /* the data area, as pointers into the map */
  uint32_t iov_cnt;
  size_t data_len; /* what the iovs hold */
  void *buf;       /* a bounce buffer for the core's transfer, or NULL:
                      the data area's one piece is the buffer */
  uint64_t lba;    /* the first block, for a medium error's sense */
  bool data_in;    /* the transfer goes to the initiator (a read) */
  uint8_t status;
  uint8_t sense[SENSE_LEN];
  int pending;      /* parts still with the core (UNMAP's descriptors) */
  bool counted;     /* in the disk's in_flight */
  int err;          /* the first part's error */
  bool zone_action; /* a ZBC OUT: errors map as zone errors */
  uint8_t bytchk;   /* a VERIFY's BYTCHK + 1 (0: not a VERIFY) */
  pthread_mutex_t lock;
  struct scmd *prev, *next; /* on the disk's list of commands taken */
};

/* Status codes, sense keys, additional sense codes. */
#define GOOD 0x00
#define CHECK_CONDITION 0x02
#define BUSY 0x08
#define TASK_SET_FULL 0x28
#define NOT_READY 0x2
#define MEDIUM_ERROR 0x3
#define HARDWARE_ERROR 0x4
#define ILLEGAL_REQUEST 0x5
#define UNIT_ATTENTION 0x6
#define DATA_PROTECT 0x7
#define MISCOMPARE 0xe
#define ASC_INVALID_OPCODE 0x20
#define ASC_LBA_OUT_OF_RANGE 0x21
#define ASC_INVALID_FIELD_IN_CDB 0x24
#define ASC_INVALID_FIELD_IN_PARAMETERS 0x26
#define ASC_PARAMETER_LIST_LENGTH 0x1a
#define ASC_SAVING_NOT_SUPPORTED 0x39

static inline uint64_t
be (const uint8_t *p, int n)
{
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

static inline void
put_be (uint8_t *p, uint64_t v, int n)
{
  for (int i = n - 1; i >= 0; i--, v >>= 8)
    p[i] = (uint8_t) v;
}

/* tcmu.c: configfs, the uio device, tcm_loop or iSCSI. */
int tcmu_create (struct sdisk *d);
int tcmu_export (struct sdisk *d);
void tcmu_unexport (struct sdisk *d);
/* Path I of D online (UP) or offline: tcm_loop fails what the offline
 * path is given with DID_TRANSPORT_DISRUPTED, as a cut link.  Returns 0
 * or an errno.
 */
int tcmu_set_path (struct sdisk *d, unsigned i, bool up);
/* The commands path I carried, from LIO's statistics of its target port
 * (in_cmds), or -1 when unknown.
 */
long long tcmu_path_commands (struct sdisk *d, unsigned i);
void tcmu_destroy (struct sdisk *d);
int tcmu_delete_stale (void);

/* ring.c */
int ring_start (struct sdisk *d);
void ring_stop (struct sdisk *d);
void ring_complete (struct scmd *c);

/* commands.c: dispatch and the I/O; a finished command goes to its
 * disk's complete() (the ring's ring_complete, or a harness's).
 */
void scsi_execute (struct scmd *c);
void scsi_io_done (void *cookie, int result);

/* reply.c: status, sense and the data area */
void scsi_sense (struct scmd *c, uint8_t key, uint8_t asc, uint8_t ascq);
void scsi_sense_at (struct scmd *c, uint8_t key, uint8_t asc, uint8_t ascq,
                    uint64_t lba);
size_t scsi_copy_in (const struct scmd *c, const void *src, size_t len);
size_t scsi_copy_out (const struct scmd *c, void *dst, size_t len);
void scsi_reply (struct scmd *c, const uint8_t *data, size_t len,
                 size_t alloc_len);
size_t scsi_copy_at (const struct scmd *c, size_t at, const void *src,
                     size_t len);

/* inquiry.c: what the disk says about itself */
void scsi_identity (struct sdisk *d);
void scsi_inquiry (struct scmd *c);
void scsi_read_capacity (struct scmd *c, bool sixteen);
void scsi_mode_sense (struct scmd *c, bool ten);
void scsi_mode_select (struct scmd *c, bool ten);
void scsi_report_opcodes (struct scmd *c);

/* zbc.c: a host-managed zoned disk's commands and errors. */
void zbc_report_zones (struct scmd *c);
bool zbc_zone_action (struct scmd *c, void (*done) (void *, int));
bool zbc_sense (struct scmd *c, int err, bool write);

#endif
