// cudart_memory.cu — device memory through the CUDA runtime, with and without
// libtiermem.so in front (tap_tiered()): more than the device holds, what cudaMemGetInfo
// and NVML say about it in each TIERMEM_MEMINFO view, and the kinds of pointer the runtime
// hands out (device, managed, pinned, registered) as cudaPointerGetAttributes and the
// driver's cuMemGetAddressRange see them. Built and run as tests/cudart/module.mk and
// cases.txt say.
//
//   cudart_memory oversubscribe     cudaMalloc of 4x the device in 8 MiB pieces, a pattern
//                                   in and out of every piece: under libtiermem.so all of
//                                   it succeeds; without it the device runs out plainly
//                                   (cudaErrorMemoryAllocation, not sticky). simcuda only:
//                                   on a GPU 4x of its memory is more than the host has
//   cudart_memory meminfo MEM       cudaMemGetInfo equals NVML's free and total with memory
//                                   held (half the device, all of it under libtiermem.so,
//                                   2 GiB on a GPU); the totals follow the view
//                                   TIERMEM_MEMINFO names (physical and available: MEM, the
//                                   device; virtual: more); MEM 0: the device's own total
//   cudart_memory pointers          cudaMallocManaged, cudaMallocHost, cudaHostRegister and
//                                   a tiered cudaMalloc: type, device, range and data
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "tests/cudart/cudart_tap.h"
#include "tools/simcuda/nvml/nvml_api.h"

static const size_t kPiece = (size_t)8 << 20;

// ---------------------------------------------------------------- oversubscribe

static int run_oversubscribe(void)
{
    if (tap_on_gpu()) {
        TAP_SKIP("4x a GPU's memory is more than its host holds; simcuda runs this case", "cudaMalloc of 4x the device");
        return tap_plan();
    }
    const bool tiered = tap_tiered();
    TAP_CUDA(cudaFree(0), "cudaFree(0)");
    cudaDeviceProp prop;
    TAP_CUDA(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    const size_t device_bytes = prop.totalGlobalMem;
    const size_t pieces = 4 * device_bytes / kPiece;
    TAP_CHECK(pieces >= 8 && pieces <= 4096, "4x the device is %zu pieces of 8 MiB (device %zu bytes)", pieces,
              device_bytes);
    unsigned char **device = (unsigned char **)calloc(pieces, sizeof *device);
    unsigned char *host = (unsigned char *)malloc(kPiece), *back = (unsigned char *)malloc(kPiece);
    size_t got = 0;
    cudaError_t first_failure = cudaSuccess;
    for (; got < pieces; got++) {
        first_failure = cudaMalloc((void **)&device[got], kPiece);
        if (first_failure != cudaSuccess)
            break;
        tap_pattern_fill(host, kPiece, (unsigned)got);
        if (cudaMemcpy(device[got], host, kPiece, cudaMemcpyHostToDevice) != cudaSuccess)
            break;
    }
    if (tiered) {
        TAP_CHECK(got == pieces, "under libtiermem.so all %zu pieces (4x the device) were allocated and filled (%zu)",
                  pieces, got);
    } else {
        // The device's own memory less what the context keeps: the last few pieces fail.
        TAP_CUDA_IS(first_failure, cudaErrorMemoryAllocation, "without libtiermem.so the device runs out");
        TAP_CHECK(got > 0 && got <= device_bytes / kPiece, "it ran out within the device's size (%zu of %zu pieces)",
                  got, device_bytes / kPiece);
        TAP_CUDA_IS(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError reports it once");
        TAP_CUDA(cudaGetLastError(), "the out-of-memory answer is not sticky: cudaGetLastError is clear again");
    }
    size_t intact = 0;
    for (size_t i = 0; i < got; i++) {
        memset(back, 0, kPiece);
        if (cudaMemcpy(back, device[i], kPiece, cudaMemcpyDeviceToHost) == cudaSuccess &&
            tap_pattern_holds(back, kPiece, (unsigned)i))
            intact++;
    }
    TAP_CHECK(got > 0 && intact == got, "every piece's pattern came back (%zu of %zu)", intact, got);
    size_t free_bytes = 0, total_bytes = 0;
    TAP_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo with everything held");
    TAP_CHECK(free_bytes < total_bytes / 4, "free memory is low with the device full (%zu of %zu)", free_bytes,
              total_bytes);
    bool freed = true;
    for (size_t i = 0; i < got; i++)
        freed &= cudaFree(device[i]) == cudaSuccess;
    TAP_CHECK(freed, "cudaFree of every piece");
    size_t free_after = 0;
    TAP_CUDA(cudaMemGetInfo(&free_after, &total_bytes), "cudaMemGetInfo after the frees");
    TAP_CHECK(free_after > total_bytes / 2, "the memory came back (free %zu of %zu)", free_after, total_bytes);
    void *again = NULL;
    TAP_CUDA(cudaMalloc(&again, kPiece), "a cudaMalloc after the frees succeeds");
    TAP_CUDA(cudaFree(again), "cudaFree");
    free(device);
    free(host);
    free(back);
    return tap_plan();
}

// ---------------------------------------------------------------- meminfo

typedef nvmlReturn_t (*nvml_init_fn)(void);
typedef nvmlReturn_t (*nvml_handle_fn)(unsigned int, nvmlDevice_t *);

struct nvml {
    nvml_init_fn init;
    nvml_handle_fn handle;
    PFN_nvmlDeviceGetMemoryInfo info;
    PFN_nvmlDeviceGetMemoryInfo_v2 info_v2;
    nvmlDevice_t device;
};

// NVML as Python bindings reach it: dlopen and dlsym.
static bool nvml_open(struct nvml *nvml)
{
    void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!TAP_CHECK(library != NULL, "dlopen libnvidia-ml.so.1"))
        return false;
    nvml->init = (nvml_init_fn)dlsym(library, "nvmlInit_v2");
    nvml->handle = (nvml_handle_fn)dlsym(library, "nvmlDeviceGetHandleByIndex_v2");
    nvml->info = (PFN_nvmlDeviceGetMemoryInfo)dlsym(library, "nvmlDeviceGetMemoryInfo");
    nvml->info_v2 = (PFN_nvmlDeviceGetMemoryInfo_v2)dlsym(library, "nvmlDeviceGetMemoryInfo_v2");
    if (!TAP_CHECK(nvml->init && nvml->handle && nvml->info && nvml->info_v2, "NVML has its memory functions"))
        return false;
    return TAP_CHECK(nvml->init() == NVML_SUCCESS && nvml->handle(0, &nvml->device) == NVML_SUCCESS,
                     "nvmlInit_v2 and the handle of device 0");
}

// cudaMemGetInfo against NVML's two answers. On a GPU the driver's other clients may move
// free memory between the calls: 64 MiB of slack there, none on simcuda.
static void meminfo_agrees(const struct nvml *nvml, const char *when)
{
    size_t free_bytes = 0, total_bytes = 0;
    TAP_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    nvmlMemory_t memory;
    nvmlMemory_v2_t memory_v2;
    memset(&memory_v2, 0, sizeof memory_v2);
    memory_v2.version = nvmlMemory_v2;
    const bool asked = nvml->info(nvml->device, &memory) == NVML_SUCCESS &&
                       nvml->info_v2(nvml->device, &memory_v2) == NVML_SUCCESS;
    TAP_CHECK(asked, "%s: nvmlDeviceGetMemoryInfo and _v2", when);
    const unsigned long long slack = tap_on_gpu() ? 64ull << 20 : 0;
    const unsigned long long apart = memory.free > free_bytes ? memory.free - free_bytes : free_bytes - memory.free;
    TAP_CHECK(memory.total == total_bytes && memory_v2.total == total_bytes,
              "%s: NVML's total is cudaMemGetInfo's (%llu, %llu, %zu)", when, memory.total, memory_v2.total,
              total_bytes);
    TAP_CHECK(apart <= slack && memory_v2.free == memory.free,
              "%s: NVML's free is cudaMemGetInfo's (%llu, %llu, %zu)", when, memory.free, memory_v2.free, free_bytes);
    TAP_CHECK(memory.used + memory.free == memory.total &&
                  memory_v2.used + memory_v2.free + memory_v2.reserved == memory_v2.total,
              "%s: NVML's used, reserved and free add up to its total", when);
}

static int run_meminfo(size_t expected_memory)
{
    const bool tiered = tap_tiered();
    const char *view = getenv("TIERMEM_MEMINFO");
    if (!view || !*view)
        view = "available";
    TAP_CUDA(cudaFree(0), "cudaFree(0)");
    cudaDeviceProp prop;
    TAP_CUDA(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    if (expected_memory == 0)
        expected_memory = prop.totalGlobalMem;
    struct nvml nvml;
    if (!nvml_open(&nvml))
        return tap_plan();
    meminfo_agrees(&nvml, "at start");
    size_t free_start = 0, total = 0;
    cudaMemGetInfo(&free_start, &total);
    if (!tiered || strcmp(view, "physical") == 0 || strcmp(view, "available") == 0)
        TAP_CHECK(total == expected_memory && prop.totalGlobalMem == total,
                  "the %s view: total and totalGlobalMem are the device's %zu bytes (saw %zu, %zu)",
                  tiered ? view : "driver's", expected_memory, total, (size_t)prop.totalGlobalMem);
    else
        TAP_CHECK(total > expected_memory && prop.totalGlobalMem == total,
                  "the virtual view: total and totalGlobalMem are HBM and the lower tiers, more than %zu (saw %zu, %zu)",
                  expected_memory, total, (size_t)prop.totalGlobalMem);

    // Half the device in pieces, the whole device under libtiermem.so (some of it spills);
    // on a GPU 2 GiB, which the host could not take four times over.
    size_t held_bytes = tiered ? expected_memory : expected_memory / 2;
    if (tap_on_gpu() && held_bytes > ((size_t)2 << 30))
        held_bytes = (size_t)2 << 30;
    const size_t held_pieces = held_bytes / kPiece;
    const size_t must_fall = held_bytes < expected_memory / 2 ? held_bytes : expected_memory / 2;
    void **held = (void **)calloc(held_pieces, sizeof *held);
    size_t got = 0;
    while (got < held_pieces && cudaMalloc(&held[got], kPiece) == cudaSuccess)
        got++;
    TAP_CHECK(got == held_pieces, "%zu MiB held in pieces of 8 MiB (%zu of %zu)", held_pieces * 8, got, held_pieces);
    meminfo_agrees(&nvml, "with memory held");
    size_t free_held = 0;
    cudaMemGetInfo(&free_held, &total);
    if (!tiered || strcmp(view, "physical") == 0)
        TAP_CHECK(free_held + must_fall <= free_start, "free memory fell by at least %zu MiB (%zu to %zu)",
                  must_fall >> 20, free_start, free_held);
    else if (strcmp(view, "virtual") == 0)
        TAP_CHECK(free_held + got * kPiece <= free_start && free_held + got * kPiece + (64u << 20) >= free_start,
                  "the virtual view: free fell by what is held, %zu bytes (%zu to %zu)", got * kPiece, free_start,
                  free_held);
    else
        TAP_CHECK(free_held <= free_start && free_held > 0 && free_held <= total,
                  "the available view: free fell and stays above zero, what the lower tiers could take (%zu to %zu)",
                  free_start, free_held);
    for (size_t i = 0; i < got; i++)
        cudaFree(held[i]);
    free(held);
    meminfo_agrees(&nvml, "after the frees");
    return tap_plan();
}

// ---------------------------------------------------------------- pointers

typedef CUresult(CUDAAPI *address_range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);

// The driver's cuMemGetAddressRange, as the program gets it from the runtime.
static address_range_fn address_range(void)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    TAP_CUDA(cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &status),
             "cudaGetDriverEntryPointByVersion cuMemGetAddressRange");
    TAP_CHECK(fn != NULL && status == cudaDriverEntryPointSuccess, "the entry point was found");
    return (address_range_fn)fn;
}

static void device_pointer_case(address_range_fn range)
{
    // 10 MiB: chunked under libtiermem.so (5 chunks of 2 MiB); looked at inside too.
    const size_t bytes = (size_t)10 << 20, inside = (size_t)5 << 20 | 4096;
    unsigned char *device = NULL;
    TAP_CUDA(cudaMalloc((void **)&device, bytes), "cudaMalloc of 10 MiB");
    cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaPointerGetAttributes(&at, device + inside), "cudaPointerGetAttributes inside the 10 MiB");
    TAP_CHECK(at.type == cudaMemoryTypeDevice && at.device == 0 && at.devicePointer == device + inside &&
                  at.hostPointer == NULL,
              "inside the 10 MiB: type device, device 0, the device pointer itself, no host pointer (type %d)",
              (int)at.type);
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = range ? range(&base, &size, (CUdeviceptr)(device + inside)) : CUDA_ERROR_NOT_FOUND;
    TAP_CHECK(r == CUDA_SUCCESS && base == (CUdeviceptr)device && size == bytes,
              "cuMemGetAddressRange inside: base %p and 10 MiB (result %d, base 0x%llx, %zu bytes)", (void *)device,
              (int)r, (unsigned long long)base, size);
    unsigned char *host = (unsigned char *)malloc(bytes), *back = (unsigned char *)calloc(1, bytes);
    tap_pattern_fill(host, bytes, 21);
    TAP_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyDefault), "cudaMemcpy to it with cudaMemcpyDefault");
    TAP_CUDA(cudaMemcpy(back, device, bytes, cudaMemcpyDefault), "cudaMemcpy from it with cudaMemcpyDefault");
    TAP_CHECK(tap_pattern_holds(back, bytes, 21), "the 10 MiB pattern came back (the runtime told the kinds apart)");
    TAP_CUDA(cudaFree(device), "cudaFree of the 10 MiB");
    free(host);
    free(back);
}

static void managed_case(void)
{
    // 1 MiB, touched by the host: a size any GPU has room for (tests/gpu/run.sh's guard).
    const size_t bytes = (size_t)1 << 20;
    unsigned char *managed = NULL;
    TAP_CUDA(cudaMallocManaged((void **)&managed, bytes, cudaMemAttachGlobal), "cudaMallocManaged of 1 MiB");
    if (!managed)
        return;
    tap_pattern_fill(managed, bytes, 5);
    cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaPointerGetAttributes(&at, managed + 100), "cudaPointerGetAttributes on managed memory");
    TAP_CHECK(at.type == cudaMemoryTypeManaged && at.device == 0 && at.devicePointer == managed + 100 &&
                  at.hostPointer == managed + 100,
              "managed: type managed, device 0, one address for host and device (type %d)", (int)at.type);
    unsigned char *device = NULL, *back = (unsigned char *)calloc(1, bytes);
    TAP_CUDA(cudaMalloc((void **)&device, bytes), "cudaMalloc beside it");
    TAP_CUDA(cudaMemcpy(device, managed, bytes, cudaMemcpyDefault), "cudaMemcpy managed to device");
    TAP_CUDA(cudaMemset(managed, 0, bytes), "cudaMemset of the managed memory");
    TAP_CUDA(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    TAP_CHECK(managed[0] == 0 && managed[bytes - 1] == 0, "the host sees what cudaMemset wrote there");
    TAP_CUDA(cudaMemcpy(back, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy device to host");
    TAP_CHECK(tap_pattern_holds(back, bytes, 5), "what the host wrote to managed memory reached the device");
    TAP_CUDA(cudaFree(device), "cudaFree of the device copy");
    TAP_CUDA(cudaFree(managed), "cudaFree of the managed memory");
    free(back);
}

static void pinned_case(address_range_fn range)
{
    const size_t bytes = (size_t)4 << 20;
    unsigned char *pinned = NULL, *device = NULL;
    TAP_CUDA(cudaMallocHost((void **)&pinned, bytes), "cudaMallocHost of 4 MiB");
    TAP_CUDA(cudaMalloc((void **)&device, bytes), "cudaMalloc of 4 MiB (chunked under libtiermem.so)");
    if (!pinned || !device)
        return;
    cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaPointerGetAttributes(&at, pinned), "cudaPointerGetAttributes on pinned memory");
    TAP_CHECK(at.type == cudaMemoryTypeHost && at.hostPointer == pinned && at.devicePointer == pinned,
              "pinned: type host, mapped at its own address (type %d)", (int)at.type);
    tap_pattern_fill(pinned, bytes, 9);
    TAP_CUDA(cudaMemcpy(device, pinned, bytes, cudaMemcpyDefault), "cudaMemcpy pinned to device");
    memset(pinned, 0, bytes);
    TAP_CUDA(cudaMemcpy(pinned, device, bytes, cudaMemcpyDefault), "cudaMemcpy device to pinned");
    TAP_CHECK(tap_pattern_holds(pinned, bytes, 9), "the pattern went through pinned memory both ways");
    TAP_CUDA(cudaFreeHost(pinned), "cudaFreeHost");

    // Registered: page-aligned memory of the program's own.
    const long page = sysconf(_SC_PAGESIZE);
    unsigned char *own = NULL;
    TAP_CHECK(posix_memalign((void **)&own, (size_t)page, bytes) == 0, "posix_memalign of 4 MiB");
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaHostRegister(own, bytes, cudaHostRegisterDefault), "cudaHostRegister");
    TAP_CUDA(cudaPointerGetAttributes(&at, own + 4096), "cudaPointerGetAttributes on registered memory");
    TAP_CHECK(at.type == cudaMemoryTypeHost && at.hostPointer == own + 4096,
              "registered: type host, its own host address (type %d)", (int)at.type);
    void *mapped = NULL;
    TAP_CUDA(cudaHostGetDevicePointer(&mapped, own, 0), "cudaHostGetDevicePointer");
    TAP_CHECK(mapped == own, "the device sees registered memory at its host address (unified addressing)");
    TAP_CUDA(cudaMemcpy(own, device, bytes, cudaMemcpyDefault), "cudaMemcpy device to registered");
    TAP_CHECK(tap_pattern_holds(own, bytes, 9), "registered memory holds the device's bytes");
    TAP_CUDA(cudaHostUnregister(own), "cudaHostUnregister");
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaPointerGetAttributes(&at, own), "cudaPointerGetAttributes after cudaHostUnregister");
    TAP_CHECK(at.type == cudaMemoryTypeUnregistered, "unregistered again (type %d)", (int)at.type);
    free(own);
    // A device pointer's range as the driver tells it, beside pinned memory's.
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = range ? range(&base, &size, (CUdeviceptr)(device + bytes - 1)) : CUDA_ERROR_NOT_FOUND;
    TAP_CHECK(r == CUDA_SUCCESS && base == (CUdeviceptr)device && size == bytes,
              "cuMemGetAddressRange of the last byte of the 4 MiB (result %d, %zu bytes)", (int)r, size);
    TAP_CUDA(cudaFree(device), "cudaFree of the 4 MiB");
}

static int run_pointers(void)
{
    TAP_CUDA(cudaFree(0), "cudaFree(0)");
    int unified = 0;
    TAP_CUDA(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, 0), "cudaDevAttrUnifiedAddressing");
    TAP_CHECK(unified == 1, "the device has unified addressing");
    address_range_fn range = address_range();
    device_pointer_case(range);
    managed_case();
    pinned_case(range);
    return tap_plan();
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "oversubscribe") == 0)
        return run_oversubscribe();
    if (argc == 3 && strcmp(argv[1], "meminfo") == 0)
        return run_meminfo(tap_size_arg(argv[2]));
    if (argc == 2 && strcmp(argv[1], "pointers") == 0)
        return run_pointers();
    fprintf(stderr, "usage: %s oversubscribe | meminfo MEM_BYTES | pointers\n", argv[0]);
    return 2;
}
