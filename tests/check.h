/* The standalone C tests' one assertion: count and print a failure,
 * carry on.  Each test's main() reports `failures` and exits 1 if any.
 */
#ifndef BLKEMU_TEST_CHECK_H
#define BLKEMU_TEST_CHECK_H

#include <stdio.h>

static int failures;

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
