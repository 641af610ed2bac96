/* A page-mapped flash translation layer: what model=ssd's
 * over-provisioning= turns on.  Logical pages map to physical ones in
 * erase blocks; a write programs the next free page of the open block
 * and invalidates the old copy; when free blocks run short, greedy
 * garbage collection takes the closed block with the fewest valid pages,
 * relocates them (a read and a program each) and erases it.  A trim
 * unmaps.  Pure bookkeeping: model_ssd.c turns the work it reports into
 * die time.  Under the disk lock, as every model.
 */
#ifndef BLKEMU_FTL_H
#define BLKEMU_FTL_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* At most this many logical pages (a 64 GiB disk of 4K pages). */
#define FTL_MAX_PAGES (1u << 24)

struct ftl {
  uint32_t pages;      /* logical pages */
  uint32_t ppb;        /* pages per erase block */
  uint32_t blocks;     /* physical blocks */
  uint32_t *map;       /* logical -> physical page (FTL_NONE: unmapped) */
  uint32_t *owner;     /* physical -> logical page (FTL_NONE: free/stale) */
  uint32_t *valid;     /* valid pages in each block */
  uint32_t *erases;    /* erase count of each block */
  uint32_t *free_list; /* free blocks, a stack */
  uint32_t nfree;
  uint32_t mapped;                /* logical pages holding data */
  uint32_t host_block, host_next; /* the open block for host writes */
  uint32_t gc_block, gc_next;     /* and for relocations */
  /* Counters since creation (a power cycle keeps the flash). */
  uint64_t host_pages, gc_pages, erase_total, gc_runs;
};

#define FTL_NONE UINT32_MAX

/* The work one request cost the flash. */
struct ftl_work {
  uint64_t programs;  /* pages programmed for the host */
  uint64_t relocated; /* valid pages GC moved (a read and a program) */
  uint64_t erases;    /* blocks erased */
};

/* The FTL for CFG (model=ssd, over-provisioning > 0), preconditioned as
 * precondition= says; NULL on ENOMEM.
 */
struct ftl *ftl_create (const struct blkemu_config *cfg);
void ftl_destroy (struct ftl *f);
/* A write (or write-zeroes) of LEN bytes at OFFSET: every flash page it
 * touches is programmed (a partial page read-modify-written).
 */
void ftl_write (struct ftl *f, uint64_t offset, uint64_t len,
                uint64_t page_size, struct ftl_work *w);
/* A trim: the whole flash pages inside it are unmapped. */
void ftl_trim (struct ftl *f, uint64_t offset, uint64_t len,
               uint64_t page_size);
/* Every logical page written once in order (sequential), or that and
 * then random overwrites of twice the capacity (random: the steady
 * state of uniform random writes, as MQSim preconditions).  SEED: the
 * random order.  The counters start again from 0 after it.
 */
void ftl_precondition (struct ftl *f, bool random, uint64_t seed);
/* Erase counts over the blocks. */
void ftl_erase_stats (const struct ftl *f, uint32_t *min, double *mean,
                      uint32_t *max);

#endif
