/* The I/O worker: one thread per disk that runs the data transfers of a
 * backend whose calls block (file: pread, pwrite, fsync), in the order
 * they were queued, so that blkemu_submit returns at once and the
 * frontend's queue thread never waits on the page cache or a disk.  It
 * knows nothing of disks: a job is a link and a function embedded in the
 * caller's request.
 */
#ifndef BLKEMU_IOWORK_H
#define BLKEMU_IOWORK_H

#include <pthread.h>
#include <stdbool.h>

struct iowork_job {
  struct iowork_job *next;
  void (*run) (struct iowork_job *job);
};

struct iowork {
  pthread_mutex_t lock;
  pthread_cond_t more; /* a job was queued, or stop */
  pthread_cond_t idle; /* the queue ran empty */
  struct iowork_job *head, *tail;
  bool busy; /* a job is running */
  bool started, stopping;
  pthread_t thread;
};

void iowork_init (struct iowork *w);
/* Queue JOB; the thread starts with the first.  Returns 0, or an errno
 * without queueing (the thread could not start, or the worker stopped).
 */
int iowork_add (struct iowork *w, struct iowork_job *job);
/* No job queued or running: a transfer done now by the caller cannot
 * overtake an earlier one.
 */
bool iowork_idle (struct iowork *w);
/* Wait until every job queued so far has run. */
void iowork_drain (struct iowork *w);
/* Run what is queued, end the thread, free nothing (jobs are the
 * caller's).
 */
void iowork_destroy (struct iowork *w);

#endif
