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
#define SENSE_LEN 18 /* fixed-format sense data */

/* One emulated disk: a TCMU backstore in configfs, exported as a SCSI
 * disk through tcm_loop, its command ring served by one thread.
 */
struct sdisk {
  struct blkemu_disk *emu;
  const char *name;
  struct blkemu_geometry geo;
  unsigned index;     /* its place on the command line */
  uint64_t naa;       /* the NAA-6 identifier (VPD 0x83) */
  /* INQUIRY's strings (vendor=, product=, revision=) and VPD 0xB1's
   * rotation rate (rpm= when rotational, else 1: non-rotating).
   */
  char vendor[9], product[17], revision[5];
  uint16_t rotation_rate;
  char core_dir[160]; /* configfs: target/core/user_N/NAME */
  char tpg_dir[160];  /* configfs: target/loopback/naa.X/tpgt_1 */
  char device[32];    /* the kernel's name for it: "sdb" */
  bool core_made, lun_linked;
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
  bool thread_started;
  bool unit_attention; /* the next command gets POWER ON, RESET */
  uint64_t power_ons;  /* blkemu_disk_power_ons when last looked */
  /* Media commands with the core (atomic): past the disk's queue-depth
   * a command is answered TASK SET FULL, and the kernel lowers the
   * device's queue depth as it does for an array's full queue.
   */
  uint32_t in_flight;
  uint64_t task_set_full; /* answered so (atomic) */
};

/* One command, from its ring entry to its completion. */
struct scmd {
  struct sdisk *d;
  uint16_t cmd_id;
  uint8_t cdb[32];
  struct iovec *iov; /* the data area, as pointers into the map */
  uint32_t iov_cnt;
  size_t data_len; /* what the iovs hold */
  void *buf;       /* a bounce buffer for the core's transfer */
  uint64_t lba;    /* the first block, for a medium error's sense */
  bool data_in;    /* the transfer goes to the initiator (a read) */
  uint8_t status;
  uint8_t sense[SENSE_LEN];
  int pending;  /* parts still with the core (UNMAP's descriptors) */
  bool counted; /* in the disk's in_flight */
  int err;      /* the first part's error */
  pthread_mutex_t lock;
};

/* tcmu.c: configfs, the uio device, tcm_loop. */
int tcmu_create (struct sdisk *d);
int tcmu_export (struct sdisk *d);
void tcmu_unexport (struct sdisk *d);
void tcmu_destroy (struct sdisk *d);
int tcmu_delete_stale (void);

/* ring.c */
int ring_start (struct sdisk *d);
void ring_stop (struct sdisk *d);
void ring_complete (struct scmd *c);

/* commands.c */
void scsi_identity (struct sdisk *d);
void scsi_execute (struct scmd *c);
void scsi_sense (struct scmd *c, uint8_t key, uint8_t asc, uint8_t ascq);
size_t scsi_copy_in (const struct scmd *c, const void *src, size_t len);
size_t scsi_copy_out (const struct scmd *c, void *dst, size_t len);

#endif
