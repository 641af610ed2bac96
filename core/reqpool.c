/* The requests of asynchronous submits: each timeline keeps a pool of
 * them (taken by its owner's thread, given back from any), a submit
 * without one mallocs its own.
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "pipeline.h"
#include "request.h"

/* A request for an asynchronous submit: from TL's pool when there is
 * one (the owner's thread takes, so only the owner pops), else malloc'ed.
 */
struct request *
request_alloc (struct blkemu_timeline *tl)
{
  if (!tl)
    return malloc (sizeof (struct request));
  struct request *req = tl->free_local;
  if (!req)
    req = __atomic_exchange_n (&tl->free_remote, NULL, __ATOMIC_ACQUIRE);
  if (req)
    tl->free_local = req->pool_next;
  else if (!(req = malloc (sizeof *req)))
    return NULL;
  __atomic_add_fetch (&tl->outstanding, 1, __ATOMIC_RELAXED);
  return req;
}

/* REQ back to its timeline's pool (from any thread), or freed. */
void
request_release (struct request *req)
{
  struct blkemu_timeline *tl = req->tl;
  if (!tl) {
    free (req);
    return;
  }
  if (pthread_equal (pthread_self (),
                     __atomic_load_n (&tl->owner, __ATOMIC_RELAXED))) {
    req->pool_next = tl->free_local;
    tl->free_local = req;
  }
  else {
    /* Pushed only, and taken whole by the owner: no ABA. */
    req->pool_next = __atomic_load_n (&tl->free_remote, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n (&tl->free_remote, &req->pool_next,
                                         req, true, __ATOMIC_RELEASE,
                                         __ATOMIC_RELAXED))
      ;
  }
  /* Last: blkemu_timeline_free waits for this to free the pool. */
  __atomic_sub_fetch (&tl->outstanding, 1, __ATOMIC_RELEASE);
}

void
pipeline_pool_free (struct blkemu_timeline *tl)
{
  assert (__atomic_load_n (&tl->outstanding, __ATOMIC_ACQUIRE) == 0);
  struct request *lists[2] = { tl->free_local, tl->free_remote };
  for (int i = 0; i < 2; i++)
    while (lists[i]) {
      struct request *next = lists[i]->pool_next;
      free (lists[i]);
      lists[i] = next;
    }
  tl->free_local = tl->free_remote = NULL;
}
