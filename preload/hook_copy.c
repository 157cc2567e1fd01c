/* hook_copy.c — host-to-device copies pass through, counted. Before the driver sees one,
 * provenance looks at its source (provenance.h: one load and a branch while no host
 * memory came from a model file). A successful one tells the managed baseline that the
 * host filled the destination (managed.h); for cuMemcpy, whose directions are implied,
 * the source must be memory the interposer does not track (host memory). */
#include "preload/alloc.h"
#include "preload/hook.h"
#include "preload/submit_gate.h"
#include "preload/managed.h"
#include "preload/provenance.h"

static CUresult filled(CUresult result, CUdeviceptr dst)
{
    if (result == CUDA_SUCCESS)
        tm_managed_note_fill(dst);
    return result;
}

/* cuMemcpy and cuMemcpyAsync: a fill only when the source is not device memory we track. */
static CUresult maybe_filled(CUresult result, CUdeviceptr dst, CUdeviceptr src)
{
    tm_alloc_view view;
    if (result == CUDA_SUCCESS && !tm_lookup(src, &view))
        tm_managed_note_fill(dst);
    return result;
}

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyHtoD_v2);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, true);
    return filled(TM_GATED(tm_real.cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount)), dstDevice);
}

CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyHtoD_v2_ptds);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, true);
    return filled(TM_GATED(tm_real.cuMemcpyHtoD_v2_ptds(dstDevice, srcHost, ByteCount)), dstDevice);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyHtoDAsync_v2);
    tm_provenance_copy_async(dstDevice, srcHost, ByteCount, hStream, false);
    return filled(TM_GATED(tm_real.cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream)), dstDevice);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                           CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyHtoDAsync_v2_ptsz);
    tm_provenance_copy_async(dstDevice, srcHost, ByteCount, hStream, true);
    return filled(TM_GATED(tm_real.cuMemcpyHtoDAsync_v2_ptsz(dstDevice, srcHost, ByteCount, hStream)), dstDevice);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpy);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, true);
    return maybe_filled(TM_GATED(tm_real.cuMemcpy(dst, src, ByteCount)), dst, src);
}

CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpy_ptds);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, true);
    return maybe_filled(TM_GATED(tm_real.cuMemcpy_ptds(dst, src, ByteCount)), dst, src);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyAsync);
    tm_provenance_copy_async(dst, (const void *)(uintptr_t)src, ByteCount, hStream, false);
    return maybe_filled(TM_GATED(tm_real.cuMemcpyAsync(dst, src, ByteCount, hStream)), dst, src);
}

CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyAsync_ptsz);
    tm_provenance_copy_async(dst, (const void *)(uintptr_t)src, ByteCount, hStream, true);
    return maybe_filled(TM_GATED(tm_real.cuMemcpyAsync_ptsz(dst, src, ByteCount, hStream)), dst, src);
}
