/* migrate.c — same-address chunk migration (see migrate.h). */
#include "preload/move/migrate.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "preload/mem/alloc.h"
#include "preload/mem/chunk_pool.h"
#include "preload/tiers/device.h"
#include "preload/driver/driver.h"
#include "preload/base/log.h"
#include "preload/region/stats.h"
#include "preload/driver/submit_gate.h"
#include "preload/tiermem.h"

uint32_t tm_migrate_pass = 1;

/* Guarded by the remap lock (mem/backing.h). */
static CUcontext stream_ctx;    /* the context `stream` belongs to */
static CUstream stream;         /* the interposer's own copy stream */
static CUdeviceptr staging;     /* TM_MIGRATE_BATCH chunks of address space */
static uint64_t staging_chunk;  /* chunk size the staging range was reserved for */
static unsigned closed_copies;  /* batches left to copy only under the closed gate */

/* After a batch was written during its copy, the next batches are copied once, under the
 * closed gate, rather than twice: while the program keeps writing, the copy made with the
 * gate open is wasted. Every this many, the open copy is tried again. */
#define CLOSED_COPY_RUN 8

/* ---------------------------------------------------------------- set-up */

static bool ensure_stream(CUcontext ctx)
{
    if (stream && stream_ctx == ctx)
        return true;
    if (stream)
        tm_release_call(tm_real.cuStreamDestroy_v2(stream));
    stream = NULL;
    if (!tm_real.cuStreamCreate || !tm_real.cuStreamDestroy_v2 || !tm_real.cuMemcpyDtoDAsync_v2 ||
        tm_real.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        stream = NULL;
        tm_log_once(TM_LOG_WARN, "cannot create a copy stream; chunks do not migrate");
        return false;
    }
    stream_ctx = ctx;
    return true;
}

static bool ensure_staging(uint64_t chunk)
{
    if (staging && staging_chunk == chunk)
        return true;
    if (staging)
        tm_release_call(tm_real.cuMemAddressFree(staging, TM_MIGRATE_BATCH * staging_chunk));
    staging = 0;
    if (tm_real.cuMemAddressReserve(&staging, TM_MIGRATE_BATCH * chunk, chunk, 0, 0) != CUDA_SUCCESS) {
        staging = 0;
        tm_log_once(TM_LOG_WARN, "cannot reserve a staging range; chunks do not migrate");
        return false;
    }
    staging_chunk = chunk;
    return true;
}

/* ---------------------------------------------------------------- one batch */

static CUresult map_chunks(CUdeviceptr at, const CUmemGenericAllocationHandle *handle, uint64_t count,
                           uint64_t chunk, const tm_backing_target *target)
{
    for (uint64_t i = 0; i < count; i++) {
        CUresult r = tm_real.cuMemMap(at + i * chunk, chunk, 0, handle[i], 0);
        if (r != CUDA_SUCCESS) {
            if (i)
                tm_release_call(tm_real.cuMemUnmap(at, i * chunk));
            return r;
        }
    }
    CUmemAccessDesc access[TM_BACKING_ACCESS_MAX];
    CUresult r = tm_real.cuMemSetAccess(at, count * chunk, access, tm_backing_access(target, access));
    if (r != CUDA_SUCCESS)
        tm_release_call(tm_real.cuMemUnmap(at, count * chunk));
    return r;
}

static CUresult copy_to_staging(CUdeviceptr from, uint64_t bytes)
{
    CUresult r = tm_real.cuMemcpyDtoDAsync_v2(staging, from, bytes, stream);
    return r == CUDA_SUCCESS ? tm_real.cuStreamSynchronize(stream) : r;
}

/* The remap, with the gate closed and the old chunks quiescent. */
static CUresult remap(tm_device *d, tm_alloc *a, uint64_t first, uint64_t count,
                      const CUmemGenericAllocationHandle *fresh)
{
    tm_backing *b = a->backing;
    uint64_t chunk = b->plan.chunk_size;
    CUdeviceptr at = b->base + first * chunk;
    CUresult r = tm_real.cuMemUnmap(at, count * chunk);
    if (r != CUDA_SUCCESS)
        return r;
    r = map_chunks(at, fresh, count, chunk, &d->target);
    if (r != CUDA_SUCCESS && map_chunks(at, &b->handle[first], count, chunk, &d->target) != CUDA_SUCCESS)
        tm_log_once(TM_LOG_WARN, "a failed migration could not map the old chunks back at 0x%llx",
                    (unsigned long long)at);
    return r;
}

/* Bookkeeping once the new chunks are in place: the old ones go to the pool. */
static void settle(tm_device *d, tm_alloc *a, uint64_t first, uint64_t count, tm_tier_id to,
                   const CUmemGenericAllocationHandle *fresh)
{
    tm_backing *b = a->backing;
    uint32_t pass = __atomic_load_n(&tm_migrate_pass, __ATOMIC_RELAXED);
    for (uint64_t i = first; i < first + count; i++) {
        tm_tier_id from = tm_backing_chunk_tier(b, i), left;
        uint32_t moved = tm_backing_last_move(b, i, &left);
        if (moved && pass - moved < TM_MIGRATE_PING_PONG && left == to)
            tm_stat_add(ping_pongs, 1);
        tm_backing_record_move(b, i, pass, from);
        tm_chunk_pool_give(d, from, tm_backing_set_chunk(b, i, to, fresh[i - first]));
        tm_device_charge(d, from, 0, -1);
        tm_device_charge(d, to, 0, 1);
        tm_stats_migrated(from, to, 1);
    }
    tm_alloc_publish_tiers(a);
    tm_stat_add(migrations, count);
    tm_stat_add(migrated_bytes, count * b->plan.chunk_size);
}

static CUresult move_batch(tm_device *d, tm_alloc *a, uint64_t first, uint64_t count, tm_tier_id to)
{
    tm_backing *b = a->backing;
    uint64_t chunk = b->plan.chunk_size;
    CUmemGenericAllocationHandle fresh[TM_MIGRATE_BATCH];
    uint64_t got = 0;
    while (got < count && tm_chunk_pool_take(d, to, &fresh[got]))
        got++;
    CUresult r = got < count ? CUDA_ERROR_OUT_OF_MEMORY : map_chunks(staging, fresh, count, chunk, &d->target);
    if (r == CUDA_SUCCESS) {
        CUdeviceptr at = b->base + first * chunk;
        bool open_copy = closed_copies == 0;
        uint64_t before = 0;
        if (open_copy) {
            /* read with the gate closed, `before` counts only submissions that are queued
             * (or done): once they drain, the copy sees their writes */
            tm_gate_close();
            before = tm_gate_submissions();
            tm_gate_open();
            r = tm_real.cuCtxSynchronize();
            if (r == CUDA_SUCCESS)
                r = copy_to_staging(at, count * chunk);
        } else {
            closed_copies--;
        }
        if (r == CUDA_SUCCESS) {
            /* the fence: nothing is submitted from here, and what was submitted drains */
            tm_gate_close();
            r = tm_real.cuCtxSynchronize();
            if (r == CUDA_SUCCESS && (!open_copy || tm_gate_submissions() != before)) {
                if (open_copy) {
                    tm_stat_add(migration_rewrites, 1);
                    closed_copies = CLOSED_COPY_RUN;
                }
                r = copy_to_staging(at, count * chunk);
            }
            /* off the staging range first, so that the chunks' next mapping is their only one */
            tm_release_call(tm_real.cuMemUnmap(staging, count * chunk));
            if (r == CUDA_SUCCESS)
                r = remap(d, a, first, count, fresh);
            tm_gate_open();
        } else {
            tm_release_call(tm_real.cuMemUnmap(staging, count * chunk));
        }
    }
    if (r == CUDA_SUCCESS) {
        settle(d, a, first, count, to, fresh);
        return CUDA_SUCCESS;
    }
    for (uint64_t i = 0; i < got; i++)
        tm_chunk_pool_give(d, to, fresh[i]);
    return r;
}

/* ---------------------------------------------------------------- ranges */

/* Chunks [first, end) of `a` not yet in `to`, in batches of contiguous runs. */
static CUresult move_chunks(tm_device *d, tm_alloc *a, uint64_t first, uint64_t end, tm_tier_id to)
{
    tm_backing *b = a->backing;
    if (!tm_backing_track_tiers(b))
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUcontext popped;
    if (tm_real.cuCtxPushCurrent_v2(a->ctx) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = ensure_stream(a->ctx) && ensure_staging(b->plan.chunk_size) ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    for (uint64_t i = first; r == CUDA_SUCCESS && i < end;) {
        tm_tier_id at = tm_backing_chunk_tier(b, i);
        if (at == to || at == TM_TIER_DROPPED) { /* the file tier's: not mapped */
            i++;
            continue;
        }
        uint64_t n = 1;
        while (i + n < end && n < TM_MIGRATE_BATCH && tm_backing_chunk_tier(b, i + n) != to &&
               tm_backing_chunk_tier(b, i + n) != TM_TIER_DROPPED)
            n++;
        r = move_batch(d, a, i, n, to);
        i += n;
    }
    tm_real.cuCtxPopCurrent_v2(&popped);
    return r;
}

CUresult tm_migrate_range(CUdeviceptr address, uint64_t bytes, tm_tier_id to)
{
    tm_device *d = tm_device_ready();
    if (!d || to >= TM_TIER_COUNT || !d->tiers.tier[to].present || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    tm_remap_lock();
    tm_alloc *a = tm_alloc_at(address);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (a && a->backing && address + bytes <= a->range.base + a->backing->bytes) {
        if (a->backing->pinned_host || a->ipc_pinned || a->device != d) {
            /* host memory, shared with other processes, or not on the first device (chunks move there only) */
            r = CUDA_ERROR_NOT_SUPPORTED;
        } else {
            uint64_t chunk = a->backing->plan.chunk_size;
            uint64_t first = (address - a->range.base) / chunk;
            uint64_t end = (address + bytes - a->range.base + chunk - 1) / chunk;
            r = move_chunks(d, a, first, end, to);
        }
    }
    tm_remap_unlock();
    return r;
}

void tm_migrate_forget_in_child(void)
{
    stream = NULL;
    stream_ctx = NULL;
    staging = 0;
    closed_copies = 0;
    tm_chunk_pool_forget_in_child();
}

void tm_migrate_shutdown(void)
{
    tm_remap_lock();
    if (stream) /* refused when the program released its context first: the stream went with it */
        tm_real.cuStreamDestroy_v2(stream);
    stream = NULL;
    if (staging)
        tm_release_call(tm_real.cuMemAddressFree(staging, TM_MIGRATE_BATCH * staging_chunk));
    staging = 0;
    tm_remap_unlock();
    tm_chunk_pool_drain(true);
}

/* ---------------------------------------------------------------- the exported entry */

/* tiermem_migrate (declared in the public tiermem.h): for tools and tests. */
CUresult tiermem_migrate(CUdeviceptr address, size_t bytes, const char *tier)
{
    tm_tier_id to;
    if (!tier || !tm_tier_from_name(tier, strlen(tier), &to) || strlen(tier) != 3)
        return CUDA_ERROR_INVALID_VALUE;
    return tm_migrate_range(address, bytes, to);
}
