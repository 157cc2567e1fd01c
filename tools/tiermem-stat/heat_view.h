/* heat_view.h — the heat section of a stats region (version 2 and later), as tiermem-stat shows it:
 * per allocation and per chunk its heat as of now, decayed reads and writes, and a class
 * by rank within the process (policy/heat.h). */
#ifndef TM_STAT_HEAT_VIEW_H
#define TM_STAT_HEAT_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/heat.h"
#include "preload/region/stats_layout.h"

typedef struct tm_heat_view {
    uint32_t sources;           /* enum tm_stats_heat_sources */
    uint32_t chunk_count;       /* 0: no heat for this allocation */
    double heat;                /* mean heat of its chunks */
    double reads, writes;       /* decayed bytes, summed over its chunks */
    tm_heat_class cls;          /* by rank among the allocations */
    double *chunk_heat;         /* [chunk_count] */
    double *chunk_reads;        /* [chunk_count] */
    double *chunk_writes;       /* [chunk_count] */
    tm_heat_class *chunk_class; /* [chunk_count], by rank among every chunk of the process */
} tm_heat_view;

/* Copies the heat of records_of[i] (found at region slot slots[i]) from the mapped region,
 * evaluated at CLOCK_MONOTONIC now, and ranks it. Returns the views ([count]), or NULL
 * with `why` set. A region without heat chunks gives views with no chunks. */
tm_heat_view *tm_heat_view_read(const void *map, uint64_t size, const tm_stats_header *h, const uint32_t *slots,
                                const tm_stats_record *records_of, size_t count, char *why, size_t why_len);
void tm_heat_view_free(tm_heat_view *views, size_t count);

/* The indices of the views, hottest first. */
void tm_heat_view_order(const tm_heat_view *views, size_t count, size_t *order);

/* "launch+usdt" and the like; "-" for none. */
const char *tm_heat_sources_name(uint32_t sources, char *buf, size_t len);

/* The JSON fields of one allocation: ,"heat":..,"reads":..,"writes":..,"class":..,"chunk_heat":[...] */
void tm_heat_view_json(FILE *out, const tm_heat_view *view);

#endif /* TM_STAT_HEAT_VIEW_H */
