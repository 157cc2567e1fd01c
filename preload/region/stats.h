/* stats.h — the writer side of the stats region (layout in stats_layout.h).
 *
 * `tm_stats` always points at a header: the shared region once it exists, a private one
 * before (and when TIERMEM_STATS=off), so counting never needs a check. Tier usage kept
 * here is the one count of bytes per tier the interposer has. */
#ifndef TM_PRELOAD_STATS_H
#define TM_PRELOAD_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/config.h"
#include "policy/heat.h"
#include "policy/tier.h"
#include "preload/driver/hook_ids.h"
#include "preload/region/stats_layout.h"

extern tm_stats_header *tm_stats;
extern tm_stats_call *tm_stats_calls; /* [TM_HOOK_COUNT] */

#define tm_count_call(symbol) \
    __atomic_fetch_add(&tm_stats_calls[TM_HOOK_##symbol].calls, 1, __ATOMIC_RELAXED)
#define tm_stat_add(field, n) __atomic_fetch_add(&tm_stats->field, (uint64_t)(n), __ATOMIC_RELAXED)
#define tm_stat_sub(field, n) __atomic_fetch_sub(&tm_stats->field, (uint64_t)(n), __ATOMIC_RELAXED)

/* What the region describes besides the counters. */
typedef struct tm_stats_setup {
    int device;
    uint64_t device_memory;
    uint64_t chunk_size;
    bool pinned_host_backing;
    const tm_tiers *tiers;
    tm_heat_source heat;          /* the in-process heat source in use */
} tm_stats_setup;

/* Creates the region (unless TIERMEM_STATS=off) and fills in its description. A failure
 * is logged; counting goes on in the private header. */
void tm_stats_open(const tm_config *config, const tm_stats_setup *setup);

/* Tier usage: bytes and chunks placed (negative to remove); keeps the peak. */
void tm_stats_tier_add(tm_tier_id tier, int64_t bytes, int64_t chunks);
static inline uint64_t tm_stats_tier_used(tm_tier_id tier)
{
    return __atomic_load_n(&tm_stats->tier[tier].used, __ATOMIC_RELAXED);
}

/* A tier the driver refused: shown absent from now on. */
void tm_stats_tier_absent(tm_tier_id tier);

/* `count` chunks migrated from tier `from` to tier `to`. */
void tm_stats_migrated(tm_tier_id from, tm_tier_id to, uint64_t count);

/* A device set up for tiering: its entry in the region (-1 when all are taken), then its
 * HBM usage as it changes. `uuid` may be NULL (unknown). */
int tm_stats_device_add(int ordinal, int host_node, uint64_t hbm_limit, const uint8_t uuid[16]);
void tm_stats_device_set(int slot, uint64_t hbm_used, uint64_t hbm_chunks);

/* Records of chunked and managed allocations. Returns the slot, or -1 when the region is
 * full or absent. */
int tm_stats_record_add(uint32_t path, uint64_t address, uint64_t size,
                        const uint32_t chunks[TM_STATS_TIERS], uint32_t flags);
void tm_stats_record_remove(int slot);
/* Rewrites a record's chunks per tier (NULL: kept) and its tensor name and count (NULL:
 * kept). */
void tm_stats_record_update(int slot, const uint32_t chunks[TM_STATS_TIERS], const char *name, uint32_t tensors);
/* Sets more TM_STATS_RECORD_* bits on a live record. */
void tm_stats_record_flag(int slot, uint32_t flags);
/* After a migration: the record's chunks per tier. */
void tm_stats_record_chunks(int slot, const uint32_t chunks[TM_STATS_TIERS]);

/* Heat of a record's chunks: attach gives the record `chunk_count` entries of the heat
 * pool (false when the region is absent or the pool is full); publish copies chunks
 * [from, from + count) there and notes the source (enum tm_stats_heat_sources). The
 * caller serialises publishing for one record. */
bool tm_stats_heat_attach(int slot, uint32_t chunk_count);
void tm_stats_heat_publish(int slot, const tm_heat_chunk *chunks, uint32_t from, uint32_t count, uint32_t source);

/* The heat a collector beside the process (tiermem-heat) wrote for heat chunk `index` of a
 * record, into *out: false when no collector has written the record, or the copy kept
 * changing under the read. Values that no decayed count can take (negative, not finite)
 * read as 0: the region is shared with another process. */
bool tm_stats_heat_collected(int slot, uint32_t index, tm_heat_chunk *out);

/* At exit: marks the region exited and removes it (a TIERMEM_STATS path stays). */
void tm_stats_close(void);

/* In a fork child: lets go of the parent's region without touching it. */
void tm_stats_forget_in_child(void);

/* Fork handling of the record-slot lock. */
void tm_stats_lock(void);
void tm_stats_unlock(void);

#endif /* TM_PRELOAD_STATS_H */
