/* region_write.h — tiermem-heat writing the heat it measures into the stats region of a
 * target under libtiermem.so, so the process (and tiermem-stat) get eBPF-grade heat from
 * a collector beside it. The process leaves heat to the collector while it writes, and
 * ranks chunks for the heat policy by it. */
#ifndef TM_HEAT_REGION_WRITE_H
#define TM_HEAT_REGION_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/tiermem-heat/chunk_heat.h"

typedef struct tm_region_writer tm_region_writer;

/* Maps the region at `path` for writing after checking it is a stats region of this version.
 * NULL with a one-line reason otherwise. */
tm_region_writer *tm_region_writer_open(const char *path, int collector_pid, char *why, size_t why_len);

/* The region's heat interval (its TIERMEM_HEAT_HALFLIFE / 8). */
uint64_t tm_region_writer_tick_ns(const tm_region_writer *writer);

/* Copies the heat of every live allocation's chunks from `table`. Returns the chunks
 * written. */
size_t tm_region_writer_publish(tm_region_writer *writer, tm_chunk_table *table, uint32_t source);

/* Hands heat back to the process and unmaps. */
void tm_region_writer_close(tm_region_writer *writer);

#endif /* TM_HEAT_REGION_WRITE_H */
