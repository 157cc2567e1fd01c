/* hook_memset.c — memsets pass through, counted, past the submission gate (a migration
 * counts them as writes, so a chunk set while its copy ran is copied again) and the file
 * tier (dropped chunks they write are read back first: a memset may cover part of one);
 * a staged copy of a weight they write leaves the stream ring (stream_ring.h). */
#include <stdint.h>

#include "preload/filetier/file_tier.h"
#include "preload/hooks/hook.h"
#include "preload/driver/submit_gate.h"
#include "preload/move/stream_ring.h"

/* The bytes of `count` elements of `width` from `address`, cut at the end of the address
 * space (the driver refuses such a call; the file tier must not wrap around first). */
static uint64_t memset_bytes(CUdeviceptr address, size_t count, uint64_t width)
{
    uint64_t most = UINT64_MAX - address;
    return count > most / width ? most : count * width;
}

#define MEMSET_HOOK(symbol, type, width)                                                   \
    CUresult CUDAAPI symbol(CUdeviceptr dstDevice, type value, size_t N)                   \
    {                                                                                      \
        TM_HOOK_ENTER(symbol);                                                             \
        tm_stream_ring_written(dstDevice, memset_bytes(dstDevice, N, width));              \
        return TM_FILE_GATED_RANGE(dstDevice, memset_bytes(dstDevice, N, width),           \
                                   tm_real.symbol(dstDevice, value, N));                   \
    }
#define MEMSET_ASYNC_HOOK(symbol, type, width)                                             \
    CUresult CUDAAPI symbol(CUdeviceptr dstDevice, type value, size_t N, CUstream hStream) \
    {                                                                                      \
        TM_HOOK_ENTER(symbol);                                                             \
        tm_stream_ring_written(dstDevice, memset_bytes(dstDevice, N, width));              \
        return TM_FILE_GATED_RANGE(dstDevice, memset_bytes(dstDevice, N, width),           \
                                   tm_real.symbol(dstDevice, value, N, hStream));          \
    }

MEMSET_HOOK(cuMemsetD8_v2, unsigned char, 1)
MEMSET_HOOK(cuMemsetD8_v2_ptds, unsigned char, 1)
MEMSET_ASYNC_HOOK(cuMemsetD8Async, unsigned char, 1)
MEMSET_ASYNC_HOOK(cuMemsetD8Async_ptsz, unsigned char, 1)
MEMSET_HOOK(cuMemsetD16_v2, unsigned short, 2)
MEMSET_HOOK(cuMemsetD16_v2_ptds, unsigned short, 2)
MEMSET_ASYNC_HOOK(cuMemsetD16Async, unsigned short, 2)
MEMSET_ASYNC_HOOK(cuMemsetD16Async_ptsz, unsigned short, 2)
MEMSET_HOOK(cuMemsetD32_v2, unsigned int, 4)
MEMSET_HOOK(cuMemsetD32_v2_ptds, unsigned int, 4)
MEMSET_ASYNC_HOOK(cuMemsetD32Async, unsigned int, 4)
MEMSET_ASYNC_HOOK(cuMemsetD32Async_ptsz, unsigned int, 4)
