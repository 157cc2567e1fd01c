/* sim_copy.c — cuMemcpy* (cuMemcpyPeer* too) and cuMemset* in their synchronous,
 * asynchronous and per-thread-stream forms. Each call validates its ranges under the lock (a device range
 * must be covered by memory the device may access), then hands the work to sim_exec.c. */
#include "tools/simcuda/sim_internal.h"

typedef enum copy_side { SIDE_HOST, SIDE_DEVICE, SIDE_UNIFIED } copy_side;

/* Lock held: checks one side of a copy. Unified pointers are device memory when the
 * driver knows them, otherwise pageable host memory. */
static CUresult side_check(const sim_context *ctx, uintptr_t address, copy_side side, size_t bytes, bool for_write)
{
    if (address == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (side == SIDE_HOST)
        return CUDA_SUCCESS;
    if (side == SIDE_UNIFIED && !sim_region_find(TREE_REGIONS, address))
        return CUDA_SUCCESS;
    return sim_range_check(ctx->device, address, bytes, for_write);
}

/* sync: the synchronous forms, after which the host has waited for the copy. */
static CUresult copy(uintptr_t dst, copy_side dst_side, uintptr_t src, copy_side src_side, size_t bytes,
                     CUstream stream_handle, bool sync)
{
    sim_lock();
    sim_stream *stream = NULL;
    sim_context *ctx = NULL;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(stream_handle, &stream);
    if (result == CUDA_SUCCESS && bytes > 0) {
        result = side_check(ctx, dst, dst_side, bytes, true);
        if (result == CUDA_SUCCESS)
            result = side_check(ctx, src, src_side, bytes, false);
    }
    sim_unlock();
    if (result != CUDA_SUCCESS || bytes == 0)
        return result;
    return sim_exec_copy(stream, (void *)dst, (const void *)src, bytes, sync);
}

#define H SIDE_HOST
#define D SIDE_DEVICE
#define U SIDE_UNIFIED

SIM_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ SIM_FAIL_POINT(cuMemcpy); return copy(dst, U, src, U, n, NULL, true); }
SIM_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ SIM_FAIL_POINT(cuMemcpy_ptds); return copy(dst, U, src, U, n, CU_STREAM_PER_THREAD, true); }
SIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyAsync); return copy(dst, U, src, U, n, s, false); }
SIM_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyAsync_ptsz); return copy(dst, U, src, U, n, s, false); }

SIM_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{ SIM_FAIL_POINT(cuMemcpyHtoD_v2); return copy(dst, D, (uintptr_t)src, H, n, NULL, true); }
SIM_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{ SIM_FAIL_POINT(cuMemcpyHtoD_v2_ptds); return copy(dst, D, (uintptr_t)src, H, n, CU_STREAM_PER_THREAD, true); }
SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyHtoDAsync_v2); return copy(dst, D, (uintptr_t)src, H, n, s, false); }
SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyHtoDAsync_v2_ptsz); return copy(dst, D, (uintptr_t)src, H, n, s, false); }

SIM_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{ SIM_FAIL_POINT(cuMemcpyDtoH_v2); return copy((uintptr_t)dst, H, src, D, n, NULL, true); }
SIM_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{ SIM_FAIL_POINT(cuMemcpyDtoH_v2_ptds); return copy((uintptr_t)dst, H, src, D, n, CU_STREAM_PER_THREAD, true); }
SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyDtoHAsync_v2); return copy((uintptr_t)dst, H, src, D, n, s, false); }
SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyDtoHAsync_v2_ptsz); return copy((uintptr_t)dst, H, src, D, n, s, false); }

SIM_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ SIM_FAIL_POINT(cuMemcpyDtoD_v2); return copy(dst, D, src, D, n, NULL, false); }
SIM_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{ SIM_FAIL_POINT(cuMemcpyDtoD_v2_ptds); return copy(dst, D, src, D, n, CU_STREAM_PER_THREAD, false); }
SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyDtoDAsync_v2); return copy(dst, D, src, D, n, s, false); }
SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyDtoDAsync_v2_ptsz); return copy(dst, D, src, D, n, s, false); }

/* ---------------------------------------------------------------- between contexts */

/* cuMemcpyPeer: each side is checked against its own context's device; peer access need
 * not be enabled (a GPU stages such a copy itself). The stream is the current context's. */
static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_handle, CUdeviceptr src, CUcontext src_handle, size_t bytes,
                          CUstream stream_handle, bool sync)
{
    sim_lock();
    sim_stream *stream = NULL;
    sim_context *ctx = NULL;
    sim_context *dst_ctx = sim_object_find(dst_handle, SIM_CONTEXT), *src_ctx = sim_object_find(src_handle, SIM_CONTEXT);
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS && (!dst_ctx || !src_ctx))
        result = CUDA_ERROR_INVALID_CONTEXT;
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(stream_handle, &stream);
    if (result == CUDA_SUCCESS && bytes > 0) {
        result = dst ? sim_range_check(dst_ctx->device, dst, bytes, true) : CUDA_ERROR_INVALID_VALUE;
        if (result == CUDA_SUCCESS)
            result = src ? sim_range_check(src_ctx->device, src, bytes, false) : CUDA_ERROR_INVALID_VALUE;
    }
    sim_unlock();
    if (result != CUDA_SUCCESS || bytes == 0)
        return result;
    return sim_exec_copy(stream, (void *)dst, (const void *)src, bytes, sync);
}

SIM_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n)
{ SIM_FAIL_POINT(cuMemcpyPeer); return copy_peer(dst, dst_ctx, src, src_ctx, n, NULL, true); }
SIM_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n)
{ SIM_FAIL_POINT(cuMemcpyPeer_ptds); return copy_peer(dst, dst_ctx, src, src_ctx, n, CU_STREAM_PER_THREAD, true); }
SIM_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t n,
                                      CUstream s)
{ SIM_FAIL_POINT(cuMemcpyPeerAsync); return copy_peer(dst, dst_ctx, src, src_ctx, n, s, false); }
SIM_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                                           size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemcpyPeerAsync_ptsz); return copy_peer(dst, dst_ctx, src, src_ctx, n, s, false); }

/* ---------------------------------------------------------------- memset */

static CUresult memset_elements(CUdeviceptr dst, unsigned int value, size_t element_size, size_t count,
                                CUstream stream_handle)
{
    if (dst % element_size != 0 || count > SIZE_MAX / element_size)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_stream *stream = NULL;
    sim_context *ctx = NULL;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(stream_handle, &stream);
    if (result == CUDA_SUCCESS && count > 0)
        result = side_check(ctx, dst, SIDE_DEVICE, element_size * count, true);
    sim_unlock();
    if (result != CUDA_SUCCESS || count == 0)
        return result;
    return sim_exec_memset(stream, (void *)dst, value, element_size, count);
}

SIM_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{ SIM_FAIL_POINT(cuMemsetD8_v2); return memset_elements(dst, v, 1, n, NULL); }
SIM_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char v, size_t n)
{ SIM_FAIL_POINT(cuMemsetD8_v2_ptds); return memset_elements(dst, v, 1, n, CU_STREAM_PER_THREAD); }
SIM_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short v, size_t n)
{ SIM_FAIL_POINT(cuMemsetD16_v2); return memset_elements(dst, v, 2, n, NULL); }
SIM_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short v, size_t n)
{ SIM_FAIL_POINT(cuMemsetD16_v2_ptds); return memset_elements(dst, v, 2, n, CU_STREAM_PER_THREAD); }
SIM_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n)
{ SIM_FAIL_POINT(cuMemsetD32_v2); return memset_elements(dst, v, 4, n, NULL); }
SIM_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int v, size_t n)
{ SIM_FAIL_POINT(cuMemsetD32_v2_ptds); return memset_elements(dst, v, 4, n, CU_STREAM_PER_THREAD); }
SIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemsetD8Async); return memset_elements(dst, v, 1, n, s); }
SIM_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemsetD8Async_ptsz); return memset_elements(dst, v, 1, n, s); }
SIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemsetD16Async); return memset_elements(dst, v, 2, n, s); }
SIM_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short v, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemsetD16Async_ptsz); return memset_elements(dst, v, 2, n, s); }
SIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemsetD32Async); return memset_elements(dst, v, 4, n, s); }
SIM_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int v, size_t n, CUstream s)
{ SIM_FAIL_POINT(cuMemsetD32Async_ptsz); return memset_elements(dst, v, 4, n, s); }
