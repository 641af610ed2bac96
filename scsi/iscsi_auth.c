/* --iscsi-auth FILE: the iSCSI targets' access list and CHAP secrets,
 * kept out of the command line (and so out of ps).  One directive per
 * line, '#' starts a comment:
 *
 *   initiator IQN          let IQN in (repeatable); none: any initiator
 *   chap USER SECRET       the initiator must prove SECRET (one-way CHAP)
 *   mutual-chap USER SECRET   and the target proves its own (mutual)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scsi.h"

/* An iSCSI name as RFC 3720 writes them: iqn.YYYY-MM.reversed.domain...
 * or eui.<16 hex digits>; LIO refuses an ACL for anything else.
 */
static bool
iscsi_name_ok (const char *s)
{
  if (!strncmp (s, "eui.", 4))
    return strlen (s) == 20 && strspn (s + 4, "0123456789abcdefABCDEF") == 16;
  return !strncmp (s, "iqn.", 4) && strlen (s) > 12 && strlen (s) < 224 &&
         strspn (s, "abcdefghijklmnopqrstuvwxyz0123456789.-:") == strlen (s);
}

static int
bad (const char *file, unsigned line, const char *what)
{
  fprintf (stderr, "blkemu-scsi: --iscsi-auth %s: line %u: %s\n", file, line,
           what);
  return -1;
}

/* "chap USER SECRET": USER and SECRET into U and P. */
static int
take_chap (const char *file, unsigned line, const char *kw, char *u, char *p,
           char *const *words, int nwords)
{
  char why[160];
  if (nwords != 3) {
    snprintf (why, sizeof why, "%s takes USER SECRET", kw);
    return bad (file, line, why);
  }
  if (strlen (words[1]) >= AUTH_MAX || strlen (words[2]) >= AUTH_MAX) {
    snprintf (why, sizeof why,
              "%s: the user and the secret are at most %d characters", kw,
              AUTH_MAX - 1);
    return bad (file, line, why);
  }
  if (u[0]) {
    snprintf (why, sizeof why, "a second %s line (one pair each)", kw);
    return bad (file, line, why);
  }
  strcpy (u, words[1]);
  strcpy (p, words[2]);
  return 0;
}

int
iscsi_auth_load (const char *file, struct iscsi_auth *a)
{
  memset (a, 0, sizeof *a);
  FILE *f = fopen (file, "re");
  if (!f) {
    fprintf (stderr, "blkemu-scsi: --iscsi-auth %s: %s\n", file,
             strerror (errno));
    return -1;
  }
  /* Lines are read whole (getline), so a long comment is one comment:
   * a fixed buffer would parse its tail as a directive of its own.
   */
  char *buf = NULL;
  size_t cap = 0;
  unsigned line = 0, taken = 0;
  int r = 0;
  while (r == 0 && getline (&buf, &cap, f) != -1) {
    line++;
    char *hash = strchr (buf, '#');
    if (hash)
      *hash = 0;
    char *words[4], *save = NULL;
    int n = 0;
    for (char *w = strtok_r (buf, " \t\r\n", &save); w;
         w = strtok_r (NULL, " \t\r\n", &save))
      words[n < 4 ? n++ : 3] = w;
    if (n == 0)
      continue;
    taken++;
    if (!strcmp (words[0], "initiator")) {
      if (n != 2 || !iscsi_name_ok (words[1])) {
        char why[400];
        snprintf (why, sizeof why,
                  "initiator %.256s: one iSCSI name (iqn.YYYY-MM.domain:... "
                  "in lower case, or eui. and 16 hex digits)",
                  n > 1 ? words[1] : "(none)");
        r = bad (file, line, why);
      }
      else if (a->ninitiators == MAX_INITIATORS)
        r = bad (file, line, "more than 16 initiators");
      else
        strcpy (a->initiators[a->ninitiators++], words[1]);
    }
    else if (!strcmp (words[0], "chap"))
      r = take_chap (file, line, "chap", a->user, a->password, words, n);
    else if (!strcmp (words[0], "mutual-chap"))
      r = take_chap (file, line, "mutual-chap", a->mutual_user,
                     a->mutual_password, words, n);
    else {
      char why[400];
      snprintf (why, sizeof why,
                "%.256s: unknown directive (initiator, chap or mutual-chap)",
                words[0]);
      r = bad (file, line, why);
    }
  }
  free (buf);
  fclose (f);
  if (r == 0 && a->mutual_user[0] && !a->user[0])
    r = bad (file, line,
             "mutual-chap needs a chap line (the initiator "
             "proves itself first)");
  if (r == 0 && taken == 0)
    r = bad (file, line, "no directive: say who may log in (initiator, chap)");
  return r;
}
