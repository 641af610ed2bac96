/* The control command interpreter and the service thread around it.
 * Internal to core/; the protocol is in control.c's opening comment.
 */
#ifndef BLKEMU_CONTROL_H
#define BLKEMU_CONTROL_H

#include "strbuf.h"

struct blkemu_disk;

/* Run one command LINE (modified) and append the reply to SB.  Safe from
 * any thread; the service thread and the fuzz harness call it.
 */
void control_run_command (struct blkemu_disk *disk, char *line,
                          struct strbuf *sb);

/* At open: check stats=, bind control= (before a frontend forks).
 * Returns 0 or -1 with ERR filled.
 */
int service_prepare (struct blkemu_disk *disk, char *err);
/* Start the service thread (after the fork).  0 or -1 with ERR. */
int service_start (struct blkemu_disk *disk, char *err);
/* The process exits without service_stop: remove the socket unless a
 * forked process still holds it.  Frees nothing.
 */
void service_abandon (struct blkemu_disk *disk);
/* Stop the thread, close every connection, remove our socket. */
void service_stop (struct blkemu_disk *disk);

#endif
