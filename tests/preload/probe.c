/* probe.c — a driver-API program the interposer tests run, with and without libtiermem.
 * It is an ordinary CUDA program: it links libcuda and knows nothing of the interposer.
 *
 *   probe pieces TOTAL PIECE [HOLD_FILE]  allocate TOTAL bytes in PIECE-sized cuMemAlloc
 *                                         pieces, fill, run a kernel, check every byte; with
 *                                         HOLD_FILE, print "ready" and wait for that file
 *   probe meminfo SIZE...                 cuDeviceTotalMem before any context ("before DEVTOTAL"),
 *                                         then cuMemGetInfo/cuDeviceTotalMem in one, after each
 *                                         allocation and after freeing ("info FREE TOTAL DEVTOTAL")
 *   probe attrs SIZE                      address range and pointer attributes of an allocation
 *   probe vmm SIZE COUNT                  the program's own cuMemCreate at the device, mapped
 *   probe paths                           pitch, async (both stream forms), pool, managed
 *   probe threads THREADS OPS             threads allocating and freeing mixed sizes, with checks
 *   probe fork                            a child allocating on its own; a child of a live parent
 *   probe server SIZE                     holds SIZE, then runs "probe pieces SIZE SIZE" as its
 *                                         child and prints "child exited STATUS"
 *   probe leak SIZE COUNT                 allocations never freed: left to the exit
 *   probe late SIZE                       an allocation read and freed by an exit handler that
 *                                         runs after tiermem's (as C++ static destructors do)
 *   probe ctx                             allocations in a context destroyed without freeing them
 *   probe exit CODE                       a few allocations, then exit with CODE
 *   probe faults                          every allocation path once, going on past failures:
 *                                         prints "STEP: ERROR" for each failed call, frees
 *                                         what it got (a failed free is tried once more)
 *
 * Sizes take K/M/G suffixes. Exit status: 0 fine, 2 an allocation failed (the message says
 * which), 3 another driver call failed, 4 data or answers were wrong, 1 bad arguments. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/preload/probe_util.h"
#include "tools/tiermem-stat/stats_read.h"

static int fail(const char *what)
{
    printf("FAIL: %s\n", what);
    return 4;
}

/* ---------------------------------------------------------------- pieces */

static void wait_for_file(const char *path)
{
    struct stat st;
    for (int i = 0; i < 6000 && stat(path, &st) != 0; i++)
        nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
}

static int run_pieces(size_t total, size_t piece, const char *hold)
{
    probe_init();
    static CUdeviceptr pieces[4096];
    size_t count = total / piece;
    if (count > 4096)
        return 1;
    for (size_t i = 0; i < count; i++) {
        CUresult r = cuMemAlloc(&pieces[i], piece);
        if (r != CUDA_SUCCESS) {
            printf("allocation %zu of %zu failed: %s\n", i + 1, count, probe_error_name(r));
            for (size_t j = 0; j < i; j++)
                if (probe_verify(pieces[j], piece, (uint32_t)j))
                    return 4;
            printf("the %zu earlier pieces are intact\n", i);
            return 2;
        }
        if (probe_round_trip(pieces[i], piece, (uint32_t)i))
            return 4;
    }
    printf("allocated %zu pieces of %zu bytes, every byte checked\n", count, piece);
    if (hold) {
        printf("ready\n");
        fflush(stdout);
        wait_for_file(hold);
    }
    for (size_t i = 0; i < count; i++) {
        if (probe_verify(pieces[i], piece, (uint32_t)i))
            return 4;
        CHECK(cuMemFree(pieces[i]));
    }
    printf("freed\n");
    return 0;
}

/* ---------------------------------------------------------------- meminfo */

static void print_info(void)
{
    size_t free, total, device_total;
    CUdevice device;
    CHECK(cuMemGetInfo(&free, &total));
    CHECK(cuCtxGetDevice(&device));
    CHECK(cuDeviceTotalMem(&device_total, device));
    printf("info %zu %zu %zu\n", free, total, device_total);
}

static int run_meminfo(int argc, char **argv)
{
    CUdevice device;
    size_t before_total;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDeviceTotalMem(&before_total, device));
    printf("before %zu\n", before_total);
    probe_init();
    print_info();
    CUdeviceptr p[16];
    int n = argc < 16 ? argc : 16;
    for (int i = 0; i < n; i++) {
        CUresult r = cuMemAlloc(&p[i], probe_parse_size(argv[i]));
        if (r != CUDA_SUCCESS) {
            printf("allocation %d failed: %s\n", i + 1, probe_error_name(r));
            return 2;
        }
        print_info();
    }
    for (int i = 0; i < n; i++)
        CHECK(cuMemFree(p[i]));
    print_info();
    return 0;
}

/* ---------------------------------------------------------------- attributes */

static int run_attrs(size_t size)
{
    CUcontext ctx = probe_init();
    CUdeviceptr base, range_base, mid;
    size_t range_size;
    CHECK(cuMemAlloc(&base, size));
    mid = base + size / 2;
    CHECK(cuMemGetAddressRange(&range_base, &range_size, mid));
    printf("range 0x%llx %zu\n", (unsigned long long)range_base, range_size);
    if (range_base != base || range_size != size)
        return fail("cuMemGetAddressRange does not give the allocation as asked");
    if (cuMemGetAddressRange(&range_base, &range_size, base + size) == CUDA_SUCCESS && range_base == base)
        return fail("the byte after the allocation belongs to it");

    CUdeviceptr start, device_pointer;
    size_t attr_size;
    unsigned int type;
    unsigned long long id_base, id_mid;
    CUcontext owner;
    int ordinal;
    void *host = (void *)1;
    CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, mid));
    CHECK(cuPointerGetAttribute(&attr_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, mid));
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, mid));
    CHECK(cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, mid));
    CHECK(cuPointerGetAttribute(&id_base, CU_POINTER_ATTRIBUTE_BUFFER_ID, base));
    CHECK(cuPointerGetAttribute(&id_mid, CU_POINTER_ATTRIBUTE_BUFFER_ID, base + size - 1));
    CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, mid));
    CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, mid));
    CUresult host_result = cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, mid);
    printf("attrs start 0x%llx size %zu type %u devptr 0x%llx ids %llu %llu ordinal %d host %s\n",
           (unsigned long long)start, attr_size, type, (unsigned long long)device_pointer, id_base, id_mid, ordinal,
           probe_error_name(host_result));
    if (start != base || attr_size != size)
        return fail("range attributes differ from the allocation");
    if (type != CU_MEMORYTYPE_DEVICE || device_pointer != mid || owner != ctx || ordinal != 0)
        return fail("type, device pointer, context or ordinal are not those of device memory");
    if (id_base != id_mid)
        return fail("one allocation has two buffer ids");
    if (host_result != CUDA_ERROR_INVALID_VALUE)
        return fail("device memory has a host pointer");

    CUpointer_attribute attributes[] = { CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         CU_POINTER_ATTRIBUTE_HOST_POINTER, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR };
    size_t many_size = 0;
    unsigned int many_type = 0;
    void *many_host = (void *)1;
    CUdeviceptr many_start = 0;
    void *data[] = { &many_size, &many_type, &many_host, &many_start };
    CHECK(cuPointerGetAttributes(4, attributes, data, mid));
    printf("attributes size %zu type %u host %p start 0x%llx\n", many_size, many_type, many_host,
           (unsigned long long)many_start);
    if (many_size != size || many_type != CU_MEMORYTYPE_DEVICE || many_host != NULL || many_start != base)
        return fail("cuPointerGetAttributes differs");

    CUdeviceptr other;
    unsigned long long id_other;
    CHECK(cuMemAlloc(&other, size));
    CHECK(cuPointerGetAttribute(&id_other, CU_POINTER_ATTRIBUTE_BUFFER_ID, other));
    if (id_other == id_base)
        return fail("two allocations share a buffer id");
    if (probe_round_trip(base, size, 5) || probe_round_trip(other, size, 6))
        return 4;
    CHECK(cuMemFree(other));
    CHECK(cuMemFree(base));
    printf("attrs ok\n");
    return 0;
}

/* ---------------------------------------------------------------- the program's own VMM */

static int run_vmm(size_t size, int count)
{
    probe_init();
    CUmemAllocationProp prop;
    size_t granularity = probe_device_prop(&prop);
    size = (size + granularity - 1) / granularity * granularity;
    static CUmemGenericAllocationHandle handles[256];
    if (count > 256)
        return 1;
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, size * (size_t)count, granularity, 0, 0));
    for (int i = 0; i < count; i++) {
        CUresult r = cuMemCreate(&handles[i], size, &prop, 0);
        if (r != CUDA_SUCCESS) {
            printf("cuMemCreate %d of %d failed: %s\n", i + 1, count, probe_error_name(r));
            return 2;
        }
        CHECK(cuMemMap(va + (size_t)i * size, size, 0, handles[i], 0));
        CUmemAllocationProp seen;
        CHECK(cuMemGetAllocationPropertiesFromHandle(&seen, handles[i]));
        if (seen.location.type != CU_MEM_LOCATION_TYPE_DEVICE || seen.location.id != 0)
            return fail("a handle created at the device reports another location");
        /* wherever it lives, its mapping reads as the device memory asked for */
        unsigned int type = 0;
        int ordinal = -1;
        CUdeviceptr inside = va + (size_t)i * size + size / 2;
        CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, inside));
        CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, inside));
        if (type != CU_MEMORYTYPE_DEVICE || ordinal != 0)
            return fail("a handle created at the device maps as another memory type or device");
    }
    CUmemAccessDesc access = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
                               .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CHECK(cuMemSetAccess(va, size * (size_t)count, &access, 1));
    if (probe_round_trip(va, size * (size_t)count, 9))
        return 4;
    CHECK(cuMemUnmap(va, size * (size_t)count));
    for (int i = 0; i < count; i++)
        CHECK(cuMemRelease(handles[i]));
    CHECK(cuMemAddressFree(va, size * (size_t)count));
    printf("vmm ok: %d handles of %zu bytes\n", count, size);
    return 0;
}

/* ---------------------------------------------------------------- other paths */

static int run_paths(void)
{
    probe_init();
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    /* pitch: a tiered and a small one */
    CUdeviceptr pitched;
    size_t pitch;
    CHECK(cuMemAllocPitch(&pitched, &pitch, 10000, 1000, 4));
    printf("pitch %zu for width 10000\n", pitch);
    if (pitch < 10000)
        return fail("pitch narrower than a row");
    CUdeviceptr range_base;
    size_t range_size;
    CHECK(cuMemGetAddressRange(&range_base, &range_size, pitched + pitch * 999));
    if (range_base != pitched || range_size != pitch * 1000)
        return fail("a pitched allocation's range is not pitch times height");
    if (probe_round_trip(pitched, pitch * 1000, 21))
        return 4;
    CHECK(cuMemFree(pitched));
    CHECK(cuMemAllocPitch(&pitched, &pitch, 100, 10, 4));
    CHECK(cuMemFree(pitched));

    /* stream-ordered, in both stream forms */
    CUresult (*alloc_ptsz)(CUdeviceptr *, size_t, CUstream) = NULL;
    CUresult (*free_ptsz)(CUdeviceptr, CUstream) = NULL;
    CUdriverProcAddressQueryResult found;
    CHECK(cuGetProcAddress("cuMemAllocAsync", (void **)&alloc_ptsz, 12000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &found));
    CHECK(cuGetProcAddress("cuMemFreeAsync", (void **)&free_ptsz, 12000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &found));
    size_t sizes[] = { 6 << 20, 4096 };
    for (int i = 0; i < 2; i++) {
        CUdeviceptr a, b;
        CHECK(cuMemAllocAsync(&a, sizes[i], stream));
        CHECK(alloc_ptsz(&b, sizes[i], CU_STREAM_PER_THREAD));
        CHECK(cuStreamSynchronize(stream));
        if (probe_round_trip(a, sizes[i], 22) || probe_round_trip(b, sizes[i], 23))
            return 4;
        CHECK(cuMemFreeAsync(a, stream));
        CHECK(free_ptsz(b, CU_STREAM_PER_THREAD));
        CHECK(cuStreamSynchronize(stream));
    }

    /* the device's default pool */
    CUmemoryPool pool;
    CHECK(cuDeviceGetDefaultMemPool(&pool, 0));
    for (int i = 0; i < 2; i++) {
        CUdeviceptr a;
        CHECK(cuMemAllocFromPoolAsync(&a, sizes[i], pool, stream));
        CHECK(cuStreamSynchronize(stream));
        if (probe_round_trip(a, sizes[i], 24))
            return 4;
        CHECK(cuMemFreeAsync(a, stream));
    }
    CHECK(cuStreamSynchronize(stream));

    /* managed memory: counted, and the host sees it */
    CUdeviceptr managed;
    CHECK(cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL));
    memset((void *)(uintptr_t)managed, 7, 1 << 20);
    if (probe_round_trip(managed, 1 << 20, 25))
        return 4;
    CHECK(cuMemFree(managed));
    CHECK(cuStreamDestroy(stream));
    printf("paths ok\n");
    return 0;
}

/* ---------------------------------------------------------------- threads */

typedef struct thread_job {
    CUcontext ctx;
    int index;
    int ops;
    int failed;
} thread_job;

/* Runs `check` on the first and last 4 KiB of an allocation (all of a small one). */
static int check_ends(CUdeviceptr p, size_t size, uint32_t seed, int (*check)(CUdeviceptr, size_t, uint32_t))
{
    if (size <= 8192)
        return check(p, size, seed);
    return check(p, 4096, seed) || check(p + size - 4096, 4096, seed + 1);
}

/* Small and chunked sizes, mixed, each checked at both ends. */
static void *thread_main(void *arg)
{
    thread_job *job = arg;
    static const size_t sizes[] = { 256, 4096, 65536, 1 << 20, 2 << 20, 3 << 20, (4 << 20) + 123 };
    CUdeviceptr live[4] = { 0 };
    size_t live_size[4] = { 0 };
    uint32_t live_seed[4] = { 0 };
    unsigned int random = (unsigned int)job->index * 2654435761u + 1;
    if (cuCtxSetCurrent(job->ctx) != CUDA_SUCCESS) {
        job->failed = 1;
        return NULL;
    }
    for (int op = 0; op < job->ops && !job->failed; op++) {
        random = random * 1103515245u + 12345u;
        int slot = (int)((random >> 16) % 4);
        if (live[slot]) {
            if (check_ends(live[slot], live_size[slot], live_seed[slot], probe_verify) ||
                cuMemFree(live[slot]) != CUDA_SUCCESS)
                job->failed = 1;
            live[slot] = 0;
            continue;
        }
        size_t size = sizes[(random >> 8) % (sizeof sizes / sizeof sizes[0])];
        uint32_t seed = (uint32_t)(job->index * 100000 + op);
        if (cuMemAlloc(&live[slot], size) != CUDA_SUCCESS) {
            job->failed = 1;
            break;
        }
        live_size[slot] = size;
        live_seed[slot] = seed;
        if (check_ends(live[slot], size, seed, probe_round_trip))
            job->failed = 1;
    }
    for (int slot = 0; slot < 4; slot++)
        if (live[slot] && cuMemFree(live[slot]) != CUDA_SUCCESS)
            job->failed = 1;
    return NULL;
}

static int run_threads(int threads, int ops)
{
    CUcontext ctx = probe_init();
    probe_kernel(); /* the module loads once, before the threads */
    pthread_t tid[64];
    thread_job jobs[64];
    if (threads > 64)
        threads = 64;
    for (int i = 0; i < threads; i++) {
        jobs[i] = (thread_job){ .ctx = ctx, .index = i, .ops = ops };
        pthread_create(&tid[i], NULL, thread_main, &jobs[i]);
    }
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        failed += jobs[i].failed;
    }
    printf("threads %d x %d operations: %d failed\n", threads, ops, failed);
    return failed ? 4 : 0;
}

/* ---------------------------------------------------------------- fork */

static int child_allocates(void)
{
    probe_init();
    CUdeviceptr big, small;
    CHECK(cuMemAlloc(&big, 8 << 20));
    CHECK(cuMemAlloc(&small, 4096));
    int bad = probe_round_trip(big, 8 << 20, 31) || probe_round_trip(small, 4096, 32);
    CHECK(cuMemFree(big));
    CHECK(cuMemFree(small));
    return bad ? 4 : 0;
}

static int wait_child(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static int run_fork(void)
{
    /* a child allocates before the parent ever touched the driver */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        exit(child_allocates());
    int status = wait_child(pid);
    printf("child before init: %d\n", status);
    if (status != 0)
        return fail("the child could not allocate");

    /* the parent allocates; a child that leaves must not take the parent's memory along */
    probe_init();
    CUdeviceptr big;
    CHECK(cuMemAlloc(&big, 8 << 20));
    if (probe_round_trip(big, 8 << 20, 33))
        return 4;
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        exit(0); /* runs the exit handlers */
    status = wait_child(pid);
    char region[96];
    tm_stats_default_path(getpid(), region, sizeof region);
    struct stat st;
    int region_there = stat(region, &st) == 0;
    printf("child of a live parent: %d, parent's region %s\n", status, region_there ? "kept" : "absent");
    if (status != 0 || probe_verify(big, 8 << 20, 33))
        return fail("the parent's memory changed when a child left");
    CHECK(cuMemFree(big));
    printf("fork ok\n");
    return 0;
}

/* ---------------------------------------------------------------- a server and its child */

/* Holds one allocation of `size`, then starts this program again as a child ("pieces SIZE
 * SIZE") while holding it: the two share one lower-tier budget. */
static int run_server(const char *size, const char *self_path)
{
    probe_init();
    CUdeviceptr held;
    CHECK(cuMemAlloc(&held, probe_parse_size(size)));
    printf("server holds %s\n", size);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self_path, self_path, "pieces", size, size, (char *)NULL);
        _exit(127);
    }
    printf("child exited %d\n", wait_child(pid));
    CHECK(cuMemFree(held));
    return 0;
}

/* ---------------------------------------------------------------- leaving */

static int run_leak(size_t size, int count)
{
    probe_init();
    for (int i = 0; i < count; i++) {
        CUdeviceptr p;
        CHECK(cuMemAlloc(&p, size));
        if (probe_round_trip(p, size, (uint32_t)i))
            return 4;
    }
    printf("leaving %d allocations of %zu bytes\n", count, size);
    return 0;
}

/* A handler registered before the first allocation runs after tiermem's exit handler, as
 * C++ static destructors do: the memory must still be there, and freeing it must work. */
static CUdeviceptr late_ptr;
static size_t late_size;

static void late_reader(void)
{
    uint8_t *host = malloc(late_size);
    if (!host)
        return;
    CUresult copied = cuMemcpyDtoH(host, late_ptr, late_size);
    size_t wrong = 0;
    for (size_t i = 0; copied == CUDA_SUCCESS && i < late_size; i++)
        wrong += host[i] != (uint8_t)(i * 7u + 3u);
    printf("late read: %s, %zu bytes wrong\n", probe_error_name(copied), copied == CUDA_SUCCESS ? wrong : late_size);
    printf("late free: %s\n", probe_error_name(cuMemFree(late_ptr)));
    free(host);
}

static int run_late(size_t size)
{
    probe_init();
    atexit(late_reader);
    late_size = size;
    CHECK(cuMemAlloc(&late_ptr, size));
    uint8_t *host = malloc(size);
    if (!host)
        return 4;
    for (size_t i = 0; i < size; i++)
        host[i] = (uint8_t)(i * 7u + 3u);
    CHECK(cuMemcpyHtoD(late_ptr, host, size));
    free(host);
    printf("exiting with %zu bytes allocated\n", size);
    return 0;
}

/* Reads this process's stats region, if it has one (under the interposer). */
static bool own_stats(tm_stats_snapshot *s)
{
    char path[64], why[256];
    tm_stats_default_path(getpid(), path, sizeof path);
    return tm_stats_read(path, s, why, sizeof why) == 0;
}

static int run_ctx(void)
{
    CUdevice device;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuCtxCreate(&ctx, NULL, 0, device));
    CUdeviceptr big, small;
    CHECK(cuMemAlloc(&big, 8 << 20));
    CHECK(cuMemAlloc(&small, 4096));
    if (probe_round_trip(big, 8 << 20, 51))
        return 4;
    tm_stats_snapshot s;
    bool interposed = own_stats(&s);
    if (interposed) {
        printf("before destroy: chunked %llu, small %llu\n", (unsigned long long)s.header.tiered_count,
               (unsigned long long)s.header.small_count);
        if (s.header.tiered_count != 1 || s.header.small_count != 1)
            return fail("the context's allocations are not counted");
        tm_stats_snapshot_free(&s);
    }
    CHECK(cuCtxDestroy(ctx));
    if (interposed && own_stats(&s)) {
        printf("after destroy: chunked %llu, small %llu, hbm %llu bytes\n", (unsigned long long)s.header.tiered_count,
               (unsigned long long)s.header.small_count, (unsigned long long)s.header.tier[0].used);
        if (s.header.tiered_count || s.header.small_count || s.header.tier[0].used)
            return fail("the destroyed context's allocations are still counted");
        tm_stats_snapshot_free(&s);
    }
    /* the device is usable again, in the primary context */
    probe_init();
    CHECK(cuMemAlloc(&big, 8 << 20));
    if (probe_round_trip(big, 8 << 20, 52))
        return 4;
    CHECK(cuMemFree(big));
    printf("ctx ok\n");
    return 0;
}

static int run_exit(int code)
{
    probe_init();
    CUdeviceptr big, small;
    CHECK(cuMemAlloc(&big, 4 << 20));
    CHECK(cuMemAlloc(&small, 512));
    if (probe_round_trip(big, 4 << 20, 41) || probe_round_trip(small, 512, 42))
        return 4;
    CHECK(cuMemFree(big));
    CHECK(cuMemFree(small));
    return code;
}

/* ---------------------------------------------------------------- faults */

/* A call that may fail on purpose (SIMCUDA_FAIL): says so and reports whether it worked. */
static bool tried(CUresult result, const char *step)
{
    if (result != CUDA_SUCCESS)
        printf("%s: %s\n", step, probe_error_name(result));
    return result == CUDA_SUCCESS;
}

static int free_twice(CUdeviceptr p, const char *step)
{
    if (!tried(cuMemFree(p), step))
        tried(cuMemFree(p), step);
    return 0;
}

static int run_faults(void)
{
    probe_init();
    static const size_t sizes[] = { 8 << 20, 512 };
    for (int i = 0; i < 2; i++) {
        CUdeviceptr p;
        if (tried(cuMemAlloc(&p, sizes[i]), "cuMemAlloc")) {
            if (probe_round_trip(p, sizes[i], 61 + (uint32_t)i))
                return 4;
            free_twice(p, "cuMemFree");
        }
        size_t pitch;
        if (tried(cuMemAllocPitch(&p, &pitch, sizes[i] / 4, 4, 4), "cuMemAllocPitch"))
            free_twice(p, "cuMemFree pitched");
    }
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a;
    if (tried(cuMemAllocAsync(&a, 6 << 20, stream), "cuMemAllocAsync")) {
        tried(cuStreamSynchronize(stream), "cuStreamSynchronize");
        if (!tried(cuMemFreeAsync(a, stream), "cuMemFreeAsync"))
            tried(cuMemFreeAsync(a, stream), "cuMemFreeAsync");
        tried(cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    CHECK(cuStreamDestroy(stream));
    printf("faults done\n");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 4 && strcmp(argv[1], "pieces") == 0)
        return run_pieces(probe_parse_size(argv[2]), probe_parse_size(argv[3]), argc > 4 ? argv[4] : NULL);
    if (argc >= 2 && strcmp(argv[1], "meminfo") == 0)
        return run_meminfo(argc - 2, argv + 2);
    if (argc == 3 && strcmp(argv[1], "attrs") == 0)
        return run_attrs(probe_parse_size(argv[2]));
    if (argc == 4 && strcmp(argv[1], "vmm") == 0)
        return run_vmm(probe_parse_size(argv[2]), atoi(argv[3]));
    if (argc == 2 && strcmp(argv[1], "paths") == 0)
        return run_paths();
    if (argc == 4 && strcmp(argv[1], "threads") == 0)
        return run_threads(atoi(argv[2]), atoi(argv[3]));
    if (argc == 2 && strcmp(argv[1], "fork") == 0)
        return run_fork();
    if (argc == 3 && strcmp(argv[1], "server") == 0)
        return run_server(argv[2], argv[0]);
    if (argc == 4 && strcmp(argv[1], "leak") == 0)
        return run_leak(probe_parse_size(argv[2]), atoi(argv[3]));
    if (argc == 2 && strcmp(argv[1], "ctx") == 0)
        return run_ctx();
    if (argc == 3 && strcmp(argv[1], "late") == 0)
        return run_late(probe_parse_size(argv[2]));
    if (argc == 2 && strcmp(argv[1], "faults") == 0)
        return run_faults();
    if (argc == 3 && strcmp(argv[1], "exit") == 0)
        return run_exit(atoi(argv[2]));
    fprintf(stderr, "usage: see the comment at the top of tests/preload/probe.c\n");
    return 1;
}
