/* A value out of a JSON text by a path, as jq's simplest filters name
 * one: .key.key, .key["key"], .list[N].  For blkemu-ctl's `stats PATH`:
 * a script reads a counter without starting jq (~0.3 s a time in a TCG
 * guest).
 */
#ifndef BLKEMU_JSONPATH_H
#define BLKEMU_JSONPATH_H

#include <stdio.h>

/* 0 when PATH is of that form, else -1 and *WHY. */
int jsonpath_check (const char *path, const char **why);

/* Print the value at PATH in JSON to FP as `jq -r PATH` would: a string
 * without its quotes, a number in its shortest form, an object or array
 * as jq -c would (numbers in it as written), null when there is no such
 * member.  Returns 0, or -1 when PATH is not of that form or
 * JSON is malformed on the way (*WHY says which).
 */
int jsonpath_print (FILE *fp, const char *json, const char *path,
                    const char **why);

#endif
