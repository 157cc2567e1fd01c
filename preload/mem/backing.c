/* backing.c — VMM and pinned-host backings of chunked allocations (see backing.h). */
#include "preload/mem/backing.h"

#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "preload/driver/driver.h"
#include "preload/base/log.h"
#include "preload/base/libc_real.h"

size_t tm_backing_access(const tm_backing_target *target, CUmemAccessDesc desc[TM_BACKING_ACCESS_MAX])
{
    size_t n = 0;
    desc[n++] = (CUmemAccessDesc){
        .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = target->device },
        .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    uint64_t peers = __atomic_load_n(&target->peers, __ATOMIC_ACQUIRE);
    for (int d = 0; d < 64 && n < TM_BACKING_ACCESS_MAX; d++)
        if (peers & ((uint64_t)1 << d))
            desc[n++] = (CUmemAccessDesc){
                .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = d },
                .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
    return n;
}

/* ---------------------------------------------------------------- VMM */

static CUmemAllocationProp chunk_properties(const tm_backing_target *target, tm_tier_id tier)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = target->handle_types;
    if (tier == TM_TIER_HBM) {
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = target->device;
    } else {
        prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        prop.location.id = target->node[tier];
    }
    return prop;
}

static bool chunk_dropped(const tm_backing *b, uint64_t i)
{
    return b->tier && b->tier[i] == TM_TIER_DROPPED;
}

/* Unmaps the first `mapped` chunks, a run at a time around the chunks the file tier
 * dropped (they have no mapping and no handle). */
static void vmm_unmap(tm_backing *b, uint64_t mapped)
{
    uint64_t chunk = b->plan.chunk_size;
    for (uint64_t i = 0; i < mapped;) {
        uint64_t n = 0;
        while (i + n < mapped && !chunk_dropped(b, i + n))
            n++;
        if (n)
            tm_release_call(tm_real.cuMemUnmap(b->base + i * chunk, n * chunk));
        i += n ? n : 1;
    }
}

/* Unmaps and releases the first `mapped` chunks and frees the range. */
static void vmm_undo(tm_backing *b, uint64_t mapped)
{
    vmm_unmap(b, mapped);
    for (uint64_t i = 0; i < mapped; i++)
        if (!chunk_dropped(b, i))
            tm_release_call(tm_real.cuMemRelease(b->handle[i]));
    tm_release_call(tm_real.cuMemAddressFree(b->base, b->bytes));
}

static tm_backing_failure vmm_create(tm_backing *b, const tm_backing_target *target, tm_backing_reuse *reuse,
                                     tm_tier_id *tier, CUresult *result)
{
    uint64_t chunk = b->plan.chunk_size;
    *result = tm_real.cuMemAddressReserve(&b->base, b->bytes, chunk, 0, 0);
    if (*result != CUDA_SUCCESS)
        return TM_BACKING_INTERNAL;

    for (uint64_t i = 0; i < b->plan.chunks; i++) {
        tm_tier_id t = tm_plan_chunk_tier(&b->plan, i);
        if (t == TM_TIER_HBM && reuse && reuse->used < reuse->count) {
            b->handle[i] = reuse->handle[reuse->used++];
            *result = CUDA_SUCCESS;
        } else {
            CUmemAllocationProp prop = chunk_properties(target, t);
            *result = tm_real.cuMemCreate(&b->handle[i], chunk, &prop, 0);
        }
        if (*result != CUDA_SUCCESS) {
            vmm_undo(b, i);
            *tier = t;
            if (*result == CUDA_ERROR_OUT_OF_MEMORY)
                return TM_BACKING_TIER_FULL;
            return t == TM_TIER_HBM ? TM_BACKING_INTERNAL : TM_BACKING_TIER_REFUSED;
        }
        *result = tm_real.cuMemMap(b->base + i * chunk, chunk, 0, b->handle[i], 0);
        if (*result != CUDA_SUCCESS) {
            tm_release_call(tm_real.cuMemRelease(b->handle[i]));
            vmm_undo(b, i);
            return TM_BACKING_INTERNAL;
        }
    }

    CUmemAccessDesc access[TM_BACKING_ACCESS_MAX];
    *result = tm_real.cuMemSetAccess(b->base, b->bytes, access, tm_backing_access(target, access));
    if (*result != CUDA_SUCCESS) {
        vmm_undo(b, b->plan.chunks);
        return TM_BACKING_INTERNAL;
    }
    return TM_BACKING_OK;
}

/* ---------------------------------------------------------------- pinned host */

/* Binds each run of chunks to its tier's node. A node this kernel does not have (one the
 * driver emulates) leaves that run to the default policy. */
static void bind_runs(tm_backing *b, const tm_backing_target *target)
{
    char *at = b->host;
    for (int r = 0; r < b->plan.run_count; r++) {
        uint64_t len = b->plan.run[r].chunks * b->plan.chunk_size;
        int node = target->node[b->plan.run[r].tier];
        unsigned long mask[16] = { 0 };
        if (node >= 0 && node < (int)(sizeof mask * 8)) {
            mask[node / (8 * sizeof mask[0])] |= 1ul << (node % (8 * sizeof mask[0]));
            if (mbind(at, len, MPOL_BIND, mask, sizeof mask * 8, 0) != 0)
                tm_log_once(TM_LOG_INFO, "node %d cannot hold pinned host memory here (%s); "
                            "the kernel places it", node, strerror(errno));
        }
        at += len;
    }
}

static tm_backing_failure pinned_create(tm_backing *b, const tm_backing_target *target, tm_tier_id *tier,
                                        CUresult *result)
{
    b->host = tm_libc_mmap(NULL, b->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b->host == MAP_FAILED) {
        b->host = NULL;
        *tier = b->plan.run[0].tier;
        *result = CUDA_ERROR_OUT_OF_MEMORY;
        return TM_BACKING_TIER_FULL;
    }
    bind_runs(b, target);
    *result = tm_real.cuMemHostRegister_v2(b->host, b->bytes, CU_MEMHOSTREGISTER_DEVICEMAP);
    if (*result == CUDA_SUCCESS) {
        *result = tm_real.cuMemHostGetDevicePointer_v2(&b->base, b->host, 0);
        if (*result == CUDA_SUCCESS)
            return TM_BACKING_OK;
        tm_release_call(tm_real.cuMemHostUnregister(b->host));
    }
    tm_libc_munmap(b->host, b->bytes);
    b->host = NULL;
    *tier = b->plan.run[0].tier;
    return *result == CUDA_ERROR_OUT_OF_MEMORY ? TM_BACKING_TIER_FULL : TM_BACKING_INTERNAL;
}

/* ---------------------------------------------------------------- both */

tm_backing_failure tm_backing_create(const tm_plan *plan, const tm_backing_target *target, tm_backing_reuse *reuse,
                                     tm_backing **out, tm_tier_id *tier, CUresult *result)
{
    bool pinned = target->pinned_host && plan->per_tier[TM_TIER_HBM] == 0;
    size_t handles = pinned ? 0 : (size_t)plan->chunks;
    tm_backing *b = calloc(1, sizeof *b + handles * sizeof b->handle[0]);
    if (!b) {
        *result = CUDA_ERROR_OUT_OF_MEMORY;
        return TM_BACKING_INTERNAL;
    }
    b->plan = *plan;
    b->bytes = plan->chunks * plan->chunk_size;
    b->pinned_host = pinned;
    *tier = TM_TIER_COUNT;
    tm_backing_failure failure = pinned ? pinned_create(b, target, tier, result)
                                          : vmm_create(b, target, reuse, tier, result);
    if (failure != TM_BACKING_OK) {
        free(b);
        return failure;
    }
    *out = b;
    return TM_BACKING_OK;
}

tm_tier_id tm_backing_chunk_tier(const tm_backing *b, uint64_t index)
{
    return b->tier ? (tm_tier_id)b->tier[index] : tm_plan_chunk_tier(&b->plan, index);
}

void tm_backing_untrack_tiers(tm_backing *b)
{
    free(b->tier);
    free(b->moved);
    free(b->left);
    b->tier = NULL;
    b->moved = NULL;
    b->left = NULL;
}

bool tm_backing_track_tiers(tm_backing *b)
{
    if (b->tier)
        return true;
    b->moved = calloc(b->plan.chunks, sizeof *b->moved);
    b->left = calloc(b->plan.chunks, sizeof *b->left);
    b->tier = b->moved && b->left ? malloc((size_t)b->plan.chunks) : NULL;
    if (!b->tier) {
        tm_backing_untrack_tiers(b);
        return false;
    }
    for (uint64_t i = 0; i < b->plan.chunks; i++)
        b->tier[i] = (uint8_t)tm_plan_chunk_tier(&b->plan, i);
    return true;
}

CUmemGenericAllocationHandle tm_backing_set_chunk(tm_backing *b, uint64_t index, tm_tier_id tier,
                                                  CUmemGenericAllocationHandle handle)
{
    tm_tier_id from = (tm_tier_id)b->tier[index];
    CUmemGenericAllocationHandle old = b->handle[index];
    if (from != TM_TIER_DROPPED)
        b->plan.per_tier[from]--;
    if (tier != TM_TIER_DROPPED)
        b->plan.per_tier[tier]++;
    b->tier[index] = (uint8_t)tier;
    b->handle[index] = handle;
    return old;
}

uint32_t tm_backing_last_move(const tm_backing *b, uint64_t index, tm_tier_id *left)
{
    if (!b->moved)
        return 0;
    if (left)
        *left = (tm_tier_id)b->left[index];
    return b->moved[index];
}

void tm_backing_record_move(tm_backing *b, uint64_t index, uint32_t pass, tm_tier_id from)
{
    b->moved[index] = pass;
    b->left[index] = (uint8_t)from;
}

bool tm_backing_replace_chunk(tm_backing *b, uint64_t index, tm_tier_id tier, const tm_backing_target *target)
{
    if (b->pinned_host || index >= b->plan.chunks)
        return false;
    if (!tm_backing_track_tiers(b))
        return false;
    uint64_t chunk = b->plan.chunk_size;
    CUdeviceptr at = b->base + index * chunk;
    CUmemAllocationProp prop = chunk_properties(target, tier);
    CUmemGenericAllocationHandle fresh;
    if (tm_real.cuMemCreate(&fresh, chunk, &prop, 0) != CUDA_SUCCESS)
        return false;
    CUmemAccessDesc access[TM_BACKING_ACCESS_MAX];
    size_t access_count = tm_backing_access(target, access);
    if (tm_real.cuMemUnmap(at, chunk) != CUDA_SUCCESS) {
        tm_release_call(tm_real.cuMemRelease(fresh));
        return false;
    }
    if (tm_real.cuMemMap(at, chunk, 0, fresh, 0) != CUDA_SUCCESS ||
        tm_real.cuMemSetAccess(at, chunk, access, access_count) != CUDA_SUCCESS) {
        /* put the old handle back: the program must keep a mapped address */
        tm_real.cuMemUnmap(at, chunk);
        tm_release_call(tm_real.cuMemRelease(fresh));
        if (tm_real.cuMemMap(at, chunk, 0, b->handle[index], 0) != CUDA_SUCCESS ||
            tm_real.cuMemSetAccess(at, chunk, access, access_count) != CUDA_SUCCESS)
            tm_log_once(TM_LOG_ERROR, "a chunk at 0x%llx could not be mapped again after a failed move",
                        (unsigned long long)at);
        return false;
    }
    tm_release_call(tm_real.cuMemRelease(tm_backing_set_chunk(b, index, tier, fresh)));
    return true;
}

void tm_backing_destroy(tm_backing *b)
{
    tm_backing_destroy_keeping(b, NULL, NULL);
}

void tm_backing_destroy_keeping(tm_backing *b, tm_backing_keep keep, void *arg)
{
    if (b->pinned_host) {
        tm_release_call(tm_real.cuMemHostUnregister(b->host));
        tm_libc_munmap(b->host, b->bytes);
    } else if (!keep) {
        vmm_undo(b, b->plan.chunks);
    } else {
        vmm_unmap(b, b->plan.chunks);
        for (uint64_t i = 0; i < b->plan.chunks; i++)
            if (!chunk_dropped(b, i))
                keep(arg, tm_backing_chunk_tier(b, i), b->handle[i]);
        tm_release_call(tm_real.cuMemAddressFree(b->base, b->bytes));
    }
    tm_backing_untrack_tiers(b);
    free(b);
}

/* ---------------------------------------------------------------- the remap lock */

static pthread_mutex_t remap_mutex = PTHREAD_MUTEX_INITIALIZER;

void tm_remap_lock(void)
{
    pthread_mutex_lock(&remap_mutex);
}

void tm_remap_unlock(void)
{
    pthread_mutex_unlock(&remap_mutex);
}

void tm_remap_lock_forget_in_child(void)
{
    pthread_mutex_init(&remap_mutex, NULL);
}
