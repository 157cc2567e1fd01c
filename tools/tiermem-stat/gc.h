/* gc.h — removing the stats regions that processes killed outright left in /dev/shm. */
#ifndef TM_STATS_GC_H
#define TM_STATS_GC_H

/* Removes every /dev/shm/tiermem.<pid> that is a stats region of this user (any user's for
 * root) whose process is gone, printing one line per region. Returns how many went. */
int tm_stats_gc(const char *dir);

#endif /* TM_STATS_GC_H */
