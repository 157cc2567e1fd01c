/* alloc.c — tracked allocations: routing, chunked placement, counting, release
 * (see alloc.h). */
#include "preload/mem/alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "policy/managed.h"
#include "policy/units.h"
#include "preload/base/log.h"
#include "preload/base/settings.h"
#include "preload/driver/driver.h"
#include "preload/mem/chunk_pool.h"
#include "preload/mem/managed.h"
#include "preload/mem/spill_note.h"
#include "preload/mem/stream_free.h"
#include "preload/model/model_files.h"
#include "preload/region/stats.h"

/* Buffer ids of chunked allocations: above anything a driver hands out. */
static uint64_t next_buffer_id = (uint64_t)1 << 62;

/* The registry stores tm_range headers, each the first member of a record of ours. */
static tm_alloc *alloc_of(tm_range *range)
{
    return (tm_alloc *)range;
}

/* ---------------------------------------------------------------- events */

static void announce_created(tm_alloc *a)
{
    for (const tm_alloc_watcher *const *w = tm_alloc_watchers; *w; w++)
        if ((*w)->created)
            (*w)->created(a);
}

static void announce_released(tm_alloc *a, tm_release_kind how)
{
    for (const tm_alloc_watcher *const *w = tm_alloc_watchers; *w; w++)
        if ((*w)->released)
            (*w)->released(a, how);
}

/* Chunks given back by the watchers that can (the file tier drops what it can read back). */
static uint64_t ask_for_room(tm_device *device, uint64_t chunks)
{
    uint64_t given = 0;
    for (const tm_alloc_watcher *const *w = tm_alloc_watchers; *w && given < chunks; w++)
        if ((*w)->make_room)
            given += (*w)->make_room(device, chunks - given);
    return given;
}

/* ---------------------------------------------------------------- routing */

tm_route tm_route_allocation(uint64_t bytes, tm_device **device, CUcontext *ctx)
{
    if (bytes == 0 || !(*device = tm_device_current(ctx)))
        return TM_ROUTE_DRIVER;
    tm_device *d = *device;
    for (int drained = 0;; drained++) {
        bool streams = __atomic_load_n(&d->streams, __ATOMIC_ACQUIRE);
        tm_route_query query = {
            .bytes = bytes,
            .hbm_used = __atomic_load_n(&d->hbm_used, __ATOMIC_RELAXED),
            .hbm_limit = d->tiers.tier[TM_TIER_HBM].limit,
            .hbm_reserve = d->tiers.hbm_reserve,
            .hbm_pooled = tm_chunk_pool_bytes(d, TM_TIER_HBM),
            .streaming = streams,
            .weights_loading = streams && tm_model_files_loading(),
            .keep_plain = tm_settings()->ipc == TM_IPC_PASSTHROUGH,
        };
        if (query.weights_loading)
            query.weights_left = tm_model_files_bytes_left();
        tm_route_answer answer = tm_policy_route(&d->policy, &query, &d->route);
        if (!answer.drain_pool)
            return answer.route;
        if (drained)
            return TM_ROUTE_CHUNKED; /* the pool filled again meanwhile: no room for driver memory */
        tm_chunk_pool_drain(false); /* then routed on what HBM holds once it is drained */
    }
}

CUresult tm_alloc_serve(size_t bytes, uint32_t path, CUdeviceptr *dptr, tm_driver_alloc driver, const void *args)
{
    tm_stream_free_drain();
    tm_device *device = NULL;
    CUcontext ctx = NULL;
    tm_route route = dptr ? tm_route_allocation(bytes, &device, &ctx) : TM_ROUTE_DRIVER;
    CUresult result;
    if (route == TM_ROUTE_CHUNKED && tm_alloc_chunked(device, ctx, bytes, path, dptr, &result))
        return result;
    if (route == TM_ROUTE_LOWER && tm_alloc_chunked_lower(device, ctx, bytes, path, dptr, &result))
        return result;
    result = driver(dptr, bytes, args);
    /* HBM itself is full (other users of the device): a lower tier may still hold it */
    if ((route == TM_ROUTE_SMALL || route == TM_ROUTE_LOWER) && result == CUDA_ERROR_OUT_OF_MEMORY &&
        tm_alloc_chunked(device, ctx, bytes, path, dptr, &result))
        return result;
    if (result == CUDA_SUCCESS && route != TM_ROUTE_DRIVER)
        tm_track_driver_alloc(device, ctx, *dptr, bytes, path, false);
    return result;
}

/* ---------------------------------------------------------------- counting */

static void charge_plan(tm_device *device, const tm_plan *plan, int sign)
{
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        int64_t chunks = (int64_t)plan->per_tier[t];
        if (chunks)
            tm_device_charge(device, (tm_tier_id)t, sign * chunks * (int64_t)plan->chunk_size, sign * chunks);
    }
}

bool tm_alloc_holds_stack(const tm_alloc *a)
{
    const tm_tensor **labels = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE);
    const tm_tensor *t = labels ? __atomic_load_n(&labels[0], __ATOMIC_RELAXED) : NULL;
    return t && t->n_dims >= 3;
}

void tm_alloc_publish_tiers(const tm_alloc *a)
{
    uint32_t chunks[TM_STATS_TIERS];
    for (int t = 0; t < TM_STATS_TIERS; t++)
        chunks[t] = (uint32_t)a->backing->plan.per_tier[t];
    tm_stats_record_chunks(a->stats_slot, chunks);
}

static void record_in_stats(tm_alloc *a)
{
    uint32_t chunks[TM_STATS_TIERS] = { 0 };
    uint32_t flags = 0;
    if (a->backing) {
        for (int t = 0; t < TM_STATS_TIERS; t++)
            chunks[t] = (uint32_t)a->backing->plan.per_tier[t];
        if (a->backing->pinned_host)
            flags |= TM_STATS_RECORD_PINNED_HOST;
    }
    if (a->managed)
        flags |= TM_STATS_RECORD_MANAGED;
    a->stats_slot = tm_stats_record_add(a->path, a->range.base, a->range.size, chunks, flags);
    announce_created(a);
}

tm_alloc *tm_track_driver_alloc(tm_device *device, CUcontext ctx, CUdeviceptr dptr, uint64_t bytes, uint32_t path,
                                bool managed)
{
    tm_alloc *a = calloc(1, sizeof *a);
    if (!a) {
        tm_log_once(TM_LOG_WARN, "out of memory for allocation records; some allocations go uncounted");
        return NULL;
    }
    a->range = (tm_range){ .base = dptr, .size = bytes };
    a->ctx = ctx;
    a->device = device;
    a->path = path;
    a->managed = managed;
    a->stats_slot = -1;
    if (!tm_registry_insert(&a->range)) {
        tm_log_once(TM_LOG_WARN, "allocation at 0x%llx overlaps a tracked one; left uncounted",
                    (unsigned long long)dptr);
        free(a);
        return NULL;
    }
    if (managed) {
        record_in_stats(a);
        tm_stat_add(managed_count, 1);
        tm_stat_add(managed_bytes, bytes);
    } else {
        tm_stat_add(small_count, 1);
        tm_stat_add(small_bytes, bytes);
        tm_device_charge(device, TM_TIER_HBM, (int64_t)bytes, 0);
    }
    tm_stat_add(alloc_total, 1);
    return a;
}

void tm_forget(tm_alloc *a)
{
    if (a->managed) {
        tm_stat_sub(managed_count, 1);
        tm_stat_sub(managed_bytes, a->range.size);
    } else {
        tm_stat_sub(small_count, 1);
        tm_stat_sub(small_bytes, a->range.size);
        tm_device_charge(a->device, TM_TIER_HBM, -(int64_t)a->range.size, 0);
    }
    announce_released(a, TM_RELEASE_FREED);
    tm_stats_record_remove(a->stats_slot);
    tm_stat_add(free_total, 1);
    free(a);
}

/* ---------------------------------------------------------------- chunked allocations */

static void refuse_tier(tm_device *device, tm_tier_id tier, CUresult result)
{
    pthread_mutex_lock(&device->place_lock);
    bool was_present = device->tiers.tier[tier].present;
    device->tiers.tier[tier].present = false;
    pthread_mutex_unlock(&device->place_lock);
    tm_stats_tier_absent(tier);
    if (was_present)
        tm_warn("the driver refused memory on node %d for the %s tier (error %d); the tier is not used",
                device->tiers.tier[tier].node, tm_tier_name(tier), (int)result);
}

/* Pooled HBM chunks of `device` an allocation of `bytes` may map, taken out of the pool;
 * `now` shows their room as free. Under the device's place lock. */
static size_t take_pooled(tm_device *device, uint64_t bytes, CUmemGenericAllocationHandle *out, tm_tiers *now)
{
    uint64_t chunk = device->policy.chunk_size;
    if (chunk == 0)
        return 0;
    uint64_t wanted = (bytes + chunk - 1) / chunk;
    size_t got = tm_chunk_pool_take_many(device, TM_TIER_HBM, out,
                                         wanted < TM_CHUNK_POOL_SLOTS ? (size_t)wanted : TM_CHUNK_POOL_SLOTS);
    uint64_t room = got * chunk;
    now->tier[TM_TIER_HBM].used -= room < now->tier[TM_TIER_HBM].used ? room : now->tier[TM_TIER_HBM].used;
    return got;
}

/* After planning, before the plan is charged: the pooled chunks the plan's HBM chunks
 * will be are charged with the plan, so their pool charge is dropped; the rest go back to
 * the pool, still charged. Under the device's place lock. */
static void keep_pooled(tm_device *device, const tm_plan *plan, tm_backing_reuse *reuse)
{
    size_t keep = 0;
    if (plan && plan->chunk_size == device->policy.chunk_size)
        keep = plan->per_tier[TM_TIER_HBM] < reuse->count ? (size_t)plan->per_tier[TM_TIER_HBM] : reuse->count;
    for (size_t i = keep; i < reuse->count; i++)
        tm_chunk_pool_give(device, TM_TIER_HBM, reuse->handle[i]);
    reuse->count = keep;
    tm_device_charge(device, TM_TIER_HBM, -(int64_t)(keep * device->policy.chunk_size), 0);
}

/* A failed backing: the pooled chunks it did not map go back to the pool, charged again
 * (the plan's charge, which covered them, is dropped by the caller). */
static void give_unused(tm_device *device, tm_backing_reuse *reuse)
{
    for (size_t i = reuse->used; i < reuse->count; i++) {
        tm_device_charge(device, TM_TIER_HBM, (int64_t)device->policy.chunk_size, 0);
        tm_chunk_pool_give(device, TM_TIER_HBM, reuse->handle[i]);
    }
}

static bool alloc_chunked(tm_device *device, CUcontext ctx, uint64_t bytes, uint32_t path, bool hbm,
                          CUdeviceptr *dptr, CUresult *result)
{
    if (tm_policy_uses_managed(&device->policy))
        return tm_alloc_managed(device, ctx, bytes, path, dptr, result);
    tm_alloc_desc desc = { .size = bytes };
    bool full[TM_TIER_COUNT] = { [TM_TIER_HBM] = !hbm };
    int room_rounds = 0;
    CUmemGenericAllocationHandle pooled[TM_CHUNK_POOL_SLOTS];
    for (int attempt = 0; attempt <= TM_TIER_COUNT; attempt++) {
        /* plan and charge in one step, so two threads never count on the same room */
        tm_plan plan;
        tm_device_place_lock(device);
        tm_tiers now;
        tm_device_tiers_now(device, &now);
        for (int t = 0; t < TM_TIER_COUNT; t++)
            if (full[t])
                now.tier[t].present = false;
        tm_backing_reuse reuse = { .handle = pooled, .count = take_pooled(device, bytes, pooled, &now), .used = 0 };
        bool fits = tm_policy_place(&device->policy, &now, &desc, &plan);
        keep_pooled(device, fits ? &plan : NULL, &reuse);
        if (fits)
            charge_plan(device, &plan, +1);
        tm_device_place_unlock(device);
        if (!fits && room_rounds < 16) {
            /* the watchers give back what they can (the file tier drops chunks it can read
             * back), and placement starts over (the room may come in a tier that cannot
             * take the whole request) */
            room_rounds++;
            uint64_t chunks = (bytes + device->policy.chunk_size - 1) / device->policy.chunk_size;
            if (ask_for_room(device, chunks)) {
                memset(full, 0, sizeof full);
                full[TM_TIER_HBM] = !hbm;
                attempt = -1;
                continue;
            }
        }
        if (!fits)
            break;

        tm_backing *backing;
        tm_tier_id tier;
        CUresult driver_result;
        tm_backing_failure failure = tm_backing_create(&plan, &device->target, &reuse, &backing, &tier, &driver_result);
        tm_stat_add(chunks_reused, reuse.used);
        tm_stat_add(chunks_created, failure == TM_BACKING_OK && !backing->pinned_host ? plan.chunks - reuse.used : 0);
        if (failure != TM_BACKING_OK)
            give_unused(device, &reuse);
        switch (failure) {
        case TM_BACKING_OK: {
            tm_alloc *a = calloc(1, sizeof *a);
            if (a) {
                a->range = (tm_range){ .base = backing->base, .size = bytes };
                a->ctx = ctx;
                a->device = device;
                a->path = path;
                a->backing = backing;
                a->id = __atomic_fetch_add(&next_buffer_id, 1, __ATOMIC_RELAXED);
            }
            if (!a || !tm_registry_insert(&a->range)) {
                free(a);
                tm_backing_destroy(backing);
                charge_plan(device, &plan, -1);
                tm_log_once(TM_LOG_WARN, "cannot record a chunked allocation; passing such calls through");
                tm_stat_add(passthrough_total, 1);
                return false;
            }
            record_in_stats(a);
            tm_stat_add(tiered_count, 1);
            tm_stat_add(tiered_bytes, bytes);
            tm_stat_add(alloc_total, 1);
            tm_debug("0x%llx: %llu bytes in %llu chunks (hbm %llu, cxl %llu, ddr %llu)",
                     (unsigned long long)backing->base, (unsigned long long)bytes,
                     (unsigned long long)plan.chunks, (unsigned long long)plan.per_tier[TM_TIER_HBM],
                     (unsigned long long)plan.per_tier[TM_TIER_CXL], (unsigned long long)plan.per_tier[TM_TIER_DDR]);
            tm_note_spill(bytes, plan.per_tier, plan.chunk_size);
            *dptr = backing->base;
            *result = CUDA_SUCCESS;
            return true;
        }
        case TM_BACKING_TIER_FULL:
            charge_plan(device, &plan, -1);
            full[tier] = true;
            continue;
        case TM_BACKING_TIER_REFUSED:
            charge_plan(device, &plan, -1);
            refuse_tier(device, tier, driver_result);
            continue;
        case TM_BACKING_INTERNAL:
            charge_plan(device, &plan, -1);
            tm_log_once(TM_LOG_WARN, "a chunked allocation failed in the driver (error %d); passing the call "
                        "through", (int)driver_result);
            tm_stat_add(passthrough_total, 1);
            return false;
        }
    }
    if (!hbm) /* the lower tiers are full: HBM may still have room */
        return alloc_chunked(device, ctx, bytes, path, true, dptr, result);
    char size[32];
    tm_debug("no tier has room for %s", tm_format_size(bytes, size, sizeof size));
    tm_stat_add(oom_total, 1);
    *result = CUDA_ERROR_OUT_OF_MEMORY;
    return true;
}

uint64_t tm_alloc_replace_chunks(tm_device *device, tm_alloc *a, uint64_t first, uint64_t count, tm_tier_id tier)
{
    tm_backing *b = a->backing;
    if (!b || first >= b->plan.chunks ||
        __atomic_load_n(&a->ipc_pinned, __ATOMIC_RELAXED)) /* shared with other processes */
        return 0;
    if (count > b->plan.chunks - first)
        count = b->plan.chunks - first;
    uint64_t chunk = b->plan.chunk_size, moved = 0;
    tm_remap_lock(); /* the rebalancer moves chunks too */
    tm_device_place_lock(device);
    for (uint64_t i = first; i < first + count; i++) {
        tm_tier_id from = tm_backing_chunk_tier(b, i);
        if (from == tier || from == TM_TIER_DROPPED) /* a dropped chunk is placed when read back */
            continue;
        tm_tiers now;
        tm_device_tiers_now(device, &now);
        if (!now.tier[tier].present || now.tier[tier].used + chunk > now.tier[tier].limit)
            break;
        if (!tm_backing_replace_chunk(b, i, tier, &device->target))
            break;
        tm_device_charge(device, tier, (int64_t)chunk, 1);
        tm_device_charge(device, from, -(int64_t)chunk, -1);
        moved++;
    }
    tm_device_place_unlock(device);
    tm_remap_unlock();
    if (moved) {
        tm_alloc_publish_tiers(a);
        tm_debug("0x%llx: %llu chunks moved to %s", (unsigned long long)a->range.base,
                 (unsigned long long)moved, tm_tier_name(tier));
    }
    return moved;
}

/* Runs `wait` with `ctx` current (it may be another thread's, or none, right now). */
static void wait_in_context(CUcontext ctx)
{
    CUcontext current = NULL;
    tm_real.cuCtxGetCurrent(&current);
    if (current == ctx) {
        tm_real.cuCtxSynchronize();
    } else if (tm_real.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) {
        tm_real.cuCtxSynchronize();
        CUcontext popped;
        tm_real.cuCtxPopCurrent_v2(&popped);
    }
}

/* cuMemFree of memory the driver made, in the allocation's context. */
static void free_driver_memory(tm_alloc *a)
{
    CUcontext current = NULL;
    tm_real.cuCtxGetCurrent(&current);
    bool pushed = current != a->ctx && tm_real.cuCtxPushCurrent_v2(a->ctx) == CUDA_SUCCESS;
    tm_release_call(tm_real.cuMemFree_v2(a->range.base));
    if (pushed) {
        CUcontext popped;
        tm_real.cuCtxPopCurrent_v2(&popped);
    }
}

/* A freed chunk: HBM ones go to the pool (which keeps their bytes charged, or releases
 * them), others are released. */
static void pool_chunk(void *arg, tm_tier_id tier, CUmemGenericAllocationHandle handle)
{
    tm_device *device = arg;
    if (tier == TM_TIER_HBM) {
        tm_chunk_pool_give(device, tier, handle);
        return;
    }
    tm_release_call(tm_real.cuMemRelease(handle));
    tm_device_charge(device, tier, -(int64_t)device->policy.chunk_size, 0);
}

/* Releases a chunked allocation's memory. Chunks exported to other processes, or of
 * another size than the pool's, are never pooled: nobody else may map them again. */
static void release_backing(tm_alloc *a)
{
    tm_backing *b = a->backing;
    bool pool = !b->pinned_host && !__atomic_load_n(&a->ipc_pinned, __ATOMIC_RELAXED) &&
                b->plan.chunk_size == a->device->policy.chunk_size;
    if (!pool) {
        charge_plan(a->device, &b->plan, -1);
        tm_backing_destroy(b);
        return;
    }
    for (int t = 0; t < TM_TIER_COUNT; t++)
        if (b->plan.per_tier[t])
            tm_device_charge(a->device, (tm_tier_id)t, 0, -(int64_t)b->plan.per_tier[t]);
    tm_backing_destroy_keeping(b, pool_chunk, a->device);
}

void tm_free_chunked(tm_alloc *a, tm_wait wait, CUstream stream)
{
    switch (wait) {
    case TM_WAIT_CONTEXT: wait_in_context(a->ctx); break;
    case TM_WAIT_STREAM: tm_real.cuStreamSynchronize(stream); break;
    case TM_WAIT_STREAM_PTSZ:
        if (tm_real.cuStreamSynchronize_ptsz)
            tm_real.cuStreamSynchronize_ptsz(stream);
        else
            tm_real.cuStreamSynchronize(stream);
        break;
    case TM_WAIT_NOTHING: break;
    }
    if (!a->backing) { /* managed memory made in place of chunks */
        free_driver_memory(a);
        tm_forget(a);
        return;
    }
    tm_remap_lock(); /* none of its chunks is being remapped */
    announce_released(a, TM_RELEASE_FREED);
    release_backing(a);
    tm_remap_unlock();
    tm_stats_record_remove(a->stats_slot);
    tm_stat_sub(tiered_count, 1);
    tm_stat_sub(tiered_bytes, a->range.size);
    tm_stat_add(free_total, 1);
    free(a);
}

/* ---------------------------------------------------------------- lookups */

tm_alloc *tm_untrack(CUdeviceptr dptr)
{
    if (tm_registry_count() == 0)
        return NULL;
    tm_range *range = tm_registry_remove(dptr);
    return range ? alloc_of(range) : NULL;
}

void tm_retrack(tm_alloc *a)
{
    if (!tm_registry_insert(&a->range))
        tm_log_once(TM_LOG_WARN, "lost track of the allocation at 0x%llx", (unsigned long long)a->range.base);
}

/* The registry's walks, on records of ours. */
typedef struct alloc_visit {
    void (*visit)(tm_alloc *alloc, void *arg);
    void *arg;
} alloc_visit;

static void visit_alloc(tm_range *range, void *arg)
{
    const alloc_visit *v = arg;
    v->visit(alloc_of(range), v->arg);
}

bool tm_alloc_find(CUdeviceptr address, void (*visit)(tm_alloc *alloc, void *arg), void *arg)
{
    alloc_visit v = { visit, arg };
    return tm_registry_count() != 0 && tm_registry_find(address, visit_alloc, &v);
}

static void take_alloc(tm_alloc *a, void *arg)
{
    *(tm_alloc **)arg = a;
}

tm_alloc *tm_alloc_at(CUdeviceptr address)
{
    tm_alloc *a = NULL;
    return tm_alloc_find(address, take_alloc, &a) ? a : NULL;
}

void tm_alloc_each(void (*visit)(tm_alloc *alloc, void *arg), void *arg)
{
    alloc_visit v = { visit, arg };
    tm_registry_each(visit_alloc, &v);
}

static void copy_view(tm_alloc *a, void *arg)
{
    tm_alloc_view *view = arg;
    view->base = a->range.base;
    view->size = a->range.size;
    view->extent = a->backing ? a->backing->bytes : a->range.size;
    view->ctx = a->ctx;
    view->chunked = a->backing != NULL;
    view->id = a->id;
    view->device = a->device ? a->device->ordinal : 0;
}

struct claim {
    bool claimed;
    CUdeviceptr base;
    uint64_t size;
    int slot;
};

static void claim_read_mostly(tm_alloc *a, void *arg)
{
    struct claim *c = arg;
    if (!a->baseline || __atomic_exchange_n(&a->read_mostly, true, __ATOMIC_ACQ_REL))
        return;
    *c = (struct claim){ true, a->range.base, a->range.size, a->stats_slot };
}

bool tm_claim_read_mostly(CUdeviceptr address, CUdeviceptr *base, uint64_t *size)
{
    struct claim c = { .claimed = false };
    if (!tm_alloc_find(address, claim_read_mostly, &c) || !c.claimed)
        return false;
    tm_stats_record_flag(c.slot, TM_STATS_RECORD_READ_MOSTLY);
    *base = c.base;
    *size = c.size;
    return true;
}

bool tm_lookup(CUdeviceptr address, tm_alloc_view *view)
{
    return tm_alloc_find(address, copy_view, view);
}

/* ---------------------------------------------------------------- teardown */

static bool in_context(const tm_range *range, void *ctx)
{
    return ((const tm_alloc *)range)->ctx == (CUcontext)ctx;
}

static bool every(const tm_range *range, void *arg)
{
    (void)range;
    (void)arg;
    return true;
}

void tm_release_context(CUcontext ctx, bool context_alive)
{
    size_t count;
    tm_range **taken = tm_registry_take(in_context, ctx, &count);
    if (count && context_alive)
        wait_in_context(ctx);
    for (size_t i = 0; i < count; i++) {
        tm_alloc *a = alloc_of(taken[i]);
        /* memory the driver made goes with the context */
        if (a->backing)
            tm_free_chunked(a, TM_WAIT_NOTHING, NULL);
        else
            tm_forget(a);
    }
    free(taken);
    tm_chunk_pool_drain(false); /* the device's memory goes back with its context */
}

/* The records are the parent's; the memory they describe is not the child's to touch. */
void tm_forget_all_in_child(void)
{
    tm_registry_reinit_locks_in_child();
    size_t count;
    tm_range **taken = tm_registry_take(every, NULL, &count);
    for (size_t i = 0; i < count; i++) {
        tm_alloc *a = alloc_of(taken[i]);
        announce_released(a, TM_RELEASE_FORGOTTEN);
        if (a->backing)
            tm_backing_untrack_tiers(a->backing);
        free(a->backing);
        free(a);
    }
    free(taken);
}

/* ---------------------------------------------------------------- peer access */

typedef struct peer_grant {
    const tm_device *owner;
    CUmemAccessDesc access;
} peer_grant;

static void grant(tm_alloc *a, void *arg)
{
    const peer_grant *g = arg;
    if (a->device != g->owner || !a->backing || a->backing->pinned_host)
        return;
    CUresult result = tm_real.cuMemSetAccess(a->backing->base, a->backing->bytes, &g->access, 1);
    if (result != CUDA_SUCCESS)
        tm_log_once(TM_LOG_WARN, "device %d cannot be given access to device %d's chunks (error %d)",
                    (int)g->access.location.id, (int)g->owner->ordinal, (int)result);
}

void tm_grant_peer_access(tm_device *owner, CUdevice accessor)
{
    peer_grant g = {
        .owner = owner,
        .access = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = accessor },
                    .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE },
    };
    tm_remap_lock(); /* no chunk is being remapped meanwhile */
    tm_alloc_each(grant, &g);
    tm_remap_unlock();
}

bool tm_alloc_chunked(tm_device *device, CUcontext ctx, uint64_t bytes, uint32_t path,
                      CUdeviceptr *dptr, CUresult *result)
{
    return alloc_chunked(device, ctx, bytes, path, true, dptr, result);
}

bool tm_alloc_chunked_lower(tm_device *device, CUcontext ctx, uint64_t bytes, uint32_t path,
                            CUdeviceptr *dptr, CUresult *result)
{
    return alloc_chunked(device, ctx, bytes, path, false, dptr, result);
}
