/* ledger_view.h — tiermem-stat --ledger: the shared ledger of lower-tier bytes. */
#ifndef TM_STATS_LEDGER_VIEW_H
#define TM_STATS_LEDGER_VIEW_H

/* Prints the ledger at `path` (NULL: this user's, /dev/shm/tiermem-ledger.u<uid>): per node
 * the bytes every live process holds and the smallest limit among them, then per process
 * its bytes per node and whether it still runs. Returns the exit status (2: unreadable). */
int tm_ledger_print(const char *path);

#endif /* TM_STATS_LEDGER_VIEW_H */
