// cudart_vmm.cu — PyTorch's expandable segments through the CUDA runtime, with and without
// libtiermem.so in front: the program takes the driver's VMM calls from
// cudaGetDriverEntryPointByVersion (cuMemCreate, cuMemAddressReserve, cuMemMap,
// cuMemSetAccess, ...), reserves one large range and grows a segment in it 2 MiB at a
// time while cudaMalloc memory (chunked by libtiermem.so) holds part of the device, as
// PyTorch's allocator does with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. Built
// and run as tests/cudart/module.mk and cases.txt say.
//
//   cudart_vmm segment HELD GROW   HELD bytes in cudaMalloc pieces of 8 MiB, then a
//                                  segment grown to GROW bytes, each new 2 MiB written
//                                  and the whole segment read back after every growth.
//                                  When HELD + GROW passes what the device has free:
//                                  under libtiermem.so it grows all the way (the handles
//                                  past HBM come from a lower tier); without it cuMemCreate
//                                  runs out (CUDA_ERROR_OUT_OF_MEMORY) and the segment
//                                  keeps what it had. Sizes take K, M or G.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "tests/cudart/cudart_tap.h"

// The driver's calls, with their exact prototypes, as the runtime hands them out.
struct vmm {
    CUresult(CUDAAPI *create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult(CUDAAPI *release)(CUmemGenericAllocationHandle);
    CUresult(CUDAAPI *reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult(CUDAAPI *address_free)(CUdeviceptr, size_t);
    CUresult(CUDAAPI *map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult(CUDAAPI *unmap)(CUdeviceptr, size_t);
    CUresult(CUDAAPI *set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult(CUDAAPI *granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
};

static void *entry_point(const char *name)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    cudaError_t error = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status);
    TAP_CHECK(error == cudaSuccess && status == cudaDriverEntryPointSuccess && fn != NULL,
              "cudaGetDriverEntryPointByVersion %s", name);
    return fn;
}

static bool vmm_find(struct vmm *v)
{
    *(void **)&v->create = entry_point("cuMemCreate");
    *(void **)&v->release = entry_point("cuMemRelease");
    *(void **)&v->reserve = entry_point("cuMemAddressReserve");
    *(void **)&v->address_free = entry_point("cuMemAddressFree");
    *(void **)&v->map = entry_point("cuMemMap");
    *(void **)&v->unmap = entry_point("cuMemUnmap");
    *(void **)&v->set_access = entry_point("cuMemSetAccess");
    *(void **)&v->granularity = entry_point("cuMemGetAllocationGranularity");
    return v->create && v->release && v->reserve && v->address_free && v->map && v->unmap && v->set_access &&
           v->granularity;
}

static const size_t kPiece = (size_t)8 << 20;

static int run_segment(size_t held_bytes, size_t grow_bytes)
{
    const bool tiered = tap_tiered();
    struct vmm v;
    TAP_CUDA(cudaFree(0), "cudaFree(0)");
    if (!vmm_find(&v))
        return tap_plan();
    // The runtime has no attribute for it: the driver's, from the runtime as well.
    CUresult(CUDAAPI * attribute)(int *, CUdevice_attribute, CUdevice);
    *(void **)&attribute = entry_point("cuDeviceGetAttribute");
    int supported = 0;
    TAP_CHECK(attribute && attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0) ==
                                   CUDA_SUCCESS && supported == 1,
              "the device supports virtual memory management");

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granule = 0;
    TAP_CHECK(v.granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS &&
                  granule == ((size_t)2 << 20),
              "the recommended granularity is 2 MiB (%zu)", granule);
    if (granule != ((size_t)2 << 20))
        return tap_plan();

    size_t free_start = 0, total = 0;
    TAP_CUDA(cudaMemGetInfo(&free_start, &total), "cudaMemGetInfo at start");
    // Ordinary allocations first, libtiermem.so's when it is in front.
    const size_t held_pieces = held_bytes / kPiece;
    void **held = (void **)calloc(held_pieces ? held_pieces : 1, sizeof *held);
    size_t got = 0;
    unsigned char *piece_bytes = (unsigned char *)malloc(kPiece);
    while (got < held_pieces && cudaMalloc(&held[got], kPiece) == cudaSuccess) {
        tap_pattern_fill(piece_bytes, kPiece, 100 + (unsigned)got);
        cudaMemcpy(held[got], piece_bytes, kPiece, cudaMemcpyHostToDevice);
        got++;
    }
    TAP_CHECK(got == held_pieces, "%zu MiB held by cudaMalloc (%zu of %zu pieces)", held_bytes >> 20, got, held_pieces);

    // One reservation for the whole segment, grown a granule at a time. On a GPU the
    // driver's own needs make "fits" a guess near the edge: the cases stay clear of it.
    const bool fits = held_bytes + grow_bytes + (16u << 20) <= free_start;
    const size_t granules = grow_bytes / granule;
    CUdeviceptr segment = 0;
    TAP_CHECK(v.reserve(&segment, 2 * grow_bytes, 0, 0, 0) == CUDA_SUCCESS && segment != 0,
              "cuMemAddressReserve of twice the segment");
    CUmemGenericAllocationHandle *handles =
        (CUmemGenericAllocationHandle *)calloc(granules, sizeof *handles);
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    unsigned char *host = (unsigned char *)malloc(grow_bytes), *back = (unsigned char *)malloc(grow_bytes);
    tap_pattern_fill(host, grow_bytes, 77);
    size_t mapped = 0;
    CUresult refused = CUDA_SUCCESS;
    bool each_intact = true;
    for (; segment && mapped < granules; mapped++) {
        const CUdeviceptr at = segment + mapped * granule;
        refused = v.create(&handles[mapped], granule, &prop, 0);
        if (refused != CUDA_SUCCESS)
            break;
        if (v.map(at, granule, 0, handles[mapped], 0) != CUDA_SUCCESS ||
            v.set_access(at, granule, &access, 1) != CUDA_SUCCESS ||
            cudaMemcpy((void *)at, host + mapped * granule, granule, cudaMemcpyHostToDevice) != cudaSuccess) {
            refused = CUDA_ERROR_UNKNOWN;
            v.release(handles[mapped]);
            break;
        }
        // The segment so far reads back whole: growing it moved nothing.
        memset(back, 0, (mapped + 1) * granule);
        each_intact &= cudaMemcpy(back, (void *)segment, (mapped + 1) * granule, cudaMemcpyDeviceToHost) ==
                           cudaSuccess &&
                       memcmp(back, host, (mapped + 1) * granule) == 0;
    }
    if (fits || tiered) {
        TAP_CHECK(mapped == granules, "the segment grew to %zu MiB in %zu steps (%zu mapped, last result %d)",
                  grow_bytes >> 20, granules, mapped, (int)refused);
    } else {
        TAP_CHECK(refused == CUDA_ERROR_OUT_OF_MEMORY,
                  "without libtiermem.so cuMemCreate runs out past the device (result %d)", (int)refused);
        TAP_CHECK(mapped > 0 && mapped < granules, "the segment grew to %zu of %zu MiB, then stopped",
                  (mapped * granule) >> 20, grow_bytes >> 20);
    }
    TAP_CHECK(mapped > 0 && each_intact, "after every growth the whole segment read back its pattern");
    cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaPointerGetAttributes(&at, (void *)(segment + (mapped ? mapped - 1 : 0) * granule)),
             "cudaPointerGetAttributes in the segment's last granule");
    TAP_CHECK(at.type == cudaMemoryTypeDevice && at.device == 0, "the segment is device 0's memory (type %d)",
              (int)at.type);
    // A device-to-device copy across the whole segment, into held memory and back out.
    if (got > 0 && mapped * granule >= kPiece) {
        TAP_CUDA(cudaMemcpy(held[0], (void *)segment, kPiece, cudaMemcpyDeviceToDevice),
                 "cudaMemcpy segment to a cudaMalloc piece");
        memset(back, 0, kPiece);
        TAP_CUDA(cudaMemcpy(back, held[0], kPiece, cudaMemcpyDeviceToHost), "cudaMemcpy the piece back");
        TAP_CHECK(memcmp(back, host, kPiece) == 0, "the piece holds the segment's first 8 MiB");
    }
    bool pieces_intact = true;
    for (size_t i = 1; i < got; i++)
        pieces_intact &= cudaMemcpy(piece_bytes, held[i], kPiece, cudaMemcpyDeviceToHost) == cudaSuccess &&
                         tap_pattern_holds(piece_bytes, kPiece, 100 + (unsigned)i);
    TAP_CHECK(pieces_intact, "the cudaMalloc pieces kept their patterns while the segment grew");

    // Shrink as PyTorch does when it empties its cache: unmap and release from the top.
    bool shrunk = true;
    for (size_t i = mapped; i-- > 0;)
        shrunk &= v.unmap(segment + i * granule, granule) == CUDA_SUCCESS && v.release(handles[i]) == CUDA_SUCCESS;
    TAP_CHECK(shrunk, "cuMemUnmap and cuMemRelease of every granule");
    TAP_CHECK(segment && v.address_free(segment, 2 * grow_bytes) == CUDA_SUCCESS, "cuMemAddressFree");
    for (size_t i = 0; i < got; i++)
        cudaFree(held[i]);
    size_t free_end = 0;
    TAP_CUDA(cudaMemGetInfo(&free_end, &total), "cudaMemGetInfo at the end");
    // A GPU's driver may keep a little for itself: 64 MiB of slack there.
    const size_t slack = tap_on_gpu() ? (size_t)64 << 20 : 0;
    TAP_CHECK(free_end <= free_start + slack && free_end + slack >= free_start,
              "everything came back: free is what it was at start (%zu, %zu)", free_end, free_start);
    free(handles);
    free(held);
    free(piece_bytes);
    free(host);
    free(back);
    return tap_plan();
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "segment") == 0)
        return run_segment(tap_size_arg(argv[2]), tap_size_arg(argv[3]));
    fprintf(stderr, "usage: %s segment HELD_BYTES GROW_BYTES\n", argv[0]);
    return 2;
}
