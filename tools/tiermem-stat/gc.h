/* gc.h — removing what processes killed outright left in /dev/shm: their stats regions
 * (in the directories of region_path.h), and their entries in the shared ledger. */
#ifndef TM_STATS_GC_H
#define TM_STATS_GC_H

#include <sys/types.h>

/* Removes every <root>/tiermem-<uid>/tiermem.<pid> that is a stats region of that user
 * whose process is gone (this user's directory only; every user's for root), printing one
 * line per region, and frees the entries of gone processes in the ledger at `ledger_path`
 * (NULL: this user's), under whose lock each removal is checked again (ledger_lock.h).
 * Returns how many regions went. */
int tm_stats_gc(const char *root, const char *ledger_path);

/* Calls `visit` for each region directory <root>/tiermem-<uid> this user may read (its own;
 * every user's for root) that passes region_path.h's checks, open as `dir_fd`; a directory
 * that fails them is named in one line on stderr and skipped. Returns how many. */
int tm_stats_each_dir(const char *root, void (*visit)(int dir_fd, const char *dir, uid_t uid, void *arg), void *arg);

/* The pid in a name "tiermem.<pid>", or 0. */
pid_t tm_stats_pid_of_name(const char *name);

#endif /* TM_STATS_GC_H */
