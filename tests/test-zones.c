/* Host-managed zones through the public API, frontend-free: the write
 * pointer rules, zone append, reads past the write pointer, every zone
 * command in every condition that matters, the open and active limits
 * (implicit opens closing each other, explicit ones failing), zone
 * capacity, conventional zones, the write cache's crash rolling write
 * pointers back, the file backend's sidecar across a reopen, latency-zone
 * and the stats.  Standalone: exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blkemu/blkemu.h"
#include "check.h"
#include "control.h"
#include "strbuf.h"

#define ZS (1u << 20) /* zone-size=1M */
#define BLK 4096u

static struct blkemu_disk *
open_disk (const char *list)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_spec *spec = blkemu_spec_new ();
  struct blkemu_disk *d = NULL;
  if (blkemu_spec_set_list (spec, list, err, sizeof err) == 0)
    d = blkemu_disk_open (spec, NULL, err, sizeof err);
  blkemu_spec_free (spec);
  CHECK (d, "open %s: %s", list, err);
  return d;
}

static const char *
open_error (const char *list)
{
  static char err[BLKEMU_ERR_MAX];
  struct blkemu_spec *spec = blkemu_spec_new ();
  struct blkemu_disk *d = NULL;
  err[0] = 0;
  if (blkemu_spec_set_list (spec, list, err, sizeof err) == 0)
    d = blkemu_disk_open (spec, NULL, err, sizeof err);
  blkemu_spec_free (spec);
  if (d) {
    blkemu_disk_close (d);
    return NULL;
  }
  return err;
}

static struct blkemu_zone
zone_at (struct blkemu_disk *d, uint64_t off)
{
  struct blkemu_zone z = { 0 };
  CHECK (blkemu_zone_report (d, off, &z, 1) == 1, "report at %llu",
         (unsigned long long) off);
  return z;
}

static int
wr (struct blkemu_disk *d, uint64_t off, uint64_t len, char fill)
{
  char *buf = malloc (len);
  memset (buf, fill, len);
  int r = blkemu_io (d, BLKEMU_OP_WRITE, buf, len, off, 0);
  free (buf);
  return r;
}

static void write_pointer_resets (struct blkemu_disk *d);

static void
test_write_pointer (void)
{
  struct blkemu_disk *d = open_disk ("size=16M,zoned=host-managed,"
                                     "zone-size=1M,conventional-zones=2");
  struct blkemu_zoned zg;
  blkemu_disk_zoned (d, &zg);
  CHECK (zg.nr_zones == 16 && zg.nr_conventional == 2 && zg.zone_size == ZS &&
           zg.zone_capacity == ZS,
         "geometry: %u zones, %u conventional", zg.nr_zones,
         zg.nr_conventional);

  uint64_t z2 = 2 * ZS;
  CHECK (zone_at (d, z2).cond == BLKEMU_ZONE_COND_EMPTY, "zone 2 empty");
  CHECK (wr (d, z2, BLK, 'a') == 0, "write at the write pointer");
  struct blkemu_zone z = zone_at (d, z2);
  CHECK (z.wp == z2 + BLK && z.cond == BLKEMU_ZONE_COND_IMP_OPEN,
         "wp %llu cond %u after one block", (unsigned long long) z.wp, z.cond);
  CHECK (wr (d, z2 + 2 * BLK, BLK, 'x') == EIO, "a write past the wp: EIO");
  CHECK (wr (d, z2, BLK, 'x') == EIO, "a rewrite below the wp: EIO");
  CHECK (zone_at (d, z2).wp == z2 + BLK, "refused writes leave the wp");

  /* Reads: data below the wp, zeroes past it. */
  char buf[2 * BLK];
  memset (buf, 0x55, sizeof buf);
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, sizeof buf, z2, 0) == 0, "read");
  CHECK (buf[0] == 'a' && buf[BLK - 1] == 'a', "data below the wp");
  CHECK (buf[BLK] == 0 && buf[2 * BLK - 1] == 0, "zeroes past the wp");

  /* Zone append: written at the wp, which is returned. */
  uint64_t at = 0;
  memset (buf, 'b', sizeof buf);
  CHECK (blkemu_zone_append (d, buf, BLK, z2, 0, &at) == 0, "append");
  CHECK (at == z2 + BLK, "append landed at %llu", (unsigned long long) at);
  CHECK (blkemu_zone_append (d, buf, BLK, z2 + BLK, 0, &at) == EINVAL,
         "append must name the zone start");
  CHECK (blkemu_zone_append (d, buf, BLK, 0, 0, &at) == EINVAL,
         "append to a conventional zone");

  /* Conventional zones: anywhere, but not into a sequential zone. */
  CHECK (wr (d, ZS + 8 * BLK, BLK, 'c') == 0, "conventional write");
  CHECK (wr (d, 2 * ZS - BLK, 2 * BLK, 'c') != 0,
         "a conventional write running into zone 2 is refused");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, 0) == EIO,
         "reset of a conventional zone: EIO");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, z2 + BLK) == EINVAL,
         "a zone command off a zone start: EINVAL");

  /* Trim: conventional only. */
  CHECK (blkemu_io (d, BLKEMU_OP_TRIM, NULL, BLK, 0, 0) == 0,
         "trim in a conventional zone");
  CHECK (blkemu_io (d, BLKEMU_OP_TRIM, NULL, BLK, z2, 0) == EINVAL,
         "trim in a sequential zone: EINVAL");

  /* Write-zeroes is a write at the wp. */
  CHECK (blkemu_io (d, BLKEMU_OP_ZERO, NULL, BLK, z2 + 2 * BLK, 0) == 0,
         "write-zeroes at the wp");
  CHECK (zone_at (d, z2).wp == z2 + 3 * BLK, "write-zeroes moved the wp");

  /* Fill to the end: full; a write into a full zone fails. */
  CHECK (wr (d, z2 + 3 * BLK, ZS - 3 * BLK, 'f') == 0, "fill the zone");
  z = zone_at (d, z2);
  CHECK (z.cond == BLKEMU_ZONE_COND_FULL && z.wp == z2 + ZS,
         "full: cond %u wp %llu", z.cond, (unsigned long long) z.wp);
  CHECK (wr (d, z2 + ZS - BLK, BLK, 'x') == EIO, "write into a full zone");
  /* A write may not cross into the next zone. */
  CHECK (wr (d, 3 * ZS + 0, 2 * BLK, 'g') == 0, "zone 3 write");
  write_pointer_resets (d);
  blkemu_disk_close (d);
}

/* test_write_pointer's disk, on: reset, finish, reset-all, and what the
 * summary and stats say of all it did.
 */
static void
write_pointer_resets (struct blkemu_disk *d)
{
  uint64_t z2 = 2 * ZS;
  char buf[BLK];
  struct blkemu_zone z;
  /* Reset: empty, reads zeroes. */
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, z2) == 0, "reset");
  z = zone_at (d, z2);
  CHECK (z.cond == BLKEMU_ZONE_COND_EMPTY && z.wp == z2, "reset: empty");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, z2, 0) == 0 && buf[0] == 0 &&
           buf[BLK - 1] == 0,
         "a reset zone reads zeroes");

  /* Finish an empty zone, then reset-all. */
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_FINISH, 5 * ZS) == 0, "finish");
  CHECK (zone_at (d, 5 * ZS).cond == BLKEMU_ZONE_COND_FULL, "finished: full");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_OPEN, 5 * ZS) == EIO,
         "open of a full zone: EIO");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET_ALL, 0) == 0, "reset-all");
  struct blkemu_zone all[16];
  unsigned n = blkemu_zone_report (d, 0, all, 16);
  unsigned empty = 0, notwp = 0;
  for (unsigned i = 0; i < n; i++) {
    empty += all[i].cond == BLKEMU_ZONE_COND_EMPTY;
    notwp += all[i].cond == BLKEMU_ZONE_COND_NOT_WP &&
             all[i].type == BLKEMU_ZONE_TYPE_CONVENTIONAL;
  }
  CHECK (n == 16 && empty == 14 && notwp == 2,
         "after reset-all: %u zones, %u empty, %u conventional", n, empty,
         notwp);
  CHECK (blkemu_zone_report (d, 16 * (uint64_t) ZS, all, 16) == 0,
         "report past the end");

  /* The summary's line, and the stats. */
  char *text = blkemu_disk_summary_text (d);
  CHECK (text && strstr (text, "zones: 16 (2 conventional): 14 empty, 0 open "
                               "(peak 1), 0 closed, 0 full; 2 resets, 1 "
                               "finishes, 1 appends; refused: 3 off the write "
                               "pointer"),
         "summary: %s", text ? text : "");
  free (text);
  char *json = blkemu_disk_stats_json (d, false);
  CHECK (json && strstr (json, "\"zones\": {\"count\": 16"), "stats zones");
  CHECK (json && strstr (json, "\"reset\": 1, \"reset_all\": 1"),
         "stats zone commands: %s", json ? strstr (json, "\"commands\"") : "");
  CHECK (json && strstr (json, "\"write_pointer\": 3"),
         "stats wp violations (2 writes, 1 append)");
  free (json);
}

static void
test_limits (void)
{
  struct blkemu_disk *d = open_disk ("size=8M,zoned=host-managed,"
                                     "zone-size=1M,max-open-zones=2,"
                                     "max-active-zones=3");
  /* Implicit opens: the third closes one of the first two. */
  CHECK (wr (d, 0, BLK, 'a') == 0 && wr (d, ZS, BLK, 'a') == 0, "2 opens");
  CHECK (wr (d, 2 * ZS, BLK, 'a') == 0, "a third implicit open");
  unsigned open = 0, closed = 0;
  for (unsigned i = 0; i < 3; i++) {
    unsigned c = zone_at (d, i * (uint64_t) ZS).cond;
    open += c == BLKEMU_ZONE_COND_IMP_OPEN;
    closed += c == BLKEMU_ZONE_COND_CLOSED;
  }
  CHECK (open == 2 && closed == 1, "open %u closed %u", open, closed);
  /* Three active: a fourth zone cannot start. */
  CHECK (wr (d, 3 * ZS, BLK, 'a') == EOVERFLOW, "max-active-zones: EOVERFLOW");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_OPEN, 3 * ZS) == EOVERFLOW,
         "explicit open beyond max-active: EOVERFLOW");
  /* Finish one: active drops to 2.  Two explicit opens then leave no
   * implicit zone to close: the next implicit open fails.
   */
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_FINISH, 0) == 0, "finish 0");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, ZS) == 0 &&
           blkemu_zone_command (d, BLKEMU_ZONE_RESET, 2 * ZS) == 0,
         "resets");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_OPEN, 4 * ZS) == 0 &&
           blkemu_zone_command (d, BLKEMU_ZONE_OPEN, 5 * ZS) == 0,
         "two explicit opens");
  CHECK (zone_at (d, 4 * ZS).cond == BLKEMU_ZONE_COND_EXP_OPEN,
         "explicitly open");
  CHECK (wr (d, 6 * ZS, BLK, 'a') == ETOOMANYREFS,
         "max-open-zones with only explicit opens: ETOOMANYREFS");
  CHECK (wr (d, 4 * ZS, BLK, 'a') == 0, "write into an explicitly open zone");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_CLOSE, 4 * ZS) == 0 &&
           zone_at (d, 4 * ZS).cond == BLKEMU_ZONE_COND_CLOSED,
         "close");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_CLOSE, 5 * ZS) == 0 &&
           zone_at (d, 5 * ZS).cond == BLKEMU_ZONE_COND_EMPTY,
         "closing an unwritten open zone empties it");
  CHECK (wr (d, 6 * ZS, BLK, 'a') == 0, "room again after the closes");
  char *json = blkemu_disk_stats_json (d, false);
  CHECK (json && strstr (json, "\"open_peak\": 2, \"active_peak\": 3"),
         "peaks: %s", json ? strstr (json, "\"open_peak\"") : "");
  CHECK (json && strstr (json, "\"open_resources\": 1, "
                               "\"active_resources\": 2"),
         "resource refusals: %s", json ? strstr (json, "\"violations\"") : "");
  free (json);
  blkemu_disk_close (d);
}

static void
test_capacity (void)
{
  struct blkemu_disk *d = open_disk ("size=4M,zoned=host-managed,"
                                     "zone-size=1M,zone-capacity=768K");
  CHECK (zone_at (d, 0).capacity == 768 * 1024, "capacity reported");
  CHECK (wr (d, 0, 768 * 1024 - BLK, 'a') == 0, "write below capacity");
  CHECK (wr (d, 768 * 1024 - BLK, 2 * BLK, 'a') == EIO,
         "a write across the capacity: EIO");
  CHECK (wr (d, 768 * 1024 - BLK, BLK, 'a') == 0, "up to the capacity");
  struct blkemu_zone z = zone_at (d, 0);
  CHECK (z.cond == BLKEMU_ZONE_COND_FULL && z.wp == ZS,
         "full at capacity, wp reported at the zone end (%llu)",
         (unsigned long long) z.wp);
  blkemu_disk_close (d);
}

/* A crash state keeps a prefix of each sequential zone's writes: with
 * pick 0b101 (the oldest and the third of three), zone 1 keeps only the
 * oldest, as the second was lost and nothing lands past a hole; a
 * conventional zone keeps exactly the picked ones.
 */
static void
test_crash_prefix (void)
{
  struct blkemu_disk *d =
    open_disk ("size=4M,zoned=host-managed,zone-size=1M,write-cache=yes,"
               "conventional-zones=1");
  char err[BLKEMU_ERR_MAX];
  CHECK (wr (d, ZS, 4 * BLK, 'a') == 0 &&
           wr (d, ZS + 4 * BLK, 4 * BLK, 'b') == 0 &&
           wr (d, ZS + 8 * BLK, 4 * BLK, 'c') == 0,
         "three writes in zone 1");
  struct blkemu_crash_report rep;
  CHECK (blkemu_disk_crash_state (d, BLKEMU_CRASH_PICK, 5, &rep, err,
                                  sizeof err) == 0,
         "crash pick 5: %s", err);
  blkemu_disk_power_on (d);
  struct blkemu_zone z1 = zone_at (d, ZS);
  CHECK (z1.wp == ZS + 4 * BLK, "zone 1 keeps the oldest write only: wp %llu",
         (unsigned long long) (z1.wp - ZS));
  CHECK (rep.persisted == 1 && rep.lost == 2 && rep.torn == 0,
         "report: persisted %llu lost %llu torn %llu",
         (unsigned long long) rep.persisted, (unsigned long long) rep.lost,
         (unsigned long long) rep.torn);
  char buf[BLK];
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 3 * BLK, 0) == 0 &&
           buf[0] == 'a',
         "the kept write reads back");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 8 * BLK, 0) == 0 &&
           buf[0] == 0,
         "the picked third write is past the write pointer: zeroes");
  /* The same picks in the conventional zone: no order, a hole. */
  CHECK (wr (d, 0, 4 * BLK, 'a') == 0 && wr (d, 4 * BLK, 4 * BLK, 'b') == 0 &&
           wr (d, 8 * BLK, 4 * BLK, 'c') == 0,
         "three writes in the conventional zone");
  CHECK (blkemu_disk_crash_state (d, BLKEMU_CRASH_PICK, 5, &rep, err,
                                  sizeof err) == 0 &&
           rep.persisted == 2 && rep.lost == 1,
         "conventional: persisted %llu lost %llu",
         (unsigned long long) rep.persisted, (unsigned long long) rep.lost);
  blkemu_disk_power_on (d);
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 4 * BLK, 0) == 0 &&
           buf[0] == 0 &&
           blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 8 * BLK, 0) == 0 &&
           buf[0] == 'c',
         "conventional: the second lost, the third kept");
  blkemu_disk_close (d);
}

static void
test_crash (void)
{
  struct blkemu_disk *d = open_disk ("size=4M,zoned=host-managed,"
                                     "zone-size=1M,write-cache=yes");
  char err[BLKEMU_ERR_MAX];
  CHECK (wr (d, 0, 8 * BLK, 'a') == 0, "write 8 blocks");
  CHECK (blkemu_io (d, BLKEMU_OP_FLUSH, NULL, 0, 0, 0) == 0, "flush");
  CHECK (wr (d, 8 * BLK, 4 * BLK, 'b') == 0, "4 unflushed blocks");
  CHECK (wr (d, ZS, 4 * BLK, 'c') == 0, "zone 1: 4 unflushed blocks");
  char one[BLK];
  memset (one, 'd', sizeof one);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, one, BLK, 2 * ZS, BLKEMU_FLAG_FUA) ==
           0,
         "zone 2: a FUA block");
  CHECK (wr (d, 12 * BLK, BLK, 'e') == 0, "zone 0: 1 more unflushed block");
  CHECK (blkemu_disk_crash (d, err, sizeof err) == 0, "crash: %s", err);
  CHECK (blkemu_disk_power_ons (d) == 0, "no power-on yet");
  blkemu_disk_power_on (d);
  CHECK (blkemu_disk_power_ons (d) == 1, "one power-on counted");
  struct blkemu_zone z0 = zone_at (d, 0), z1 = zone_at (d, ZS),
                     z2 = zone_at (d, 2 * ZS);
  CHECK (z0.wp == 8 * BLK && z0.cond == BLKEMU_ZONE_COND_CLOSED,
         "zone 0 back to the flush: wp %llu cond %u",
         (unsigned long long) z0.wp, z0.cond);
  CHECK (z1.wp == ZS && z1.cond == BLKEMU_ZONE_COND_EMPTY,
         "zone 1 lost everything: wp %llu cond %u", (unsigned long long) z1.wp,
         z1.cond);
  CHECK (z2.wp == 2 * ZS + BLK && z2.cond == BLKEMU_ZONE_COND_CLOSED,
         "zone 2 kept its FUA block, closed by the power cycle: wp %llu "
         "cond %u",
         (unsigned long long) z2.wp, z2.cond);
  char buf[BLK];
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 7 * BLK, 0) == 0 &&
           buf[0] == 'a',
         "flushed data reads back");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 8 * BLK, 0) == 0 &&
           buf[0] == 0,
         "past the rolled-back wp: zeroes");
  CHECK (wr (d, 8 * BLK, BLK, 'e') == 0, "writes resume at the new wp");
  blkemu_disk_close (d);
}

/* A finish is durable with its zone's writes; a crash that would leave
 * more zones active than allowed finishes the last of them.
 */
static void
test_crash_finish_excursion (void)
{
  char err[BLKEMU_ERR_MAX];
  struct blkemu_disk *d = open_disk ("size=4M,zoned=host-managed,"
                                     "zone-size=1M,write-cache=yes,"
                                     "max-active-zones=1");
  CHECK (wr (d, 0, 4 * BLK, 'a') == 0, "zone 0: 4 unflushed blocks");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_FINISH, 0) == 0, "finish 0");
  CHECK (wr (d, ZS, ZS, 'b') == 0, "zone 1 written full, unflushed");
  CHECK (wr (d, 2 * ZS, 2 * BLK, 'c') == 0, "zone 2: 2 unflushed blocks");
  char fua[BLK];
  memset (fua, 'd', sizeof fua);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, fua, BLK, 2 * ZS + 2 * BLK,
                    BLKEMU_FLAG_FUA) == 0,
         "zone 2: then a FUA block");
  CHECK (blkemu_disk_crash (d, err, sizeof err) == 0, "crash");
  blkemu_disk_power_on (d);
  struct blkemu_zone z0 = zone_at (d, 0), z1 = zone_at (d, ZS),
                     z2 = zone_at (d, 2 * ZS);
  CHECK (z0.cond == BLKEMU_ZONE_COND_FULL, "the finished zone stays full");
  char buf[BLK];
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 3 * BLK, 0) == 0 &&
           buf[0] == 'a',
         "with the writes the finish made durable");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 4 * BLK, 0) == 0 &&
           buf[0] == 0,
         "and zeroes past them");
  CHECK (z1.cond == BLKEMU_ZONE_COND_EMPTY, "zone 1 lost it all: empty");
  /* Zone 2 rolled back to 0 too: nothing left closed. */
  CHECK (z2.cond == BLKEMU_ZONE_COND_EMPTY && z2.wp == 2 * ZS,
         "zone 2 back to its start (the FUA block after a lost one is "
         "past the write pointer): cond %u",
         z2.cond);
  blkemu_disk_close (d);
}

/* Zone 1 full (the last of it unflushed), then zone 0 active: the
 * crash makes zone 1 closed again, two active with room for one, so
 * the device finishes zone 1.
 */
static void
test_crash_excursion (void)
{
  char err[BLKEMU_ERR_MAX], buf[BLK];
  struct blkemu_zone z0, z1;
  struct blkemu_disk *d =
    open_disk ("size=4M,zoned=host-managed,zone-size=1M,write-cache=yes,"
               "max-active-zones=1");
  char one[2 * BLK];
  memset (one, 'f', sizeof one);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, one, 2 * BLK, ZS, BLKEMU_FLAG_FUA) ==
           0,
         "zone 1: 2 FUA blocks");
  CHECK (wr (d, ZS + 2 * BLK, ZS - 2 * BLK, 'g') == 0,
         "zone 1 filled, unflushed");
  CHECK (zone_at (d, ZS).cond == BLKEMU_ZONE_COND_FULL, "zone 1 full");
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, one, 2 * BLK, 0, BLKEMU_FLAG_FUA) == 0,
         "zone 0: 2 FUA blocks (the one active zone)");
  CHECK (wr (d, 2 * ZS, BLK, 'h') == EOVERFLOW, "no room for a second");
  /* A view of the same crash state finishes zone 1 in the view alone:
   * the view's power cycle is not the disk's, nor its excursion.
   */
  struct blkemu_crash_report rep;
  CHECK (blkemu_disk_power_off (d, err, sizeof err) == 0, "power-off");
  CHECK (blkemu_disk_view_open (d, BLKEMU_CRASH_LOSE_ALL, 0, &rep, err,
                                sizeof err) == 0,
         "view: %s", err);
  CHECK (zone_at (d, ZS).cond == BLKEMU_ZONE_COND_FULL,
         "the view's zone 1 finished by its power cycle");
  CHECK (blkemu_disk_view_close (d, err, sizeof err) == 0, "view end");
  char *json = blkemu_disk_stats_json (d, false);
  CHECK (json && strstr (json, "\"excursions\": 0"),
         "the view's excursion left with it");
  free (json);
  CHECK (blkemu_disk_crash (d, err, sizeof err) == 0, "crash");
  blkemu_disk_power_on (d);
  z0 = zone_at (d, 0);
  z1 = zone_at (d, ZS);
  CHECK (z0.cond == BLKEMU_ZONE_COND_CLOSED && z0.wp == 2 * BLK,
         "zone 0 closed at its FUA blocks");
  CHECK (z1.cond == BLKEMU_ZONE_COND_FULL, "zone 1 finished by the device");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + BLK, 0) == 0 &&
           buf[0] == 'f',
         "zone 1 keeps its durable blocks");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 2 * BLK, 0) == 0 &&
           buf[0] == 0,
         "and reads zeroes where its lost writes were");
  json = blkemu_disk_stats_json (d, false);
  CHECK (json && strstr (json, "\"excursions\": 1"), "one excursion counted");
  free (json);
  blkemu_disk_close (d);
}

/* A write in flight across a crash, from its own thread. */
struct inflight {
  struct blkemu_disk *d;
  uint64_t off, len;
  char fill;
  int r;
};

static void *
inflight_main (void *arg)
{
  struct inflight *w = arg;
  w->r = wr (w->d, w->off, w->len, w->fill);
  return NULL;
}

/* Wait (up to 5 s) until N requests are in the disk. */
static void
wait_in_flight (struct blkemu_disk *d, unsigned n)
{
  char want[32];
  snprintf (want, sizeof want, "\"in_flight\": %u,", n);
  for (int i = 0; i < 500; i++) {
    char *json = blkemu_disk_stats_json (d, false);
    bool there = json && strstr (json, want);
    free (json);
    if (there)
      return;
    usleep (10 * 1000);
  }
  CHECK (0, "%u requests never in flight", n);
}

/* An interrupted crash on a zoned disk, one write in flight in each kind
 * of zone: the conventional one leaves its sectors unreadable; the
 * sequential one is torn (its zone keeps a prefix cut at a unit), and
 * nothing below the write pointer is unreadable.  Over seeds, the cut
 * falls before, inside and past the write.
 */
static void
test_crash_interrupted (void)
{
  char err[BLKEMU_ERR_MAX];
  unsigned before = 0, inside = 0, past = 0;
  for (uint64_t seed = 1; seed <= 9; seed++) {
    struct blkemu_disk *d = open_disk (
      "size=4M,zoned=host-managed,zone-size=1M,conventional-zones=1,"
      "write-cache=yes,physical-block-size=4096,latency-write=300ms");
    char fua[2 * BLK];
    memset (fua, 'a', sizeof fua);
    CHECK (blkemu_io (d, BLKEMU_OP_WRITE, fua, sizeof fua, ZS,
                      BLKEMU_FLAG_FUA) == 0,
           "zone 1: 2 FUA blocks");
    struct inflight seq = { d, ZS + 2 * BLK, 16 * BLK, 'b', -1 },
                    conv = { d, 8 * BLK, 4 * BLK, 'c', -1 };
    /* One after the other: the order they reach the cache decides the
     * seed's draws for each.
     */
    pthread_t t1, t2;
    pthread_create (&t1, NULL, inflight_main, &seq);
    wait_in_flight (d, 1);
    pthread_create (&t2, NULL, inflight_main, &conv);
    wait_in_flight (d, 2);
    struct blkemu_crash_report rep;
    CHECK (blkemu_disk_crash_state (d, BLKEMU_CRASH_INTERRUPTED, seed, &rep,
                                    err, sizeof err) == 0,
           "crash interrupted %llu: %s", (unsigned long long) seed, err);
    blkemu_disk_power_on (d);
    pthread_join (t1, NULL);
    pthread_join (t2, NULL);
    CHECK (seq.r == EIO && conv.r == EIO, "both in flight failed: %d %d",
           seq.r, conv.r);
    uint64_t n = 0;
    char *list = blkemu_disk_bad_list (d, &n);
    CHECK (list && n == 1 && strcmp (list, "32768+16384") == 0,
           "seed %llu: only the conventional write is unreadable: %llu %s",
           (unsigned long long) seed, (unsigned long long) n,
           list ? list : "");
    free (list);
    char buf[BLK];
    CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 8 * BLK, 0) == EIO,
           "a medium error where the conventional write was");
    struct blkemu_zone z1 = zone_at (d, ZS);
    uint64_t wp = z1.wp - ZS;
    CHECK (wp >= 2 * BLK && wp <= 18 * BLK && wp % BLK == 0,
           "seed %llu: the pointer within the write, at a unit: %llu",
           (unsigned long long) seed, (unsigned long long) wp);
    before += wp == 2 * BLK;
    inside += wp > 2 * BLK && wp < 18 * BLK;
    past += wp == 18 * BLK;
    for (uint64_t b = 0; b < 18; b++) {
      int r = blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + b * BLK, 0);
      char want = b < 2 ? 'a' : b * BLK < wp ? 'b' : 0;
      CHECK (r == 0 && buf[0] == want && buf[BLK - 1] == want,
             "seed %llu: zone 1 block %llu reads %d '%c', want '%c'",
             (unsigned long long) seed, (unsigned long long) b, r, buf[0],
             want ? want : '0');
    }
    CHECK (wr (d, z1.wp, BLK, 'd') == 0 && wr (d, 8 * BLK, 4 * BLK, 'e') == 0,
           "writes go on at the pointer, and heal the conventional zone");
    CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 8 * BLK, 0) == 0 &&
             buf[0] == 'e',
           "healed");
    blkemu_disk_close (d);
  }
  printf ("interrupted: over 9 seeds the cut fell before the write %u "
          "times, inside %u, past %u\n",
          before, inside, past);
  CHECK (before && inside && past,
         "the cut fell before (%u), inside (%u) and past (%u) the write",
         before, inside, past);
}

/* A scratch directory for file-backed disks and traces, and its removal
 * with the files named.
 */
static char *
scratch_dir (void)
{
  static char dir[64];
  snprintf (dir, sizeof dir, "/tmp/test-zones.XXXXXX");
  CHECK (mkdtemp (dir), "mkdtemp");
  return dir;
}

static void
scratch_remove (const char *dir, const char *const *files)
{
  char path[128];
  for (; *files; files++) {
    snprintf (path, sizeof path, "%s/%s", dir, *files);
    unlink (path);
  }
  rmdir (dir);
}

/* A 4M file-backed disk of 1M zones, its image NAME in DIR. */
static void
file_zoned_spec (char *list, size_t n, const char *dir, const char *name)
{
  snprintf (list, n,
            "backend=file,file=%s/%s,size=4M,"
            "zoned=host-managed,zone-size=1M",
            dir, name);
}

static void
test_sidecar (void)
{
  const char *dir = scratch_dir ();
  char list[512];
  file_zoned_spec (list, sizeof list, dir, "z.img");
  struct blkemu_disk *d = open_disk (list);
  CHECK (wr (d, ZS, 3 * BLK, 'a') == 0, "write to zone 1");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_FINISH, 2 * ZS) == 0, "finish 2");
  blkemu_disk_close (d);
  d = open_disk (list);
  struct blkemu_zone z1 = zone_at (d, ZS), z2 = zone_at (d, 2 * ZS);
  CHECK (z1.wp == ZS + 3 * BLK && z1.cond == BLKEMU_ZONE_COND_CLOSED,
         "zone 1 after reopen: wp %llu cond %u (closed by the restart)",
         (unsigned long long) z1.wp, z1.cond);
  CHECK (z2.cond == BLKEMU_ZONE_COND_FULL, "zone 2 still full");
  char buf[BLK];
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 2 * BLK, 0) == 0 &&
           buf[0] == 'a',
         "data kept");
  CHECK (wr (d, ZS + 3 * BLK, BLK, 'b') == 0, "write at the kept wp");
  CHECK (wr (d, 3 * ZS, BLK, 'c') == 0, "zone 3: a second active zone");
  blkemu_disk_close (d);
  /* Two active zones in the file, one allowed: refused, and the file is
   * left as it was (no zone finished to make room).
   */
  char strict[600];
  snprintf (strict, sizeof strict, "%s,max-active-zones=1", list);
  const char *e = open_error (strict);
  CHECK (e && strstr (e, "holds 2 active zones, more than max-active-zones=1"),
         "too many active zones refused: %s", e ? e : "(opened)");
  d = open_disk (list);
  CHECK (zone_at (d, 3 * ZS).cond == BLKEMU_ZONE_COND_CLOSED &&
           zone_at (d, ZS).cond == BLKEMU_ZONE_COND_CLOSED,
         "the refused open changed no zone");
  blkemu_disk_close (d);
  /* Another geometry over the same file: refused, naming the sidecar. */
  snprintf (list, sizeof list,
            "backend=file,file=%s/z.img,size=4M,"
            "zoned=host-managed,zone-size=512K",
            dir);
  e = open_error (list);
  CHECK (e && strstr (e, "z.img.zones") && strstr (e, "delete it"),
         "geometry change refused: %s", e ? e : "(opened)");
  scratch_remove (dir, (const char *const[]){ "z.img", "z.img.zones", NULL });
}

/* Crash views of a zoned disk: each has the state's write pointers,
 * its writes and zone commands change them in the view alone, and
 * neither the live zones nor the sidecar ever see them.
 */
static void views_after (struct blkemu_disk *d, const char *list);

static void
test_views (void)
{
  const char *dir = scratch_dir ();
  char list[512], err[BLKEMU_ERR_MAX];
  file_zoned_spec (list, sizeof list, dir, "v.img");
  strcat (list, ",write-cache=yes");
  struct blkemu_disk *d = open_disk (list);
  char fua[2 * BLK];
  memset (fua, 'a', sizeof fua);
  CHECK (blkemu_io (d, BLKEMU_OP_WRITE, fua, sizeof fua, ZS,
                    BLKEMU_FLAG_FUA) == 0,
         "zone 1: 2 FUA blocks");
  CHECK (wr (d, ZS + 2 * BLK, 4 * BLK, 'b') == 0 &&
           wr (d, ZS + 6 * BLK, 4 * BLK, 'c') == 0 &&
           wr (d, ZS + 10 * BLK, 4 * BLK, 'd') == 0,
         "zone 1: three unflushed writes");
  CHECK (blkemu_disk_power_off (d, err, sizeof err) == 0, "power-off: %s",
         err);
  struct blkemu_crash_report rep;
  CHECK (blkemu_disk_view_open (d, BLKEMU_CRASH_PICK, 5, &rep, err,
                                sizeof err) == 0,
         "view pick 5: %s", err);
  struct blkemu_zone z = zone_at (d, ZS);
  CHECK (z.wp == ZS + 6 * BLK && z.cond == BLKEMU_ZONE_COND_CLOSED,
         "view: the prefix of the oldest write, closed: wp %llu cond %u",
         (unsigned long long) (z.wp - ZS), z.cond);
  CHECK (rep.persisted == 1 && rep.lost == 2, "view: 1 kept, 2 lost");
  char buf[BLK];
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 5 * BLK, 0) == 0 &&
           buf[0] == 'b' &&
           blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 6 * BLK, 0) == 0 &&
           buf[0] == 0,
         "view: the kept write below the pointer, zeroes past it");
  CHECK (wr (d, ZS + 10 * BLK, BLK, 'x') == EIO,
         "view: a write off the view's pointer fails");
  CHECK (wr (d, ZS + 6 * BLK, 2 * BLK, 'e') == 0 &&
           zone_at (d, ZS).wp == ZS + 8 * BLK,
         "view: a write at its pointer moves it");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, ZS) == 0 &&
           zone_at (d, ZS).cond == BLKEMU_ZONE_COND_EMPTY,
         "view: a reset empties the zone");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 0, 0) == 0,
         "view: zone 0 reads");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_FINISH, 2 * ZS) == 0 &&
           zone_at (d, 2 * ZS).cond == BLKEMU_ZONE_COND_FULL,
         "view: a finish fills zone 2");
  views_after (d, list);
  scratch_remove (dir, (const char *const[]){ "v.img", "v.img.zones", NULL });
}

/* test_views' disk after its first view: the next view shows none of
 * it, power-on and a reopen give the live zones back, and a crash
 * after a view takes the live state.  Closes D.
 */
static void
views_after (struct blkemu_disk *d, const char *list)
{
  char err[BLKEMU_ERR_MAX], buf[BLK];
  struct blkemu_crash_report rep;
  struct blkemu_zone z;
  CHECK (blkemu_disk_view_close (d, err, sizeof err) == 0, "view end: %s",
         err);
  CHECK (blkemu_disk_view_open (d, BLKEMU_CRASH_PICK, 7, &rep, err,
                                sizeof err) == 0,
         "view pick 7: %s", err);
  z = zone_at (d, ZS);
  CHECK (z.wp == ZS + 14 * BLK &&
           zone_at (d, 2 * ZS).cond == BLKEMU_ZONE_COND_EMPTY,
         "the next view: all three kept (wp %llu), the last view's reset "
         "and finish gone",
         (unsigned long long) (z.wp - ZS));
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 13 * BLK, 0) == 0 &&
           buf[0] == 'd' &&
           blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS + 6 * BLK, 0) == 0 &&
           buf[0] == 'c',
         "the next view reads the kept writes, not the last view's");
  blkemu_disk_power_on (d);
  z = zone_at (d, ZS);
  CHECK (z.wp == ZS + 14 * BLK && z.cond == BLKEMU_ZONE_COND_IMP_OPEN,
         "power-on: the live zone as it was: wp %llu cond %u",
         (unsigned long long) (z.wp - ZS), z.cond);
  CHECK (wr (d, ZS + 14 * BLK, BLK, 'f') == 0, "live: writes go on");
  blkemu_disk_close (d);
  d = open_disk (list);
  z = zone_at (d, ZS);
  CHECK (z.wp == ZS + 15 * BLK &&
           zone_at (d, 2 * ZS).cond == BLKEMU_ZONE_COND_EMPTY,
         "the sidecar holds the live zones, none of a view's: wp %llu",
         (unsigned long long) (z.wp - ZS));
  /* A crash after a view takes the live zones' state. */
  CHECK (blkemu_disk_power_off (d, err, sizeof err) == 0 &&
           blkemu_disk_view_open (d, BLKEMU_CRASH_LOSE_ALL, 0, NULL, err,
                                  sizeof err) == 0,
         "view lose-all: %s", err);
  CHECK (zone_at (d, ZS).wp == ZS + 15 * BLK,
         "a reopen flushed all: nothing to lose");
  CHECK (blkemu_disk_crash_state (d, BLKEMU_CRASH_LOSE_ALL, 0, NULL, err,
                                  sizeof err) == 0,
         "crash: %s", err);
  blkemu_disk_power_on (d);
  CHECK (zone_at (d, ZS).wp == ZS + 15 * BLK, "crash after a view: live");
  blkemu_disk_close (d);
}

/* The trace of a zoned disk: the zone size in its header, resets as trims
 * marked zone-reset (blkemu-plot draws both), appends marked.
 */
static void
test_trace (void)
{
  const char *dir = scratch_dir ();
  char list[768], path[128];
  snprintf (path, sizeof path, "%s/t.trace", dir);
  snprintf (list, sizeof list,
            "size=8M,zoned=host-managed,zone-size=1M,"
            "conventional-zones=1,trace=%s",
            path);
  struct blkemu_disk *d = open_disk (list);
  uint64_t at;
  char buf[BLK] = { 0 };
  CHECK (wr (d, ZS, BLK, 'a') == 0, "write");
  CHECK (blkemu_zone_append (d, buf, BLK, ZS, 0, &at) == 0, "append");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, ZS) == 0, "reset");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET_ALL, 0) == 0, "reset-all");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_OPEN, 2 * ZS) == 0, "open");
  blkemu_disk_close (d);
  FILE *fp = fopen (path, "r");
  char line[256];
  int zs = 0, resets = 0, appends = 0, reset_all = 0, records = 0;
  while (fp && fgets (line, sizeof line, fp)) {
    zs += strcmp (line, "# zone_size 1048576\n") == 0;
    records += line[0] != '#';
    if (strstr (line, " T 1048576 1048576 ") && strstr (line, "zone-reset"))
      resets++;
    if (strstr (line, " T 1048576 7340032 ") && strstr (line, "zone-reset"))
      reset_all++;
    appends += strstr (line, " W 1052672 4096 ") && strstr (line, "append");
  }
  if (fp)
    fclose (fp);
  CHECK (zs == 1, "trace header names the zone size");
  CHECK (resets == 1 && reset_all == 1,
         "resets traced as trims of their zones (%d, %d)", resets, reset_all);
  CHECK (appends == 1, "the append traced where it landed, marked");
  CHECK (records == 4, "4 records (an open is not traced): %d", records);
  scratch_remove (dir, (const char *const[]){ "t.trace", NULL });
}

/* SIGKILL right after a write: the sidecar's record is already in the
 * page cache, so a restart finds the write pointer where it was.
 */
static void
test_sigkill (void)
{
  const char *dir = scratch_dir ();
  char list[512];
  file_zoned_spec (list, sizeof list, dir, "k.img");
  pid_t pid = fork ();
  if (pid == 0) {
    struct blkemu_disk *d = open_disk (list);
    if (d && wr (d, 2 * ZS, 5 * BLK, 'k') == 0)
      raise (SIGKILL);
    _exit (1);
  }
  int status = 0;
  waitpid (pid, &status, 0);
  CHECK (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL,
         "the child wrote and was killed (status %d)", status);
  struct blkemu_disk *d = open_disk (list);
  struct blkemu_zone z = zone_at (d, 2 * ZS);
  CHECK (z.wp == 2 * ZS + 5 * BLK && z.cond == BLKEMU_ZONE_COND_CLOSED,
         "after SIGKILL: wp %llu cond %u", (unsigned long long) z.wp, z.cond);
  char buf[BLK];
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 2 * ZS + 4 * BLK, 0) == 0 &&
           buf[0] == 'k',
         "the data is there too");
  blkemu_disk_close (d);
  scratch_remove (dir, (const char *const[]){ "k.img", "k.img.zones", NULL });
}

/* The control commands: zones (a report) and zone OP OFFSET. */
static char *
run (struct blkemu_disk *d, const char *cmd)
{
  char line[256];
  snprintf (line, sizeof line, "%s", cmd);
  struct strbuf sb = { 0 };
  control_run_command (d, line, &sb);
  return sb_take (&sb);
}

static void
test_control (void)
{
  struct blkemu_disk *d = open_disk ("size=8M,zoned=host-managed,"
                                     "zone-size=1M,conventional-zones=1");
  char *r = run (d, "zone open 2M");
  CHECK (r && !strcmp (r, "ok\n"), "zone open 2M: %s", r ? r : "(null)");
  free (r);
  CHECK (wr (d, ZS, 3 * BLK, 'a') == 0, "write zone 1");
  r = run (d, "zones 0 3");
  CHECK (r && strstr (r, "     0            0       1M       1M            - "
                         "conv not-wp\n"),
         "zones: conventional row: %s", r ? r : "(null)");
  CHECK (r && strstr (r, "     1           1M       1M       1M         +12K "
                         "seq  implicit-open\n"),
         "zones: zone 1 row: %s", r ? r : "(null)");
  CHECK (r && strstr (r, "     2           2M       1M       1M           +0 "
                         "seq  explicit-open\n"),
         "zones: zone 2 row: %s", r ? r : "(null)");
  CHECK (r && !strstr (r, "     3 "), "zones 0 3: three rows only");
  free (r);
  r = run (d, "zone reset 1M");
  CHECK (r && !strcmp (r, "ok\n"), "zone reset 1M: %s", r ? r : "(null)");
  free (r);
  r = run (d, "zone reset 0");
  CHECK (r && strstr (r, "error: zone reset 0: Input/output error"),
         "a conventional zone: %s", r ? r : "(null)");
  free (r);
  r = run (d, "zone shake 1M");
  CHECK (r && strstr (r, "error: zone needs"), "bad op: %s", r ? r : "(null)");
  free (r);
  r = run (d, "zones 1M x");
  CHECK (r && strstr (r, "error: zones 1M x: COUNT"), "bad count: %s",
         r ? r : "(null)");
  free (r);
  blkemu_disk_close (d);
  d = open_disk ("size=8M");
  r = run (d, "zones");
  CHECK (r && strstr (r, "not zoned"), "zones on a plain disk: %s",
         r ? r : "(null)");
  free (r);
  blkemu_disk_close (d);
}

/* One command and its reply on a fresh connection to the control socket
 * at PATH; the reply's first line, malloc'd.  *MS: how long it took.
 */
static char *
ask (const char *path, const char *line, double *ms)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "%s", path);
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  char buf[4096];
  size_t have = 0;
  if (fd >= 0 && connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 &&
      write (fd, line, strlen (line)) == (ssize_t) strlen (line) &&
      shutdown (fd, SHUT_WR) == 0) {
    ssize_t n;
    while (have < sizeof buf - 1 &&
           (n = read (fd, buf + have, sizeof buf - 1 - have)) > 0 &&
           !memchr (buf, '\n', have + (size_t) n))
      have += (size_t) n;
    if (n > 0)
      have += (size_t) n;
  }
  if (fd >= 0)
    close (fd);
  clock_gettime (CLOCK_MONOTONIC, &t1);
  *ms = (double) (t1.tv_sec - t0.tv_sec) * 1e3 +
        (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
  buf[have] = '\0';
  buf[strcspn (buf, "\n")] = '\0';
  return strdup (buf);
}

struct asker {
  const char *path, *line;
  char *reply;
  double ms;
};

static void *
asker_main (void *arg)
{
  struct asker *a = arg;
  a->reply = ask (a->path, a->line, &a->ms);
  return NULL;
}

/* The service thread never waits out latency-zone: a zone command's
 * reply comes when the command completes, and meanwhile other clients
 * are answered (it used to hold the service thread for the whole
 * latency, up to 60 s).
 */
static void
test_control_zone_async (void)
{
  char path[64], spec[256], err[BLKEMU_ERR_MAX];
  snprintf (path, sizeof path, "/tmp/blkemu-zones-%d.ctl", (int) getpid ());
  snprintf (spec, sizeof spec,
            "size=8M,zoned=host-managed,zone-size=1M,"
            "conventional-zones=1,latency-zone=1500ms,control=%s",
            path);
  struct blkemu_disk *d = open_disk (spec);
  CHECK (blkemu_disk_start (d, err, sizeof err) == 0, "start: %s", err);
  struct asker zone = { .path = path, .line = "zone open 2M\n" };
  pthread_t th;
  pthread_create (&th, NULL, asker_main, &zone);
  usleep (200000);
  double ms;
  char *got = ask (path, "get latency-zone\n", &ms);
  CHECK (got && !strcmp (got, "ok 1500ms"), "get beside a zone open: %s", got);
  CHECK (ms < 500, "get answered in %.0f ms while a 1.5 s zone open ran", ms);
  free (got);
  pthread_join (th, NULL);
  CHECK (zone.reply && !strcmp (zone.reply, "ok"), "zone open: %s",
         zone.reply);
  CHECK (zone.ms >= 1400,
         "zone open replied after %.0f ms (latency-zone "
         "1500ms)",
         zone.ms);
  free (zone.reply);
  CHECK (zone_at (d, 2 * ZS).cond == BLKEMU_ZONE_COND_EXP_OPEN,
         "zone 2 explicitly open");
  /* A client that sends the command and hangs up its side still gets
   * the reply; one that goes away entirely costs nothing.
   */
  struct asker reset = { .path = path, .line = "zone reset 2M" };
  pthread_create (&th, NULL, asker_main, &reset);
  pthread_join (th, NULL);
  CHECK (reset.reply && !strcmp (reset.reply, "ok"),
         "zone reset without a newline, then EOF: %s", reset.reply);
  free (reset.reply);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  snprintf (sa.sun_path, sizeof sa.sun_path, "%s", path);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 &&
      write (fd, "zone open 3M\n", 13) == 13)
    close (fd);
  got = ask (path, "get size\n", &ms);
  CHECK (got && !strcmp (got, "ok 8M"),
         "served on after a client left "
         "mid-command: %s",
         got);
  free (got);
  /* Closing with a command still pending: its reply goes nowhere. */
  fd = socket (AF_UNIX, SOCK_STREAM, 0);
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 &&
      write (fd, "zone open 4M\n", 13) == 13)
    usleep (100000);
  blkemu_disk_close (d);
  close (fd);
  CHECK (access (path, F_OK) == -1, "control socket removed");
}

/* Zone appends from several threads into one zone, as a filesystem
 * sends them: each lands on its own blocks, in one sequence, and the
 * zone ends full with every block holding the append that claimed it.
 */
#define APPENDERS 4
#define APPENDS (ZS / BLK / APPENDERS)

struct appender {
  struct blkemu_disk *d;
  unsigned id;
  uint64_t at[APPENDS];
  int err;
};

static void *
append_loop (void *arg)
{
  struct appender *a = arg;
  char buf[BLK];
  for (unsigned i = 0; i < APPENDS && !a->err; i++) {
    memset (buf, 'A' + (int) a->id, sizeof buf);
    buf[1] = (char) i;
    a->err = blkemu_zone_append (a->d, buf, BLK, ZS, 0, &a->at[i]);
  }
  return NULL;
}

static void
test_concurrent_appends (void)
{
  struct blkemu_disk *d = open_disk ("size=4M,zoned=host-managed,"
                                     "zone-size=1M,latency-write=50us");
  struct appender a[APPENDERS];
  pthread_t t[APPENDERS];
  for (unsigned i = 0; i < APPENDERS; i++) {
    a[i] = (struct appender){ .d = d, .id = i };
    pthread_create (&t[i], NULL, append_loop, &a[i]);
  }
  for (unsigned i = 0; i < APPENDERS; i++)
    pthread_join (t[i], NULL);
  static unsigned char claimed[ZS / BLK];
  memset (claimed, 0, sizeof claimed);
  unsigned bad = 0;
  for (unsigned i = 0; i < APPENDERS; i++) {
    CHECK (a[i].err == 0, "appender %u: %d", i, a[i].err);
    for (unsigned k = 0; k < APPENDS; k++) {
      uint64_t b = (a[i].at[k] - ZS) / BLK;
      if (a[i].at[k] < ZS || b >= ZS / BLK || claimed[b]++) {
        bad++;
        continue;
      }
      char buf[BLK];
      if (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, a[i].at[k], 0) ||
          buf[0] != 'A' + (int) i || buf[1] != (char) k)
        bad++;
    }
  }
  CHECK (bad == 0, "%u appends overlapped, strayed or lost their data", bad);
  CHECK (zone_at (d, ZS).cond == BLKEMU_ZONE_COND_FULL,
         "256 appends of 4K filled the zone");
  blkemu_disk_close (d);
}

static void
test_latency (void)
{
  struct blkemu_disk *d = open_disk ("size=4M,zoned=host-managed,"
                                     "zone-size=1M,latency-zone=20ms");
  struct timespec a, b;
  clock_gettime (CLOCK_MONOTONIC, &a);
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_OPEN, ZS) == 0, "open");
  clock_gettime (CLOCK_MONOTONIC, &b);
  double ms = (double) (b.tv_sec - a.tv_sec) * 1e3 +
              (double) (b.tv_nsec - a.tv_nsec) / 1e6;
  CHECK (ms >= 20.0, "latency-zone=20ms took %.2f ms", ms);
  blkemu_disk_close (d);
}

/* A zone command is its own op: on a cancelled disk it fails with
 * ESHUTDOWN, counts as cancelled and is never recorded as a trim.
 */
static void
test_zone_op_cancelled (void)
{
  struct blkemu_disk *d =
    open_disk ("size=4M,zoned=host-managed,zone-size=1M");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, ZS) == 0, "reset");
  blkemu_disk_cancel (d);
  int r = blkemu_zone_command (d, BLKEMU_ZONE_FINISH, ZS);
  CHECK (r == ESHUTDOWN, "finish after cancel: %d", r);
  char *json = blkemu_disk_stats_json (d, false);
  CHECK (json && strstr (json, "\"cancelled\": 1,"), "one cancelled: %s",
         json ? strstr (json, "\"cancelled\"") : "");
  const char *none = "\"trim\": {\"requests\": 0,";
  const char *trim = json ? strstr (json, "\"trim\": {") : NULL;
  CHECK (trim && strncmp (trim, none, strlen (none)) == 0,
         "no trim recorded: %.40s", trim ? trim : "");
  CHECK (json && strstr (json, "\"finish\": 0"), "no finish counted");
  free (json);
  blkemu_disk_close (d);
}

static void
test_bad_specs (void)
{
  static const struct {
    const char *spec, *want;
  } bad[] = {
    { "size=4M,zoned=host-managed,zone-size=3M",
      "zone-size=3M: must be a power of two" },
    { "size=5632K,zoned=host-managed,zone-size=1M",
      "size=5632K: a zoned disk's size must be a whole number of zones" },
    { "size=4M,zoned=host-managed,zone-size=1M,zone-capacity=2M",
      "zone-capacity=2M: must be" },
    { "size=4M,zoned=host-managed,zone-size=1M,conventional-zones=4",
      "conventional-zones=4: must leave at least one sequential zone" },
    { "size=4M,zoned=host-managed,zone-size=1M,max-open-zones=3,max-active-"
      "zones=2",
      "max-open-zones=3: must be at most max-active-zones" },
    { "size=4M,zoned=host-managed,zone-size=1M,max-active-zones=5",
      "max-active-zones=5: must be at most the sequential zones (4)" },
    { "size=4M,zoned=host-managed,zone-size=1M,boundary=64K",
      "boundary=64K: a zoned disk's boundary is its zone-size" },
    { "size=4M,zoned=host-managed,zone-size=1M,max-zone-append=1000",
      "max-zone-append=1000: must be a multiple" },
    { "size=4M,zone-size=1M", "zone-size=1M: only for a zoned disk" },
    { "size=4M,zoned=yes", "zoned" },
  };
  /* The caller's buffer size is respected: the message is cut to fit. */
  char small[16];
  memset (small, 'x', sizeof small);
  CHECK (!blkemu_disk_open_spec ("size=4M,zone-size=1M", 0, NULL, small, 12) &&
           !strcmp (small, "zone-size=1") && small[12] == 'x' &&
           small[15] == 'x',
         "a 12-byte error buffer: \"%.11s\"", small);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *e = open_error (bad[i].spec);
    CHECK (e && strstr (e, bad[i].want), "%s: want \"%s\", got \"%s\"",
           bad[i].spec, bad[i].want, e ? e : "(opened)");
  }
}

/* Zones failing as media does: read-only (reads work, writes and zone
 * commands fail with EIO), offline (reads fail too), and back online
 * empty.  They leave the open/active counts, reset-all passes them by,
 * the condition survives a restart (sidecar) and shows in the report,
 * the zones table and stats.
 */
static void
test_failed_zones (void)
{
  const char *dir = scratch_dir ();
  char list[600];
  snprintf (list, sizeof list,
            "backend=file,file=%s/f.img,size=8M,zoned=host-managed,"
            "zone-size=1M,conventional-zones=1,max-active-zones=2",
            dir);
  struct blkemu_disk *d = open_disk (list);
  char err[BLKEMU_ERR_MAX], buf[BLK];
  CHECK (wr (d, ZS, 2 * BLK, 'r') == 0 && wr (d, 2 * ZS, BLK, 'o') == 0,
         "write zones 1 and 2");
  CHECK (blkemu_zone_set_condition (d, ZS, BLKEMU_ZONE_COND_READONLY, err,
                                    sizeof err) == 0,
         "zone 1 read-only: %s", err);
  CHECK (blkemu_zone_set_condition (d, 2 * ZS, BLKEMU_ZONE_COND_OFFLINE, err,
                                    sizeof err) == 0,
         "zone 2 offline: %s", err);
  struct blkemu_zone z1 = zone_at (d, ZS), z2 = zone_at (d, 2 * ZS);
  CHECK (z1.cond == BLKEMU_ZONE_COND_READONLY && z1.wp == ZS + 2 * BLK,
         "zone 1: cond %u wp %llu", z1.cond, (unsigned long long) z1.wp);
  CHECK (z2.cond == BLKEMU_ZONE_COND_OFFLINE, "zone 2: cond %u", z2.cond);
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, ZS, 0) == 0 && buf[0] == 'r',
         "a read-only zone reads its data");
  CHECK (wr (d, ZS + 2 * BLK, BLK, 'x') == EIO, "a read-only zone: write");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET, ZS) == EIO &&
           blkemu_zone_command (d, BLKEMU_ZONE_FINISH, ZS) == EIO &&
           blkemu_zone_command (d, BLKEMU_ZONE_OPEN, 2 * ZS) == EIO,
         "zone commands on failed zones");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 2 * ZS, 0) == EIO,
         "an offline zone: read");
  CHECK (blkemu_io (d, BLKEMU_OP_READ, buf, BLK, 2 * ZS - BLK, 0) == 0,
         "the block before it reads");
  /* They left the active count: two other zones can be active. */
  CHECK (wr (d, 3 * ZS, BLK, 'a') == 0 && wr (d, 4 * ZS, BLK, 'b') == 0,
         "two more active zones under max-active-zones=2");
  CHECK (blkemu_zone_command (d, BLKEMU_ZONE_RESET_ALL, 0) == 0 &&
           zone_at (d, ZS).cond == BLKEMU_ZONE_COND_READONLY &&
           zone_at (d, 3 * ZS).cond == BLKEMU_ZONE_COND_EMPTY,
         "reset-all passes failed zones by");
  char *r = run (d, "zones 1M 2");
  CHECK (r && strstr (r, "read-only\n") && strstr (r, "offline\n"),
         "zones table: %s", r ? r : "(null)");
  free (r);
  char *json = blkemu_disk_stats_json (d, false);
  CHECK (json && strstr (json, "\"read_only\": 1") &&
           strstr (json, "\"offline\": 1"),
         "stats conditions");
  free (json);
  blkemu_disk_close (d);
  /* A restart keeps them (the sidecar). */
  d = open_disk (list);
  CHECK (zone_at (d, ZS).cond == BLKEMU_ZONE_COND_READONLY &&
           zone_at (d, 2 * ZS).cond == BLKEMU_ZONE_COND_OFFLINE,
         "conditions after a restart");
  r = run (d, "zone online 2M");
  CHECK (r && !strcmp (r, "ok\n"), "zone online 2M: %s", r ? r : "(null)");
  free (r);
  CHECK (zone_at (d, 2 * ZS).cond == BLKEMU_ZONE_COND_EMPTY &&
           wr (d, 2 * ZS, BLK, 'n') == 0,
         "back online: empty and writable");
  r = run (d, "zone read-only 0");
  CHECK (r && strstr (r, "must be the start of a sequential zone"),
         "a conventional or bad offset: %s", r ? r : "(null)");
  free (r);
  r = run (d, "zone offline");
  CHECK (r && strstr (r, "error: zone offline needs OFFSET"), "no offset: %s",
         r ? r : "(null)");
  free (r);
  CHECK (blkemu_zone_set_condition (d, ZS, BLKEMU_ZONE_COND_FULL, err,
                                    sizeof err) == -1 &&
           strstr (err, "must be read-only, offline or empty"),
         "another condition: %s", err);
  blkemu_disk_close (d);
  scratch_remove (dir, (const char *const[]){ "f.img", "f.img.zones", NULL });
}

/* Every test, one a line: meson registers each as its own test
 * (zones-NAME), reading this list.
 */
#define ZONE_TESTS(X)                                                         \
  X (write_pointer)                                                           \
  X (limits)                                                                  \
  X (capacity)                                                                \
  X (crash)                                                                   \
  X (crash_prefix)                                                            \
  X (crash_finish_excursion)                                                  \
  X (crash_excursion)                                                         \
  X (crash_interrupted)                                                       \
  X (sidecar)                                                                 \
  X (views)                                                                   \
  X (trace)                                                                   \
  X (sigkill)                                                                 \
  X (control)                                                                 \
  X (control_zone_async)                                                      \
  X (failed_zones)                                                            \
  X (concurrent_appends)                                                      \
  X (latency)                                                                 \
  X (zone_op_cancelled)                                                       \
  X (bad_specs)

static const struct {
  const char *name;
  void (*run) (void);
} zone_tests[] = {
#define ZONE_TEST_ENTRY(n) { #n, test_##n },
  ZONE_TESTS (ZONE_TEST_ENTRY)
#undef ZONE_TEST_ENTRY
};

/* test-zones [NAME...]: the tests named, or all of them. */
int
main (int argc, char **argv)
{
  size_t n = sizeof zone_tests / sizeof zone_tests[0];
  for (int a = 1; a < argc; a++) {
    size_t t = 0;
    while (t < n && strcmp (zone_tests[t].name, argv[a]))
      t++;
    if (t == n) {
      fprintf (stderr, "test-zones: no test %s\n", argv[a]);
      return 2;
    }
    zone_tests[t].run ();
  }
  if (argc == 1)
    for (size_t t = 0; t < n; t++)
      zone_tests[t].run ();
  if (failures) {
    printf ("%d failures\n", failures);
    return 1;
  }
  printf ("zones: all checks passed\n");
  return 0;
}
