/* The flash translation layer's bookkeeping: see ftl.h. */
#include "ftl.h"

#include <stdlib.h>
#include <string.h>

/* Free blocks GC keeps in hand: it runs when a host block is needed and
 * fewer than this many are free, so a relocation always finds one.
 */
#define FTL_RESERVE 2
/* valid[] of a free block. */
#define FTL_FREE_BLOCK UINT32_MAX

static uint32_t
pop_free (struct ftl *f)
{
  return f->nfree ? f->free_list[--f->nfree] : FTL_NONE;
}

static void
invalidate (struct ftl *f, uint32_t lpage)
{
  uint32_t p = f->map[lpage];
  if (p == FTL_NONE)
    return;
  f->valid[p / f->ppb]--;
  f->owner[p] = FTL_NONE;
  f->map[lpage] = FTL_NONE;
}

/* Put LPAGE at the next page of *BLOCK (taking a free block when full). */
static void
place (struct ftl *f, uint32_t lpage, uint32_t *block, uint32_t *next)
{
  if (*next == f->ppb) {
    *block = pop_free (f);
    *next = 0;
    f->valid[*block] = 0;
  }
  uint32_t p = *block * f->ppb + (*next)++;
  f->map[lpage] = p;
  f->owner[p] = lpage;
  f->valid[*block]++;
}

/* Greedy: the closed block with the fewest valid pages, its pages moved
 * to the GC block, then erased.  False when no block would free space.
 */
static bool
collect_one (struct ftl *f, struct ftl_work *w)
{
  uint32_t victim = FTL_NONE, least = f->ppb;
  for (uint32_t b = 0; b < f->blocks; b++)
    if (f->valid[b] != FTL_FREE_BLOCK && b != f->host_block &&
        b != f->gc_block && f->valid[b] < least) {
      least = f->valid[b];
      victim = b;
    }
  if (victim == FTL_NONE)
    return false;
  for (uint32_t i = 0; i < f->ppb && f->valid[victim]; i++) {
    uint32_t p = victim * f->ppb + i, l = f->owner[p];
    if (l == FTL_NONE)
      continue;
    invalidate (f, l);
    place (f, l, &f->gc_block, &f->gc_next);
    f->gc_pages++;
    w->relocated++;
  }
  f->valid[victim] = FTL_FREE_BLOCK;
  f->erases[victim]++;
  f->erase_total++;
  f->free_list[f->nfree++] = victim;
  f->gc_runs++;
  w->erases++;
  return true;
}

static void
program (struct ftl *f, uint32_t lpage, struct ftl_work *w)
{
  f->mapped += f->map[lpage] == FTL_NONE;
  invalidate (f, lpage);
  if (f->host_next == f->ppb)
    while (f->nfree < FTL_RESERVE && collect_one (f, w))
      ;
  place (f, lpage, &f->host_block, &f->host_next);
  f->host_pages++;
  w->programs++;
}

struct ftl *
ftl_create (const struct blkemu_config *cfg)
{
  uint64_t fp = cfg->num[K_FLASH_PAGE];
  uint64_t pages = (cfg->num[K_SIZE] + fp - 1) / fp;
  uint64_t ppb = cfg->num[K_FLASH_BLOCK] / fp;
  double op = (double) cfg->num[K_OVER_PROVISIONING] / BLKEMU_PROB_ONE;
  uint64_t blocks =
    (uint64_t) ((double) pages * (1 + op) / (double) ppb + 0.5);
  /* The two open blocks and the reserve come on top of the capacity. */
  uint64_t least = (pages + ppb - 1) / ppb + FTL_RESERVE + 2;
  if (blocks < least)
    blocks = least;
  struct ftl *f = calloc (1, sizeof *f);
  if (!f)
    return NULL;
  f->pages = (uint32_t) pages;
  f->ppb = (uint32_t) ppb;
  f->blocks = (uint32_t) blocks;
  f->map = malloc (pages * sizeof *f->map);
  f->owner = malloc (blocks * ppb * sizeof *f->owner);
  f->valid = malloc (blocks * sizeof *f->valid);
  f->erases = calloc (blocks, sizeof *f->erases);
  f->free_list = malloc (blocks * sizeof *f->free_list);
  if (!f->map || !f->owner || !f->valid || !f->erases || !f->free_list) {
    ftl_destroy (f);
    return NULL;
  }
  memset (f->map, 0xff, pages * sizeof *f->map);
  memset (f->owner, 0xff, blocks * ppb * sizeof *f->owner);
  for (uint32_t b = 0; b < f->blocks; b++) {
    f->valid[b] = FTL_FREE_BLOCK;
    f->free_list[f->nfree++] = f->blocks - 1 - b; /* block 0 first */
  }
  f->host_next = f->gc_next = f->ppb; /* both take a block when used */
  f->host_block = f->gc_block = FTL_NONE;
  switch (cfg->num[K_PRECONDITION]) {
  case PRECONDITION_SEQUENTIAL: ftl_precondition (f, false, 0); break;
  case PRECONDITION_RANDOM:
    ftl_precondition (f, true, cfg->num[K_SEED]);
    break;
  default: break;
  }
  return f;
}

void
ftl_destroy (struct ftl *f)
{
  if (!f)
    return;
  free (f->map);
  free (f->owner);
  free (f->valid);
  free (f->erases);
  free (f->free_list);
  free (f);
}

void
ftl_write (struct ftl *f, uint64_t offset, uint64_t len, uint64_t page_size,
           struct ftl_work *w)
{
  if (len == 0)
    return;
  uint64_t first = offset / page_size, last = (offset + len - 1) / page_size;
  for (uint64_t l = first; l <= last && l < f->pages; l++)
    program (f, (uint32_t) l, w);
}

void
ftl_trim (struct ftl *f, uint64_t offset, uint64_t len, uint64_t page_size)
{
  uint64_t first = (offset + page_size - 1) / page_size;
  uint64_t end = (offset + len) / page_size;
  for (uint64_t l = first; l < end && l < f->pages; l++) {
    f->mapped -= f->map[l] != FTL_NONE;
    invalidate (f, (uint32_t) l);
  }
}

void
ftl_precondition (struct ftl *f, bool random, uint64_t seed)
{
  struct ftl_work w = { 0 };
  for (uint32_t l = 0; l < f->pages; l++)
    program (f, l, &w);
  /* xorshift64*: the order only has to be uniform and repeatable. */
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; random && i < 2ull * f->pages; i++) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    program (f, (uint32_t) ((x * 0x2545F4914F6CDD1Dull >> 32) % f->pages), &w);
  }
  f->host_pages = f->gc_pages = f->erase_total = f->gc_runs = 0;
}

void
ftl_erase_stats (const struct ftl *f, uint32_t *min, double *mean,
                 uint32_t *max)
{
  uint64_t sum = 0;
  *min = UINT32_MAX;
  *max = 0;
  for (uint32_t b = 0; b < f->blocks; b++) {
    sum += f->erases[b];
    if (f->erases[b] < *min)
      *min = f->erases[b];
    if (f->erases[b] > *max)
      *max = f->erases[b];
  }
  *mean = (double) sum / f->blocks;
}
