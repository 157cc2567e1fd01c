// cudart_devices.cu — more than one device, and a device reset, through the CUDA runtime,
// with and without libtiermem.so in front. Built and run as tests/cudart/module.mk and
// cases.txt say.
//
//   cudart_devices peers HBM0 HBM1   two devices (SIMCUDA_DEVICES=2): cudaSetDevice, each
//                                    device's memory in cudaMemGetInfo (HBMn: what device
//                                    n reports, TIERMEM_HBM_LIMIT=0:HBM0,1:HBM1 under
//                                    libtiermem.so's physical view; 0: the device's own),
//                                    more than device 1's limit allocated there, peer
//                                    access and copies between the devices, data checked.
//                                    On a machine with one GPU the peer part is skipped
//   cudart_devices reset             allocations live (more than the device under
//                                    libtiermem.so, so some sit in a lower tier; 2 GiB on
//                                    a GPU), then
//                                    cudaDeviceReset without freeing them, then the same
//                                    again in the same process: the memory came back
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "tests/cudart/cudart_tap.h"

static const size_t kPiece = (size_t)8 << 20;

// Allocates `count` pieces of 8 MiB and fills piece i with the pattern of seed + i;
// returns how many it got.
static size_t fill_pieces(unsigned char **pieces, size_t count, unsigned seed)
{
    unsigned char *host = (unsigned char *)malloc(kPiece);
    size_t got = 0;
    for (; got < count; got++) {
        if (cudaMalloc((void **)&pieces[got], kPiece) != cudaSuccess)
            break;
        tap_pattern_fill(host, kPiece, seed + (unsigned)got);
        if (cudaMemcpy(pieces[got], host, kPiece, cudaMemcpyHostToDevice) != cudaSuccess) {
            cudaFree(pieces[got]);
            break;
        }
    }
    free(host);
    return got;
}

static bool pieces_intact(unsigned char **pieces, size_t count, unsigned seed)
{
    unsigned char *host = (unsigned char *)malloc(kPiece);
    bool intact = true;
    for (size_t i = 0; i < count && intact; i++)
        intact = cudaMemcpy(host, pieces[i], kPiece, cudaMemcpyDeviceToHost) == cudaSuccess &&
                 tap_pattern_holds(host, kPiece, seed + (unsigned)i);
    free(host);
    return intact;
}

// ---------------------------------------------------------------- peers

static void device_memory_case(int device, size_t expected_total)
{
    TAP_CUDA(cudaSetDevice(device), device ? "cudaSetDevice(1)" : "cudaSetDevice(0)");
    int current = -1;
    TAP_CUDA(cudaGetDevice(&current), "cudaGetDevice");
    TAP_CHECK(current == device, "the current device is %d (saw %d)", device, current);
    size_t free_bytes = 0, total = 0;
    TAP_CUDA(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
    cudaDeviceProp prop;
    TAP_CUDA(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    if (expected_total == 0)
        expected_total = prop.totalGlobalMem;
    TAP_CHECK(total == expected_total && prop.totalGlobalMem == expected_total,
              "device %d: cudaMemGetInfo and totalGlobalMem say %zu bytes (saw %zu, %zu)", device, expected_total,
              total, (size_t)prop.totalGlobalMem);
}

// Under libtiermem.so, 1.5x device 1's limit fits there (the rest spills) and HBM reads
// full in the physical view; the driver alone gives out what the device has.
static void device_limit_case(size_t limit)
{
    const bool tiered = tap_tiered();
    TAP_CUDA(cudaSetDevice(1), "cudaSetDevice(1) for its limit");
    size_t free_start = 0, total = 0;
    cudaMemGetInfo(&free_start, &total);
    if (limit == 0)
        limit = total;
    const size_t count = (tiered ? limit + limit / 2 : limit / 2) / kPiece;
    unsigned char **pieces = (unsigned char **)calloc(count, sizeof *pieces);
    const size_t got = fill_pieces(pieces, count, 60);
    TAP_CHECK(got == count, "device 1: %zu MiB allocated and filled, %s its %zu MiB (%zu of %zu pieces)",
              count * 8, tiered ? "more than" : "half of", limit >> 20, got, count);
    size_t free_held = 0;
    cudaMemGetInfo(&free_held, &total);
    if (tiered && getenv("TIERMEM_MEMINFO") && strcmp(getenv("TIERMEM_MEMINFO"), "physical") == 0)
        TAP_CHECK(free_held < kPiece, "device 1's HBM is full within its limit (free %zu)", free_held);
    else
        TAP_CHECK(free_held < free_start, "device 1's free memory fell (%zu to %zu)", free_start, free_held);
    TAP_CHECK(pieces_intact(pieces, got, 60), "device 1: every piece came back intact");
    cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaPointerGetAttributes(&at, got ? pieces[got - 1] : NULL), "cudaPointerGetAttributes on the last");
    TAP_CHECK(at.type == cudaMemoryTypeDevice && at.device == 1, "the last piece is device 1's (device %d)",
              at.device);
    for (size_t i = 0; i < got; i++)
        cudaFree(pieces[i]);
    free(pieces);
}

static void peer_case(void)
{
    const size_t bytes = (size_t)16 << 20;
    int can = 0, back_can = 0;
    TAP_CUDA(cudaDeviceCanAccessPeer(&can, 0, 1), "cudaDeviceCanAccessPeer(0, 1)");
    TAP_CUDA(cudaDeviceCanAccessPeer(&back_can, 1, 0), "cudaDeviceCanAccessPeer(1, 0)");
    TAP_CHECK(can == 1 && back_can == 1, "each device can access the other (%d, %d)", can, back_can);
    unsigned char *on1 = NULL, *on0 = NULL, *host = (unsigned char *)malloc(bytes);
    TAP_CUDA(cudaSetDevice(1), "cudaSetDevice(1)");
    TAP_CUDA(cudaMalloc((void **)&on1, bytes), "cudaMalloc of 16 MiB on device 1");
    tap_pattern_fill(host, bytes, 70);
    TAP_CUDA(cudaMemcpy(on1, host, bytes, cudaMemcpyHostToDevice), "fill it");
    TAP_CUDA(cudaSetDevice(0), "cudaSetDevice(0)");
    TAP_CUDA(cudaDeviceEnablePeerAccess(1, 0), "cudaDeviceEnablePeerAccess(1) from device 0");
    TAP_CUDA_IS(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled, "a second time: already enabled");
    TAP_CUDA_IS(cudaGetLastError(), cudaErrorPeerAccessAlreadyEnabled, "cudaGetLastError reports it once");
    TAP_CUDA(cudaGetLastError(), "then it is clear");
    TAP_CUDA(cudaMalloc((void **)&on0, bytes), "cudaMalloc of 16 MiB on device 0");
    TAP_CUDA(cudaMemcpyPeer(on0, 0, on1, 1, bytes), "cudaMemcpyPeer device 1 to device 0");
    memset(host, 0, bytes);
    TAP_CUDA(cudaMemcpy(host, on0, bytes, cudaMemcpyDeviceToHost), "read device 0's copy");
    TAP_CHECK(tap_pattern_holds(host, bytes, 70), "device 0 holds what device 1 had");

    // Back the other way, asynchronously, and with unified addressing from device 0.
    tap_pattern_fill(host, bytes, 71);
    TAP_CUDA(cudaMemcpy(on0, host, bytes, cudaMemcpyHostToDevice), "refill device 0's");
    cudaStream_t stream = NULL;
    TAP_CUDA(cudaStreamCreate(&stream), "cudaStreamCreate on device 0");
    TAP_CUDA(cudaMemcpyPeerAsync(on1, 1, on0, 0, bytes, stream), "cudaMemcpyPeerAsync device 0 to device 1");
    TAP_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    memset(host, 0, bytes);
    TAP_CUDA(cudaMemcpy(host, on1, bytes, cudaMemcpyDefault), "read device 1's copy from device 0 (cudaMemcpyDefault)");
    TAP_CHECK(tap_pattern_holds(host, bytes, 71), "device 1 holds what device 0 sent");
    TAP_CUDA(cudaMemcpy(on0, on1 + bytes / 2, bytes / 2, cudaMemcpyDefault), "cudaMemcpy device 1 to device 0, half");
    memset(host, 0, bytes);
    TAP_CUDA(cudaMemcpy(host, on0, bytes / 2, cudaMemcpyDeviceToHost), "read it");
    unsigned char *want = (unsigned char *)malloc(bytes);
    tap_pattern_fill(want, bytes, 71);
    TAP_CHECK(memcmp(host, want + bytes / 2, bytes / 2) == 0, "the second half arrived at the start of device 0's");
    TAP_CUDA(cudaStreamDestroy(stream), "cudaStreamDestroy");
    TAP_CUDA(cudaDeviceDisablePeerAccess(1), "cudaDeviceDisablePeerAccess(1)");
    TAP_CUDA(cudaFree(on0), "cudaFree on device 0");
    TAP_CUDA(cudaSetDevice(1), "cudaSetDevice(1)");
    TAP_CUDA(cudaFree(on1), "cudaFree on device 1");
    free(host);
    free(want);
}

static int run_peers(size_t hbm0, size_t hbm1)
{
    int count = 0;
    TAP_CUDA(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (!tap_on_gpu())
        TAP_CHECK(count == 2, "two devices (SIMCUDA_DEVICES=2; saw %d)", count);
    device_memory_case(0, hbm0);
    if (count < 2) {
        TAP_SKIP("one GPU here", "device 1's memory, its limit, peer access and copies");
        return tap_plan();
    }
    device_memory_case(1, hbm1);
    device_limit_case(hbm1);
    peer_case();
    return tap_plan();
}

// ---------------------------------------------------------------- reset

static int run_reset(void)
{
    const bool tiered = tap_tiered();
    TAP_CUDA(cudaFree(0), "cudaFree(0)");
    size_t free_start = 0, total = 0;
    TAP_CUDA(cudaMemGetInfo(&free_start, &total), "cudaMemGetInfo at start");
    // Under libtiermem.so 1.5x the device, so a third of it lives in a lower tier; half
    // without it; 2 GiB on a GPU, whose host could not take half of it again.
    const bool gpu = tap_on_gpu();
    const size_t count = (gpu ? (size_t)2 << 30 : tiered ? total + total / 2 : total / 2) / kPiece;
    const size_t slack = gpu ? (size_t)64 << 20 : 0; /* what a GPU's driver may keep */
    unsigned char **pieces = (unsigned char **)calloc(count, sizeof *pieces);
    for (int round = 1; round <= 2; round++) {
        const unsigned seed = 80 + 10 * (unsigned)round;
        const size_t got = fill_pieces(pieces, count, seed);
        TAP_CHECK(got == count, "round %d: %zu MiB allocated and filled (%zu of %zu pieces)", round, count * 8, got,
                  count);
        TAP_CHECK(pieces_intact(pieces, got, seed), "round %d: every piece came back intact", round);
        cudaStream_t stream = NULL;
        TAP_CUDA(cudaStreamCreate(&stream), "a stream left to the reset");
        TAP_CUDA(cudaMemsetAsync(pieces[0], 0, kPiece, stream), "work queued on it");
        // Nothing is freed: the reset ends the context and all of it.
        TAP_CUDA(cudaDeviceReset(), round == 1 ? "cudaDeviceReset with everything live"
                                               : "cudaDeviceReset with everything live, again");
        cudaPointerAttributes at;
        memset(&at, 0, sizeof at);
        const cudaError_t old = cudaPointerGetAttributes(&at, pieces[got ? got - 1 : 0]);
        TAP_CHECK(old != cudaSuccess || at.type == cudaMemoryTypeUnregistered,
                  "round %d: an old pointer is no memory any more (%s, type %d)", round, cudaGetErrorName(old),
                  (int)at.type);
        cudaGetLastError();
        size_t free_after = 0;
        TAP_CUDA(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo after the reset (a second initialisation)");
        TAP_CHECK(free_after <= free_start + slack && free_after + slack >= free_start,
                  "round %d: free memory is what it was at start (%zu, %zu)", round, free_after, free_start);
    }
    void *again = NULL;
    TAP_CUDA(cudaMalloc(&again, kPiece), "cudaMalloc after two resets");
    TAP_CUDA(cudaFree(again), "cudaFree");
    free(pieces);
    return tap_plan();
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "peers") == 0)
        return run_peers(tap_size_arg(argv[2]), tap_size_arg(argv[3]));
    if (argc == 2 && strcmp(argv[1], "reset") == 0)
        return run_reset();
    fprintf(stderr, "usage: %s peers HBM0 HBM1 | reset\n", argv[0]);
    return 2;
}
