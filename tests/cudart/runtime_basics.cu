// runtime_basics.cu — the CUDA runtime (libcudart, static or shared) on simcuda and on a
// GPU: what every program does first. Built by nvcc twice (tests/cudart/module.mk), run by
// tests/cudart/test_cudart.sh on simcuda, which passes what the device must look like, and
// by tests/gpu/run.sh on a GPU with CUDART_TEST_DEVICE=gpu (cudart_tap.h), the cases of
// tests/cudart/cases.txt.
//
//   runtime_basics basics DEVICES MEM_BYTES   device count and properties, cudaFree(0),
//                                            memory info, copies both ways, memset,
//                                            streams and events, stream-ordered
//                                            allocation, cudaDeviceReset and a second use;
//                                            MEM_BYTES 0: the device's own total
//   runtime_basics threads                   four threads initialising at once on two devices
//                                            (on a GPU: on the devices there are)
//   runtime_basics kernel                    a __global__ kernel: on simcuda its launch fails
//                                            with cudaErrorNoKernelImageForDevice and the
//                                            program goes on; on a GPU it runs and doubles
//                                            the values; a __device__ variable works
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "tests/cudart/cudart_tap.h"

// ---------------------------------------------------------------- basics

static const size_t kCopyBytes = (size_t)4 << 20;

// cudaMalloc, then a pattern there and back; `label` says which round.
static void copy_round(const char *label, unsigned seed)
{
    unsigned char *host = (unsigned char *)malloc(kCopyBytes), *back = (unsigned char *)malloc(kCopyBytes);
    for (size_t i = 0; i < kCopyBytes; i++)
        host[i] = tap_pattern_byte(i, seed);
    memset(back, 0, kCopyBytes);
    void *device = NULL;
    char what[128];
    snprintf(what, sizeof what, "%s: cudaMalloc of 4 MiB", label);
    if (TAP_CUDA(cudaMalloc(&device, kCopyBytes), what)) {
        snprintf(what, sizeof what, "%s: cudaMemcpy host to device", label);
        TAP_CUDA(cudaMemcpy(device, host, kCopyBytes, cudaMemcpyHostToDevice), what);
        snprintf(what, sizeof what, "%s: cudaMemcpy device to host", label);
        TAP_CUDA(cudaMemcpy(back, device, kCopyBytes, cudaMemcpyDeviceToHost), what);
        TAP_CHECK(tap_pattern_holds(back, kCopyBytes, seed), "%s: the 4 MiB pattern came back unchanged", label);
        snprintf(what, sizeof what, "%s: cudaFree", label);
        TAP_CUDA(cudaFree(device), what);
    }
    free(host);
    free(back);
}

static int run_basics(int expected_devices, size_t expected_memory)
{
    int count = -1;
    TAP_CUDA(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    TAP_CHECK(count == expected_devices, "the runtime sees %d device(s) (saw %d)", expected_devices, count);

    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    TAP_CUDA(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    const bool gpu = tap_on_gpu();
    if (gpu) {
        TAP_CHECK(strstr(prop.name, "simcuda") == NULL, "the device is a GPU, not simcuda (\"%s\")", prop.name);
        TAP_CHECK(prop.major * 10 + prop.minor >= 75, "compute capability 7.5 or newer, what nvcc builds for (saw %d.%d)",
                  prop.major, prop.minor);
    } else {
        TAP_CHECK(strstr(prop.name, "simcuda") != NULL, "the device is named as simcuda's (\"%s\")", prop.name);
        TAP_CHECK(prop.major == 9 && prop.minor == 0, "compute capability 9.0 (saw %d.%d)", prop.major, prop.minor);
    }
    // MEM_BYTES 0 takes the device's total, which cudaMemGetInfo must then agree with.
    if (expected_memory == 0)
        expected_memory = prop.totalGlobalMem;
    TAP_CHECK(prop.totalGlobalMem == expected_memory && expected_memory > 0,
              "totalGlobalMem is %s, %zu bytes (saw %zu)", gpu ? "the device's" : "SIMCUDA_MEM", expected_memory,
              (size_t)prop.totalGlobalMem);
    TAP_CHECK(prop.maxThreadsPerBlock == 1024 && prop.warpSize == 32, "1024 threads per block, warps of 32");
    int value = 0;
    TAP_CUDA(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
    TAP_CHECK(value == prop.multiProcessorCount && value > 0, "attribute and property agree on the SM count (%d)",
              value);

    TAP_CUDA(cudaFree(0), "cudaFree(0) initialises the context");
    size_t free_bytes = 0, total_bytes = 0;
    TAP_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    TAP_CHECK(total_bytes == expected_memory && free_bytes <= total_bytes && free_bytes > total_bytes / 2,
              "cudaMemGetInfo: total %zu is totalGlobalMem, free %zu below it", total_bytes, free_bytes);
    void *held = NULL;
    TAP_CUDA(cudaMalloc(&held, kCopyBytes), "cudaMalloc of 4 MiB held");
    size_t free_after = 0;
    TAP_CUDA(cudaMemGetInfo(&free_after, &total_bytes), "cudaMemGetInfo with 4 MiB held");
    TAP_CHECK(free_after + kCopyBytes <= free_bytes, "free memory fell by at least 4 MiB (%zu to %zu)", free_bytes,
              free_after);
    cudaPointerAttributes attributes;
    TAP_CUDA(cudaPointerGetAttributes(&attributes, held), "cudaPointerGetAttributes");
    TAP_CHECK(attributes.type == cudaMemoryTypeDevice && attributes.device == 0, "the memory is device 0's");
    TAP_CUDA(cudaFree(held), "cudaFree of the held 4 MiB");

    copy_round("first use", 7);

    // cudaMemset, read back.
    unsigned char *device = NULL, *host = (unsigned char *)malloc(kCopyBytes);
    TAP_CUDA(cudaMalloc((void **)&device, kCopyBytes), "cudaMalloc for cudaMemset");
    TAP_CUDA(cudaMemset(device, 0xa5, kCopyBytes), "cudaMemset 0xa5");
    TAP_CUDA(cudaMemset(device + 1000, 0x11, 24), "cudaMemset 0x11 on 24 bytes at 1000");
    TAP_CUDA(cudaMemcpy(host, device, kCopyBytes, cudaMemcpyDeviceToHost), "cudaMemcpy of the memset bytes");
    bool memset_ok = true;
    for (size_t i = 0; i < kCopyBytes; i++)
        memset_ok &= host[i] == ((i >= 1000 && i < 1024) ? 0x11 : 0xa5);
    TAP_CHECK(memset_ok, "every byte holds what the two memsets wrote");

    // A stream, pinned memory, events around an asynchronous copy.
    cudaStream_t stream = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    unsigned char *pinned = NULL;
    TAP_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    TAP_CUDA(cudaEventCreate(&start), "cudaEventCreate start");
    TAP_CUDA(cudaEventCreate(&stop), "cudaEventCreate stop");
    TAP_CUDA(cudaMallocHost((void **)&pinned, kCopyBytes), "cudaMallocHost");
    for (size_t i = 0; pinned && i < kCopyBytes; i++)
        pinned[i] = tap_pattern_byte(i, 3);
    TAP_CUDA(cudaEventRecord(start, stream), "cudaEventRecord start");
    TAP_CUDA(cudaMemcpyAsync(device, pinned, kCopyBytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync to device");
    TAP_CUDA(cudaEventRecord(stop, stream), "cudaEventRecord stop");
    TAP_CUDA(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = -1.0f;
    TAP_CUDA(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    TAP_CHECK(ms > 0.0f && ms < 1000.0f, "a 4 MiB copy took a positive time under a second (%g ms)", ms);
    memset(pinned, 0, kCopyBytes);
    TAP_CUDA(cudaMemcpyAsync(pinned, device, kCopyBytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync to host");
    TAP_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    TAP_CHECK(pinned && tap_pattern_holds(pinned, kCopyBytes, 3), "the stream's copies kept their order and bytes");

    // Stream-ordered allocation.
    unsigned char *async = NULL;
    const size_t async_bytes = (size_t)1 << 20;
    TAP_CUDA(cudaMallocAsync((void **)&async, async_bytes, stream), "cudaMallocAsync");
    TAP_CUDA(cudaMemsetAsync(async, 0x3c, async_bytes, stream), "cudaMemsetAsync");
    TAP_CUDA(cudaMemcpyAsync(pinned, async, async_bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync back");
    TAP_CUDA(cudaFreeAsync(async, stream), "cudaFreeAsync");
    TAP_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize after cudaFreeAsync");
    bool async_ok = pinned != NULL;
    for (size_t i = 0; pinned && i < async_bytes; i++)
        async_ok &= pinned[i] == 0x3c;
    TAP_CHECK(async_ok, "memory from cudaMallocAsync held what cudaMemsetAsync wrote");

    TAP_CUDA(cudaEventDestroy(start), "cudaEventDestroy start");
    TAP_CUDA(cudaEventDestroy(stop), "cudaEventDestroy stop");
    TAP_CUDA(cudaStreamDestroy(stream), "cudaStreamDestroy");
    TAP_CUDA(cudaFreeHost(pinned), "cudaFreeHost");
    TAP_CUDA(cudaFree(device), "cudaFree");
    free(host);

    // Reset, then the device works again from a fresh context.
    TAP_CUDA(cudaDeviceReset(), "cudaDeviceReset");
    TAP_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo after the reset");
    TAP_CHECK(total_bytes == expected_memory && free_bytes > total_bytes / 2,
              "after the reset: total %zu, free %zu", total_bytes, free_bytes);
    copy_round("after cudaDeviceReset", 11);
    TAP_CUDA(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return tap_plan();
}

// ---------------------------------------------------------------- threads

static const int kThreads = 4;
static pthread_barrier_t start_line;

struct thread_result {
    int index, device;
    cudaError_t set, init, alloc, copy_in, copy_out, get, free_;
    int device_seen, pointer_device;
    bool pattern;
};

static int thread_devices = 2;

static void *thread_main(void *arg)
{
    struct thread_result *r = (struct thread_result *)arg;
    const size_t bytes = (size_t)1 << 20;
    unsigned char *host = (unsigned char *)malloc(bytes), *back = (unsigned char *)calloc(1, bytes);
    for (size_t i = 0; i < bytes; i++)
        host[i] = tap_pattern_byte(i, (unsigned)r->index);
    void *device = NULL;
    pthread_barrier_wait(&start_line); // every thread's first runtime call at once
    r->set = cudaSetDevice(r->device);
    r->init = cudaFree(0);
    r->alloc = cudaMalloc(&device, bytes);
    r->copy_in = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
    r->copy_out = cudaMemcpy(back, device, bytes, cudaMemcpyDeviceToHost);
    r->pattern = tap_pattern_holds(back, bytes, (unsigned)r->index);
    r->get = cudaGetDevice(&r->device_seen);
    cudaPointerAttributes attributes;
    r->pointer_device = cudaPointerGetAttributes(&attributes, device) == cudaSuccess ? attributes.device : -1;
    r->free_ = cudaFree(device);
    free(host);
    free(back);
    return NULL;
}

static int run_threads(void)
{
    int count = -1;
    TAP_CUDA(cudaGetDeviceCount(&count), "cudaGetDeviceCount (threads)");
    if (tap_on_gpu()) {
        TAP_CHECK(count >= 1, "at least one GPU (saw %d); the threads take them in turn", count);
        thread_devices = count >= 2 ? 2 : 1;
    } else {
        TAP_CHECK(count == 2, "two devices (SIMCUDA_DEVICES=2; saw %d)", count);
    }
    pthread_t threads[kThreads];
    struct thread_result results[kThreads];
    pthread_barrier_init(&start_line, NULL, kThreads);
    for (int i = 0; i < kThreads; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].index = i;
        results[i].device = i % thread_devices;
        pthread_create(&threads[i], NULL, thread_main, &results[i]);
    }
    for (int i = 0; i < kThreads; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < kThreads; i++) {
        const struct thread_result *r = &results[i];
        TAP_CHECK(r->set == cudaSuccess && r->init == cudaSuccess, "thread %d: cudaSetDevice(%d) and cudaFree(0)", i,
                  r->device);
        TAP_CHECK(r->alloc == cudaSuccess && r->copy_in == cudaSuccess && r->copy_out == cudaSuccess,
                  "thread %d: cudaMalloc and copies both ways", i);
        TAP_CHECK(r->pattern, "thread %d: its pattern came back", i);
        TAP_CHECK(r->get == cudaSuccess && r->device_seen == r->device && r->pointer_device == r->device,
                  "thread %d: current device and the memory's device are %d (saw %d, %d)", i, r->device,
                  r->device_seen, r->pointer_device);
        TAP_CHECK(r->free_ == cudaSuccess, "thread %d: cudaFree", i);
    }
    pthread_barrier_destroy(&start_line);
    return tap_plan();
}

// ---------------------------------------------------------------- kernels

__device__ int device_table[4];

__global__ void scale(float *values, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        values[i] *= 2.0f;
}

// On a GPU the three launches run, each doubling the values; on simcuda each is refused
// (cudaErrorNoKernelImageForDevice, not sticky) and the values stay as they were.
static int run_kernel(void)
{
    const bool gpu = tap_on_gpu();
    const cudaError_t launch = gpu ? cudaSuccess : cudaErrorNoKernelImageForDevice;
    const char *outcome = gpu ? "succeeds" : "fails with cudaErrorNoKernelImageForDevice";
    char what[160];
    float host[1024], back[1024];
    for (int i = 0; i < 1024; i++)
        host[i] = (float)i;
    float *values = NULL;
    TAP_CUDA(cudaMalloc((void **)&values, sizeof host), "cudaMalloc before the launch");
    TAP_CUDA(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice), "cudaMemcpy before the launch");
    scale<<<4, 256>>>(values, 1024);
    snprintf(what, sizeof what, "the launch %s", outcome);
    TAP_CUDA_IS(cudaGetLastError(), launch, what);
    scale<<<4, 256>>>(values, 1024);
    snprintf(what, sizeof what, "a second launch %s the same way", outcome);
    TAP_CUDA_IS(cudaGetLastError(), launch, what);
    TAP_CUDA(cudaGetLastError(), "the error is not sticky: cudaGetLastError is clear again");

    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute = {};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.gridDim = dim3(4);
    config.blockDim = dim3(256);
    config.attrs = &attribute;
    config.numAttrs = 1;
    snprintf(what, sizeof what, "cudaLaunchKernelEx %s", outcome);
    TAP_CUDA_IS(cudaLaunchKernelEx(&config, scale, values, 1024), launch, what);

    cudaFuncAttributes attributes;
    memset(&attributes, 0, sizeof attributes);
    TAP_CUDA(cudaFuncGetAttributes(&attributes, scale), "cudaFuncGetAttributes");
    TAP_CHECK(attributes.maxThreadsPerBlock == 1024 && attributes.numRegs > 0,
              "the kernel's attributes look like a GPU's (%d threads, %d registers)", attributes.maxThreadsPerBlock,
              attributes.numRegs);
    if (gpu) {
        // nvcc's default build carries sm_75 code and compute_75 PTX: the driver runs the
        // SASS or what it compiled from the PTX, never code newer than the device.
        int major = 0, minor = 0;
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
        TAP_CHECK(attributes.ptxVersion >= 75 && attributes.binaryVersion >= attributes.ptxVersion &&
                      attributes.binaryVersion <= major * 10 + minor,
                  "binary version %d between the PTX version %d and the device's %d", attributes.binaryVersion,
                  attributes.ptxVersion, major * 10 + minor);
    } else {
        TAP_CHECK(attributes.binaryVersion == 90 && attributes.ptxVersion == 90,
                  "binary and PTX version follow compute capability 9.0 (%d, %d)", attributes.binaryVersion,
                  attributes.ptxVersion);
    }

    // A __device__ variable has storage whether or not a kernel ran.
    int table[4] = { 4, 3, 2, 1 }, table_back[4] = { 0, 0, 0, 0 };
    TAP_CUDA(cudaMemcpyToSymbol(device_table, table, sizeof table), "cudaMemcpyToSymbol");
    TAP_CUDA(cudaMemcpyFromSymbol(table_back, device_table, sizeof table_back), "cudaMemcpyFromSymbol");
    TAP_CHECK(memcmp(table, table_back, sizeof table) == 0, "the __device__ variable holds what was copied in");

    // The process goes on: copies still work, and show what the launches did.
    TAP_CUDA(cudaMemcpy(back, values, sizeof back, cudaMemcpyDeviceToHost), "cudaMemcpy back after the launches");
    bool as_expected = true;
    for (int i = 0; i < 1024; i++)
        as_expected &= back[i] == (gpu ? host[i] * 8.0f : host[i]);
    TAP_CHECK(as_expected, gpu ? "three launches doubled every value three times" : "the values are untouched (no kernel ran)");
    TAP_CUDA(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the launches");
    TAP_CUDA(cudaFree(values), "cudaFree");
    return tap_plan();
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "basics") == 0)
        return run_basics(atoi(argv[2]), (size_t)strtoull(argv[3], NULL, 10));
    if (argc == 2 && strcmp(argv[1], "threads") == 0)
        return run_threads();
    if (argc == 2 && strcmp(argv[1], "kernel") == 0)
        return run_kernel();
    fprintf(stderr, "usage: %s basics DEVICES MEM_BYTES | threads | kernel\n", argv[0]);
    return 2;
}
