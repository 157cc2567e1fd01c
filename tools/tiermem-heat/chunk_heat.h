/* chunk_heat.h — tiermem-heat's view of the target: heat per chunk fed by the eBPF
 * collector, grouped into allocations (known from the target's stats region, or inferred
 * from runs of touched chunks), ranked into classes. */
#ifndef TM_HEAT_CHUNK_HEAT_H
#define TM_HEAT_CHUNK_HEAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/heat.h"

typedef struct tm_chunk_table tm_chunk_table;

tm_chunk_table *tm_chunk_table_new(uint64_t halflife_ns);
void tm_chunk_table_free(tm_chunk_table *table);

/* New bytes of one 2 MiB chunk (address chunk-aligned) at CLOCK_MONOTONIC tick `tick`. */
void tm_chunk_table_add(tm_chunk_table *table, uint64_t address, uint64_t reads, uint64_t writes,
                        const char *kernel, uint64_t tick);
uint64_t tm_chunk_table_tick(const tm_chunk_table *table, uint64_t now_ns);

/* The heat state of the chunk at `address` (false when it was never touched). */
bool tm_chunk_table_get(tm_chunk_table *table, uint64_t address, tm_heat_chunk *out);

/* True while no chunk has been added (the half-life may still change). */
bool tm_chunk_table_empty(const tm_chunk_table *table);
void tm_chunk_table_set_halflife(tm_chunk_table *table, uint64_t halflife_ns);

/* Where an allocation's extent comes from. */
typedef enum tm_extent_from {
    TM_EXTENT_INFERRED,          /* a run of touched chunks */
    TM_EXTENT_UPROBE,            /* the return probe of the driver's allocation call */
    TM_EXTENT_REGION,            /* the target's stats region (libtiermem.so) */
} tm_extent_from;

const char *tm_extent_name(tm_extent_from from);

/* An allocation whose extent is known (kept after it is freed). */
void tm_chunk_table_known(tm_chunk_table *table, uint64_t address, uint64_t size, tm_extent_from from);

/* Appends "MILLISECONDS ADDRESS HEAT" for each chunk with heat to a record file. */
void tm_chunk_table_record(const tm_chunk_table *table, FILE *out, uint64_t ms, uint64_t tick);

typedef struct tm_heat_alloc_view {
    uint64_t address, size;
    tm_extent_from from;         /* where its extent comes from */
    double heat, reads, writes;
    tm_heat_class cls;
    char kernel[32];             /* the first kernel seen touching it */
    uint32_t chunk_count;
    uint64_t first_chunk;        /* address of its first chunk */
} tm_heat_alloc_view;

/* The allocations as of `tick`, ranked; *count entries, free() the result. */
tm_heat_alloc_view *tm_chunk_table_allocations(tm_chunk_table *table, uint64_t tick, size_t *count);

/* Heat, reads, writes and class of the chunk at `address`, as of `tick` (class ranks among
 * every chunk seen). */
void tm_chunk_table_chunk_json(tm_chunk_table *table, FILE *out, uint64_t address, uint64_t tick);

#endif /* TM_HEAT_CHUNK_HEAT_H */
