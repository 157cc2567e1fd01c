/* list.h — every live process under libtiermem.so: their regions read at once (for the
 * listing, the JSON of all processes and the node exporter) and the one-line-each table
 * (tiermem-stat with no argument, like nvidia-smi's process table). */
#ifndef TM_STATS_LIST_H
#define TM_STATS_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tools/tiermem-stat/stats_read.h"

/* At most this many processes are read in one pass (the lowest pids first). */
#define TM_STATS_LIVE_MAX 1024

typedef struct tm_stats_live {
    pid_t pid;
    char command[64];               /* /proc/PID/comm, printable ASCII ("" when unreadable) */
    char path[64];                  /* its region */
    tm_stats_snapshot snapshot;
} tm_stats_live;

/* Reads the default region (tm_stats_read_pid) of every live process that has one this
 * user may read, by pid. Returns how many (*live: a malloc'd array, NULL when none), or
 * -1 when /proc cannot be read (the reason is printed). */
int tm_stats_read_live(tm_stats_live **live);
void tm_stats_live_free(tm_stats_live *live, int count);

/* The command name of process `pid` (its comm), control characters as '?'; "" when gone. */
void tm_stats_command(pid_t pid, char *buf, size_t len);

/* Prints a header and one line per live process (or a line saying there is none).
 * Returns how many were listed, -1 when /proc cannot be read. */
int tm_stats_list(void);

/* Prints the JSON array of every live process's object (stat_json.h): `[]` when none.
 * Returns 0, or -1 when /proc cannot be read or memory ran out. */
int tm_stats_list_json(bool by_heat);

#endif /* TM_STATS_LIST_H */
