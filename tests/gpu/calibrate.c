/* calibrate.c — times the operations simcuda's time model charges, with events, on
 * whichever driver libcuda.so.1 is: on simcuda (SIMCUDA_HOST_TIME=0) the figures are its
 * prediction for the profile, on a GPU they are measured. tests/gpu/run.sh runs it on
 * both and prints the ratio per line (its calibration step).
 *
 *   calibrate MODULE [--max-size BYTES] [--reps N] [--chunks N]
 *
 * MODULE holds the kernel read_words: tests/gpu/calibrate_kernels.cu built as a fatbin on
 * a GPU, the host-kernel library from calibrate_kernels_sim.c on simcuda. Operations:
 *   htod_pinned, dtoh_pinned   cuMemcpy{HtoD,DtoH}Async of pinned memory, 2 MiB to
 *                              --max-size (default 1 GiB), by 4
 *   read_pinned, read_host_numa a kernel reading pinned memory (cuMemHostAlloc) or a
 *                              HOST_NUMA VMM allocation in place: 2, 32 and 256 MiB
 *   vmm_create, vmm_map,       cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap of one
 *   vmm_set_access, vmm_unmap  chunk at a time (the granularity, 2 MiB), --chunks of them
 *                              (default 256), twice
 * Each operation is timed between two events on one stream, the VMM calls (host calls)
 * too: on a GPU the events of an idle stream complete as they are submitted; on simcuda
 * they carry the host clock, so whatever simcuda charges a VMM call shows there.
 *
 * Output, one line per figure (microseconds per operation, the mean over REPS):
 *   calib OPERATION BYTES REPS MICROSECONDS
 *   skip OPERATION REASON
 * and "# " lines. No managed memory is ever allocated. Exit status 0 when every figure
 * was taken and every kernel's sum of the words it read was right. */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define MIB ((size_t)1 << 20)

static const char *program_name = "calibrate";

/* Stops the program with the failing call and the driver's name for its error. */
static void check_cu(CUresult result, const char *call)
{
    if (result == CUDA_SUCCESS)
        return;
    const char *name = NULL;
    cuGetErrorName(result, &name);
    fprintf(stderr, "%s: %s failed: %s (%d)\n", program_name, call, name ? name : "?", (int)result);
    exit(1);
}
#define CU(call) check_cu((call), #call)

/* ---------------------------------------------------------------- the set-up */

typedef struct bench {
    CUdevice device;
    CUcontext ctx;
    CUstream stream;
    CUevent start, stop;
    CUfunction read_words;
    int sm_count;
    int reps;        /* --reps, 0: by size */
    size_t max_size; /* largest copy */
    int chunks;      /* VMM chunks per round */
} bench;

/* The word at index i of every buffer: the kernels' sums are checked against it. */
static uint32_t word_at(uint64_t i) { return (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 7); }

static uint64_t pattern_sum(uint64_t words)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < words; i++)
        sum += word_at(i);
    return sum;
}

/* Repetitions for `bytes`: about 4 GiB in all, 3 to 64 (or --reps). */
static int reps_for(const bench *b, size_t bytes)
{
    if (b->reps > 0)
        return b->reps;
    size_t n = ((size_t)4 << 30) / bytes;
    return n < 3 ? 3 : n > 64 ? 64 : (int)n;
}

static void event_start(bench *b) { CU(cuEventRecord(b->start, b->stream)); }

/* Microseconds since event_start, per operation. */
static double event_stop_us(bench *b, int ops)
{
    CU(cuEventRecord(b->stop, b->stream));
    CU(cuEventSynchronize(b->stop));
    float ms = 0;
    CU(cuEventElapsedTime(&ms, b->start, b->stop));
    return (double)ms * 1000.0 / ops;
}

static void report(const char *op, size_t bytes, int reps, double us)
{
    printf("calib %s %zu %d %.3f\n", op, bytes, reps, us);
    fflush(stdout);
}

/* ---------------------------------------------------------------- copies */

/* The copy sizes: 2 MiB times powers of 4 below --max-size, then --max-size itself. */
static size_t next_copy_size(const bench *b, size_t bytes)
{
    if (bytes >= b->max_size)
        return 0;
    return bytes * 4 < b->max_size ? bytes * 4 : b->max_size;
}

static void time_copies(bench *b, void *pinned, CUdeviceptr device)
{
    for (size_t bytes = 2 * MIB; bytes; bytes = next_copy_size(b, bytes)) {
        int reps = reps_for(b, bytes);
        CU(cuMemcpyHtoDAsync(device, pinned, bytes, b->stream)); /* warm-up, untimed */
        event_start(b);
        for (int r = 0; r < reps; r++)
            CU(cuMemcpyHtoDAsync(device, pinned, bytes, b->stream));
        report("htod_pinned", bytes, reps, event_stop_us(b, reps));
        CU(cuMemcpyDtoHAsync(pinned, device, bytes, b->stream));
        event_start(b);
        for (int r = 0; r < reps; r++)
            CU(cuMemcpyDtoHAsync(pinned, device, bytes, b->stream));
        report("dtoh_pinned", bytes, reps, event_stop_us(b, reps));
    }
}

/* ---------------------------------------------------------------- in-place reads */

static const size_t read_sizes[] = { 2 * MIB, 32 * MIB, 256 * MIB };

/* Times read_words over [data, data + bytes) and checks the sum of what it read. */
static bool time_reads(bench *b, const char *op, CUdeviceptr data, size_t bytes, CUdeviceptr sum_dev)
{
    uint64_t vectors = bytes / 16; /* the kernel reads 16 bytes at a time */
    unsigned grid = (unsigned)b->sm_count * 8, block = 256;
    void *params[] = { &data, &vectors, &sum_dev };
    int reps = reps_for(b, bytes * 8); /* reads are slower than copies: fewer repetitions */
    CU(cuMemsetD32Async(sum_dev, 0, 2, b->stream));
    CU(cuLaunchKernel(b->read_words, grid, 1, 1, block, 1, 1, 0, b->stream, params, NULL)); /* warm-up */
    event_start(b);
    for (int r = 0; r < reps; r++)
        CU(cuLaunchKernel(b->read_words, grid, 1, 1, block, 1, 1, 0, b->stream, params, NULL));
    report(op, bytes, reps, event_stop_us(b, reps));
    uint64_t got = 0;
    CU(cuMemcpyDtoH(&got, sum_dev, sizeof got));
    uint64_t want = pattern_sum(bytes / 4) * (uint64_t)(reps + 1);
    if (got != want) {
        fprintf(stderr, "%s: %s of %zu bytes: the kernel summed %" PRIu64 ", the words sum to %" PRIu64 "\n",
                program_name, op, bytes, got, want);
        return false;
    }
    return true;
}

/* The largest read size that fits in `limit`. */
static size_t read_max(size_t limit)
{
    size_t max = 0;
    for (size_t i = 0; i < sizeof read_sizes / sizeof read_sizes[0]; i++)
        if (read_sizes[i] <= limit)
            max = read_sizes[i];
    return max;
}

static bool reads_of_pinned(bench *b, void *pinned, size_t pinned_bytes, CUdeviceptr sum_dev)
{
    CUdeviceptr mapped = 0;
    CU(cuMemHostGetDevicePointer(&mapped, pinned, 0));
    bool ok = true;
    for (size_t i = 0; i < sizeof read_sizes / sizeof read_sizes[0]; i++)
        if (read_sizes[i] <= pinned_bytes)
            ok &= time_reads(b, "read_pinned", mapped, read_sizes[i], sum_dev);
    return ok;
}

/* A HOST_NUMA allocation on the device's host node, filled from the pinned pattern by
 * copies, then read in place. */
static bool reads_of_host_numa(bench *b, void *pinned, size_t pinned_bytes, CUdeviceptr sum_dev)
{
    int supported = 0, node = -1;
    cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, b->device);
    if (!supported) {
        printf("skip read_host_numa the device has no HOST_NUMA in the VMM API "
               "(HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0)\n");
        return true;
    }
    if (cuDeviceGetAttribute(&node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, b->device) != CUDA_SUCCESS || node < 0)
        node = 0;
    size_t bytes = read_max(pinned_bytes);
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = node;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va = 0;
    CU(cuMemCreate(&handle, bytes, &prop, 0));
    CU(cuMemAddressReserve(&va, bytes, 0, 0, 0));
    CU(cuMemMap(va, bytes, 0, handle, 0));
    CUmemAccessDesc access = { { CU_MEM_LOCATION_TYPE_DEVICE, b->device }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CU(cuMemSetAccess(va, bytes, &access, 1));
    CU(cuMemcpyHtoD(va, pinned, bytes));
    printf("# read_host_numa: HOST_NUMA node %d\n", node);
    bool ok = true;
    for (size_t i = 0; i < sizeof read_sizes / sizeof read_sizes[0]; i++)
        if (read_sizes[i] <= bytes)
            ok &= time_reads(b, "read_host_numa", va, read_sizes[i], sum_dev);
    CU(cuMemUnmap(va, bytes));
    CU(cuMemAddressFree(va, bytes));
    CU(cuMemRelease(handle));
    return ok;
}

/* ---------------------------------------------------------------- VMM calls */

/* One round: every chunk created, then mapped, then given access, then unmapped, each
 * phase timed as a whole; returns the four per-chunk means in us[]. */
static void vmm_round(bench *b, int chunks, size_t chunk, CUdeviceptr va, double us[4], bool timed)
{
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = b->device;
    CUmemAccessDesc access = { { CU_MEM_LOCATION_TYPE_DEVICE, b->device }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUmemGenericAllocationHandle *handles = calloc((size_t)chunks, sizeof *handles);
    if (!handles) {
        fprintf(stderr, "%s: out of host memory\n", program_name);
        exit(1);
    }
    double t[4];
    event_start(b);
    for (int i = 0; i < chunks; i++)
        CU(cuMemCreate(&handles[i], chunk, &prop, 0));
    t[0] = event_stop_us(b, chunks);
    event_start(b);
    for (int i = 0; i < chunks; i++)
        CU(cuMemMap(va + (CUdeviceptr)i * chunk, chunk, 0, handles[i], 0));
    t[1] = event_stop_us(b, chunks);
    event_start(b);
    for (int i = 0; i < chunks; i++)
        CU(cuMemSetAccess(va + (CUdeviceptr)i * chunk, chunk, &access, 1));
    t[2] = event_stop_us(b, chunks);
    event_start(b);
    for (int i = 0; i < chunks; i++)
        CU(cuMemUnmap(va + (CUdeviceptr)i * chunk, chunk));
    t[3] = event_stop_us(b, chunks);
    for (int i = 0; i < chunks; i++)
        CU(cuMemRelease(handles[i]));
    free(handles);
    if (timed)
        for (int k = 0; k < 4; k++)
            us[k] += t[k];
}

static void time_vmm(bench *b)
{
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = b->device;
    size_t chunk = 0;
    CU(cuMemGetAllocationGranularity(&chunk, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t range = chunk * (size_t)b->chunks;
    CUdeviceptr va = 0;
    CU(cuMemAddressReserve(&va, range, 0, 0, 0));
    double us[4] = { 0, 0, 0, 0 };
    vmm_round(b, b->chunks < 16 ? b->chunks : 16, chunk, va, us, false); /* warm-up */
    const int rounds = 2;
    for (int r = 0; r < rounds; r++)
        vmm_round(b, b->chunks, chunk, va, us, true);
    CU(cuMemAddressFree(va, range));
    static const char *const names[4] = { "vmm_create", "vmm_map", "vmm_set_access", "vmm_unmap" };
    for (int k = 0; k < 4; k++)
        report(names[k], chunk, b->chunks * rounds, us[k] / rounds);
}

/* ---------------------------------------------------------------- main */

static size_t parse_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *end || v == 0) {
        fprintf(stderr, "%s: '%s' is not a positive number\n", program_name, text);
        exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    bench b = { .max_size = 1024 * MIB, .chunks = 256 };
    const char *module_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
            b.max_size = parse_size(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            b.reps = (int)parse_size(argv[++i]);
        else if (strcmp(argv[i], "--chunks") == 0 && i + 1 < argc)
            b.chunks = (int)parse_size(argv[++i]);
        else if (!module_path && argv[i][0] != '-')
            module_path = argv[i];
        else
            module_path = NULL, i = argc;
    }
    if (!module_path || b.max_size < 2 * MIB) {
        fprintf(stderr, "usage: %s MODULE [--max-size BYTES (at least 2 MiB)] [--reps N] [--chunks N]\n", argv[0]);
        return 2;
    }
    b.max_size &= ~(2 * MIB - 1);

    CU(cuInit(0));
    CU(cuDeviceGet(&b.device, 0));
    CU(cuDevicePrimaryCtxRetain(&b.ctx, b.device));
    CU(cuCtxSetCurrent(b.ctx));
    char name[128] = "";
    int driver = 0;
    cuDeviceGetName(name, sizeof name, b.device);
    cuDriverGetVersion(&driver);
    CU(cuDeviceGetAttribute(&b.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, b.device));
    bool simcuda = dlsym(RTLD_DEFAULT, "simcuda_now_ns") != NULL;
    printf("# calibrate: device \"%s\", driver %d, %d SMs, %s\n", name, driver, b.sm_count,
           simcuda ? "simcuda (simulated time)" : "a real driver");

    /* What the program needs on the device: the largest copy and one VMM round. */
    size_t free_bytes = 0, total_bytes = 0;
    CU(cuMemGetInfo(&free_bytes, &total_bytes));
    size_t need = b.max_size + (size_t)b.chunks * 2 * MIB + 64 * MIB;
    if (need > free_bytes) {
        fprintf(stderr, "%s: needs %zu MiB of device memory, %zu MiB free\n", program_name, need / MIB,
                free_bytes / MIB);
        return 1;
    }
    CUmodule module;
    CU(cuModuleLoad(&module, module_path));
    CU(cuModuleGetFunction(&b.read_words, module, "read_words"));
    CU(cuStreamCreate(&b.stream, CU_STREAM_NON_BLOCKING));
    CU(cuEventCreate(&b.start, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&b.stop, CU_EVENT_DEFAULT));

    void *pinned = NULL;
    CUdeviceptr device = 0, sum_dev = 0;
    CU(cuMemHostAlloc(&pinned, b.max_size, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    uint32_t *words = pinned;
    for (uint64_t i = 0; i < b.max_size / 4; i++)
        words[i] = word_at(i);
    CU(cuMemAlloc(&device, b.max_size));
    CU(cuMemAlloc(&sum_dev, 64));

    time_copies(&b, pinned, device);
    bool ok = reads_of_pinned(&b, pinned, b.max_size, sum_dev);
    /* the copies above overwrote the pinned pattern with itself (device held it) */
    ok &= reads_of_host_numa(&b, pinned, b.max_size, sum_dev);
    time_vmm(&b);

    CU(cuMemFree(sum_dev));
    CU(cuMemFree(device));
    CU(cuMemFreeHost(pinned));
    CU(cuEventDestroy(b.start));
    CU(cuEventDestroy(b.stop));
    CU(cuStreamDestroy(b.stream));
    CU(cuModuleUnload(module));
    CU(cuDevicePrimaryCtxRelease(b.device));
    printf("# calibrate: %s\n", ok ? "every figure taken, every sum right" : "a kernel's sum was wrong");
    return ok ? 0 : 1;
}
