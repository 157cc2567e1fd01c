/* backing.h — the physical side of a chunked allocation (DESIGN decision 3).
 *
 * VMM backing: one reserved VA range, one physical handle per chunk (location DEVICE for
 * HBM, HOST_NUMA with the node for CXL and DDR), the device given read-write access to
 * the whole range. Pinned-host backing, for devices without HOST_NUMA in the VMM API:
 * host memory bound chunk by chunk to the tiers' nodes, registered with the device; it
 * works in place but cannot migrate. */
#ifndef TM_PRELOAD_BACKING_H
#define TM_PRELOAD_BACKING_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/place.h"
#include "preload/driver/cuda_api.h"
#include "preload/tiers/device.h"

/* backing->tier of a chunk the file tier dropped (file_tier.h): unmapped, handle 0. */
#define TM_TIER_DROPPED 0xff

/* The access a chunk mapping gets: read-write for the device and each of its peers. */
#define TM_BACKING_ACCESS_MAX 65
size_t tm_backing_access(const tm_backing_target *target, CUmemAccessDesc desc[TM_BACKING_ACCESS_MAX]);

typedef struct tm_backing {
    CUdeviceptr base;          /* where the program sees the memory */
    uint64_t bytes;            /* plan.chunks * plan.chunk_size */
    tm_plan plan;              /* the tier of every chunk */
    bool pinned_host;          /* pinned host memory, not VMM handles */
    void *host;                /* pinned_host: the host mapping (bytes long) */
    uint8_t *tier;             /* [plan.chunks] the tier of each chunk once one migrated
                                * (plan.per_tier stays true, its runs do not); else NULL */
    uint32_t *moved;           /* [plan.chunks] with `tier`: the rebalance pass that last moved
                                * each chunk (migrate.h), 0 for never */
    uint8_t *left;             /* [plan.chunks] with `tier`: the tier each chunk left at that
                                * move, so a move straight back is told from a move on */
    CUmemGenericAllocationHandle handle[]; /* VMM: [plan.chunks], one per chunk */
} tm_backing;

/* Why a backing could not be made. */
typedef enum tm_backing_failure {
    TM_BACKING_OK,
    TM_BACKING_TIER_FULL,      /* the driver had no memory left in *tier */
    TM_BACKING_TIER_REFUSED,   /* the driver refused the location of *tier (e.g. unknown node) */
    TM_BACKING_INTERNAL,       /* anything else: the caller passes the call through */
} tm_backing_failure;

/* HBM chunks made before (pooled, chunk_pool.h) that a VMM backing maps before it creates
 * any: `used` of `count` were taken. */
typedef struct tm_backing_reuse {
    const CUmemGenericAllocationHandle *handle; /* [count] */
    size_t count;
    size_t used;
} tm_backing_reuse;

/* Builds the backing for a plan, its HBM chunks from `reuse` first (may be NULL). On
 * failure nothing is left behind (reused chunks taken are released too); *tier names the
 * tier at fault, *result the driver's answer. */
tm_backing_failure tm_backing_create(const tm_plan *plan, const tm_backing_target *target, tm_backing_reuse *reuse,
                                     tm_backing **out, tm_tier_id *tier, CUresult *result);

/* The tier chunk `index` lives in now. */
tm_tier_id tm_backing_chunk_tier(const tm_backing *backing, uint64_t index);

/* The handle chunk `index` is mapped with now (0: dropped, VMM backings only). */
static inline CUmemGenericAllocationHandle tm_backing_chunk_handle(const tm_backing *backing, uint64_t index)
{
    return backing->handle[index];
}

/* Chunk `index` lives in `tier` as `handle` from now on (after a remap; TM_TIER_DROPPED and
 * 0 for a chunk the file tier dropped): the per-chunk tier and the plan's counts follow.
 * Returns the handle it had. Needs the per-chunk arrays (tm_backing_track_tiers). */
CUmemGenericAllocationHandle tm_backing_set_chunk(tm_backing *backing, uint64_t index, tm_tier_id tier,
                                                  CUmemGenericAllocationHandle handle);

/* The rebalance pass that last moved chunk `index` (0: never), and the tier it left then. */
uint32_t tm_backing_last_move(const tm_backing *backing, uint64_t index, tm_tier_id *left);
/* Records a move of chunk `index` out of `from` in rebalance pass `pass` (per-chunk arrays). */
void tm_backing_record_move(tm_backing *backing, uint64_t index, uint32_t pass, tm_tier_id from);

/* Before a chunk first moves: the per-chunk `tier`, `moved` and `left` arrays. False without memory. */
bool tm_backing_track_tiers(tm_backing *backing);
/* Frees those arrays (the chunks' tiers are the plan's again); for releases and fork children. */
void tm_backing_untrack_tiers(tm_backing *backing);

/* Puts chunk `index` in `tier` without keeping its bytes: a new handle there is mapped
 * at the same address and the old one released. Only for a chunk whose bytes are dead
 * (about to be overwritten whole, with nothing in flight using it). False, with the
 * chunk as it was, on any failure; pinned-host backings cannot do it. */
bool tm_backing_replace_chunk(tm_backing *backing, uint64_t index, tm_tier_id tier,
                              const tm_backing_target *target);

/* One lock over the mappings of every chunked allocation: remaps (migration, the stream
 * ring, the file tier's drops and read-backs) and releases exclude one another, so no
 * chunk is released while it is being remapped. Taken before a device's place lock. */
void tm_remap_lock(void);
void tm_remap_unlock(void);
/* A fork child: a fresh lock (the forking thread's is not its own). */
void tm_remap_lock_forget_in_child(void);

/* Unmaps and releases everything (the caller has made sure nothing in flight uses it). */
void tm_backing_destroy(tm_backing *backing);

/* The same, but each VMM chunk's handle goes to `keep` (which releases or keeps it)
 * instead of being released; pinned-host memory is released. */
typedef void (*tm_backing_keep)(void *arg, tm_tier_id tier, CUmemGenericAllocationHandle handle);
void tm_backing_destroy_keeping(tm_backing *backing, tm_backing_keep keep, void *arg);

#endif /* TM_PRELOAD_BACKING_H */
