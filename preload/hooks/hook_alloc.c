/* hook_alloc.c — every way a program allocates device memory: cuMemAlloc, pitch, async
 * and pool allocations, managed memory, and their frees. Each request is served by the
 * core (mem/alloc.h): routed once, then chunked across the tiers, or passed to the driver
 * (the call given here) and counted. */
#include <pthread.h>
#include <stdlib.h>
#include <uthash.h>

#include "preload/mem/alloc.h"
#include "preload/hooks/hook.h"
#include "preload/hooks/hook_pool.h"
#include "preload/mem/stream_free.h"

/* ---------------------------------------------------------------- the shared path */

typedef struct stream_args {
    CUstream stream;
    CUmemoryPool pool;
} stream_args;

/* Frees through the interposer when it tracks `dptr`; *handled false means "not ours". */
static CUresult release(CUdeviceptr dptr, tm_wait wait, CUstream stream, bool *handled,
                        CUresult (*driver_free)(CUdeviceptr dptr, CUstream stream))
{
    *handled = true;
    tm_stream_free_drain();
    tm_pool_usage_freed(dptr);
    tm_alloc *a = tm_untrack(dptr);
    if (!a) {
        *handled = false;
        return CUDA_SUCCESS;
    }
    if ((a->backing || a->baseline) && wait != TM_WAIT_CONTEXT) {
        tm_stream_free(a, stream, wait == TM_WAIT_STREAM_PTSZ);
        return CUDA_SUCCESS;
    }
    if (a->backing || a->baseline) {
        tm_free_chunked(a, wait, stream);
        return CUDA_SUCCESS;
    }
    CUresult result = driver_free(dptr, stream);
    if (result == CUDA_SUCCESS)
        tm_forget(a);
    else
        tm_retrack(a);
    return result;
}

/* A stream-ordered allocation tiermem served counts in its pool (hook_pool.h). */
static CUresult pool_served(CUresult result, const CUdeviceptr *dptr, CUmemoryPool pool)
{
    if (result == CUDA_SUCCESS && dptr)
        tm_pool_usage_served(*dptr, pool);
    return result;
}

/* ---------------------------------------------------------------- cuMemAlloc, cuMemFree */

static CUresult driver_mem_alloc(CUdeviceptr *dptr, size_t bytes, const void *args)
{
    (void)args;
    return tm_real.cuMemAlloc_v2(dptr, bytes);
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    TM_HOOK_ENTER(cuMemAlloc_v2);
    return tm_alloc_serve(bytesize, TM_PATH_MEM_ALLOC, dptr, driver_mem_alloc, NULL);
}

static CUresult driver_mem_free(CUdeviceptr dptr, CUstream stream)
{
    (void)stream;
    return tm_real.cuMemFree_v2(dptr);
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    TM_HOOK_ENTER(cuMemFree_v2);
    bool handled;
    CUresult result = release(dptr, TM_WAIT_CONTEXT, NULL, &handled, driver_mem_free);
    return handled ? result : tm_real.cuMemFree_v2(dptr);
}

/* ---------------------------------------------------------------- pitch */

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes)
{
    TM_HOOK_ENTER(cuMemAllocPitch_v2);
    tm_device *device = NULL;
    CUcontext ctx = NULL;
    size_t least = 0; /* the bytes without row padding: enough to route */
    bool valid = dptr && pPitch && WidthInBytes && Height &&
                 (ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16) &&
                 !__builtin_mul_overflow(WidthInBytes, Height, &least);
    tm_route route = valid ? tm_route_allocation(least, &device, &ctx) : TM_ROUTE_DRIVER;
    if (route == TM_ROUTE_CHUNKED) {
        /* the driver's pitch for this width, learnt from a one-row allocation */
        CUdeviceptr probe;
        size_t pitch, bytes;
        if (tm_real.cuMemAllocPitch_v2(&probe, &pitch, WidthInBytes, 1, ElementSizeBytes) == CUDA_SUCCESS) {
            tm_release_call(tm_real.cuMemFree_v2(probe));
            CUresult result;
            if (!__builtin_mul_overflow(pitch, Height, &bytes) &&
                tm_alloc_chunked(device, ctx, bytes, TM_PATH_MEM_ALLOC_PITCH, dptr, &result)) {
                if (result == CUDA_SUCCESS)
                    *pPitch = pitch;
                return result;
            }
        }
    }
    CUresult result = tm_real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (result == CUDA_SUCCESS && route != TM_ROUTE_DRIVER)
        tm_track_driver_alloc(device, ctx, *dptr, *pPitch * Height, TM_PATH_MEM_ALLOC_PITCH, false);
    return result;
}

/* ---------------------------------------------------------------- managed */

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    TM_HOOK_ENTER(cuMemAllocManaged);
    CUresult result = tm_real.cuMemAllocManaged(dptr, bytesize, flags);
    CUcontext ctx;
    tm_device *device;
    if (result == CUDA_SUCCESS && (device = tm_device_current(&ctx)))
        tm_track_driver_alloc(device, ctx, *dptr, bytesize, TM_PATH_MEM_ALLOC_MANAGED, true);
    return result;
}

/* ---------------------------------------------------------------- stream-ordered */

static CUresult driver_alloc_async(CUdeviceptr *dptr, size_t bytes, const void *args)
{
    return tm_real.cuMemAllocAsync(dptr, bytes, ((const stream_args *)args)->stream);
}

static CUresult driver_alloc_async_ptsz(CUdeviceptr *dptr, size_t bytes, const void *args)
{
    return tm_real.cuMemAllocAsync_ptsz(dptr, bytes, ((const stream_args *)args)->stream);
}

/* Chunked memory is ready at once, which satisfies stream order. A capturing stream gets
 * the driver's own allocation node: the graph owns that memory's lifetime. */
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemAllocAsync);
    if (tm_stream_capturing(hStream, false))
        return tm_real.cuMemAllocAsync(dptr, bytesize, hStream);
    stream_args args = { .stream = hStream };
    return pool_served(tm_alloc_serve(bytesize, TM_PATH_MEM_ALLOC_ASYNC, dptr, driver_alloc_async, &args), dptr, NULL);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemAllocAsync_ptsz);
    if (tm_stream_capturing(hStream, true))
        return tm_real.cuMemAllocAsync_ptsz(dptr, bytesize, hStream);
    stream_args args = { .stream = hStream };
    return pool_served(tm_alloc_serve(bytesize, TM_PATH_MEM_ALLOC_ASYNC, dptr, driver_alloc_async_ptsz, &args), dptr,
                       NULL);
}

static CUresult driver_free_async(CUdeviceptr dptr, CUstream stream)
{
    return tm_real.cuMemFreeAsync(dptr, stream);
}

static CUresult driver_free_async_ptsz(CUdeviceptr dptr, CUstream stream)
{
    return tm_real.cuMemFreeAsync_ptsz(dptr, stream);
}

/* Chunked memory is released once the stream reaches the free (stream_free.h); the host
 * does not wait. */
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemFreeAsync);
    bool handled;
    CUresult result = release(dptr, TM_WAIT_STREAM, hStream, &handled, driver_free_async);
    return handled ? result : tm_real.cuMemFreeAsync(dptr, hStream);
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemFreeAsync_ptsz);
    bool handled;
    CUresult result = release(dptr, TM_WAIT_STREAM_PTSZ, hStream, &handled, driver_free_async_ptsz);
    return handled ? result : tm_real.cuMemFreeAsync_ptsz(dptr, hStream);
}

/* ---------------------------------------------------------------- pools */

/* Pools whose memory must come from the driver: a host location, or handles meant to
 * be shared with other processes. Pools the program did not create here (the device's
 * default pool) are plain device pools. */
typedef struct driver_pool {
    CUmemoryPool pool;
    UT_hash_handle hh;
} driver_pool;

static driver_pool *driver_pools;
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;

static bool pool_is_drivers(CUmemoryPool pool)
{
    if (__atomic_load_n(&driver_pools, __ATOMIC_RELAXED) == NULL)
        return false;
    pthread_mutex_lock(&pools_lock);
    driver_pool *found;
    HASH_FIND_PTR(driver_pools, &pool, found);
    pthread_mutex_unlock(&pools_lock);
    return found != NULL;
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    TM_HOOK_ENTER(cuMemPoolCreate);
    CUresult result = tm_real.cuMemPoolCreate(pool, poolProps);
    if (result == CUDA_SUCCESS && poolProps &&
        (poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE || poolProps->handleTypes != CU_MEM_HANDLE_TYPE_NONE)) {
        driver_pool *entry = malloc(sizeof *entry);
        if (entry) {
            entry->pool = *pool;
            pthread_mutex_lock(&pools_lock);
            HASH_ADD_PTR(driver_pools, pool, entry);
            pthread_mutex_unlock(&pools_lock);
        }
    }
    return result;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    TM_HOOK_ENTER(cuMemPoolDestroy);
    pthread_mutex_lock(&pools_lock);
    driver_pool *found;
    HASH_FIND_PTR(driver_pools, &pool, found);
    if (found) {
        HASH_DEL(driver_pools, found);
        free(found);
    }
    pthread_mutex_unlock(&pools_lock);
    tm_pool_usage_forget_pool(pool);
    return tm_real.cuMemPoolDestroy(pool);
}

static CUresult driver_alloc_pool(CUdeviceptr *dptr, size_t bytes, const void *args)
{
    const stream_args *a = args;
    return tm_real.cuMemAllocFromPoolAsync(dptr, bytes, a->pool, a->stream);
}

static CUresult driver_alloc_pool_ptsz(CUdeviceptr *dptr, size_t bytes, const void *args)
{
    const stream_args *a = args;
    return tm_real.cuMemAllocFromPoolAsync_ptsz(dptr, bytes, a->pool, a->stream);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemAllocFromPoolAsync);
    if (pool_is_drivers(pool) || tm_stream_capturing(hStream, false))
        return tm_real.cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
    stream_args args = { .stream = hStream, .pool = pool };
    return pool_served(tm_alloc_serve(bytesize, TM_PATH_MEM_ALLOC_POOL, dptr, driver_alloc_pool, &args), dptr, pool);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
    TM_HOOK_ENTER(cuMemAllocFromPoolAsync_ptsz);
    if (pool_is_drivers(pool) || tm_stream_capturing(hStream, true))
        return tm_real.cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream);
    stream_args args = { .stream = hStream, .pool = pool };
    return pool_served(tm_alloc_serve(bytesize, TM_PATH_MEM_ALLOC_POOL, dptr, driver_alloc_pool_ptsz, &args), dptr,
                       pool);
}
