/* sim_context.c — contexts: the primary context (retain/release/reset), created
 * contexts, and each thread's stack of current contexts.
 *
 * Destroying a context runs the destructors of its context-local storage, then frees
 * everything it owns (allocations, host memory, streams, events, modules). VMM objects belong to the device and survive contexts, as on the
 * real driver. */
#include <stdlib.h>

#include "tools/simcuda/sim_internal.h"

/* Each thread's context stack; the top is the current context. */
static __thread sim_context *ctx_stack[SIM_CTX_STACK_DEPTH];
static __thread int ctx_depth;

static bool context_live(sim_context *ctx)
{
    return sim_object_find(ctx, SIM_CONTEXT) && (!ctx->primary || ctx->primary_refs > 0);
}

CUresult sim_current_context_locked(sim_context **out)
{
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1])
        return CUDA_ERROR_INVALID_CONTEXT;
    sim_context *ctx = ctx_stack[ctx_depth - 1];
    if (!context_live(ctx))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (out)
        *out = ctx;
    return CUDA_SUCCESS;
}

CUresult sim_current_context(sim_context **out)
{
    sim_lock();
    CUresult result = sim_current_context_locked(out);
    sim_unlock();
    return result;
}

void sim_context_release_resources(sim_context *ctx)
{
    sim_library_release_context(ctx);
    sim_module_release_context(ctx);
    sim_stream_release_context(ctx);
    sim_memory_release_context(ctx);
}

/* ---------------------------------------------------------------- primary context */

static CUresult primary_check(CUdevice device)
{
    return sim_device_check(device);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice device)
{
    SIM_FAIL_POINT(cuDevicePrimaryCtxRetain);
    CUresult result = primary_check(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim.primaries[device]->primary_refs++;
    *pctx = (CUcontext)sim.primaries[device];
    sim_unlock();
    return CUDA_SUCCESS;
}

/* Releasing the last retain destroys the primary context: the runtime's context-local
 * destructors run first, while it is still live, then what it holds goes. */
static CUresult primary_release(CUdevice device)
{
    CUresult result = primary_check(device);
    if (result != CUDA_SUCCESS)
        return result;
    sim_context *ctx = sim.primaries[device];
    sim_lock();
    bool last = ctx->primary_refs == 1;
    sim_unlock();
    if (last)
        sim_local_destroy(ctx);
    sim_lock();
    if (ctx->primary_refs == 0) {
        result = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--ctx->primary_refs == 0) {
        sim_context_release_resources(ctx);
    }
    sim_unlock();
    return result;
}

/* Reset destroys what the context holds but not the callers' retains. */
static CUresult primary_reset(CUdevice device)
{
    CUresult result = primary_check(device);
    if (result != CUDA_SUCCESS)
        return result;
    sim_local_destroy(sim.primaries[device]);
    sim_lock();
    sim_context_release_resources(sim.primaries[device]);
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device)
{
    SIM_FAIL_POINT(cuDevicePrimaryCtxRelease_v2);
    return primary_release(device);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice device)
{
    SIM_FAIL_POINT(cuDevicePrimaryCtxReset_v2);
    return primary_reset(device);
}

/* The ABIs of CUDA 7.0, which the runtime still looks up (cudaDeviceReset uses them):
 * the same contract as _v2. cuda.h maps the names to _v2; both are exported. */
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
SIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device)
{
    SIM_FAIL_POINT(cuDevicePrimaryCtxRelease);
    return primary_release(device);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice device)
{
    SIM_FAIL_POINT(cuDevicePrimaryCtxReset);
    return primary_reset(device);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int *flags, int *active)
{
    SIM_FAIL_POINT(cuDevicePrimaryCtxGetState);
    CUresult result = primary_check(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    *flags = sim.primaries[device]->flags;
    *active = sim.primaries[device]->primary_refs > 0;
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned int flags)
{
    SIM_FAIL_POINT(cuDevicePrimaryCtxSetFlags_v2);
    CUresult result = primary_check(device);
    if (result != CUDA_SUCCESS)
        return result;
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    if ((flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_SYNC_MEMOPS)) ||
        (sched & (sched - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim.primaries[device]->flags = flags;
    sim_unlock();
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- created contexts */

static void push_current(sim_context *ctx)
{
    if (ctx_depth < SIM_CTX_STACK_DEPTH)
        ctx_stack[ctx_depth++] = ctx;
    else
        ctx_stack[ctx_depth - 1] = ctx;
}

static CUresult context_create(CUcontext *pctx, unsigned int flags, CUdevice device)
{
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (device < 0 || device >= sim.config.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    const unsigned known = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                           CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS;
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    if ((flags & ~known) || (sched & (sched - 1)))
        return CUDA_ERROR_INVALID_VALUE; /* at most one scheduling flag */
    sim_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx->device = device;
    ctx->flags = flags;
    sim_lock();
    ctx->id = ++sim.next_id;
    sim_object_add(&ctx->obj, SIM_CONTEXT);
    sim_unlock();
    push_current(ctx);
    *pctx = (CUcontext)ctx;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice device)
{
    SIM_FAIL_POINT(cuCtxCreate_v2);
    return context_create(pctx, flags, device);
}

SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int count,
                                   unsigned int flags, CUdevice device)
{
    SIM_FAIL_POINT(cuCtxCreate_v3);
    if (count < 0 || (count > 0 && !params))
        return CUDA_ERROR_INVALID_VALUE;
    if (count > 0)
        return sim_not_supported("cuCtxCreate_v3 with execution affinity");
    return context_create(pctx, flags, device);
}

SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                   CUdevice device)
{
    SIM_FAIL_POINT(cuCtxCreate_v4);
    if (params && (params->numExecAffinityParams > 0 || params->cigParams))
        return sim_not_supported("cuCtxCreate_v4 with affinity or CIG parameters");
    return context_create(pctx, flags, device);
}

SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext handle)
{
    SIM_FAIL_POINT(cuCtxDestroy_v2);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_context *ctx = sim_object_find(handle, SIM_CONTEXT);
    bool destroyable = ctx && !ctx->primary;
    sim_unlock();
    if (!destroyable)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* The runtime's context-local destructors run while the context still works. */
    sim_local_destroy(ctx);
    sim_lock();
    if (sim_object_find(handle, SIM_CONTEXT) != ctx) {
        sim_unlock();
        return CUDA_ERROR_INVALID_CONTEXT; /* destroyed meanwhile by another thread */
    }
    sim_context_release_resources(ctx);
    sim_object_remove(&ctx->obj);
    sim_unlock();
    /* The calling thread's stack forgets it; other threads see a destroyed context. */
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == ctx) {
            for (int j = i; j + 1 < ctx_depth; j++)
                ctx_stack[j] = ctx_stack[j + 1];
            ctx_depth--;
            i--;
        }
    free(ctx);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- current context */

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    SIM_FAIL_POINT(cuCtxGetCurrent);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = ctx_depth > 0 ? (CUcontext)ctx_stack[ctx_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext handle)
{
    SIM_FAIL_POINT(cuCtxSetCurrent);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (handle == NULL) {
        if (ctx_depth > 0)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    sim_lock();
    bool live = sim_object_find(handle, SIM_CONTEXT) != NULL;
    sim_unlock();
    if (!live)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0)
        ctx_stack[ctx_depth++] = (sim_context *)handle;
    else
        ctx_stack[ctx_depth - 1] = (sim_context *)handle;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext handle)
{
    SIM_FAIL_POINT(cuCtxPushCurrent_v2);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool live = sim_object_find(handle, SIM_CONTEXT) != NULL;
    sim_unlock();
    if (!live)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == SIM_CTX_STACK_DEPTH)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = (sim_context *)handle;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    SIM_FAIL_POINT(cuCtxPopCurrent_v2);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    sim_context *ctx = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = (CUcontext)ctx;
    return CUDA_SUCCESS;
}

/* Waits for every stream's queued work (SIMCUDA_ASYNC); the host clock moves to the end
 * of the device's simulated work. */
static CUresult ctx_synchronized(CUresult result)
{
    if (result == CUDA_SUCCESS) {
        sim_lock();
        sim_async_wait_all();
        sim_time_synchronize(sim_time_device_done());
        sim_unlock();
    }
    return result;
}

SIM_EXPORT CUresult cuCtxSynchronize(void)
{
    SIM_FAIL_POINT(cuCtxSynchronize);
    return ctx_synchronized(sim_current_context(NULL));
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext handle)
{
    SIM_FAIL_POINT(cuCtxSynchronize_v2);
    if (handle == NULL)
        return ctx_synchronized(sim_current_context(NULL));
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool live = sim_object_find(handle, SIM_CONTEXT) != NULL;
    sim_unlock();
    return ctx_synchronized(live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT);
}

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    SIM_FAIL_POINT(cuCtxGetDevice);
    sim_context *ctx;
    CUresult result = sim_current_context(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext handle)
{
    SIM_FAIL_POINT(cuCtxGetDevice_v2);
    if (handle == NULL)
        return cuCtxGetDevice(device);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_context *ctx = sim_object_find(handle, SIM_CONTEXT);
    if (ctx)
        *device = ctx->device;
    sim_unlock();
    return ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    SIM_FAIL_POINT(cuCtxGetFlags);
    sim_context *ctx;
    CUresult result = sim_current_context(&ctx);
    if (result != CUDA_SUCCESS)
        return result;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = ctx->flags;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext handle, unsigned int *version)
{
    SIM_FAIL_POINT(cuCtxGetApiVersion);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (handle == NULL) {
        result = sim_current_context(NULL);
        if (result != CUDA_SUCCESS)
            return result;
    } else {
        sim_lock();
        bool live = sim_object_find(handle, SIM_CONTEXT) != NULL;
        sim_unlock();
        if (!live)
            return CUDA_ERROR_INVALID_CONTEXT;
    }
    *version = 3020;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetId(CUcontext handle, unsigned long long *id)
{
    SIM_FAIL_POINT(cuCtxGetId);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    sim_context *ctx = NULL;
    if (handle == NULL) {
        result = sim_current_context(&ctx);
        if (result != CUDA_SUCCESS)
            return result;
    } else {
        sim_lock();
        ctx = sim_object_find(handle, SIM_CONTEXT);
        sim_unlock();
        if (!ctx)
            return CUDA_ERROR_INVALID_CONTEXT;
    }
    *id = ctx->id;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- peer access */

/* The current context may then reach the memory of the peer context's device (simcuda
 * checks it for VMM mappings, whose access is per device; see cuMemSetAccess). */
SIM_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int flags)
{
    SIM_FAIL_POINT(cuCtxEnablePeerAccess);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_context *ctx = NULL, *peer = sim_object_find(peerContext, SIM_CONTEXT);
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS && !peer)
        result = CUDA_ERROR_INVALID_CONTEXT;
    else if (result == CUDA_SUCCESS && peer->device == ctx->device)
        result = CUDA_ERROR_INVALID_DEVICE;
    else if (result == CUDA_SUCCESS && (ctx->peers & (1u << peer->device)))
        result = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    else if (result == CUDA_SUCCESS)
        ctx->peers |= 1u << peer->device;
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    SIM_FAIL_POINT(cuCtxDisablePeerAccess);
    sim_lock();
    sim_context *ctx = NULL, *peer = sim_object_find(peerContext, SIM_CONTEXT);
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS && !peer)
        result = CUDA_ERROR_INVALID_CONTEXT;
    else if (result == CUDA_SUCCESS && !(ctx->peers & (1u << peer->device)))
        result = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    else if (result == CUDA_SUCCESS)
        ctx->peers &= ~(1u << peer->device);
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- limits */

/* What a compute capability 9.0 GPU starts a context with. */
static size_t limit_default(CUlimit limit)
{
    switch (limit) {
    case CU_LIMIT_STACK_SIZE: return 1024;
    case CU_LIMIT_PRINTF_FIFO_SIZE: return (size_t)1 << 20;
    case CU_LIMIT_MALLOC_HEAP_SIZE: return (size_t)8 << 20;
    case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: return 2;
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: return 2048;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY: return 64;
    case CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED: return 1;
    default: return 0; /* persisting L2, and the CIG values of a context that is no CIG context */
    }
}

/* cuCtxGetLimit and cuCtxSetLimit of the current context (cuBLAS reads the stack size
 * before a GEMM). Values are kept, not acted on: no GPU code runs here. */
SIM_EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    SIM_FAIL_POINT(cuCtxGetLimit);
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    sim_lock();
    sim_context *ctx = NULL;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS)
        *pvalue = (ctx->limits_set & (1u << limit)) ? ctx->limits[limit] : limit_default(limit);
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    SIM_FAIL_POINT(cuCtxSetLimit);
    if ((unsigned)limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED) /* query only */
        return CUDA_ERROR_INVALID_VALUE;
    if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_context *ctx = NULL;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS) {
        ctx->limits[limit] = value;
        ctx->limits_set |= 1u << limit;
    }
    sim_unlock();
    return result;
}
