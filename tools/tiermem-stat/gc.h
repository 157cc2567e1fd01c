/* gc.h — removing what processes killed outright left in /dev/shm: their stats regions,
 * and their entries in the shared ledger. */
#ifndef TM_STATS_GC_H
#define TM_STATS_GC_H

#include <sys/types.h>

/* Removes every <dir>/tiermem.<pid> that is a stats region of this user (any user's for
 * root) whose process is gone, printing one line per region, and frees the entries of gone
 * processes in the ledger at `ledger_path` (NULL: this user's), under whose lock each
 * removal is checked again (ledger_lock.h). Returns how many regions went. */
int tm_stats_gc(const char *dir, const char *ledger_path);

/* The pid in a name "tiermem.<pid>", or 0. */
pid_t tm_stats_pid_of_name(const char *name);

#endif /* TM_STATS_GC_H */
