/* The standalone C tests' one assertion: count and print a failure,
 * carry on.  Each test's main() reports `failures` and exits 1 if any.
 * The count is one for the test and its helpers (helpers.c defines it).
 */
#ifndef BLKEMU_TEST_CHECK_H
#define BLKEMU_TEST_CHECK_H

#include <stdio.h>

extern int test_failures;
#define failures test_failures

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      failures++;                                                             \
      printf ("FAIL %s:%d: ", __FILE__, __LINE__);                            \
      printf (__VA_ARGS__);                                                   \
      printf ("\n");                                                          \
    }                                                                         \
  } while (0)

#endif
