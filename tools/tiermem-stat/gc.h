/* gc.h — removing the stats regions that processes killed outright left in /dev/shm. */
#ifndef TM_STATS_GC_H
#define TM_STATS_GC_H

#include <sys/types.h>

/* Removes every /dev/shm/tiermem.<pid> that is a stats region of this user (any user's for
 * root) whose process is gone, printing one line per region. Returns how many went. */
int tm_stats_gc(const char *dir);

/* The pid in a name "tiermem.<pid>", or 0. */
pid_t tm_stats_pid_of_name(const char *name);

#endif /* TM_STATS_GC_H */
