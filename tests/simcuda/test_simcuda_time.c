/* test_simcuda_time.c — simcuda's time model: copies cost bytes over the path's rate,
 * kernels the roofline of what they declare per memory location, copy engines are shared
 * per direction, events and synchronisation carry simulated time, profiles and overrides
 * apply, ABI 1 modules are charged the launch overhead only, VMM calls cost the host what
 * the profile says and unmaps wait for the work on their range, and queued copies overlap
 * their set-up.
 *
 * Every case runs in a process of its own with SIMCUDA_HOST_TIME=0 (host code costs no
 * simulated time), so the expected figures follow from the profile alone: each is
 * checked within 2% of bytes over the rate plus the profile's overhead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

#ifndef SIMCUDA_ABI1_MODULE
#error "SIMCUDA_ABI1_MODULE must name the ABI 1 test module (set by the build)"
#endif

/* h200-pcie5, as sim_profile.c states it (ns per byte = 1 / GB/s). */
#define HBM_GBPS 4080.0
#define LINK_GBPS 50.0
#define ZERO_COPY_GBPS 35.0
#define HOST_LATENCY_US 1.0
#define LAUNCH_US 3.0
#define COPY_US 4.0
/* VMM calls, per call and per 2 MiB (sim_profile.c; their sums are kvcached's A100 means) */
#define UNMAP_US (22.0 + 3.6)
#define MAP_US (1.0 + 0.45)
#define SET_ACCESS_US (32.0 + 4.0)
#define CREATE_US (7.6 + 185.7)

/* ---------------------------------------------------------------- child helpers */

static int time_start(CUcontext *ctx)
{
    CUdevice dev;
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    child_expect_cu(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    child_expect_cu(cuDevicePrimaryCtxRetain(ctx, dev), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(*ctx), CUDA_SUCCESS);
    return child_failures;
}

static CUevent new_event(void)
{
    CUevent e = NULL;
    child_expect_cu(cuEventCreate(&e, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    return e;
}

static double elapsed_ms(CUevent a, CUevent b)
{
    float ms = -1;
    child_expect_cu(cuEventSynchronize(b), CUDA_SUCCESS);
    child_expect_cu(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
    return ms;
}

/* got within 2% of want */
#define expect_close(got, want, what)                                                        \
    child_expect((got) > 0.98 * (want) && (got) < 1.02 * (want), "%s: %.4f ms, expected %.4f ms", \
                 what, (double)(got), (double)(want))

static double ms_for(double bytes, double gbps)
{
    return bytes / gbps / 1e6;
}

/* Host memory simcuda does not know (pageable), never touched: copies read zero pages. */
static void *pageable(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    child_expect(p != MAP_FAILED, "mmap of %zu bytes", bytes);
    return p;
}

/* Launches touch_declare on `stream` between two events; returns its simulated ms. */
static double timed_touch(CUfunction touch, CUdeviceptr start, uint64_t bytes, int32_t is_write, double flops)
{
    CUevent a = new_event(), b = new_event();
    void *params[] = {&start, &bytes, &is_write, &flops};
    child_expect_cu(cuEventRecord(a, NULL), CUDA_SUCCESS);
    child_expect_cu(cuLaunchKernel(touch, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    child_expect_cu(cuEventRecord(b, NULL), CUDA_SUCCESS);
    double ms = elapsed_ms(a, b);
    cuEventDestroy(a);
    cuEventDestroy(b);
    return ms;
}

static CUfunction load_touch(CUmodule *module)
{
    CUfunction f = NULL;
    child_expect_cu(cuModuleLoad(module, CONFORMANCE_MODULE), CUDA_SUCCESS);
    child_expect_cu(cuModuleGetFunction(&f, *module, "touch_declare"), CUDA_SUCCESS);
    return f;
}

/* ---------------------------------------------------------------- copies */

/* A 256 MiB cuMemcpyHtoD timed with events takes 256 MiB over the link rate (plus the
 * copy overhead). The rate comes from the profile or SIMCUDA_LINK_GBPS: the child prints
 * the figure and the parent compares it per setting. */
uint64_t simcuda_now_ns(void); /* simcuda's export, not a driver function */

/* A synchronous 256 MiB copy: its simulated ms by events, and by simcuda_now_ns around it. */
int child_time_htod(void)
{
    CUcontext ctx;
    if (time_start(&ctx))
        return child_failures;
    size_t bytes = 256 * MIB;
    CUdeviceptr dst = 0;
    child_expect_cu(cuMemAlloc(&dst, bytes), CUDA_SUCCESS);
    void *src = pageable(bytes);
    CUevent a = new_event(), b = new_event();
    child_expect_cu(cuEventRecord(a, NULL), CUDA_SUCCESS);
    uint64_t before = simcuda_now_ns();
    child_expect_cu(cuMemcpyHtoD(dst, src, bytes), CUDA_SUCCESS);
    uint64_t after = simcuda_now_ns();
    child_expect_cu(cuEventRecord(b, NULL), CUDA_SUCCESS);
    printf("htod_ms=%.6f now_ms=%.6f\n", elapsed_ms(a, b), (double)(after - before) / 1e6);
    return child_failures;
}

static double child_figure(const char *name, const char *const *env, const char *key)
{
    static char output[1 << 16];
    int status = run_child(name, env, output, sizeof output);
    const char *at = strstr(output, key);
    if (status != 0 || !at) {
        print_error("child %s: status %d, no %s in:\n%s\n", name, status, key, output);
        fail();
    }
    return strtod(at + strlen(key), NULL);
}

static void check_close(double got, double want, const char *what)
{
    if (!(got > 0.98 * want && got < 1.02 * want)) {
        print_error("%s: %.4f ms, expected %.4f ms within 2%%\n", what, got, want);
        fail();
    }
}

/* SIMCUDA_TIMELINE: the 256 MiB copy is one line with its stream, span and bytes, the span
 * what the events measured; a file that exists already is left alone, with one line. */
static void timeline_lists_each_copy(void **state)
{
    (void)state;
    char dir[] = "/tmp/simcuda-timeline-XXXXXX", path[64], setting[96];
    if (!mkdtemp(dir)) {
        print_error("mkdtemp failed\n");
        fail();
    }
    snprintf(path, sizeof path, "%s/timeline", dir);
    snprintf(setting, sizeof setting, "SIMCUDA_TIMELINE=%s", path);
    const char *env[] = {"SIMCUDA_HOST_TIME=0", setting, NULL};
    double ms = child_figure("time_htod", env, "htod_ms=");
    FILE *f = fopen(path, "r");
    char line[256], kind[16], stream[32];
    double start = 0, end = 0;
    unsigned long long bytes = 0;
    int copies = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%15s %31s %lf %lf %llu", kind, stream, &start, &end, &bytes) == 5 &&
            strcmp(kind, "copy") == 0 && bytes == 256 * MIB) {
            copies++;
            check_close((end - start) / 1e3 + COPY_US / 1e3, ms, "the timeline's 256 MiB copy");
        }
    if (f)
        fclose(f);
    if (copies != 1) {
        print_error("%d lines of a 256 MiB copy in %s, expected 1\n", copies, path);
        fail();
    }
    /* the file exists now: a second run leaves it as it is and says so */
    struct stat before, after;
    static char output[1 << 16];
    if (stat(path, &before) != 0 || run_child("time_htod", env, output, sizeof output) != 0 ||
        !strstr(output, "could not be created") || stat(path, &after) != 0 || after.st_size != before.st_size ||
        after.st_mtime != before.st_mtime) {
        print_error("a second run with %s: expected one line and the file untouched:\n%s\n", setting, output);
        fail();
    }
    unlink(path);
    rmdir(dir);
    /* a path no file name can be: cuInit refused, with one line naming the setting */
    char long_setting[400] = "SIMCUDA_TIMELINE=/tmp/";
    memset(long_setting + strlen(long_setting), 'x', 300);
    const char *too_long[] = {"SIMCUDA_HOST_TIME=0", long_setting, NULL};
    if (run_child("report_init", too_long, output, sizeof output) != 0 ||
        !strstr(output, "is not a file path under 256 bytes") || !strstr(output, "CUDA_ERROR_INVALID_VALUE")) {
        print_error("a 300-byte SIMCUDA_TIMELINE: expected one line naming it and a refused cuInit:\n%s\n", output);
        fail();
    }
}

static void htod_takes_bytes_over_link_rate(void **state)
{
    (void)state;
    double bytes = 256.0 * MIB;
    const char *h200[] = {"SIMCUDA_HOST_TIME=0", NULL};
    check_close(child_figure("time_htod", h200, "htod_ms="), COPY_US / 1e3 + ms_for(bytes, LINK_GBPS),
                "h200-pcie5 256 MiB HtoD");
    check_close(child_figure("time_htod", h200, "now_ms="), COPY_US / 1e3 + ms_for(bytes, LINK_GBPS),
                "simcuda_now_ns across a 256 MiB HtoD");
    const char *link64[] = {"SIMCUDA_HOST_TIME=0", "SIMCUDA_LINK_GBPS=64", NULL};
    check_close(child_figure("time_htod", link64, "htod_ms="), COPY_US / 1e3 + ms_for(bytes, 64),
                "SIMCUDA_LINK_GBPS=64 256 MiB HtoD");
    const char *gh200[] = {"SIMCUDA_HOST_TIME=0", "SIMCUDA_PROFILE=gh200-c2c", NULL};
    check_close(child_figure("time_htod", gh200, "htod_ms="), COPY_US / 1e3 + ms_for(bytes, 375),
                "gh200-c2c 256 MiB HtoD");
}

/* Two streams copying 64 MiB each: in the same direction they share one copy engine
 * (twice one copy's time), in opposite directions they overlap (PCIe 5: 83 GB/s in all
 * while both run, so a little more than one copy's time). The same with SIMCUDA_ASYNC=1,
 * where the copies run on the streams' worker threads. */
int child_time_copy_engines(void)
{
    CUcontext ctx;
    if (time_start(&ctx))
        return child_failures;
    size_t bytes = 64 * MIB;
    CUdeviceptr d1 = 0, d2 = 0;
    child_expect_cu(cuMemAlloc(&d1, bytes), CUDA_SUCCESS);
    child_expect_cu(cuMemAlloc(&d2, bytes), CUDA_SUCCESS);
    void *h1 = NULL, *h2 = NULL; /* pinned: asynchronous copies stay queued */
    child_expect_cu(cuMemAllocHost(&h1, bytes), CUDA_SUCCESS);
    child_expect_cu(cuMemAllocHost(&h2, bytes), CUDA_SUCCESS);
    CUstream s1, s2;
    child_expect_cu(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    child_expect_cu(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    double one = COPY_US / 1e3 + ms_for((double)bytes, LINK_GBPS);
    for (int opposite = 0; opposite < 2; opposite++) {
        CUevent start = new_event(), end1 = new_event(), end2 = new_event();
        child_expect_cu(cuCtxSynchronize(), CUDA_SUCCESS);
        child_expect_cu(cuEventRecord(start, s1), CUDA_SUCCESS);
        child_expect_cu(cuStreamWaitEvent(s2, start, 0), CUDA_SUCCESS);
        child_expect_cu(cuMemcpyHtoDAsync(d1, h1, bytes, s1), CUDA_SUCCESS);
        if (opposite)
            child_expect_cu(cuMemcpyDtoHAsync(h2, d2, bytes, s2), CUDA_SUCCESS);
        else
            child_expect_cu(cuMemcpyHtoDAsync(d2, h2, bytes, s2), CUDA_SUCCESS);
        child_expect_cu(cuEventRecord(end1, s1), CUDA_SUCCESS);
        child_expect_cu(cuEventRecord(end2, s2), CUDA_SUCCESS);
        double t1 = elapsed_ms(start, end1), t2 = elapsed_ms(start, end2);
        double both = t1 > t2 ? t1 : t2;
        if (opposite) {
            child_expect(both < 1.3 * one, "opposite directions took %.4f ms, one copy %.4f ms: no overlap", both,
                         one);
            child_expect(both > 1.05 * one, "opposite directions took %.4f ms, one copy %.4f ms: the link's "
                         "83 GB/s in all is not applied", both, one);
        } else {
            expect_close(both, 2 * one - COPY_US / 1e3, "same direction, two copies one engine");
        }
    }
    return child_failures;
}

static void copy_engines_are_shared_per_direction(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_HOST_TIME=0", NULL};
    assert_child_passes("time_copy_engines", env);
    const char *async[] = {"SIMCUDA_HOST_TIME=0", "SIMCUDA_ASYNC=1", NULL};
    assert_child_passes("time_copy_engines", async);
}

/* ---------------------------------------------------------------- kernels */

/* A kernel reading 1 GiB of HBM takes 1 GiB over HBM bandwidth; the same kernel over a
 * range whose second half is a HOST_NUMA chunk is charged that half over the link (SM
 * loads of host memory, 35 GB/s) and its first-access latency; FLOPs beyond the memory
 * time set the time instead. */
int child_time_kernel_roofline(void)
{
    CUcontext ctx;
    if (time_start(&ctx))
        return child_failures;
    CUmodule module;
    CUfunction touch = load_touch(&module);
    size_t half = 512 * MIB;

    CUdeviceptr hbm = 0;
    child_expect_cu(cuMemAlloc(&hbm, 2 * half), CUDA_SUCCESS);
    expect_close(timed_touch(touch, hbm, 2 * half, 0, 0), LAUNCH_US / 1e3 + ms_for(2.0 * half, HBM_GBPS),
                 "1 GiB read from HBM");
    expect_close(timed_touch(touch, hbm, 2 * half, 1, 0), LAUNCH_US / 1e3 + ms_for(2.0 * half, HBM_GBPS),
                 "1 GiB written to HBM");
    double tflop = 60e12 * 0.1; /* 100 ms at 60 TFLOPS */
    expect_close(timed_touch(touch, hbm, 2 * half, 0, tflop), LAUNCH_US / 1e3 + 100.0, "compute bound");

    CUdeviceptr va = 0;
    child_expect_cu(cuMemAddressReserve(&va, 2 * half, 0, 0, 0), CUDA_SUCCESS);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    CUmemGenericAllocationHandle dev_part, host_part;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    child_expect_cu(cuMemCreate(&dev_part, half, &prop, 0), CUDA_SUCCESS);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    child_expect_cu(cuMemCreate(&host_part, half, &prop, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemMap(va, half, 0, dev_part, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemMap(va + half, half, 0, host_part, 0), CUDA_SUCCESS);
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    child_expect_cu(cuMemSetAccess(va, 2 * half, &access, 1), CUDA_SUCCESS);
    double split = timed_touch(touch, va, 2 * half, 0, 0);
    expect_close(split, LAUNCH_US / 1e3 + HOST_LATENCY_US / 1e3 + ms_for((double)half, ZERO_COPY_GBPS),
                 "1 GiB read, half of it in a HOST_NUMA chunk");
    expect_close(timed_touch(touch, va, half, 0, 0), LAUNCH_US / 1e3 + ms_for((double)half, HBM_GBPS),
                 "the DEVICE half alone");
    child_expect_cu(cuMemUnmap(va, 2 * half), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(dev_part), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(host_part), CUDA_SUCCESS);
    child_expect_cu(cuMemAddressFree(va, 2 * half), CUDA_SUCCESS);
    return child_failures;
}

static void kernels_are_charged_their_roofline(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_HOST_TIME=0", "SIMCUDA_NUMA_NODES=0", NULL};
    assert_child_passes("time_kernel_roofline", env);
}

/* ---------------------------------------------------------------- clocks */

/* Synchronising moves the host clock: an event recorded on an idle stream after
 * cuStreamSynchronize carries the end of the work waited for; before it, the host had
 * not waited (the idle stream's event is at the host's time). */
int child_time_host_clock(void)
{
    CUcontext ctx;
    if (time_start(&ctx))
        return child_failures;
    size_t bytes = 64 * MIB;
    CUdeviceptr d = 0;
    child_expect_cu(cuMemAlloc(&d, bytes), CUDA_SUCCESS);
    void *h = pageable(bytes);
    CUstream busy, idle;
    child_expect_cu(cuStreamCreate(&busy, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    child_expect_cu(cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUevent before = new_event(), queued = new_event(), after = new_event();
    child_expect_cu(cuEventRecord(before, idle), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyHtoDAsync(d, h, bytes, busy), CUDA_SUCCESS);
    child_expect_cu(cuEventRecord(queued, idle), CUDA_SUCCESS);
    child_expect_cu(cuStreamSynchronize(busy), CUDA_SUCCESS);
    child_expect_cu(cuEventRecord(after, idle), CUDA_SUCCESS);
    double copy = COPY_US / 1e3 + ms_for((double)bytes, LINK_GBPS);
    child_expect(elapsed_ms(before, queued) < 0.001, "an async copy moved the host clock");
    expect_close(elapsed_ms(before, after), copy, "host clock after cuStreamSynchronize");
    return child_failures;
}

static void synchronisation_moves_the_host_clock(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_HOST_TIME=0", NULL};
    assert_child_passes("time_host_clock", env);
}

/* ABI 1 modules still load and run; each launch is charged the launch overhead only and
 * the SIMCUDA_LOG=info exit summary says so. */
int child_time_abi1(void)
{
    CUcontext ctx;
    if (time_start(&ctx))
        return child_failures;
    CUmodule module;
    CUfunction store = NULL;
    child_expect_cu(cuModuleLoad(&module, SIMCUDA_ABI1_MODULE), CUDA_SUCCESS);
    child_expect_cu(cuModuleGetFunction(&store, module, "store_u32"), CUDA_SUCCESS);
    CUdeviceptr out = 0;
    uint32_t value = 77, got = 0;
    child_expect_cu(cuMemAlloc(&out, sizeof value), CUDA_SUCCESS);
    void *params[] = {&out, &value};
    CUevent a = new_event(), b = new_event();
    child_expect_cu(cuEventRecord(a, NULL), CUDA_SUCCESS);
    child_expect_cu(cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    child_expect_cu(cuEventRecord(b, NULL), CUDA_SUCCESS);
    expect_close(elapsed_ms(a, b), LAUNCH_US / 1e3, "ABI 1 launch");
    child_expect_cu(cuMemcpyDtoH(&got, out, sizeof got), CUDA_SUCCESS);
    child_expect(got == value, "the ABI 1 kernel ran: %u", got);
    return child_failures;
}

static void abi1_modules_are_charged_launch_overhead(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_HOST_TIME=0", "SIMCUDA_LOG=info", NULL};
    static char output[1 << 16];
    int status = run_child("time_abi1", env, output, sizeof output);
    if (status != 0 || !strstr(output, "1 kernel launches of ABI 1 modules were charged the launch overhead only") ||
        !strstr(output, "exit: simulated time")) {
        print_error("status %d; expected the ABI 1 line and the simulated time in the summary:\n%s\n", status,
                    output);
        fail();
    }
}

/* ---------------------------------------------------------------- VMM calls */

static CUmemGenericAllocationHandle device_chunk(size_t bytes)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle handle = 0;
    child_expect_cu(cuMemCreate(&handle, bytes, &prop, 0), CUDA_SUCCESS);
    return handle;
}

static void map_readable(CUdeviceptr va, size_t bytes, CUmemGenericAllocationHandle handle)
{
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    child_expect_cu(cuMemMap(va, bytes, 0, handle, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemSetAccess(va, bytes, &access, 1), CUDA_SUCCESS);
}

/* 64 remaps of one 2 MiB chunk (unmap, map, set access) between two events on an idle
 * stream take 64 times what the three calls cost the host; a cuMemCreate between two
 * events its cost. An unmap waits for a kernel still reading its range, and returns
 * after its own cost only when the kernel reads another range. */
int child_time_vmm(void)
{
    CUcontext ctx;
    if (time_start(&ctx))
        return child_failures;
    CUstream idle;
    child_expect_cu(cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    size_t chunk = 2 * MIB;
    CUdeviceptr va = 0;
    child_expect_cu(cuMemAddressReserve(&va, 2 * chunk, 0, 0, 0), CUDA_SUCCESS);
    CUevent a = new_event(), b = new_event();
    child_expect_cu(cuEventRecord(a, idle), CUDA_SUCCESS);
    CUmemGenericAllocationHandle first = device_chunk(chunk);
    child_expect_cu(cuEventRecord(b, idle), CUDA_SUCCESS);
    expect_close(elapsed_ms(a, b), CREATE_US / 1e3, "one cuMemCreate of 2 MiB");
    CUmemGenericAllocationHandle second = device_chunk(chunk);
    map_readable(va, chunk, first);
    map_readable(va + chunk, chunk, second);

    child_expect_cu(cuEventRecord(a, idle), CUDA_SUCCESS);
    for (int i = 0; i < 64; i++) {
        child_expect_cu(cuMemUnmap(va, chunk), CUDA_SUCCESS);
        map_readable(va, chunk, i % 2 ? first : second);
    }
    child_expect_cu(cuEventRecord(b, idle), CUDA_SUCCESS);
    double remap = UNMAP_US + MAP_US + SET_ACCESS_US;
    expect_close(elapsed_ms(a, b), 64 * remap / 1e3, "64 remaps of a 2 MiB chunk");

    /* a kernel of 10 ms (its FLOPs) reads the first chunk */
    CUmodule module;
    CUfunction touch = load_touch(&module);
    CUdeviceptr start = va;
    uint64_t bytes = chunk;
    int32_t is_write = 0;
    double flops = 60e12 * 0.01;
    void *params[] = {&start, &bytes, &is_write, &flops};
    child_expect_cu(cuEventRecord(a, idle), CUDA_SUCCESS);
    child_expect_cu(cuLaunchKernel(touch, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    child_expect_cu(cuMemUnmap(va + chunk, chunk), CUDA_SUCCESS);
    child_expect_cu(cuEventRecord(b, idle), CUDA_SUCCESS);
    expect_close(elapsed_ms(a, b), UNMAP_US / 1e3, "unmap of a range no work reads");
    child_expect_cu(cuEventRecord(a, idle), CUDA_SUCCESS);
    child_expect_cu(cuMemUnmap(va, chunk), CUDA_SUCCESS);
    child_expect_cu(cuEventRecord(b, idle), CUDA_SUCCESS);
    /* a was recorded one unmap after the launch: the kernel's end, then this unmap's cost */
    expect_close(elapsed_ms(a, b), LAUNCH_US / 1e3 + 10.0, "unmap of a range a kernel still reads");
    child_expect_cu(cuMemRelease(first), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(second), CUDA_SUCCESS);
    child_expect_cu(cuMemAddressFree(va, 2 * chunk), CUDA_SUCCESS);
    return child_failures;
}

static void vmm_calls_cost_host_time(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_HOST_TIME=0", NULL};
    assert_child_passes("time_vmm", env);
    const char *async[] = {"SIMCUDA_HOST_TIME=0", "SIMCUDA_ASYNC=1", NULL};
    assert_child_passes("time_vmm", async);
}

/* Eight 2 MiB copies queued on one stream pay one set-up: the others overlap the copies
 * before them. */
int child_time_copy_setup(void)
{
    CUcontext ctx;
    if (time_start(&ctx))
        return child_failures;
    size_t bytes = 2 * MIB;
    CUdeviceptr d = 0;
    void *h = NULL;
    child_expect_cu(cuMemAlloc(&d, 8 * bytes), CUDA_SUCCESS);
    child_expect_cu(cuMemAllocHost(&h, 8 * bytes), CUDA_SUCCESS);
    CUstream stream;
    child_expect_cu(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUevent a = new_event(), b = new_event();
    child_expect_cu(cuEventRecord(a, stream), CUDA_SUCCESS);
    for (int i = 0; i < 8; i++)
        child_expect_cu(cuMemcpyHtoDAsync(d + i * bytes, (char *)h + i * bytes, bytes, stream), CUDA_SUCCESS);
    child_expect_cu(cuEventRecord(b, stream), CUDA_SUCCESS);
    expect_close(elapsed_ms(a, b), COPY_US / 1e3 + ms_for(8.0 * bytes, LINK_GBPS), "eight queued 2 MiB copies");
    return child_failures;
}

static void queued_copies_overlap_their_set_up(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_HOST_TIME=0", NULL};
    assert_child_passes("time_copy_setup", env);
}

/* A profile that does not exist or a parameter that is not a number stops cuInit with one
 * line naming the variable. */
static void bad_time_settings_are_reported(void **state)
{
    (void)state;
    static const char *const settings[][2] = {
        {"SIMCUDA_PROFILE=h300", "SIMCUDA_PROFILE"},  {"SIMCUDA_LINK_GBPS=fast", "SIMCUDA_LINK_GBPS"},
        {"SIMCUDA_HBM_GBPS=0", "SIMCUDA_HBM_GBPS"},   {"SIMCUDA_LAUNCH_US=-1", "SIMCUDA_LAUNCH_US"},
        {"SIMCUDA_HOST_TIME=yes", "SIMCUDA_HOST_TIME"}, {"SIMCUDA_CXL_NODES=a", "SIMCUDA_CXL_NODES"},
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const char *env[] = {settings[i][0], NULL};
        static char output[1 << 16];
        int status = run_child("report_init", env, output, sizeof output);
        if (status != 0 || !strstr(output, settings[i][1]) || !strstr(output, "CUDA_ERROR_INVALID_VALUE")) {
            print_error("with %s: status %d; expected cuInit to fail naming %s, got:\n%s\n", settings[i][0], status,
                        settings[i][1], output);
            fail();
        }
    }
}

int run_simcuda_time_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(htod_takes_bytes_over_link_rate),
        conformance_test(timeline_lists_each_copy),
        conformance_test(copy_engines_are_shared_per_direction),
        conformance_test(kernels_are_charged_their_roofline),
        conformance_test(synchronisation_moves_the_host_clock),
        conformance_test(abi1_modules_are_charged_launch_overhead),
        conformance_test(vmm_calls_cost_host_time),
        conformance_test(queued_copies_overlap_their_set_up),
        conformance_test(bad_time_settings_are_reported),
    };
    return cmocka_run_group_tests_name("simcuda time model (fresh processes)", tests, NULL, NULL);
}
