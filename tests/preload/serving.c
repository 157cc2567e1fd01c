/* serving.c — what serving stacks do with device memory that plain programs do not, as an
 * ordinary CUDA program (it links libcuda and knows nothing of the interposer).
 *
 *   serving grow SIZE COUNT    a memory pool growing the way llama.cpp's does: for each grow,
 *                              cuMemCreate, cuMemMap at the end of one reserved range, set
 *                              access, cuMemRelease at once; prints "grow I free F" after
 *                              each, checks every byte, unmaps, prints "unmapped free F"
 *   serving freeasync SIZE     cuMemAllocAsync, then cuMemFreeAsync while the stream is held
 *                              by a host function waiting for the host: prints "free returned
 *                              while the stream was held" when the free did not wait, then
 *                              "info before B after A" (cuMemGetInfo free before and after)
 *   serving capture SIZE       a CUDA graph captured from a stream: it allocates scratch,
 *                              writes it through a stream-ordered allocation made before the
 *                              capture into a target, and frees both; launched once, every
 *                              byte of the target is checked
 *   serving reset SIZE         twice: allocate SIZE and write it, print "round I free F",
 *                              reset the primary context without freeing (cudaDeviceReset)
 *
 * Sizes take K/M/G suffixes. Exit status: 0 fine, 2 an allocation failed, 3 another driver
 * call failed, 4 wrong answers, 1 bad arguments. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/preload/probe_util.h"

static int fail(const char *what)
{
    printf("FAIL: %s\n", what);
    return 4;
}

static size_t free_now(void)
{
    size_t free, total;
    CHECK(cuMemGetInfo(&free, &total));
    return free;
}

/* ---------------------------------------------------------------- grow */

static int run_grow(size_t size, int count)
{
    probe_init();
    CUmemAllocationProp prop;
    size_t granularity = probe_device_prop(&prop);
    size = (size + granularity - 1) / granularity * granularity;
    size_t reserved = size * (size_t)count;
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, reserved, granularity, 0, 0));
    CUmemAccessDesc access = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                               .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    for (int i = 0; i < count; i++) {
        CUmemGenericAllocationHandle handle;
        CUresult r = cuMemCreate(&handle, size, &prop, 0);
        if (r != CUDA_SUCCESS) {
            printf("cuMemCreate %d of %d failed: %s\n", i + 1, count, probe_error_name(r));
            return 2;
        }
        CHECK(cuMemMap(va + (size_t)i * size, size, 0, handle, 0));
        CHECK(cuMemSetAccess(va + (size_t)i * size, size, &access, 1));
        CHECK(cuMemRelease(handle)); /* the mapping keeps the memory */
        printf("grow %d free %zu\n", i + 1, free_now());
    }
    if (probe_round_trip(va, reserved, 5))
        return 4;
    CHECK(cuMemUnmap(va, reserved));
    CHECK(cuMemAddressFree(va, reserved));
    printf("unmapped free %zu\n", free_now());
    return 0;
}

/* ---------------------------------------------------------------- freeasync */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_timed_out;

/* Holds the stream until the host opens the gate, for 5 seconds at most. */
static void CUDA_CB hold_stream(void *arg)
{
    (void)arg;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    pthread_mutex_lock(&gate_lock);
    while (!gate_open && !gate_timed_out)
        if (pthread_cond_timedwait(&gate_cond, &gate_lock, &deadline) != 0)
            gate_timed_out = true;
    pthread_mutex_unlock(&gate_lock);
}

static int run_freeasync(size_t size)
{
    probe_init();
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr p;
    CUresult r = cuMemAllocAsync(&p, size, stream);
    if (r != CUDA_SUCCESS) {
        printf("cuMemAllocAsync failed: %s\n", probe_error_name(r));
        return 2;
    }
    CHECK(cuMemsetD8Async(p, 7, size, stream));
    CHECK(cuLaunchHostFunc(stream, hold_stream, NULL));
    CHECK(cuMemFreeAsync(p, stream));
    pthread_mutex_lock(&gate_lock);
    bool waited = gate_timed_out;
    gate_open = true;
    pthread_cond_signal(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    if (waited)
        return fail("cuMemFreeAsync waited for the stream (the host function timed out)");
    printf("free returned while the stream was held\n");
    CHECK(cuStreamSynchronize(stream));
    printf("info before %zu after %zu\n", before, free_now());
    CHECK(cuStreamDestroy(stream));
    return 0;
}

/* ---------------------------------------------------------------- capture */

static int run_capture(size_t size)
{
    probe_init();
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr data, target;
    if (cuMemAllocAsync(&data, size, stream) != CUDA_SUCCESS || cuMemAlloc(&target, size) != CUDA_SUCCESS)
        return 2;
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus status;
    CHECK(cuStreamIsCapturing(stream, &status));
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return fail("the stream does not say it is capturing");
    CUdeviceptr scratch; /* the graph's own allocation */
    CHECK(cuMemAllocAsync(&scratch, size, stream));
    CHECK(cuMemsetD8Async(scratch, 0x5a, size, stream));
    CHECK(cuMemcpyDtoDAsync(data, scratch, size, stream));
    CHECK(cuMemcpyDtoDAsync(target, data, size, stream));
    CHECK(cuMemFreeAsync(scratch, stream));
    CHECK(cuMemFreeAsync(data, stream)); /* the graph's last use of it: freed when the graph runs */
    CUgraph graph;
    CHECK(cuStreamEndCapture(stream, &graph));
    CHECK(cuStreamIsCapturing(stream, &status));
    if (status != CU_STREAM_CAPTURE_STATUS_NONE)
        return fail("the stream still says it is capturing");
    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    CHECK(cuMemsetD8(target, 0, size));
    CHECK(cuGraphLaunch(exec, stream));
    CHECK(cuStreamSynchronize(stream));
    unsigned char *seen = malloc(size);
    if (!seen)
        return 1;
    CHECK(cuMemcpyDtoH(seen, target, size));
    for (size_t i = 0; i < size; i++)
        if (seen[i] != 0x5a) {
            printf("byte %zu is 0x%02x after the graph ran\n", i, seen[i]);
            return 4;
        }
    free(seen);
    printf("graph ran: every captured write landed\n");
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
    CHECK(cuMemFree(target));
    CHECK(cuStreamDestroy(stream));
    return 0;
}

/* ---------------------------------------------------------------- reset */

static int run_reset(size_t size)
{
    CUcontext ctx = probe_init();
    CUdevice device;
    CHECK(cuCtxGetDevice(&device));
    for (int round = 1; round <= 2; round++) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, size) != CUDA_SUCCESS)
            return 2;
        CHECK(cuMemsetD8(p, (unsigned char)round, size));
        printf("round %d free %zu\n", round, free_now());
        /* cudaDeviceReset: the primary context goes with everything in it, unfreed */
        CHECK(cuDevicePrimaryCtxReset(device));
        CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
        CHECK(cuCtxSetCurrent(ctx));
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 4 && strcmp(argv[1], "grow") == 0)
        return run_grow(probe_parse_size(argv[2]), atoi(argv[3]));
    if (argc == 3 && strcmp(argv[1], "freeasync") == 0)
        return run_freeasync(probe_parse_size(argv[2]));
    if (argc == 3 && strcmp(argv[1], "capture") == 0)
        return run_capture(probe_parse_size(argv[2]));
    if (argc == 3 && strcmp(argv[1], "reset") == 0)
        return run_reset(probe_parse_size(argv[2]));
    fprintf(stderr, "usage: serving grow SIZE COUNT | freeasync SIZE | capture SIZE | reset SIZE\n");
    return 1;
}
