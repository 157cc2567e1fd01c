/* heat_view.h — the heat section of a stats region (version 2 and later), as tiermem-stat shows it:
 * per allocation and per chunk its heat as of now, decayed reads and writes, and a class
 * by rank within the process (policy/heat.h). The chunks are private copies
 * (stats_read.c); every value a view holds is finite, so JSON never sees nan or inf. */
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
    bool unsettled;             /* its heat record changed at every read: its heat is not
                                 * known in this view (not 0: shown as null, or "-") */
    double heat;                /* mean heat of its chunks */
    double reads, writes;       /* decayed bytes, summed over its chunks */
    tm_heat_class cls;          /* by rank among the allocations */
    double *chunk_heat;         /* [chunk_count] */
    double *chunk_reads;        /* [chunk_count] */
    double *chunk_writes;       /* [chunk_count] */
    tm_heat_class *chunk_class; /* [chunk_count], by rank among every chunk of the process */
} tm_heat_view;

/* The heat interval now is in, for a region whose interval is `tick_ns` (CLOCK_MONOTONIC). */
uint64_t tm_heat_view_tick(uint64_t tick_ns);

/* Fills `view` with the heat of `count` chunks (private copies, their fields already
 * bounded) of an allocation of `extent` bytes, evaluated at `tick`. Every value it keeps
 * is finite. False when memory ran out. */
bool tm_heat_view_fill(tm_heat_view *view, const tm_heat_chunk *chunks, uint32_t count, uint64_t tick,
                       uint64_t chunk_size, uint64_t extent);

/* Classes by rank: allocations among allocations, chunks among every chunk. False when
 * memory ran out. */
bool tm_heat_view_rank(tm_heat_view *views, size_t count);

void tm_heat_view_free(tm_heat_view *views, size_t count);

/* The indices of the views, hottest first. */
void tm_heat_view_order(const tm_heat_view *views, size_t count, size_t *order);

/* A malloc'd array of the `count` indices (at least one slot, so count 0 is no failure): in
 * order, or hottest first with `by_heat`. NULL when memory ran out. */
size_t *tm_heat_view_order_new(const tm_heat_view *views, size_t count, bool by_heat);

/* "launch+usdt" and the like; "-" for none. */
const char *tm_heat_sources_name(uint32_t sources, char *buf, size_t len);

/* The JSON fields of one allocation: ,"heat":..,"reads":..,"writes":..,"class":..,"chunk_heat":[...] */
void tm_heat_view_json(FILE *out, const tm_heat_view *view);

#endif /* TM_STAT_HEAT_VIEW_H */
