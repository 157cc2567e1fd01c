/* sim_memory.c — classic device memory (cuMemAlloc and friends, async allocation from
 * memory pools, managed memory), pinned and registered host memory, memory information
 * and pointer attributes.
 *
 * Device memory is host memory: small allocations come from posix_memalign (so that
 * 100 000 live allocations do not exhaust the process's mapping limit) and are filled
 * with a poison byte, as a GPU never hands out zeroed memory; large ones are fresh
 * anonymous mappings. cuMemAlloc memory counts against SIMCUDA_MEM; managed memory does
 * not (it may oversubscribe, as on a real device). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tools/simcuda/sim_internal.h"

#define SMALL_ALLOCATION_LIMIT ((size_t)1 << 20)
#define POISON_BYTE 0xA5

static size_t round_up(size_t value, size_t to)
{
    return (value + to - 1) / to * to;
}

/* ---------------------------------------------------------------- backing memory */

static void *backing_alloc(size_t bytes, size_t *backing_size, bool *from_mmap, bool poison)
{
    void *p = NULL;
    if (bytes < SMALL_ALLOCATION_LIMIT) {
        *backing_size = round_up(bytes, SIM_ALLOC_ALIGN);
        *from_mmap = false;
        if (posix_memalign(&p, SIM_ALLOC_ALIGN, *backing_size) != 0)
            return NULL;
        if (poison)
            memset(p, POISON_BYTE, *backing_size);
        return p;
    }
    *backing_size = round_up(bytes, (size_t)sysconf(_SC_PAGESIZE));
    *from_mmap = true;
    p = mmap(NULL, *backing_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void backing_free(sim_region *region)
{
    if (region->from_mmap)
        munmap((void *)region->base, region->backing_size);
    else
        free((void *)region->base);
}

/* Lock held: unlinks a region, returns its device bytes to the capacity, frees it. */
static void region_destroy(sim_region *region)
{
    sim_region_delete(TREE_REGIONS, region);
    sim_ipc_region_gone(region);
    if (region->kind == REGION_DEVICE && region->ipc_opens == 0) {
        if (!region->managed)
            sim_device_release(region->ctx ? region->ctx->device : 0, region->backing_size);
        else
            sim_managed_remove(region->base);
        if (region->pool)
            region->pool->used -= region->backing_size;
        sim.live_device_allocations--;
    }
    if (region->kind != REGION_HOST_REGISTERED)
        backing_free(region);
    free(region);
}

/* ---------------------------------------------------------------- cuMemAlloc family */

CUresult sim_device_alloc(CUdeviceptr *dptr, size_t bytes, bool managed, sim_pool *pool)
{
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_region *region = calloc(1, sizeof *region);
    if (!region)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    if (result != CUDA_SUCCESS)
        goto fail;
    size_t charged = bytes < SMALL_ALLOCATION_LIMIT ? round_up(bytes, SIM_ALLOC_ALIGN)
                                                    : round_up(bytes, (size_t)sysconf(_SC_PAGESIZE));
    if (!managed && !sim_device_reserve(ctx->device, charged)) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    void *p = backing_alloc(bytes, &region->backing_size, &region->from_mmap, true);
    if (!p) {
        if (!managed)
            sim_device_release(ctx->device, charged);
        result = CUDA_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    region->base = (uintptr_t)p;
    region->size = bytes;
    region->kind = REGION_DEVICE;
    region->ctx = ctx;
    region->managed = managed;
    region->pool = pool;
    region->id = ++sim.next_id;
    if (pool) {
        pool->used += region->backing_size;
        if (pool->used > pool->used_high)
            pool->used_high = pool->used;
    }
    sim_region_insert(TREE_REGIONS, region);
    if (managed)
        sim_managed_add(region->base, bytes);
    sim.live_device_allocations++;
    sim_unlock();
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
fail:
    sim_unlock();
    free(region);
    return result;
}

/* Frees the region of `kind` that starts exactly at p; `missing` when there is none.
 * Queued work may still use it (SIMCUDA_ASYNC): like cuMemFree on a GPU, it waits. */
static CUresult destroy_region_at(uintptr_t p, sim_region_kind kind, CUresult missing)
{
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    if (result == CUDA_SUCCESS) {
        sim_async_wait_all();
        sim_region *region = sim_region_find(TREE_REGIONS, p);
        if (!region || region->kind != kind || region->base != p || region->ipc_opens > 0)
            result = missing; /* memory opened with cuIpcOpenMemHandle is closed, not freed */
        else
            region_destroy(region);
    }
    sim_unlock();
    return result;
}

CUresult sim_device_free(CUdeviceptr dptr)
{
    return destroy_region_at((uintptr_t)dptr, REGION_DEVICE, CUDA_ERROR_INVALID_VALUE);
}

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
    SIM_FAIL_POINT(cuMemAlloc_v2);
    return sim_device_alloc(dptr, bytes, false, NULL);
}

SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width_bytes, size_t height,
                                       unsigned int element_size)
{
    SIM_FAIL_POINT(cuMemAllocPitch_v2);
    if (!dptr || !pitch || width_bytes == 0 || height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (element_size != 4 && element_size != 8 && element_size != 16)
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = round_up(width_bytes, SIM_PITCH_ALIGN);
    if (height > SIZE_MAX / row)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_device_alloc(dptr, row * height, false, NULL);
    if (result == CUDA_SUCCESS)
        *pitch = row;
    return result;
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    SIM_FAIL_POINT(cuMemFree_v2);
    /* Freeing 0 does nothing, as free(NULL): the 13.0 runtime forwards cudaFree(0). */
    if (dptr == 0)
        return sim_current_context(NULL);
    return sim_device_free(dptr);
}

SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags)
{
    SIM_FAIL_POINT(cuMemAllocManaged);
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_device_alloc(dptr, bytes, true, NULL);
}

/* ---------------------------------------------------------------- memory pools */

/* On a capturing stream the memory becomes the graph's (sim_graph.c). */
static CUresult owned_by_capture(sim_stream *stream, CUresult result, CUdeviceptr *dptr)
{
    if (result == CUDA_SUCCESS && stream) {
        sim_lock();
        if (stream->capture)
            sim_graph_capture_alloc(stream, *dptr);
        sim_unlock();
    }
    return result;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream handle)
{
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    return owned_by_capture(stream, sim_device_alloc(dptr, bytes, false, sim.default_pool), dptr);
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream handle)
{
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_pool *p = sim_object_find(pool, SIM_POOL);
    sim_unlock();
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return owned_by_capture(stream, sim_device_alloc(dptr, bytes, false, p), dptr);
}

static CUresult free_async(CUdeviceptr dptr, CUstream handle)
{
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool captured = stream && stream->capture;
    if (captured)
        result = sim_graph_capture_free(stream, dptr);
    sim_unlock();
    return captured ? result : sim_device_free(dptr);
}

SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream stream)
{ SIM_FAIL_POINT(cuMemAllocAsync); return alloc_async(dptr, bytes, stream); }
SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream stream)
{ SIM_FAIL_POINT(cuMemAllocAsync_ptsz); return alloc_async(dptr, bytes, stream); }
SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream)
{ SIM_FAIL_POINT(cuMemAllocFromPoolAsync); return alloc_from_pool(dptr, bytes, pool, stream); }
SIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream)
{ SIM_FAIL_POINT(cuMemAllocFromPoolAsync_ptsz); return alloc_from_pool(dptr, bytes, pool, stream); }
SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{ SIM_FAIL_POINT(cuMemFreeAsync); return free_async(dptr, stream); }
SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{ SIM_FAIL_POINT(cuMemFreeAsync_ptsz); return free_async(dptr, stream); }

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice device)
{
    SIM_FAIL_POINT(cuDeviceGetDefaultMemPool);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = (CUmemoryPool)sim.default_pool;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice device)
{
    SIM_FAIL_POINT(cuDeviceGetMemPool);
    return cuDeviceGetDefaultMemPool(pool, device);
}

SIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    SIM_FAIL_POINT(cuMemPoolCreate);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return sim_not_supported("cuMemPoolCreate with a host location");
    if (props->location.id != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sim_pool *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_object_add(&p->obj, SIM_POOL);
    sim_unlock();
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

static void free_pool_allocation(sim_region *region, void *pool)
{
    if (region->kind == REGION_DEVICE && region->pool == pool)
        region->pool = NULL; /* the caller frees it below */
}

SIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    SIM_FAIL_POINT(cuMemPoolDestroy);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_pool *p = sim_object_find(pool, SIM_POOL);
    if (!p || p->is_default) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Allocations still live keep working; they simply stop counting against the pool. */
    sim_region_each(TREE_REGIONS, free_pool_allocation, p);
    sim_object_remove(&p->obj);
    sim_unlock();
    free(p);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    SIM_FAIL_POINT(cuMemPoolTrimTo);
    (void)keep;
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool live = sim_object_find(pool, SIM_POOL) != NULL;
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void *value)
{
    SIM_FAIL_POINT(cuMemPoolSetAttribute);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_pool *p = sim_object_find(pool, SIM_POOL);
    if (!p)
        result = CUDA_ERROR_INVALID_VALUE;
    else if (attribute == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        p->release_threshold = *(cuuint64_t *)value;
    else if (attribute == CU_MEMPOOL_ATTR_USED_MEM_HIGH || attribute == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
        p->used_high = p->used; /* only resetting is allowed */
    else if (attribute != CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
             attribute != CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC &&
             attribute != CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
        result = CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void *value)
{
    SIM_FAIL_POINT(cuMemPoolGetAttribute);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_pool *p = sim_object_find(pool, SIM_POOL);
    if (!p) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        switch (attribute) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->release_threshold; break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = 1; break;
        default: result = CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- host memory */

static CUresult host_alloc(void **pp, size_t bytes, unsigned int flags)
{
    if (!pp || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_region *region = calloc(1, sizeof *region);
    if (!region)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    void *p = NULL;
    if (result == CUDA_SUCCESS) {
        p = backing_alloc(bytes, &region->backing_size, &region->from_mmap, false);
        if (!p)
            result = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (result != CUDA_SUCCESS) {
        sim_unlock();
        free(region);
        return result;
    }
    region->base = (uintptr_t)p;
    region->size = bytes;
    region->kind = REGION_HOST_ALLOC;
    region->ctx = ctx;
    region->host_flags = flags;
    region->id = ++sim.next_id;
    sim_region_insert(TREE_REGIONS, region);
    sim_unlock();
    *pp = p;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytes)
{
    SIM_FAIL_POINT(cuMemAllocHost_v2);
    return host_alloc(pp, bytes, 0);
}

SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
    SIM_FAIL_POINT(cuMemHostAlloc);
    if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return host_alloc(pp, bytes, flags);
}

SIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    SIM_FAIL_POINT(cuMemFreeHost);
    return destroy_region_at((uintptr_t)p, REGION_HOST_ALLOC, CUDA_ERROR_INVALID_VALUE);
}

/* True when every page of [p, p + bytes) is mapped in this process. */
static bool host_range_mapped(void *p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)p & ~(page - 1);
    uintptr_t end = round_up((uintptr_t)p + bytes, page);
    return madvise((void *)start, end - start, MADV_NORMAL) == 0;
}

SIM_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)
{
    SIM_FAIL_POINT(cuMemHostRegister_v2);
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                           CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (!p || bytes == 0 || (flags & ~known) || (uintptr_t)p + bytes < (uintptr_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & CU_MEMHOSTREGISTER_IOMEMORY)
        return sim_not_supported("cuMemHostRegister with CU_MEMHOSTREGISTER_IOMEMORY");
    if (!host_range_mapped(p, bytes))
        return CUDA_ERROR_INVALID_VALUE;
    sim_region *region = calloc(1, sizeof *region);
    if (!region)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS) {
        /* Any overlap with memory the driver already knows is an error. */
        if (sim_region_overlap(TREE_REGIONS, (uintptr_t)p, bytes))
            result = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (result == CUDA_SUCCESS) {
        region->base = (uintptr_t)p;
        region->size = bytes;
        region->backing_size = bytes;
        region->kind = REGION_HOST_REGISTERED;
        region->ctx = ctx;
        region->host_flags = flags;
        region->id = ++sim.next_id;
        sim_region_insert(TREE_REGIONS, region);
    }
    sim_unlock();
    if (result != CUDA_SUCCESS)
        free(region);
    return result;
}

SIM_EXPORT CUresult cuMemHostUnregister(void *p)
{
    SIM_FAIL_POINT(cuMemHostUnregister);
    return destroy_region_at((uintptr_t)p, REGION_HOST_REGISTERED, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

SIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int flags)
{
    SIM_FAIL_POINT(cuMemHostGetDevicePointer_v2);
    if (!pdptr || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    if (result == CUDA_SUCCESS) {
        sim_region *region = sim_region_find(TREE_REGIONS, (uintptr_t)p);
        if (!region || (region->kind != REGION_HOST_ALLOC && region->kind != REGION_HOST_REGISTERED))
            result = CUDA_ERROR_INVALID_VALUE;
        else
            *pdptr = (CUdeviceptr)p;
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    SIM_FAIL_POINT(cuMemHostGetFlags);
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    if (result == CUDA_SUCCESS) {
        sim_region *region = sim_region_find(TREE_REGIONS, (uintptr_t)p);
        if (!region || region->kind != REGION_HOST_ALLOC)
            result = CUDA_ERROR_INVALID_VALUE;
        else
            *flags = region->host_flags;
    }
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- context teardown */

struct region_list {
    sim_region **items;
    size_t count, capacity;
    sim_context *ctx;
};

static void collect_owned(sim_region *region, void *arg)
{
    struct region_list *list = arg;
    if (region->ctx != list->ctx || region->kind == REGION_MAPPING)
        return;
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? list->capacity * 2 : 64;
        sim_region **items = realloc(list->items, capacity * sizeof *items);
        if (!items)
            return;
        list->items = items;
        list->capacity = capacity;
    }
    list->items[list->count++] = region;
}

void sim_memory_release_context(sim_context *ctx)
{
    struct region_list list = { .ctx = ctx };
    sim_region_each(TREE_REGIONS, collect_owned, &list);
    for (size_t i = 0; i < list.count; i++)
        region_destroy(list.items[i]);
    free(list.items);
}

/* ---------------------------------------------------------------- information */

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    SIM_FAIL_POINT(cuMemGetInfo_v2);
    if (!free_bytes || !total_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_context *ctx = NULL;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS) {
        *free_bytes = sim.config.device_capacities[ctx->device] - sim.device_used_of[ctx->device];
        *total_bytes = sim.config.device_capacities[ctx->device];
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    SIM_FAIL_POINT(cuMemGetAddressRange_v2);
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    if (result == CUDA_SUCCESS) {
        sim_region *region = sim_region_find(TREE_REGIONS, (uintptr_t)dptr);
        if (!region || region->kind == REGION_HOST_REGISTERED) {
            result = CUDA_ERROR_NOT_FOUND;
        } else {
            if (pbase)
                *pbase = (CUdeviceptr)region->base;
            if (psize)
                *psize = region->size;
        }
    }
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- pointer attributes */

static CUmemorytype region_memory_type(const sim_region *region)
{
    switch (region->kind) {
    case REGION_DEVICE: return CU_MEMORYTYPE_DEVICE;
    case REGION_MAPPING:
        return region->phys->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? CU_MEMORYTYPE_DEVICE
                                                                               : CU_MEMORYTYPE_HOST;
    default: return CU_MEMORYTYPE_HOST;
    }
}

/* Boolean attributes are written as int. Lock held. `region` may be NULL (unknown
 * pointer): then only cuPointerGetAttributes' defaults are written. */
static CUresult attribute_value(void *data, CUpointer_attribute attribute, uintptr_t ptr,
                                const sim_region *region, bool defaults_for_unknown)
{
    if (!region && !defaults_for_unknown && attribute != CU_POINTER_ATTRIBUTE_MAPPED)
        return CUDA_ERROR_INVALID_VALUE;
    bool known = region != NULL;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = known && region->kind != REGION_MAPPING ? (CUcontext)region->ctx : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = known ? (unsigned)region_memory_type(region) : 0;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = known ? (CUdeviceptr)ptr : 0;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (known && region->kind == REGION_DEVICE && !region->managed && !defaults_for_unknown)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = known && (region->kind != REGION_DEVICE || region->managed) ? (void *)ptr : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        *(int *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = known ? region->id : 0;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = known && region->managed;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        if (!known)
            *(int *)data = -2;
        else if (region->kind == REGION_MAPPING && region->phys->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
            *(int *)data = region->phys->prop.location.id;
        else
            *(int *)data = region->ctx ? region->ctx->device : 0;
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        /* simcuda shares memory it can back with a memfd: allocations of 1 MiB or more */
        *(int *)data = known && region->kind == REGION_DEVICE && !region->pool && !region->managed &&
                       region->from_mmap && region->ipc_opens == 0;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        /* The mappable range: for VMM memory the reservation, not the mapping. */
        const sim_region *range = known && region->kind == REGION_MAPPING
                                      ? sim_region_find(TREE_RESERVATIONS, region->base) : region;
        if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
            *(void **)data = range ? (void *)range->base : NULL;
        else
            *(size_t *)data = range ? range->size : 0;
        break;
    }
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(void **)data = known ? (void *)region->base : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = known ? region->size : 0;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = known;
        break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = known && region->kind == REGION_MAPPING ? region->phys->prop.requestedHandleTypes : 0;
        break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
        CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS flags = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
        if (known && region->kind != REGION_MAPPING)
            flags = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        else if (known && region->access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            flags = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        else if (known && region->access == CU_MEM_ACCESS_FLAGS_PROT_READ)
            flags = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ;
        *(int *)data = (int)flags;
        break;
    }
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = known ? (CUmemoryPool)region->pool : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *(unsigned long long *)data = !known ? 0 : region->kind == REGION_MAPPING ? (unsigned long long)region->phys->obj.key : region->id;
        break;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        return sim_not_supported("cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_P2P_TOKENS)");
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    SIM_FAIL_POINT(cuPointerGetAttribute);
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_check_init();
    if (result == CUDA_SUCCESS) {
        sim_region *region = sim_region_find(TREE_REGIONS, (uintptr_t)ptr);
        result = attribute_value(data, attribute, (uintptr_t)ptr, region, false);
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute *attributes, void **data,
                                           CUdeviceptr ptr)
{
    SIM_FAIL_POINT(cuPointerGetAttributes);
    if (count == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_check_init();
    if (result == CUDA_SUCCESS) {
        sim_region *region = sim_region_find(TREE_REGIONS, (uintptr_t)ptr);
        for (unsigned i = 0; i < count && result == CUDA_SUCCESS; i++)
            if (data[i])
                result = attribute_value(data[i], attributes[i], (uintptr_t)ptr, region, true);
    }
    sim_unlock();
    return result;
}
