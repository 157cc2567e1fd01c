/* stats_read.h — reading a stats region (preload/stats_layout.h) into a consistent copy. */
#ifndef TM_STATS_READ_H
#define TM_STATS_READ_H

#include <stddef.h>
#include <sys/types.h>

#include "preload/stats_layout.h"
#include "tools/tiermem-stat/heat_view.h"

typedef struct tm_stats_snapshot {
    tm_stats_header header;
    tm_stats_call *calls;       /* [header.call_count] */
    tm_stats_record *records;   /* the live records, [record_count] */
    size_t record_count;
    tm_heat_view *heat;         /* [record_count], the heat of each record */
} tm_stats_snapshot;

/* The default region of a process: /dev/shm/tiermem.<pid>. */
void tm_stats_default_path(pid_t pid, char *buf, size_t len);

/* Copies the region at `path`. Returns 0, or -1 with a reason in `why` (no such file,
 * not a tiermem stats region, a version this reader does not know...). */
int tm_stats_read(const char *path, tm_stats_snapshot *snapshot, char *why, size_t why_len);

void tm_stats_snapshot_free(tm_stats_snapshot *snapshot);

/* The calls counted for `symbol`, or 0. */
unsigned long long tm_stats_calls_of(const tm_stats_snapshot *snapshot, const char *symbol);

#endif /* TM_STATS_READ_H */
