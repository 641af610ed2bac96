/* What the C tests share beyond CHECK (check.h): a started disk from a
 * spec, one figure of its stats by JSON path, and a clean skip.
 */
#ifndef BLKEMU_TEST_HELPERS_H
#define BLKEMU_TEST_HELPERS_H

#include <stdbool.h>

#include "blkemu/blkemu.h"

/* The disk of SPEC ("key=value,..."), opened (as frontend FE, or the
 * core alone with NULL) and started; NULL after a CHECK failure that
 * names the spec and the core's reason.
 */
struct blkemu_disk *test_disk (const char *spec,
                               const struct blkemu_frontend *fe);

/* The number at PATH ("ops.read.requests", "faults.lost_writes") in the
 * disk's stats JSON; NAN after a CHECK failure naming a path that is not
 * there or not a number.
 */
double test_stat (struct blkemu_disk *disk, const char *path);

/* A submitted request's completion: blkemu_submit (..., test_done, &rec)
 * fills REC from the completion thread; test_wait waits for it, at most
 * SECONDS, and returns its result (ETIMEDOUT if it never came).
 */
struct test_done {
  bool done;
  int result;
};
void test_done (void *cookie, int result);
int test_wait (struct test_done *rec, unsigned seconds);
/* A submit's answer R (blkemu_submit and the timeline forms) as a DONE
 * call: a request handed back complete goes to DONE here, so a test that
 * is not about the answer counts every completion one way.
 */
void test_answered (int r, blkemu_done_cb done, void *cookie);

/* Says why and exits 77: meson counts the test as skipped. */
_Noreturn void test_skip (const char *why);

#endif
