/* fake_driver.c — simcuda behind counting and failing wrappers, and the unit tests'
 * set-up (see fake_driver.h). */
#include "tests/preload/unit/fake_driver.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/base/settings.h"

#ifndef FAKE_SIMCUDA
#error "FAKE_SIMCUDA names simcuda's libcuda.so.1"
#endif

static tm_driver_table sim;     /* simcuda's own functions, as tm_driver_load found them */
static CUcontext context;
static char scratch[PATH_MAX - 16]; /* this process's temporary folder */
static char stats_path[PATH_MAX];

typedef struct fault {
    uint64_t from, to;          /* call numbers [from, to) fail */
    CUresult error;
} fault;

static uint64_t calls[FAKE_CALL_COUNT], failed[FAKE_CALL_COUNT];
static fault faults[FAKE_CALL_COUNT];
static struct {
    bool on;
    CUmemLocationType type;
    int id;
    CUresult error;
} refused;
static int64_t live_handles, live_reservations, mapped_bytes;
static uint64_t clock_ns = 1000000000ull;

/* ---------------------------------------------------------------- the wrappers */

/* Counts the call; true with *error set when a rule fails it. */
static bool fails(fake_call call, CUresult *error)
{
    uint64_t n = __atomic_add_fetch(&calls[call], 1, __ATOMIC_RELAXED);
    const fault *f = &faults[call];
    if (n < f->from || n >= f->to)
        return false;
    __atomic_add_fetch(&failed[call], 1, __ATOMIC_RELAXED);
    *error = f->error;
    return true;
}

static void count(int64_t *counter, int64_t n)
{
    __atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

static CUresult fake_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                 unsigned long long flags)
{
    CUresult r;
    if (fails(FAKE_MEM_CREATE, &r))
        return r;
    if (refused.on && prop && prop->location.type == refused.type && prop->location.id == refused.id) {
        __atomic_add_fetch(&failed[FAKE_MEM_CREATE], 1, __ATOMIC_RELAXED);
        return refused.error;
    }
    r = sim.cuMemCreate(handle, size, prop, flags);
    if (r == CUDA_SUCCESS)
        count(&live_handles, 1);
    return r;
}

static CUresult fake_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult r;
    if (fails(FAKE_MEM_RELEASE, &r))
        return r;
    r = sim.cuMemRelease(handle);
    if (r == CUDA_SUCCESS)
        count(&live_handles, -1);
    return r;
}

static CUresult fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                              unsigned long long flags)
{
    CUresult r;
    if (fails(FAKE_MEM_MAP, &r))
        return r;
    r = sim.cuMemMap(ptr, size, offset, handle, flags);
    if (r == CUDA_SUCCESS)
        count(&mapped_bytes, (int64_t)size);
    return r;
}

static CUresult fake_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult r;
    if (fails(FAKE_MEM_UNMAP, &r))
        return r;
    r = sim.cuMemUnmap(ptr, size);
    if (r == CUDA_SUCCESS)
        count(&mapped_bytes, -(int64_t)size);
    return r;
}

static CUresult fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t n)
{
    CUresult r;
    if (fails(FAKE_MEM_SET_ACCESS, &r))
        return r;
    return sim.cuMemSetAccess(ptr, size, desc, n);
}

static CUresult fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags)
{
    CUresult r;
    if (fails(FAKE_MEM_ADDRESS_RESERVE, &r))
        return r;
    r = sim.cuMemAddressReserve(ptr, size, alignment, addr, flags);
    if (r == CUDA_SUCCESS)
        count(&live_reservations, 1);
    return r;
}

static CUresult fake_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult r;
    if (fails(FAKE_MEM_ADDRESS_FREE, &r))
        return r;
    r = sim.cuMemAddressFree(ptr, size);
    if (r == CUDA_SUCCESS)
        count(&live_reservations, -1);
    return r;
}

static CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    CUresult r;
    if (fails(FAKE_MEMCPY_DTOD_ASYNC, &r))
        return r;
    return sim.cuMemcpyDtoDAsync_v2(dst, src, bytes, stream);
}

static uint64_t fake_now_ns(void)
{
    return __atomic_load_n(&clock_ns, __ATOMIC_RELAXED);
}

uint64_t fake_calls(fake_call call)
{
    return __atomic_load_n(&calls[call], __ATOMIC_RELAXED);
}

void fake_fail(fake_call call, uint64_t nth, uint64_t times, CUresult error)
{
    uint64_t now = fake_calls(call);
    faults[call] = (fault){ .from = now + nth, .to = now + nth + times, .error = error };
}

void fake_refuse_location(CUmemLocationType type, int id, CUresult error)
{
    refused.type = type;
    refused.id = id;
    refused.error = error;
    refused.on = true;
}

uint64_t fake_failed(fake_call call)
{
    return __atomic_load_n(&failed[call], __ATOMIC_RELAXED);
}

void fake_heal(void)
{
    memset(faults, 0, sizeof faults);
    refused.on = false;
}

int64_t fake_live_handles(void)
{
    return __atomic_load_n(&live_handles, __ATOMIC_RELAXED);
}

int64_t fake_live_reservations(void)
{
    return __atomic_load_n(&live_reservations, __ATOMIC_RELAXED);
}

int64_t fake_mapped_bytes(void)
{
    return __atomic_load_n(&mapped_bytes, __ATOMIC_RELAXED);
}

void fake_clock_advance(uint64_t ns)
{
    __atomic_add_fetch(&clock_ns, ns, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- set-up */

static void give_up(const char *what, CUresult result)
{
    fprintf(stderr, "fake_driver: %s failed (%d)\n", what, (int)result);
    exit(2);
}

static void put(const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq) {
        fprintf(stderr, "fake_driver: '%s' is not NAME=value\n", assignment);
        exit(2);
    }
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(eq - assignment), assignment);
    setenv(name, eq + 1, 1);
}

static void remove_scratch(void)
{
    unlink(stats_path);
    rmdir(scratch);
}

/* Drops every TIERMEM_* and SIMCUDA_* variable the process inherited (the tests' settings
 * are their own), but for TIERMEM_LOG, which only says how much to tell. */
static void clear_settings(void)
{
    char *names[256];
    size_t n = 0;
    for (char **e = environ; *e && n < sizeof names / sizeof *names; e++)
        if ((!strncmp(*e, "TIERMEM_", 8) && strncmp(*e, "TIERMEM_LOG=", 12)) || !strncmp(*e, "SIMCUDA_", 8))
            names[n++] = strndup(*e, strcspn(*e, "="));
    for (size_t i = 0; i < n; i++) {
        if (names[i])
            unsetenv(names[i]);
        free(names[i]);
    }
}

void fake_start(const char *const *settings)
{
    clear_settings();
    snprintf(scratch, sizeof scratch, "%s/tiermem-unit-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(scratch)) {
        perror("fake_driver: mkdtemp");
        exit(2);
    }
    snprintf(stats_path, sizeof stats_path, "%s/stats", scratch);
    atexit(remove_scratch);
    char stats[PATH_MAX + 16];
    snprintf(stats, sizeof stats, "TIERMEM_STATS=%s", stats_path);
    const char *defaults[] = {
        "SIMCUDA_MEM=64M", "SIMCUDA_NUMA_NODES=0,1", "TIERMEM_DRIVER=" FAKE_SIMCUDA,
        "TIERMEM_HBM_LIMIT=8M", "TIERMEM_HBM_RESERVE=0", "TIERMEM_CXL_NODE=1", "TIERMEM_CXL_LIMIT=8M",
        "TIERMEM_DDR_NODE=0", "TIERMEM_DDR_LIMIT=32M", "TIERMEM_LEDGER=off", stats, NULL,
    };
    setenv("TIERMEM_LOG", "info", 0);
    for (const char *const *s = defaults; *s; s++)
        put(*s);
    for (const char *const *s = settings; s && *s; s++)
        put(*s);

    if (!tm_driver_load() || !tm_tiering_on())
        give_up("loading simcuda as the driver, with tiering on", CUDA_ERROR_NOT_INITIALIZED);
    /* the program is linked with the same simcuda: its own calls (cuInit, copies) and
     * tiermem's reach one driver */
    if (tm_real.cuMemCreate != cuMemCreate)
        give_up("finding the linked simcuda behind TIERMEM_DRIVER", CUDA_ERROR_INVALID_HANDLE);
    sim = tm_real;
    tm_real.cuMemCreate = fake_cuMemCreate;
    tm_real.cuMemRelease = fake_cuMemRelease;
    tm_real.cuMemMap = fake_cuMemMap;
    tm_real.cuMemUnmap = fake_cuMemUnmap;
    tm_real.cuMemSetAccess = fake_cuMemSetAccess;
    tm_real.cuMemAddressReserve = fake_cuMemAddressReserve;
    tm_real.cuMemAddressFree = fake_cuMemAddressFree;
    tm_real.cuMemcpyDtoDAsync_v2 = fake_cuMemcpyDtoDAsync;
    tm_real.simcuda_now_ns = fake_now_ns;

    CUresult r;
    CUdevice device;
    if ((r = cuInit(0)) != CUDA_SUCCESS)
        give_up("cuInit", r);
    if ((r = cuDeviceGet(&device, 0)) != CUDA_SUCCESS)
        give_up("cuDeviceGet", r);
    if ((r = cuDevicePrimaryCtxRetain(&context, device)) != CUDA_SUCCESS)
        give_up("cuDevicePrimaryCtxRetain", r);
    if ((r = cuCtxSetCurrent(context)) != CUDA_SUCCESS)
        give_up("cuCtxSetCurrent", r);
}

CUcontext fake_context(void)
{
    return context;
}

tm_device *fake_device(void)
{
    CUcontext ctx;
    tm_device *d = tm_device_current(&ctx);
    if (!d || ctx != context)
        give_up("setting up the tiered device", CUDA_ERROR_INVALID_DEVICE);
    return d;
}

/* ---------------------------------------------------------------- views */

const tm_stats_record *fake_stats_record(int slot)
{
    assert_true(slot >= 0 && slot < TM_STATS_RECORDS);
    return (const tm_stats_record *)((const char *)tm_stats + tm_stats->records_offset) + slot;
}

tm_stats_heat_record *fake_heat_record(int slot)
{
    assert_true(slot >= 0 && slot < TM_STATS_RECORDS);
    return (tm_stats_heat_record *)((char *)tm_stats + tm_stats->heat_records_offset) + slot;
}

tm_stats_heat_chunk *fake_heat_chunk(uint64_t index)
{
    assert_true(index < tm_stats->heat_chunk_capacity);
    return (tm_stats_heat_chunk *)((char *)tm_stats + tm_stats->heat_chunks_offset) + index;
}

CUmemLocation fake_location_at(CUdeviceptr address)
{
    CUmemLocation none = { .type = (CUmemLocationType)-1, .id = -1 };
    CUmemGenericAllocationHandle handle;
    if (cuMemRetainAllocationHandle(&handle, (void *)(uintptr_t)address) != CUDA_SUCCESS)
        return none;
    CUmemAllocationProp prop;
    CUresult r = cuMemGetAllocationPropertiesFromHandle(&prop, handle);
    cuMemRelease(handle); /* the reference retain gave (simcuda's own, not counted) */
    return r == CUDA_SUCCESS ? prop.location : none;
}

/* ---------------------------------------------------------------- allocations */

CUresult fake_alloc(uint64_t bytes, CUdeviceptr *dptr)
{
    CUresult result = CUDA_ERROR_UNKNOWN;
    assert_true(tm_alloc_chunked(fake_device(), context, bytes, TM_PATH_MEM_ALLOC, dptr, &result));
    return result;
}

void fake_free(CUdeviceptr dptr)
{
    tm_alloc *a = tm_untrack(dptr);
    assert_non_null(a);
    tm_free_chunked(a, TM_WAIT_CONTEXT, NULL);
}

static uint8_t pattern(uint64_t i, uint32_t seed)
{
    return (uint8_t)(i * 131u + seed * 29u + (i >> 16));
}

void fake_fill(CUdeviceptr dptr, uint64_t bytes, uint32_t seed)
{
    uint8_t *buf = malloc(bytes);
    assert_non_null(buf);
    for (uint64_t i = 0; i < bytes; i++)
        buf[i] = pattern(i, seed);
    assert_int_equal(cuMemcpyHtoD(dptr, buf, bytes), CUDA_SUCCESS);
    free(buf);
}

bool fake_holds(CUdeviceptr dptr, uint64_t bytes, uint32_t seed)
{
    uint8_t *buf = malloc(bytes);
    assert_non_null(buf);
    bool same = cuMemcpyDtoH(buf, dptr, bytes) == CUDA_SUCCESS;
    for (uint64_t i = 0; same && i < bytes; i++)
        same = buf[i] == pattern(i, seed);
    free(buf);
    return same;
}

/* ---------------------------------------------------------------- child cases */

#define CHILD_ARGS 32

int fake_run_child(const char *name, const char *const *settings)
{
    const char *argv[CHILD_ARGS + 4] = { "unit-child", "--child", name };
    int n = 3;
    for (const char *const *s = settings; s && *s && n < CHILD_ARGS; s++)
        argv[n++] = *s;
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

bool fake_child(int argc, char **argv, const char *const *settings, const struct CMUnitTest *cases, size_t count,
                int *status)
{
    if (argc < 3 || strcmp(argv[1], "--child") != 0)
        return false;
    const char *all[2 * CHILD_ARGS + 1];
    int n = 0;
    for (const char *const *s = settings; s && *s && n < CHILD_ARGS; s++)
        all[n++] = *s;
    for (int i = 3; i < argc && i - 3 < CHILD_ARGS; i++)
        all[n++] = argv[i];
    all[n] = NULL;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(cases[i].name, argv[2]) != 0)
            continue;
        fake_start(all);
        setenv("CMOCKA_MESSAGE_OUTPUT", "STDOUT", 1); /* the parent's TAP holds the one result */
        *status = _cmocka_run_group_tests(argv[2], &cases[i], 1, NULL, NULL);
        return true;
    }
    fprintf(stderr, "fake_driver: no child case '%s'\n", argv[2]);
    *status = 2;
    return true;
}
