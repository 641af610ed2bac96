/* The I/O worker: see iowork.h. */
#include "iowork.h"

#include <errno.h>

static void *
worker (void *arg)
{
  struct iowork *w = arg;
  pthread_mutex_lock (&w->lock);
  for (;;) {
    while (!w->head && !w->stopping) {
      pthread_cond_broadcast (&w->idle);
      pthread_cond_wait (&w->more, &w->lock);
    }
    if (!w->head)
      break;
    struct iowork_job *job = w->head;
    w->head = job->next;
    if (!w->head)
      w->tail = NULL;
    w->busy = true;
    pthread_mutex_unlock (&w->lock);
    job->run (job); /* may free JOB */
    pthread_mutex_lock (&w->lock);
    w->busy = false;
  }
  pthread_cond_broadcast (&w->idle);
  pthread_mutex_unlock (&w->lock);
  return NULL;
}

void
iowork_init (struct iowork *w)
{
  *w = (struct iowork){ 0 };
  pthread_mutex_init (&w->lock, NULL);
  pthread_cond_init (&w->more, NULL);
  pthread_cond_init (&w->idle, NULL);
}

int
iowork_add (struct iowork *w, struct iowork_job *job)
{
  int r = 0;
  job->next = NULL;
  pthread_mutex_lock (&w->lock);
  if (w->stopping)
    r = ESHUTDOWN;
  else if (!w->started) {
    r = pthread_create (&w->thread, NULL, worker, w);
    w->started = r == 0;
  }
  if (r == 0) {
    if (w->tail)
      w->tail->next = job;
    else
      w->head = job;
    w->tail = job;
    pthread_cond_signal (&w->more);
  }
  pthread_mutex_unlock (&w->lock);
  return r;
}

bool
iowork_idle (struct iowork *w)
{
  pthread_mutex_lock (&w->lock);
  bool idle = !w->head && !w->busy;
  pthread_mutex_unlock (&w->lock);
  return idle;
}

void
iowork_drain (struct iowork *w)
{
  pthread_mutex_lock (&w->lock);
  while (w->started && (w->head || w->busy))
    pthread_cond_wait (&w->idle, &w->lock);
  pthread_mutex_unlock (&w->lock);
}

void
iowork_destroy (struct iowork *w)
{
  pthread_mutex_lock (&w->lock);
  w->stopping = true;
  pthread_cond_signal (&w->more);
  bool started = w->started;
  pthread_mutex_unlock (&w->lock);
  if (started)
    pthread_join (w->thread, NULL);
  pthread_cond_destroy (&w->idle);
  pthread_cond_destroy (&w->more);
  pthread_mutex_destroy (&w->lock);
}
