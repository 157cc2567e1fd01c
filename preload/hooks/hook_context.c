/* hook_context.c — a context takes its allocations with it. Chunked memory belongs to the
 * interposer, not to the context, so it is released here; memory the driver made goes
 * with the context and is only forgotten. Peer access a context enables reaches the
 * chunks of the peer's device. */
#include "preload/mem/alloc.h"
#include "preload/hooks/hook.h"
#include "preload/mem/stream_free.h"

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    TM_HOOK_ENTER(cuCtxDestroy_v2);
    if (ctx) {
        tm_stream_free_finish(ctx, true);
        tm_release_context(ctx, true);
    }
    return tm_real.cuCtxDestroy_v2(ctx);
}

/* The primary context's handle is learnt here, so that releasing it can find its
 * allocations. */
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    TM_HOOK_ENTER(cuDevicePrimaryCtxRetain);
    CUresult result = tm_real.cuDevicePrimaryCtxRetain(pctx, dev);
    tm_device *device = tm_device_of(dev);
    if (result == CUDA_SUCCESS && device)
        device->primary_ctx = *pctx;
    return result;
}

static bool primary_active(CUdevice dev)
{
    unsigned int flags;
    int active = 1;
    return tm_real.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || active;
}

/* The primary context of `dev`, if that device is tiered. A runtime retains it before
 * the first allocation sets the device up, so it may not have been seen: then the driver
 * is asked (a retain and release of an active context changes nothing). */
static CUcontext known_primary(CUdevice dev)
{
    tm_device *device = tm_device_of(dev);
    if (!device)
        return NULL;
    CUcontext primary = __atomic_load_n(&device->primary_ctx, __ATOMIC_ACQUIRE);
    if (!primary && primary_active(dev) && tm_real.cuDevicePrimaryCtxRetain(&primary, dev) == CUDA_SUCCESS) {
        tm_real.cuDevicePrimaryCtxRelease_v2(dev);
        __atomic_store_n(&device->primary_ctx, primary, __ATOMIC_RELEASE);
    }
    return primary;
}

/* After the driver released the primary context of `dev` (either ABI) with `result`. */
static CUresult after_primary_release(CUdevice dev, CUresult result)
{
    CUcontext primary = known_primary(dev);
    if (result == CUDA_SUCCESS && primary && !primary_active(dev)) {
        tm_stream_free_finish(primary, false);
        tm_release_context(primary, false); /* the last release destroyed it */
    }
    return result;
}

/* Before the driver resets the primary context of `dev` (either ABI). */
static void before_primary_reset(CUdevice dev)
{
    CUcontext primary = known_primary(dev);
    if (primary) {
        tm_stream_free_finish(primary, primary_active(dev));
        tm_release_context(primary, primary_active(dev));
    }
}

/* The runtime reaches the first ABIs through cuGetProcAddress at version 7000. */
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    TM_HOOK_ENTER(cuDevicePrimaryCtxRelease);
    return after_primary_release(dev, tm_real.cuDevicePrimaryCtxRelease(dev));
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    TM_HOOK_ENTER(cuDevicePrimaryCtxRelease_v2);
    return after_primary_release(dev, tm_real.cuDevicePrimaryCtxRelease_v2(dev));
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    TM_HOOK_ENTER(cuDevicePrimaryCtxReset);
    before_primary_reset(dev);
    return tm_real.cuDevicePrimaryCtxReset(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    TM_HOOK_ENTER(cuDevicePrimaryCtxReset_v2);
    before_primary_reset(dev);
    return tm_real.cuDevicePrimaryCtxReset_v2(dev);
}

/* Peer access: tiered ranges of the peer's device become accessible to this one. */
CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    TM_HOOK_ENTER(cuCtxEnablePeerAccess);
    CUresult result = tm_real.cuCtxEnablePeerAccess(peerContext, Flags);
    CUdevice accessor;
    tm_device *owner;
    if (result == CUDA_SUCCESS && (owner = tm_device_peer_enabled(peerContext, &accessor)))
        tm_grant_peer_access(owner, accessor);
    return result;
}
