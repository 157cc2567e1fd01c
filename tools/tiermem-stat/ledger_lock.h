/* ledger_lock.h — the ledger's lock, as tiermem-stat --gc takes it. A process joins the
 * ledger under this lock before it creates its stats region (device.c), so a removal
 * checked again under the lock cannot take the region of a process that has just reused a
 * dead one's pid. Under the lock --gc also frees the entries of processes that are gone.
 * The file is opened, never mapped, and read into a private copy each time the lock is
 * taken (preload/region/ledger_file.h). */
#ifndef TM_STATS_LEDGER_LOCK_H
#define TM_STATS_LEDGER_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "preload/region/ledger_layout.h"

typedef struct tm_ledger_held {
    int fd;
    bool stuck;          /* a take failed: later ones fail at once, not after another wait */
    tm_ledger_file copy; /* the file as read under the lock */
} tm_ledger_held;

/* Opens the ledger at `path` (NULL: this user's, /dev/shm/tiermem-ledger.u<uid>): a regular
 * file of this user (any user's for root), never through a symlink, of this layout. NULL
 * with a reason in `why` (`*missing` when there is none). */
tm_ledger_held *tm_ledger_map(const char *path, bool *missing, char *why, size_t why_len);
void tm_ledger_unmap(tm_ledger_held *ledger);

/* The lock, waited for a bounded time, and the file read again under it; false (with a
 * line on standard error, the first time) when it is held too long or the file is no
 * longer a ledger. */
bool tm_ledger_take(tm_ledger_held *ledger);
void tm_ledger_give(tm_ledger_held *ledger);

/* Under the lock: whether a live process of `pid` has an entry. */
bool tm_ledger_holds(const tm_ledger_held *ledger, pid_t pid);

/* Under the lock: frees the entries of processes that are gone (or whose pid now names a
 * later process), printing one line for each. Returns how many. */
int tm_ledger_reclaim(tm_ledger_held *ledger, const char *path);

#endif /* TM_STATS_LEDGER_LOCK_H */
