/* stats_read.h — reading a stats region (preload/region/stats_layout.h) into a consistent copy.
 *
 * The region belongs to another process and is trusted for nothing. It is read with
 * pread into a bounded private copy (a region truncated or grown meanwhile cannot fault
 * the reader), validated once by tm_stats_parse, and only the copy is used afterwards:
 * every count is bounded, every offset lies inside the copy, every text field is
 * NUL-terminated and holds printable ASCII without quotes or backslashes. */
#ifndef TM_STATS_READ_H
#define TM_STATS_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "preload/region/stats_layout.h"
#include "tools/tiermem-stat/heat_view.h"

/* Bounds a reader accepts; a region claiming more is refused. */
#define TM_STATS_MAX_CALLS   4096
#define TM_STATS_MAX_RECORDS (1u << 18)               /* 16 times the writer's */
#define TM_STATS_MAX_HEAT_CHUNKS ((uint64_t)1 << 20)   /* 4 times the writer's: 2 TiB of chunks */

typedef struct tm_stats_snapshot {
    tm_stats_header header;
    tm_stats_call *calls;       /* [header.call_count] */
    tm_stats_record *records;   /* the live records, [record_count] */
    size_t record_count;
    tm_heat_view *heat;         /* [record_count], the heat of each record */
    size_t records_unsettled;   /* records left out: being rewritten all along the read */
} tm_stats_snapshot;

/* The default region of a process: /dev/shm/tiermem-<uid>/tiermem.<pid>, uid being the
 * effective uid it runs as (this process's when it is gone). */
void tm_stats_default_path(pid_t pid, char *buf, size_t len);

/* pread (or, with `write`, pwrite) of exactly `len` bytes at `offset`, EINTR retried:
 * false on a short transfer or an error. */
bool tm_stats_transfer(int fd, void *buf, size_t len, uint64_t offset, bool write);

/* The effective uid process `pid` runs as, or -1 when it is gone. */
long tm_stats_uid_of_pid(pid_t pid);

/* Copies the region at `path` (a regular file, not followed through a symlink; one in a
 * region directory /dev/shm/tiermem-<uid>/ only when that directory is <uid>'s own 0700 one
 * and the file <uid>'s). Returns 0, or -1 with a reason in `why` (no such file, not a
 * tiermem stats region, a version this reader does not know...). */
int tm_stats_read(const char *path, tm_stats_snapshot *snapshot, char *why, size_t why_len);

/* The same for a region already open as `fd` (which stays open), named `path` in reasons. */
int tm_stats_read_fd(int fd, const char *path, tm_stats_snapshot *snapshot, char *why, size_t why_len);

/* The same for the default region of process `pid`: its directory must be the 0700 one of
 * the user the process runs as, and the file a regular one of that user; anything else
 * (planted, squatted, a symlink) is refused with the reason. */
int tm_stats_read_pid(pid_t pid, tm_stats_snapshot *snapshot, char *why, size_t why_len);

/* Validates `size` bytes holding a copy of a region and fills `snapshot` from them (the
 * records whose seq is even and that are in use), as a file is read. Returns 0, or -1
 * with a reason. */
int tm_stats_parse(const void *bytes, size_t size, tm_stats_snapshot *snapshot, char *why, size_t why_len);

void tm_stats_snapshot_free(tm_stats_snapshot *snapshot);

/* The calls counted for `symbol`, or 0. */
unsigned long long tm_stats_calls_of(const tm_stats_snapshot *snapshot, const char *symbol);

#endif /* TM_STATS_READ_H */
