/* backend=memory: a sparse disk in RAM.
 *
 * The disk is cut into 64 KiB chunks, allocated on first write; a hole
 * reads as zeros.  Chunk pointers sit in lazily allocated tables of 4096
 * (256 MiB each), so a 1 TiB disk costs 32 KiB of directory until written.
 * Reads and writes run in parallel (pointers are installed with a CAS);
 * trim and write-zeroes free chunks and so take the lock exclusively.
 *
 * Overlapping requests in flight: a real device promises nothing about
 * their order.  Here each chunk's part of a request is copied under that
 * chunk's stripe lock, so a read sees every 64 KiB-aligned piece either
 * before or after a concurrent write (never a torn sector, no data race);
 * a request spanning chunks may see some pieces old and some new.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "error.h"
#include "units.h"

#define CHUNK_SHIFT 16
#define CHUNK_SIZE (1u << CHUNK_SHIFT)
#define TABLE_SHIFT 12
#define TABLE_SLOTS (1u << TABLE_SHIFT)

/* The largest memory disk: its chunk directory is 8 bytes per 256 MiB,
 * so 1 PiB costs 32 MiB before anything is written.
 */
#define MEMORY_MAX_SIZE (1ull << 50)
#define STRIPES 64

struct memory {
  pthread_rwlock_t lock; /* shared for read/write, exclusive to free */
  pthread_mutex_t stripe[STRIPES]; /* chunk ci's bytes: stripe[ci % STRIPES] */
  uint64_t size;
  uint64_t ntables;
  unsigned char ***tables; /* tables[t][c]: chunk t*TABLE_SLOTS+c or NULL */
};

static int
memory_open (struct blkemu_config *cfg, void **state, char *err)
{
  struct memory *m = calloc (1, sizeof *m);
  if (!m)
    goto oom;
  m->size = cfg->num[K_SIZE];
  if (m->size > MEMORY_MAX_SIZE) {
    char v[32];
    blkemu_format_size (m->size, v, sizeof v);
    set_err (err,
             "size=%s: backend=memory holds at most 1024T (use "
             "backend=null or backend=file for larger disks)",
             v);
    free (m);
    return -1;
  }
  uint64_t nchunks = (m->size + CHUNK_SIZE - 1) >> CHUNK_SHIFT;
  m->ntables = (nchunks + TABLE_SLOTS - 1) >> TABLE_SHIFT;
  m->tables = calloc (m->ntables, sizeof *m->tables);
  if (!m->tables) {
    free (m);
    goto oom;
  }
  pthread_rwlock_init (&m->lock, NULL);
  for (int i = 0; i < STRIPES; i++)
    pthread_mutex_init (&m->stripe[i], NULL);
  *state = m;
  return 0;
oom:
  set_err (err,
           "backend=memory: cannot allocate the "
           "directory for size=%llu",
           (unsigned long long) cfg->num[K_SIZE]);
  return -1;
}

static void
memory_close (void *state)
{
  struct memory *m = state;
  for (uint64_t t = 0; t < m->ntables; t++) {
    if (!m->tables[t])
      continue;
    for (unsigned c = 0; c < TABLE_SLOTS; c++)
      free (m->tables[t][c]);
    free (m->tables[t]);
  }
  free (m->tables);
  pthread_rwlock_destroy (&m->lock);
  for (int i = 0; i < STRIPES; i++)
    pthread_mutex_destroy (&m->stripe[i]);
  free (m);
}

/* The chunk at index CI, or NULL; with CREATE, allocate it (zeroed). */
static unsigned char *
chunk_get (struct memory *m, uint64_t ci, bool create)
{
  unsigned char ***tslot = &m->tables[ci >> TABLE_SHIFT];
  unsigned char **table = __atomic_load_n (tslot, __ATOMIC_ACQUIRE);
  if (!table) {
    if (!create)
      return NULL;
    unsigned char **fresh = calloc (TABLE_SLOTS, sizeof *fresh);
    if (!fresh)
      return NULL;
    if (__atomic_compare_exchange_n (tslot, &table, fresh, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      table = fresh;
    else
      free (fresh); /* another thread won; TABLE now holds its table */
  }
  unsigned char **cslot = &table[ci & (TABLE_SLOTS - 1)];
  unsigned char *chunk = __atomic_load_n (cslot, __ATOMIC_ACQUIRE);
  if (!chunk && create) {
    unsigned char *fresh = calloc (1, CHUNK_SIZE);
    if (!fresh)
      return NULL;
    if (__atomic_compare_exchange_n (cslot, &chunk, fresh, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      chunk = fresh;
    else
      free (fresh);
  }
  return chunk;
}

/* One pass over [OFFSET, OFFSET + LEN) under the table's read lock,
 * each chunk's piece handed over under its stripe's lock: to SINK
 * (NULL data: a chunk never written reads as zeros) or, for a write,
 * from SOURCE into the chunk, made first (ENOMEM when it cannot be).
 */
struct walk {
  int (*sink) (void *arg, uint64_t offset, const void *data, uint64_t len);
  int (*source) (void *arg, uint64_t offset, void *dst, uint64_t len);
  void *arg;
};

static int
chunk_walk (struct memory *m, uint64_t len, uint64_t offset,
            const struct walk *w)
{
  int r = 0;
  pthread_rwlock_rdlock (&m->lock);
  while (len > 0 && r == 0) {
    uint64_t in = offset & (CHUNK_SIZE - 1);
    uint64_t n = CHUNK_SIZE - in < len ? CHUNK_SIZE - in : len;
    uint64_t ci = offset >> CHUNK_SHIFT;
    unsigned char *chunk = chunk_get (m, ci, w->source != NULL);
    if (!chunk && w->source)
      r = ENOMEM;
    else if (!chunk)
      r = w->sink (w->arg, offset, NULL, n);
    else {
      pthread_mutex_lock (&m->stripe[ci % STRIPES]);
      r = w->source ? w->source (w->arg, offset, chunk + in, n)
                    : w->sink (w->arg, offset, chunk + in, n);
      pthread_mutex_unlock (&m->stripe[ci % STRIPES]);
    }
    offset += n;
    len -= n;
  }
  pthread_rwlock_unlock (&m->lock);
  return r;
}

static int
memory_read_to (void *state, uint64_t len, uint64_t offset,
                int (*sink) (void *arg, uint64_t offset, const void *data,
                             uint64_t len),
                void *arg)
{
  return chunk_walk (state, len, offset,
                     &(struct walk){ .sink = sink, .arg = arg });
}

/* pread and pwrite are read_to and write_from with a plain copy: one
 * walk of the chunks and their locks. */
static int
copy_out (void *arg, uint64_t offset, const void *data, uint64_t len)
{
  unsigned char **out = arg;
  (void) offset;
  if (data)
    memcpy (*out, data, len);
  else
    memset (*out, 0, len);
  *out += len;
  return 0;
}

static int
memory_pread (void *state, void *buf, uint64_t len, uint64_t offset)
{
  unsigned char *out = buf;
  return memory_read_to (state, len, offset, copy_out, &out);
}

static int
memory_write_from (void *state, uint64_t len, uint64_t offset,
                   int (*source) (void *arg, uint64_t offset, void *dst,
                                  uint64_t len),
                   void *arg)
{
  return chunk_walk (state, len, offset,
                     &(struct walk){ .source = source, .arg = arg });
}

static int
copy_in (void *arg, uint64_t offset, void *dst, uint64_t len)
{
  const unsigned char **in = arg;
  (void) offset;
  memcpy (dst, *in, len);
  *in += len;
  return 0;
}

static int
memory_pwrite (void *state, const void *buf, uint64_t len, uint64_t offset,
               bool fua)
{
  const unsigned char *in = buf;
  (void) fua; /* RAM is as durable as this process gets */
  return memory_write_from (state, len, offset, copy_in, &in);
}

static int
memory_flush (void *state)
{
  (void) state;
  return 0;
}

/* Zero a range: whole chunks are freed, partial ones cleared. */
static int
memory_zero (void *state, uint64_t len, uint64_t offset, bool may_trim)
{
  struct memory *m = state;
  (void) may_trim; /* freeing is how this backend stores zeros */
  pthread_rwlock_wrlock (&m->lock);
  while (len > 0) {
    uint64_t ci = offset >> CHUNK_SHIFT;
    uint64_t in = offset & (CHUNK_SIZE - 1);
    uint64_t n = CHUNK_SIZE - in < len ? CHUNK_SIZE - in : len;
    unsigned char **table = m->tables[ci >> TABLE_SHIFT];
    if (table && table[ci & (TABLE_SLOTS - 1)]) {
      unsigned char **slot = &table[ci & (TABLE_SLOTS - 1)];
      if (n == CHUNK_SIZE) {
        free (*slot);
        *slot = NULL;
      }
      else
        memset (*slot + in, 0, n);
    }
    offset += n;
    len -= n;
  }
  pthread_rwlock_unlock (&m->lock);
  return 0;
}

static int
memory_trim (void *state, uint64_t len, uint64_t offset)
{
  return memory_zero (state, len, offset, true);
}

/* Every chunk of the range a hole (a read racing a write that allocates
 * one is served as if it came first).
 */
static bool
memory_reads_zero (void *state, uint64_t len, uint64_t offset)
{
  struct memory *m = state;
  bool hole = true;
  if (len == 0)
    return true;
  pthread_rwlock_rdlock (&m->lock);
  for (uint64_t ci = offset >> CHUNK_SHIFT,
                last = (offset + len - 1) >> CHUNK_SHIFT;
       hole && ci <= last; ci++)
    hole = chunk_get (m, ci, false) == NULL;
  pthread_rwlock_unlock (&m->lock);
  return hole;
}

static int
memory_extents (void *state, uint64_t offset, uint64_t len,
                blkemu_extent_cb cb, void *opaque)
{
  struct memory *m = state;
  uint64_t end = offset + len;
  pthread_rwlock_rdlock (&m->lock);
  while (offset < end) {
    bool hole = chunk_get (m, offset >> CHUNK_SHIFT, false) == NULL;
    uint64_t run_start = offset;
    /* Extend the run while chunks keep the same state. */
    do {
      offset = ((offset >> CHUNK_SHIFT) + 1) << CHUNK_SHIFT;
    } while (offset < end &&
             (chunk_get (m, offset >> CHUNK_SHIFT, false) == NULL) == hole);
    if (offset > end)
      offset = end;
    if (cb (opaque, run_start, offset - run_start, hole) == -1)
      break;
  }
  pthread_rwlock_unlock (&m->lock);
  return 0;
}

const struct backend_ops backend_memory_ops = {
  .name = "memory",
  .persistent = false,
  .can_trim = true,
  .can_zero = true,
  .can_extents = true,
  .open = memory_open,
  .close = memory_close,
  .pread = memory_pread,
  .reads_zero = memory_reads_zero,
  .read_to = memory_read_to,
  .pwrite = memory_pwrite,
  .write_from = memory_write_from,
  .flush = memory_flush,
  .trim = memory_trim,
  .zero = memory_zero,
  .extents = memory_extents,
};
