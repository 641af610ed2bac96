/* What the command interpreter (control.c) and the socket hub
 * (control_hub.c) share.  Internal to those two.
 */
#ifndef BLKEMU_CONTROL_INTERNAL_H
#define BLKEMU_CONTROL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

struct blkemu_disk;
struct service;

/* A command whose reply comes later, from its completion: the service
 * thread hands one to the command, and it comes back through the
 * service's done pipe, to the client that sent it (if it is still the
 * one in its slot: TICKET).
 */
struct deferral {
  /* The hub's: where the completion goes (control_hub.c's function, so
   * that the commands call no function of the hub's).
   */
  void (*done) (void *later, int result);
  struct service *sv;
  int slot;
  uint64_t ticket;
  bool used; /* the command took it */
  int result;
  char what[80]; /* for the error message */
};

/* Run one command LINE (modified), appending the reply to SB.  LATER
 * (NULL from control_run_command): the hub's slot for a reply that comes
 * when the command completes; a command that takes it sets LATER->used.
 */
void control_run (struct blkemu_disk *disk, char *line, struct strbuf *sb,
                  struct deferral *later);

#endif
