/* hook_copy.c — host-to-device copies pass through, after provenance has looked at their
 * source (provenance.h). While no host memory came from a model file the cost is one
 * load and a branch. cuMemcpy and cuMemcpyAsync take unified addresses: their source is
 * a host pointer when the program copies from host memory. */
#include "preload/hook.h"
#include "preload/provenance.h"

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyHtoD_v2);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, true);
    return tm_real.cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount);
}

CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyHtoD_v2_ptds);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, true);
    return tm_real.cuMemcpyHtoD_v2_ptds(dstDevice, srcHost, ByteCount);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyHtoDAsync_v2);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, false);
    return tm_real.cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                           CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyHtoDAsync_v2_ptsz);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, false);
    return tm_real.cuMemcpyHtoDAsync_v2_ptsz(dstDevice, srcHost, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpy);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, true);
    return tm_real.cuMemcpy(dst, src, ByteCount);
}

CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpy_ptds);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, true);
    return tm_real.cuMemcpy_ptds(dst, src, ByteCount);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyAsync);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, false);
    return tm_real.cuMemcpyAsync(dst, src, ByteCount, hStream);
}

CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyAsync_ptsz);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, false);
    return tm_real.cuMemcpyAsync_ptsz(dst, src, ByteCount, hStream);
}
