/* hook_copy.c — copies between host and device, and within the device, pass through,
 * counted, past the submission gate and the file tier (file_tier.h: dropped chunks they
 * touch are read back first).
 * Before the driver sees a host-to-device copy, provenance looks at its source
 * (provenance.h: one load and a branch while no host memory came from a model file). A
 * successful one tells the managed baseline that the host filled the destination
 * (managed.h); for cuMemcpy, whose directions are implied, the source must be memory the
 * interposer does not track (host memory). Before any copy writes device memory, a staged
 * copy of a weight it writes is dropped from the stream ring (stream_ring.h). */
#include "preload/mem/alloc.h"
#include "preload/filetier/file_tier.h"
#include "preload/hooks/hook.h"
#include "preload/driver/submit_gate.h"
#include "preload/mem/managed.h"
#include "preload/naming/provenance.h"
#include "preload/move/stream_ring.h"

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
    tm_stream_ring_written(dstDevice, ByteCount);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, true);
    return filled(TM_FILE_GATED_RANGE(dstDevice, ByteCount,
                                      tm_real.cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount)),
                  dstDevice);
}

CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyHtoD_v2_ptds);
    tm_stream_ring_written(dstDevice, ByteCount);
    tm_provenance_copy(dstDevice, srcHost, ByteCount, true);
    return filled(TM_FILE_GATED_RANGE(dstDevice, ByteCount,
                                      tm_real.cuMemcpyHtoD_v2_ptds(dstDevice, srcHost, ByteCount)),
                  dstDevice);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyHtoDAsync_v2);
    tm_stream_ring_written(dstDevice, ByteCount);
    tm_provenance_copy_async(dstDevice, srcHost, ByteCount, hStream, false);
    return filled(TM_FILE_GATED_RANGE(dstDevice, ByteCount,
                                      tm_real.cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream)),
                  dstDevice);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                           CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyHtoDAsync_v2_ptsz);
    tm_stream_ring_written(dstDevice, ByteCount);
    tm_provenance_copy_async(dstDevice, srcHost, ByteCount, hStream, true);
    return filled(TM_FILE_GATED_RANGE(dstDevice, ByteCount,
                                      tm_real.cuMemcpyHtoDAsync_v2_ptsz(dstDevice, srcHost, ByteCount, hStream)),
                  dstDevice);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpy);
    tm_stream_ring_written(dst, ByteCount);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, true);
    return maybe_filled(TM_FILE_GATED_RANGE(dst, ByteCount, tm_real.cuMemcpy(dst, src, ByteCount)),
                        dst, src);
}

CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpy_ptds);
    tm_stream_ring_written(dst, ByteCount);
    tm_provenance_copy(dst, (const void *)(uintptr_t)src, ByteCount, true);
    return maybe_filled(TM_FILE_GATED_RANGE(dst, ByteCount, tm_real.cuMemcpy_ptds(dst, src, ByteCount)),
                        dst, src);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyAsync);
    tm_stream_ring_written(dst, ByteCount);
    tm_provenance_copy_async(dst, (const void *)(uintptr_t)src, ByteCount, hStream, false);
    return maybe_filled(TM_FILE_GATED_RANGE(dst, ByteCount, tm_real.cuMemcpyAsync(dst, src, ByteCount, hStream)),
                        dst, src);
}

CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyAsync_ptsz);
    tm_stream_ring_written(dst, ByteCount);
    tm_provenance_copy_async(dst, (const void *)(uintptr_t)src, ByteCount, hStream, true);
    return maybe_filled(TM_FILE_GATED_RANGE(dst, ByteCount, tm_real.cuMemcpyAsync_ptsz(dst, src, ByteCount, hStream)),
                        dst, src);
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyDtoH_v2);
    return TM_FILE_GATED_RANGE(srcDevice, ByteCount, tm_real.cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyDtoH_v2_ptds);
    return TM_FILE_GATED_RANGE(srcDevice, ByteCount, tm_real.cuMemcpyDtoH_v2_ptds(dstHost, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyDtoHAsync_v2);
    return TM_FILE_GATED_RANGE(srcDevice, ByteCount,
                               tm_real.cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, hStream));
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyDtoHAsync_v2_ptsz);
    return TM_FILE_GATED_RANGE(srcDevice, ByteCount,
                               tm_real.cuMemcpyDtoHAsync_v2_ptsz(dstHost, srcDevice, ByteCount, hStream));
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyDtoD_v2);
    tm_stream_ring_written(dstDevice, ByteCount);
    return TM_FILE_GATED_COPY(dstDevice, srcDevice, ByteCount, tm_real.cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    TM_HOOK_ENTER(cuMemcpyDtoD_v2_ptds);
    tm_stream_ring_written(dstDevice, ByteCount);
    return TM_FILE_GATED_COPY(dstDevice, srcDevice, ByteCount,
                              tm_real.cuMemcpyDtoD_v2_ptds(dstDevice, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyDtoDAsync_v2);
    tm_stream_ring_written(dstDevice, ByteCount);
    return TM_FILE_GATED_COPY(dstDevice, srcDevice, ByteCount,
                              tm_real.cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, hStream));
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream)
{
    TM_HOOK_ENTER(cuMemcpyDtoDAsync_v2_ptsz);
    tm_stream_ring_written(dstDevice, ByteCount);
    return TM_FILE_GATED_COPY(dstDevice, srcDevice, ByteCount,
                              tm_real.cuMemcpyDtoDAsync_v2_ptsz(dstDevice, srcDevice, ByteCount, hStream));
}
