/* How a command answers: status and sense, data copied in and out of
 * the command's data area.  Every command file (commands.c, inquiry.c,
 * zbc.c) answers through these and calls nothing of each other's here.
 */
#include <string.h>

#include "scsi.h"

void
scsi_sense (struct scmd *c, uint8_t key, uint8_t asc, uint8_t ascq)
{
  c->status = CHECK_CONDITION;
  memset (c->sense, 0, SENSE_LEN);
  c->sense[0] = 0x70; /* current error, fixed format */
  c->sense[2] = key;
  c->sense[7] = SENSE_LEN - 8;
  c->sense[12] = asc;
  c->sense[13] = ascq;
}

/* A sense naming the block it happened at (the information field). */
void
scsi_sense_at (struct scmd *c, uint8_t key, uint8_t asc, uint8_t ascq,
               uint64_t lba)
{
  scsi_sense (c, key, asc, ascq);
  c->sense[0] |= 0x80; /* VALID: the information field holds the LBA */
  put_be (&c->sense[3], lba > UINT32_MAX ? UINT32_MAX : lba, 4);
}

size_t
scsi_copy_in (const struct scmd *c, const void *src, size_t len)
{
  return scsi_copy_at (c, 0, src, len);
}

/* SRC into the data area from byte AT on; returns what fit. */
size_t
scsi_copy_at (const struct scmd *c, size_t at, const void *src, size_t len)
{
  size_t done = 0;
  for (uint32_t i = 0; i < c->iov_cnt && done < len; i++) {
    size_t l = c->iov[i].iov_len;
    if (at >= l) {
      at -= l;
      continue;
    }
    size_t n = l - at < len - done ? l - at : len - done;
    memcpy ((char *) c->iov[i].iov_base + at, (const char *) src + done, n);
    done += n;
    at = 0;
  }
  return done;
}

size_t
scsi_copy_out (const struct scmd *c, void *dst, size_t len)
{
  size_t done = 0;
  for (uint32_t i = 0; i < c->iov_cnt && done < len; i++) {
    size_t n = c->iov[i].iov_len < len - done ? c->iov[i].iov_len : len - done;
    memcpy ((char *) dst + done, c->iov[i].iov_base, n);
    done += n;
  }
  return done;
}

/* Data-in of a command answered here: at most the allocation length
 * and what the data area holds; the rest of the area zeroed (it may
 * hold an earlier command's data, and the kernel returns it whole).
 */
void
scsi_reply (struct scmd *c, const uint8_t *data, size_t len, size_t alloc_len)
{
  size_t n = scsi_copy_in (c, data, len < alloc_len ? len : alloc_len);
  for (uint32_t i = 0; i < c->iov_cnt; i++) {
    if (n >= c->iov[i].iov_len) {
      n -= c->iov[i].iov_len;
      continue;
    }
    memset ((char *) c->iov[i].iov_base + n, 0, c->iov[i].iov_len - n);
    n = 0;
  }
  c->status = GOOD;
}
