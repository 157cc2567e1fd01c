/* region_write.h — tiermem-heat writing the heat it measures into the stats region of a
 * target under libtiermem.so (only with --feed), so the process (and tiermem-stat) get
 * eBPF-grade heat from a collector beside it. The process leaves heat to the collector
 * while it writes, and ranks chunks for the heat policy by it.
 *
 * The region belongs to another user and is trusted for nothing: it is never mapped. Its
 * layout is read once, validated and kept in a private copy; every write is a pwrite at
 * an offset computed from that copy, inside the sections it declares, after measuring
 * the file again (a region that shrank stops the writing with one line). The records and
 * heat records that say where a record's chunks are are read with pread at each publish,
 * and their spans checked against the copied capacity before anything is written. */
#ifndef TM_HEAT_REGION_WRITE_H
#define TM_HEAT_REGION_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/tiermem-heat/chunk_heat.h"

typedef struct tm_region_writer tm_region_writer;

/* Opens the region at `path` for writing (not through a symlink, a regular file owned by
 * `owner`, the target's uid) after checking it is a stats region of this version. NULL
 * with a one-line reason otherwise. */
tm_region_writer *tm_region_writer_open(const char *path, long owner, int collector_pid, char *why, size_t why_len);

/* True while the file at `path` is a region its process is still filling in (its magic,
 * written last, still 0): worth trying again an interval later. */
bool tm_region_being_made(const char *path);

/* The region's heat interval (its TIERMEM_HEAT_HALFLIFE / 8). */
uint64_t tm_region_writer_tick_ns(const tm_region_writer *writer);

/* Copies the heat of every live allocation's chunks from `table`. Returns the chunks
 * written; -1 when the region can no longer be written (the reason in `why`), after
 * which the caller closes it. */
long tm_region_writer_publish(tm_region_writer *writer, tm_chunk_table *table, uint32_t source, char *why,
                              size_t why_len);

/* Hands heat back to the process and closes the file. */
void tm_region_writer_close(tm_region_writer *writer);

#endif /* TM_HEAT_REGION_WRITE_H */
