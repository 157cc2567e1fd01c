/* test_simcuda_env.c — what only simcuda has: its identity, the SIMCUDA_MEM capacity, the
 * HOST_NUMA nodes it accepts (SIMCUDA_NUMA_NODES), SIMCUDA_HOST_NUMA_VMM, a launch held
 * until a file appears (SIMCUDA_HOLD), and the way it answers functions it does not
 * implement. Settings are read when the driver
 * initialises, so every case that sets one runs in a process of its own.
 * The contract is issue 2 and the README's simcuda table.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* Initialises the driver and makes the primary context of device 0 current. */
static size_t free_device_bytes(void)
{
    size_t free_bytes = 0, total_bytes = 0;
    child_expect_cu(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
    return free_bytes;
}

static CUmemAllocationProp prop_at(CUmemLocationType type, int id)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = type;
    prop.location.id = id;
    return prop;
}

/* Counts the lines of `text` that contain `word`. */
static int lines_containing(const char *text, const char *word)
{
    int n = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, word);
        if (hit && hit < line + len)
            n++;
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* =======================================================================================
 * Identity (in this process)
 * ==================================================================================== */

/* Issue 2: cuDriverGetVersion 13000, compute capability 9.0, granularity 2 MiB. */
static void identity(void **state)
{
    (void)state;
    int version = 0, major = 0, minor = 0;
    assert_cu_ok(cuDriverGetVersion(&version));
    assert_int_equal(version, 13000);
    assert_cu_ok(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, tdev.dev));
    assert_cu_ok(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, tdev.dev));
    assert_int_equal(major, 9);
    assert_int_equal(minor, 0);
    assert_int_equal(device_granularity(), 2 * MIB);
    CUmemAllocationProp host = prop_at(CU_MEM_LOCATION_TYPE_HOST, 0);
    size_t g = 0;
    assert_cu_ok(cuMemGetAllocationGranularity(&g, &host, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    assert_int_equal(g, 2 * MIB);
    CUuuid uuid;
    memset(&uuid, 0, sizeof uuid);
    assert_cu_ok(cuDeviceGetUuid(&uuid, tdev.dev));
    static const char zero[16];
    assert_memory_not_equal(uuid.bytes, zero, 16);
    size_t total = 0, free_bytes = 0, device_total = 0;
    assert_cu_ok(cuMemGetInfo(&free_bytes, &total));
    assert_cu_ok(cuDeviceTotalMem(&device_total, tdev.dev));
    assert_int_equal(total, device_total);
}

/* =======================================================================================
 * SIMCUDA_MEM
 * ==================================================================================== */

/* Prints "total=N device_total=N free=N" for the parent to compare. */
int child_print_capacity(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    size_t free_bytes = 0, total = 0, device_total = 0;
    child_expect_cu(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
    child_expect_cu(cuDeviceTotalMem(&device_total, dev), CUDA_SUCCESS);
    printf("total=%zu device_total=%zu free=%zu\n", total, device_total, free_bytes);
    return child_failures;
}

static void expect_capacity(const char *setting, size_t bytes)
{
    const char *env[] = {setting, NULL};
    static char output[1 << 16];
    int status = run_child("print_capacity", setting ? env : NULL, output, sizeof output);
    char want[128];
    snprintf(want, sizeof want, "total=%zu device_total=%zu free=%zu", bytes, bytes, bytes);
    if (status != 0 || !strstr(output, want)) {
        print_error("with %s: status %d, expected \"%s\", output:\n%s\n",
                    setting ? setting : "no SIMCUDA_MEM", status, want, output);
        fail();
    }
}

/* README: SIMCUDA_MEM is the device memory capacity ("512M", "16G", plain bytes); by default
 * 16G or half the host's memory (in whole 2 MiB chunks), the less; cuDeviceTotalMem and
 * cuMemGetInfo report it, all free at start. */
static void capacity_settings(void **state)
{
    (void)state;
    size_t half_host = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE) / 2 / (2 * MIB) * (2 * MIB);
    expect_capacity(NULL, half_host < 16 * GIB ? half_host : 16 * GIB);
    expect_capacity("SIMCUDA_MEM=16G", 16 * GIB);
    expect_capacity("SIMCUDA_MEM=512M", 512 * MIB);
    expect_capacity("SIMCUDA_MEM=2G", 2 * GIB);
    expect_capacity("SIMCUDA_MEM=1073741824", GIB);
}

/* A bad value is reported, naming the variable (project rule: "Bad input gets a clear error
 * naming what was wrong; nothing crashes"). */
int child_report_init(void)
{
    CUresult rc = cuInit(0);
    printf("cuInit returned %s\n", cu_result_name(rc));
    return 0;
}

static void capacity_bad_value_is_reported(void **state)
{
    (void)state;
    static const char *const settings[] = {"SIMCUDA_MEM=banana", "SIMCUDA_MEM=12Q", "SIMCUDA_MEM=-1G"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const char *env[] = {settings[i], NULL};
        static char output[1 << 16];
        int status = run_child("report_init", env, output, sizeof output);
        if (status != 0 || !strstr(output, "SIMCUDA_MEM")) {
            print_error("with %s: status %d; expected a message naming SIMCUDA_MEM, got:\n%s\n",
                        settings[i], status, output);
            fail();
        }
    }
}

/* SIMCUDA_MEM=512M: the allocation that crosses the cap gets CUDA_ERROR_OUT_OF_MEMORY and
 * changes nothing; cuMemGetInfo reports exactly what is in use; cuMemAllocPitch counts. */
int child_capacity_alloc(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    CUdeviceptr a = 0, b = 0, c = 0, d = 0, e = 0;
    child_expect(free_device_bytes() == 512 * MIB, "free %zu", free_device_bytes());
    child_expect_cu(cuMemAlloc(&a, 200 * MIB), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 312 * MIB, "free %zu", free_device_bytes());
    child_expect_cu(cuMemAlloc(&b, 200 * MIB), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 112 * MIB, "free %zu", free_device_bytes());
    child_expect_cu(cuMemAlloc(&c, 200 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    child_expect(free_device_bytes() == 112 * MIB, "free %zu after a refused alloc",
                 free_device_bytes());
    child_expect_cu(cuMemAlloc(&d, 112 * MIB), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 0, "free %zu", free_device_bytes());
    child_expect_cu(cuMemAlloc(&e, 2 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    child_expect_cu(cuMemFree(a), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 200 * MIB, "free %zu", free_device_bytes());

    size_t pitch = 0;
    child_expect_cu(cuMemAllocPitch(&e, &pitch, MIB, 201, 4), CUDA_ERROR_OUT_OF_MEMORY);
    child_expect_cu(cuMemAllocPitch(&e, &pitch, MIB, 100, 4), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 200 * MIB - pitch * 100, "free %zu, pitch %zu",
                 free_device_bytes(), pitch);
    child_expect_cu(cuMemFree(e), CUDA_SUCCESS);
    child_expect_cu(cuMemFree(b), CUDA_SUCCESS);
    child_expect_cu(cuMemFree(d), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 512 * MIB, "free %zu", free_device_bytes());
    return child_failures;
}

/* DEVICE cuMemCreate counts against the cap, HOST and HOST_NUMA do not; a released handle
 * stays counted while it is mapped ("The memory allocation will be freed when all
 * outstanding mappings to the memory are unmapped"). */
int child_capacity_vmm(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    CUmemAllocationProp device = prop_at(CU_MEM_LOCATION_TYPE_DEVICE, dev);
    CUmemAllocationProp host = prop_at(CU_MEM_LOCATION_TYPE_HOST, 0);
    CUmemAllocationProp numa = prop_at(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
    CUmemGenericAllocationHandle h1 = 0, h2 = 0, hh = 0, hn = 0;
    child_expect_cu(cuMemCreate(&h1, 256 * MIB, &device, 0), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 256 * MIB, "free %zu", free_device_bytes());
    child_expect_cu(cuMemCreate(&h2, 258 * MIB, &device, 0), CUDA_ERROR_OUT_OF_MEMORY);
    child_expect_cu(cuMemCreate(&hh, GIB, &host, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemCreate(&hn, GIB, &numa, 0), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 256 * MIB, "free %zu with HOST and HOST_NUMA handles",
                 free_device_bytes());
    child_expect_cu(cuMemRelease(hh), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(hn), CUDA_SUCCESS);

    CUdeviceptr plain = 0, more = 0;
    child_expect_cu(cuMemAlloc(&plain, 256 * MIB), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 0, "free %zu", free_device_bytes());
    child_expect_cu(cuMemAlloc(&more, 2 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    child_expect_cu(cuMemFree(plain), CUDA_SUCCESS);

    CUdeviceptr base = 0;
    child_expect_cu(cuMemAddressReserve(&base, 256 * MIB, 0, 0, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemMap(base, 256 * MIB, 0, h1, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(h1), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 256 * MIB, "free %zu: released but mapped",
                 free_device_bytes());
    child_expect_cu(cuMemUnmap(base, 256 * MIB), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 512 * MIB, "free %zu after the last unmap",
                 free_device_bytes());
    child_expect_cu(cuMemAddressFree(base, 256 * MIB), CUDA_SUCCESS);
    return child_failures;
}

/* cuCtxDestroy "Destroys and cleans up all resources associated with the context ...
 * memory allocations by cuMemAlloc()", but "will not destroy memory allocations by
 * cuMemCreate()"; cuDevicePrimaryCtxReset "destroys and cleans up all resources". */
int child_capacity_context_teardown(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext ctx = NULL;
    CUdeviceptr ptr = 0;
    CUmemGenericAllocationHandle handle = 0;
    CUmemAllocationProp device = prop_at(CU_MEM_LOCATION_TYPE_DEVICE, dev);
    child_expect_cu(cuCtxCreate(&ctx, &params, 0, dev), CUDA_SUCCESS);
    child_expect_cu(cuMemAlloc(&ptr, 256 * MIB), CUDA_SUCCESS);
    child_expect_cu(cuMemCreate(&handle, 128 * MIB, &device, 0), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 128 * MIB, "free %zu", free_device_bytes());
    child_expect_cu(cuCtxDestroy(ctx), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 384 * MIB, "free %zu after cuCtxDestroy",
                 free_device_bytes());
    child_expect_cu(cuMemRelease(handle), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 512 * MIB, "free %zu", free_device_bytes());

    child_expect_cu(cuMemAlloc(&ptr, 300 * MIB), CUDA_SUCCESS); /* primary context */
    child_expect_cu(cuDevicePrimaryCtxReset(dev), CUDA_SUCCESS);
    CUcontext primary = NULL;
    child_expect_cu(cuDevicePrimaryCtxRetain(&primary, dev), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(primary), CUDA_SUCCESS);
    child_expect(free_device_bytes() == 512 * MIB, "free %zu after cuDevicePrimaryCtxReset",
                 free_device_bytes());
    return child_failures;
}

static const char *const mem_512m[] = {"SIMCUDA_MEM=512M", NULL};

static void capacity_allocations(void **state)
{
    (void)state;
    assert_child_passes("capacity_alloc", mem_512m);
}

static void capacity_vmm_handles(void **state)
{
    (void)state;
    assert_child_passes("capacity_vmm", mem_512m);
}

static void capacity_context_teardown(void **state)
{
    (void)state;
    assert_child_passes("capacity_context_teardown", mem_512m);
}

/* =======================================================================================
 * SIMCUDA_NUMA_NODES and SIMCUDA_HOST_NUMA_VMM
 * ==================================================================================== */

static CUresult create_numa(int node, CUmemGenericAllocationHandle *handle)
{
    CUmemAllocationProp prop = prop_at(CU_MEM_LOCATION_TYPE_HOST_NUMA, node);
    return cuMemCreate(handle, 2 * MIB, &prop, 0);
}

/* SIMCUDA_NUMA_NODES=0,5: exactly nodes 0 and 5 are HOST_NUMA locations (5 need not exist
 * on the host); others are invalid values. Node-5 memory maps and works. */
int child_numa_listed_nodes(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    CUmemGenericAllocationHandle h0 = 0, h5 = 0, h = 0;
    child_expect_cu(create_numa(0, &h0), CUDA_SUCCESS);
    child_expect_cu(create_numa(5, &h5), CUDA_SUCCESS);
    child_expect_cu(create_numa(1, &h), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(create_numa(-1, &h), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(create_numa(6, &h), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    child_expect_cu(cuMemGetAllocationPropertiesFromHandle(&prop, h5), CUDA_SUCCESS);
    child_expect(prop.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && prop.location.id == 5,
                 "location %d/%d", (int)prop.location.type, prop.location.id);

    CUdeviceptr base = 0;
    CUmemAccessDesc rw;
    memset(&rw, 0, sizeof rw);
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = dev;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    uint32_t in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = 0x5000u + (uint32_t)i;
    child_expect_cu(cuMemAddressReserve(&base, 2 * MIB, 0, 0, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemMap(base, 2 * MIB, 0, h5, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemSetAccess(base, 2 * MIB, &rw, 1), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyHtoD(base + MIB, in, sizeof in), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyDtoH(out, base + MIB, sizeof out), CUDA_SUCCESS);
    child_expect(memcmp(in, out, sizeof in) == 0, "node-5 memory round trip");
    child_expect_cu(cuMemUnmap(base, 2 * MIB), CUDA_SUCCESS);
    child_expect_cu(cuMemAddressFree(base, 2 * MIB), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(h0), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(h5), CUDA_SUCCESS);
    return child_failures;
}

/* The highest node id in /sys/devices/system/node/online ("0", "0-3", "0,2-3"). */
static int highest_online_node(void)
{
    FILE *f = fopen("/sys/devices/system/node/online", "r");
    if (!f)
        return 0;
    char text[256] = "";
    if (!fgets(text, sizeof text, f))
        text[0] = '\0';
    fclose(f);
    int highest = 0;
    for (char *p = text; *p;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (v > highest)
            highest = (int)v;
        p = end;
    }
    return highest;
}

/* Without SIMCUDA_NUMA_NODES the accepted ids are the host's nodes. */
int child_numa_host_nodes(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    CUmemGenericAllocationHandle h = 0;
    int highest = highest_online_node();
    child_expect_cu(create_numa(0, &h), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(h), CUDA_SUCCESS);
    child_expect_cu(create_numa(highest, &h), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(h), CUDA_SUCCESS);
    child_expect_cu(create_numa(highest + 1, &h), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(create_numa(4242, &h), CUDA_ERROR_INVALID_VALUE);
    int numa_id = -2;
    child_expect_cu(cuDeviceGetAttribute(&numa_id, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev),
                    CUDA_SUCCESS);
    child_expect(numa_id >= 0 && numa_id <= highest, "HOST_NUMA_ID %d", numa_id);
    return child_failures;
}

/* SIMCUDA_HOST_NUMA_VMM=0: the attribute reads 0 and HOST_NUMA cuMemCreate fails; DEVICE
 * and HOST locations still work. With the default the attribute reads 1. */
static int child_host_numa_vmm(int expected_attribute)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    int supported = -1;
    child_expect_cu(cuDeviceGetAttribute(&supported,
                                         CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                         dev),
                    CUDA_SUCCESS);
    child_expect(supported == expected_attribute, "attribute %d, expected %d", supported,
                 expected_attribute);
    CUmemGenericAllocationHandle h = 0;
    CUresult rc = create_numa(0, &h);
    if (expected_attribute) {
        child_expect_cu(rc, CUDA_SUCCESS);
        child_expect_cu(cuMemRelease(h), CUDA_SUCCESS);
    } else {
        child_expect(rc == CUDA_ERROR_NOT_SUPPORTED || rc == CUDA_ERROR_INVALID_VALUE,
                     "HOST_NUMA cuMemCreate returned %s", cu_result_name(rc));
    }
    CUmemAllocationProp device = prop_at(CU_MEM_LOCATION_TYPE_DEVICE, dev);
    CUmemAllocationProp host = prop_at(CU_MEM_LOCATION_TYPE_HOST, 0);
    child_expect_cu(cuMemCreate(&h, 2 * MIB, &device, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(h), CUDA_SUCCESS);
    child_expect_cu(cuMemCreate(&h, 2 * MIB, &host, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(h), CUDA_SUCCESS);
    return child_failures;
}

int child_host_numa_vmm_off(void)
{
    return child_host_numa_vmm(0);
}

int child_host_numa_vmm_on(void)
{
    return child_host_numa_vmm(1);
}

static void numa_nodes_from_setting(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_NUMA_NODES=0,5", NULL};
    assert_child_passes("numa_listed_nodes", env);
}

static void numa_nodes_from_host(void **state)
{
    (void)state;
    assert_child_passes("numa_host_nodes", NULL);
}

static void numa_nodes_bad_value_is_reported(void **state)
{
    (void)state;
    const char *env[] = {"SIMCUDA_NUMA_NODES=zero,x", NULL};
    static char output[1 << 16];
    int status = run_child("report_init", env, output, sizeof output);
    if (status != 0 || !strstr(output, "SIMCUDA_NUMA_NODES")) {
        print_error("status %d; expected a message naming SIMCUDA_NUMA_NODES, got:\n%s\n", status,
                    output);
        fail();
    }
}

static void host_numa_vmm_switch(void **state)
{
    (void)state;
    const char *off[] = {"SIMCUDA_HOST_NUMA_VMM=0", NULL};
    const char *on[] = {"SIMCUDA_HOST_NUMA_VMM=1", NULL};
    assert_child_passes("host_numa_vmm_off", off);
    assert_child_passes("host_numa_vmm_on", on);
    assert_child_passes("host_numa_vmm_on", NULL);
}

/* =======================================================================================
 * Functions simcuda does not implement
 * ==================================================================================== */

/* Issue 2: "anything not implemented returns CUDA_ERROR_NOT_SUPPORTED and says once on
 * stderr which function it was". They are exported (a program linked against cuda.h
 * loads) and cuGetProcAddress hands them out like any other. */
int child_unimplemented(void)
{
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    PFN_cuArrayCreate_v3020 array_create = (PFN_cuArrayCreate_v3020)dlsym(RTLD_DEFAULT,
                                                                          "cuArrayCreate_v2");
    PFN_cuGraphCreate_v10000 graph_create = (PFN_cuGraphCreate_v10000)dlsym(RTLD_DEFAULT,
                                                                           "cuGraphCreate");
    child_expect(array_create != NULL, "cuArrayCreate_v2 is not exported");
    child_expect(graph_create != NULL, "cuGraphCreate is not exported");
    if (!array_create || !graph_create)
        return child_failures;
    CUarray array = NULL;
    CUDA_ARRAY_DESCRIPTOR desc;
    memset(&desc, 0, sizeof desc);
    desc.Width = 16;
    desc.Height = 16;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    CUgraph graph = NULL;
    fflush(stdout);
    child_expect_cu(array_create(&array, &desc), CUDA_ERROR_NOT_SUPPORTED);
    child_expect_cu(array_create(&array, &desc), CUDA_ERROR_NOT_SUPPORTED);
    child_expect_cu(graph_create(&graph, 0), CUDA_ERROR_NOT_SUPPORTED);
    child_expect_cu(graph_create(&graph, 0), CUDA_ERROR_NOT_SUPPORTED);

    void *pfn = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    child_expect_cu(cuGetProcAddress("cuArrayCreate", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                     &status),
                    CUDA_SUCCESS);
    child_expect(pfn == (void *)array_create && status == CU_GET_PROC_ADDRESS_SUCCESS,
                 "cuGetProcAddress(cuArrayCreate) = %p, status %d", pfn, (int)status);
    return child_failures;
}

static void unimplemented_functions_say_so_once(void **state)
{
    (void)state;
    static char output[1 << 16];
    int status = run_child("unimplemented", NULL, output, sizeof output);
    int array_lines = lines_containing(output, "cuArrayCreate");
    int graph_lines = lines_containing(output, "cuGraphCreate");
    if (status != 0 || array_lines != 1 || graph_lines != 1) {
        print_error("status %d, %d line(s) naming cuArrayCreate and %d naming cuGraphCreate "
                    "(expected one each); output:\n%s\n",
                    status, array_lines, graph_lines, output);
        fail();
    }
}

/* =======================================================================================
 * SIMCUDA_HOLD
 * ==================================================================================== */

/* SIMCUDA_HOLD=2:PATH: the first launch runs at once, the second waits until PATH exists
 * (a thread creates it 300 ms later), then runs as any other. */
int child_hold_launch(void)
{
    const char *path = held_child_path();
    CUdevice dev;
    if (!path || child_start(&dev))
        return child_failures + !path;
    struct test_module tm;
    load_test_module(&tm);
    CUdeviceptr out;
    uint32_t n = 4, base = 10, got[4] = {0};
    child_expect_cu(cuMemAlloc(&out, sizeof got), CUDA_SUCCESS);
    void *params[] = {&out, &n, &base};
    double t0 = now_ms();
    child_expect_cu(cuLaunchKernel(tm.fill_u32, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    double t1 = now_ms();
    pthread_t thread;
    child_expect(pthread_create(&thread, NULL, create_file_later, (void *)path) == 0, "a thread");
    base = 20;
    child_expect_cu(cuLaunchKernel(tm.fill_u32, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    double t2 = now_ms();
    pthread_join(thread, NULL);
    child_expect(t1 - t0 < 250, "the first launch waited %.0f ms", t1 - t0);
    child_expect(t2 - t1 >= 250, "the second launch ran after %.0f ms, before the file appeared", t2 - t1);
    child_expect_cu(cuMemcpyDtoH(got, out, sizeof got), CUDA_SUCCESS);
    child_expect(got[0] == 20 && got[3] == 23, "the held launch ran: %u %u", got[0], got[3]);
    unlink(path);
    return child_failures;
}

static void hold_waits_for_the_file(void **state)
{
    (void)state;
    assert_held_child_passes("hold_launch", 2);
}

/* A value that is not LAUNCH:PATH stops cuInit with one line naming SIMCUDA_HOLD. */
static void hold_bad_value_is_reported(void **state)
{
    (void)state;
    static const char *const settings[] = {"SIMCUDA_HOLD=0:/tmp/go", "SIMCUDA_HOLD=2", "SIMCUDA_HOLD=x:/tmp/go",
                                           "SIMCUDA_HOLD=3:", "SIMCUDA_HOLD=-1:/tmp/go"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const char *env[] = {settings[i], NULL};
        static char output[1 << 16];
        int status = run_child("report_init", env, output, sizeof output);
        if (status != 0 || !strstr(output, "SIMCUDA_HOLD=") || !strstr(output, "is not LAUNCH:PATH") ||
            lines_containing(output, "SIMCUDA_HOLD") != 1 || !strstr(output, "CUDA_ERROR_INVALID_VALUE")) {
            print_error("with %s: status %d; expected one line naming SIMCUDA_HOLD and a refused cuInit:\n%s\n",
                        settings[i], status, output);
            fail();
        }
    }
}

/* =======================================================================================
 * Groups
 * ==================================================================================== */

int run_simcuda_env_tests(void)
{
    const struct CMUnitTest in_process[] = {
        conformance_test(identity),
    };
    const struct CMUnitTest fresh_process[] = {
        conformance_test(capacity_settings),
        conformance_test(capacity_bad_value_is_reported),
        conformance_test(capacity_allocations),
        conformance_test(capacity_vmm_handles),
        conformance_test(capacity_context_teardown),
        conformance_test(numa_nodes_from_setting),
        conformance_test(numa_nodes_from_host),
        conformance_test(numa_nodes_bad_value_is_reported),
        conformance_test(host_numa_vmm_switch),
        conformance_test(unimplemented_functions_say_so_once),
        conformance_test(hold_waits_for_the_file),
        conformance_test(hold_bad_value_is_reported),
    };
    int failed = 0;
    failed += cmocka_run_group_tests_name("simcuda identity", in_process, setup_primary_context,
                                          teardown_primary_context);
    failed += cmocka_run_group_tests_name("simcuda settings (fresh processes)", fresh_process,
                                          NULL, NULL);
    return failed;
}
