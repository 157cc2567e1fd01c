/* test_simcuda_export.c — what the CUDA runtime asks of simcuda beyond the documented API
 * (tools/simcuda/sim_export.c): the export tables by UUID, context-local storage and its
 * destructors, the integrity answer, and the ordinary functions the runtime needs
 * (cuModuleGetLoadingMode, the CUDA 7.0 primary-context ABIs, cuMemFree(0)).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"
#include "tools/simcuda/sim_integrity.h"

static const unsigned char uuid_runtime[16] = { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                                0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 };
static const unsigned char uuid_hooks[16] = { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
                                              0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 };
static const unsigned char uuid_tls[16] = { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
                                            0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc };
static const unsigned char uuid_storage[16] = { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
                                                0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 };
static const unsigned char uuid_context[16] = { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
                                                0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e };
static const unsigned char uuid_integrity[16] = { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                                  0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 };
static const unsigned char uuid_refused[16] = { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e,
                                                0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 };

typedef void local_dtor(CUcontext ctx, void *key, void *value);
typedef CUresult local_put(CUcontext ctx, void *key, void *value, local_dtor *dtor);
typedef CUresult local_delete(CUcontext ctx, void *key);
typedef CUresult local_get(void **value, CUcontext ctx, void *key);
typedef CUresult integrity_fn(unsigned int version, uint64_t seconds, uint64_t out[2]);
typedef CUresult primary_fn(CUcontext *out, CUdevice device);
typedef CUresult primary_v1_fn(CUdevice device); /* cuDevicePrimaryCtxRelease, ...Reset of CUDA 7.0 */

static void *const *table(const unsigned char *bytes)
{
    CUuuid id;
    memcpy(id.bytes, bytes, sizeof id.bytes);
    const void *slots = NULL;
    CUresult rc = cuGetExportTable(&slots, &id);
    return rc == CUDA_SUCCESS ? (void *const *)slots : NULL;
}

static size_t size_header(void *const *slots)
{
    return (size_t)(uintptr_t)slots[0];
}

/* ---------------------------------------------------------------- the tables */

static void tables_the_runtime_needs_are_served(void **state)
{
    (void)state;
    void *const *runtime = table(uuid_runtime), *const *hooks = table(uuid_hooks);
    void *const *tls = table(uuid_tls), *const *storage = table(uuid_storage);
    void *const *context = table(uuid_context), *const *integrity = table(uuid_integrity);
    assert_non_null(runtime);
    assert_non_null(hooks);
    assert_non_null(tls);
    assert_non_null(storage);
    assert_non_null(context);
    assert_non_null(integrity);
    assert_true(size_header(hooks) >= 56);     /* else cudaErrorInsufficientDriver */
    assert_int_equal(size_header(integrity), 24); /* 11.8 checks it exactly */
    assert_true(size_header(runtime) >= 8 * 8);
    assert_true(size_header(context) >= 4 * 8);
    assert_non_null(storage[0]);               /* no size header: put is slot 0 */
    /* The same table each time: its address is part of the integrity answer. */
    assert_ptr_equal(table(uuid_runtime), runtime);

    primary_fn *primary = (primary_fn *)runtime[2];
    CUcontext ctx = NULL;
    assert_cu_ok(primary(&ctx, 0));
    assert_ptr_equal(ctx, tdev.primary);
    assert_cu(primary(&ctx, 99), CUDA_ERROR_INVALID_DEVICE);

    void (*buffer)(void **, size_t *) = (void (*)(void **, size_t *))hooks[2];
    void *scratch = NULL;
    size_t count = 0;
    buffer(&scratch, &count);
    assert_non_null(scratch);
    assert_true(count >= 1024);
    memset(scratch, 0x5a, count * 8); /* the runtime writes into it */

    CUresult (*unwrap)(CUcontext, uint32_t *, void **) = (CUresult(*)(CUcontext, uint32_t *, void **))context[2];
    uint32_t wrapped = 7;
    void *inner = &wrapped;
    assert_cu_ok(unwrap(ctx, &wrapped, &inner));
    assert_int_equal(wrapped, 0);
    assert_null(inner);
}

static void unknown_and_refused_tables_are_not_found(void **state)
{
    (void)state;
    CUuuid id;
    const void *slots = (const void *)&id;
    memset(id.bytes, 0x33, sizeof id.bytes);
    assert_cu(cuGetExportTable(&slots, &id), CUDA_ERROR_NOT_FOUND);
    assert_null(slots);
    memcpy(id.bytes, uuid_refused, sizeof id.bytes);
    assert_cu(cuGetExportTable(&slots, &id), CUDA_ERROR_NOT_FOUND);
    assert_cu(cuGetExportTable(NULL, &id), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuGetExportTable(&slots, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* A slot nobody has seen called answers, says so once, and does not crash. */
int child_export_trap(void)
{
    CUdevice dev;
    child_start(&dev);
    void *const *tls = table(uuid_tls);
    child_expect(tls != NULL, "TOOLS_TLS not served");
    if (!tls)
        return child_failures;
    CUresult (*trap)(void) = (CUresult(*)(void))tls[1];
    child_expect_cu(trap(), CUDA_ERROR_NOT_SUPPORTED);
    child_expect_cu(trap(), CUDA_ERROR_NOT_SUPPORTED);
    return child_failures;
}

static void an_unknown_slot_says_which_once(void **state)
{
    (void)state;
    char output[4096];
    assert_int_equal(run_child("export_trap", NULL, output, sizeof output), 0);
    const char *line = "export table 42d85a81-23f6-cb47-8298-f6e78a3aecdc (TOOLS_TLS) slot 1 was called";
    const char *first = strstr(output, line);
    assert_non_null(first);
    assert_null(strstr(first + 1, line));
}

/* SIMCUDA_EXPORT_TRACE=traps answers an unknown table with traps that name it. */
int child_export_unknown_traps(void)
{
    CUdevice dev;
    child_start(&dev);
    CUuuid id;
    memset(id.bytes, 0x44, sizeof id.bytes);
    const void *slots = NULL;
    child_expect_cu(cuGetExportTable(&slots, &id), CUDA_SUCCESS);
    if (!slots)
        return child_failures;
    const void *again = NULL;
    child_expect_cu(cuGetExportTable(&again, &id), CUDA_SUCCESS);
    child_expect(again == slots, "a second ask gave another table");
    CUresult (*trap)(void) = (CUresult(*)(void))((void *const *)slots)[17];
    child_expect_cu(trap(), CUDA_ERROR_NOT_SUPPORTED);
    return child_failures;
}

static void trace_traps_measure_unknown_tables(void **state)
{
    (void)state;
    char output[8192];
    const char *env[] = { "SIMCUDA_EXPORT_TRACE=traps", NULL };
    assert_int_equal(run_child("export_unknown_traps", env, output, sizeof output), 0);
    assert_non_null(strstr(output, "cuGetExportTable 44444444-4444-4444-4444-444444444444: unknown table, "
                                   "answered with a table of traps"));
    assert_non_null(strstr(output, "export table 44444444-4444-4444-4444-444444444444 (unknown, answered with "
                                   "traps) slot 17 was called"));
    assert_non_null(strstr(output, "slot 17: 1 calls"));
    /* Without the setting the same table is refused (the child's first check fails). */
    assert_int_not_equal(run_child("export_unknown_traps", NULL, output, sizeof output), 0);
}

/* ---------------------------------------------------------------- context-local storage */

struct dtor_log {
    int calls;
    CUcontext ctx;
    void *key, *value;
    CUresult usable; /* a driver call on the context from inside the destructor */
};
static struct dtor_log dtor_seen;

static void record_dtor(CUcontext ctx, void *key, void *value)
{
    dtor_seen.calls++;
    dtor_seen.ctx = ctx;
    dtor_seen.key = key;
    dtor_seen.value = value;
    CUdevice device = -1;
    dtor_seen.usable = cuCtxGetDevice_v2(&device, ctx);
}

static void storage_put_get_delete(void **state)
{
    (void)state;
    void *const *storage = table(uuid_storage);
    local_put *put = (local_put *)storage[0];
    local_delete *del = (local_delete *)storage[1];
    local_get *get = (local_get *)storage[2];
    int key_a, key_b, value_a, value_b;
    void *value = NULL;
    assert_cu(get(&value, NULL, &key_a), CUDA_ERROR_NOT_FOUND); /* the runtime then builds its state */
    assert_cu_ok(put(NULL, &key_a, &value_a, NULL));            /* NULL: the current context */
    assert_cu_ok(put(tdev.primary, &key_b, &value_b, NULL));
    assert_cu_ok(get(&value, tdev.primary, &key_a));
    assert_ptr_equal(value, &value_a);
    assert_cu_ok(get(&value, NULL, &key_b));
    assert_ptr_equal(value, &value_b);
    assert_cu_ok(put(NULL, &key_a, &value_b, NULL)); /* replaces */
    assert_cu_ok(get(&value, NULL, &key_a));
    assert_ptr_equal(value, &value_b);
    assert_cu_ok(del(NULL, &key_a));
    assert_cu(get(&value, NULL, &key_a), CUDA_ERROR_NOT_FOUND);
    assert_cu(del(NULL, &key_a), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(del(tdev.primary, &key_b));
    assert_cu(get(&value, (CUcontext)&key_a, &key_b), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(get(NULL, NULL, &key_b), CUDA_ERROR_INVALID_VALUE);
}

static void destroying_a_context_runs_its_destructors(void **state)
{
    (void)state;
    void *const *storage = table(uuid_storage);
    local_put *put = (local_put *)storage[0];
    local_get *get = (local_get *)storage[2];
    CUcontext ctx = NULL;
    assert_cu_ok(cuCtxCreate(&ctx, NULL, 0, tdev.dev));
    int key, value;
    memset(&dtor_seen, 0, sizeof dtor_seen);
    assert_cu_ok(put(ctx, &key, &value, record_dtor));
    assert_cu_ok(cuCtxDestroy(ctx));
    assert_int_equal(dtor_seen.calls, 1);
    assert_ptr_equal(dtor_seen.ctx, ctx);
    assert_ptr_equal(dtor_seen.key, &key);
    assert_ptr_equal(dtor_seen.value, &value);
    assert_cu_ok(dtor_seen.usable); /* the context still worked inside its destructor */
    void *got = NULL;
    assert_cu(get(&got, ctx, &key), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu_ok(cuCtxSetCurrent(tdev.primary));
}

/* The primary context goes at reset, and at the release of its last retain. */
static void primary_context_destructors_run_when_it_goes(void **state)
{
    (void)state;
    void *const *storage = table(uuid_storage);
    local_put *put = (local_put *)storage[0];
    local_get *get = (local_get *)storage[2];
    int key, value;
    void *got = NULL;
    memset(&dtor_seen, 0, sizeof dtor_seen);
    assert_cu_ok(put(tdev.primary, &key, &value, record_dtor));
    assert_cu_ok(cuDevicePrimaryCtxReset(tdev.dev));
    assert_int_equal(dtor_seen.calls, 1);
    assert_ptr_equal(dtor_seen.ctx, tdev.primary);
    assert_cu(get(&got, tdev.primary, &key), CUDA_ERROR_NOT_FOUND);

    CUcontext again = NULL;
    assert_cu_ok(cuDevicePrimaryCtxRetain(&again, tdev.dev)); /* two retains now */
    assert_cu_ok(put(tdev.primary, &key, &value, record_dtor));
    assert_cu_ok(cuDevicePrimaryCtxRelease(tdev.dev));
    assert_int_equal(dtor_seen.calls, 1); /* one retain left: it lives */
    assert_cu_ok(get(&got, tdev.primary, &key));
    assert_cu_ok(cuDevicePrimaryCtxRelease(tdev.dev));
    assert_int_equal(dtor_seen.calls, 2);
    assert_cu_ok(dtor_seen.usable);
    assert_cu_ok(cuDevicePrimaryCtxRetain(&again, tdev.dev)); /* the fixture's retain again */
    assert_cu_ok(cuCtxSetCurrent(tdev.primary));
}

/* Four threads on two devices at once, each with keys of its own and one shared key. */
struct storage_worker {
    int index;
    local_put *put;
    local_delete *del;
    local_get *get;
    int failures;
};
static pthread_barrier_t storage_start;
static int shared_key;

static void *storage_worker_main(void *arg)
{
    struct storage_worker *w = arg;
    CUcontext ctx = NULL;
    if (cuDevicePrimaryCtxRetain(&ctx, w->index % 2) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        w->failures++;
        return NULL;
    }
    int keys[64];
    pthread_barrier_wait(&storage_start);
    for (int round = 0; round < 200; round++) {
        for (int k = 0; k < 64; k++)
            w->failures += w->put(NULL, &keys[k], &keys[(k + round) % 64], NULL) != CUDA_SUCCESS;
        w->put(NULL, &shared_key, &keys[0], NULL);
        for (int k = 0; k < 64; k++) {
            void *value = NULL;
            w->failures += w->get(&value, ctx, &keys[k]) != CUDA_SUCCESS || value != &keys[(k + round) % 64];
        }
        void *shared = NULL;
        w->failures += w->get(&shared, NULL, &shared_key) != CUDA_SUCCESS || shared == NULL;
        for (int k = 0; k < 64; k++)
            w->failures += w->del(ctx, &keys[k]) != CUDA_SUCCESS;
    }
    cuDevicePrimaryCtxRelease(w->index % 2);
    return NULL;
}

int child_storage_threads(void)
{
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    void *const *storage = table(uuid_storage);
    child_expect(storage != NULL, "no storage table");
    if (!storage)
        return child_failures;
    pthread_t threads[4];
    struct storage_worker workers[4];
    pthread_barrier_init(&storage_start, NULL, 4);
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct storage_worker){ i, (local_put *)storage[0], (local_delete *)storage[1],
                                              (local_get *)storage[2], 0 };
        pthread_create(&threads[i], NULL, storage_worker_main, &workers[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        child_expect(workers[i].failures == 0, "thread %d: %d failed calls", i, workers[i].failures);
    }
    pthread_barrier_destroy(&storage_start);
    return child_failures;
}

static void storage_is_safe_from_four_threads_on_two_devices(void **state)
{
    (void)state;
    const char *env[] = { "SIMCUDA_DEVICES=2", NULL };
    assert_child_passes("storage_threads", env);
}

/* ---------------------------------------------------------------- the integrity answer */

static void integrity_answers_the_runtimes_three_questions(void **state)
{
    (void)state;
    void *const *integrity = table(uuid_integrity);
    integrity_fn *answer = (integrity_fn *)integrity[1];
    uint64_t out[2] = { 0, 0 };
    assert_cu_ok(answer(13000, 1700000000, out));
    assert_true(out[0] == 0x3341181c03cb675cull && out[1] == 0x8ed383aa1f4cd1e8ull);
    assert_cu_ok(answer(13001, 1700000000, out));
    assert_true(out[0] == 0x1841181c03cb675cull && out[1] == 0x8ed383aa1f4cd1e8ull);

    /* The third: HMAC-MD2 over what this test reads through the driver's own calls. */
    uint64_t seconds = (uint64_t)time(NULL);
    assert_cu_ok(answer(13002, seconds, out));
    int driver = 0, count = 0;
    assert_cu_ok(cuDriverGetVersion(&driver));
    assert_cu_ok(cuDeviceGetCount(&count));
    sim_integrity_input input = {
        .driver_version = (uint32_t)driver,
        .version = 13002,
        .pid = (uint32_t)getpid(),
        .thread = (uint32_t)pthread_self(),
        .runtime_table = (uint64_t)(uintptr_t)table(uuid_runtime),
        .integrity_table = (uint64_t)(uintptr_t)integrity,
        .function = (uint64_t)(uintptr_t)integrity[1],
        .unix_seconds = seconds,
        .device_count = count,
    };
    for (int d = 0; d < count; d++) {
        CUuuid uuid;
        assert_cu_ok(cuDeviceGetUuid(&uuid, d));
        memcpy(input.devices[d].uuid, uuid.bytes, 16);
        assert_cu_ok(cuDeviceGetAttribute(&input.devices[d].pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d));
        assert_cu_ok(cuDeviceGetAttribute(&input.devices[d].pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d));
        assert_cu_ok(cuDeviceGetAttribute(&input.devices[d].pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d));
    }
    uint8_t digest[16];
    sim_integrity_digest(&input, digest);
    assert_memory_equal(out, digest, 16);
    /* Another second, another answer. */
    uint64_t later[2];
    assert_cu_ok(answer(13002, seconds + 1, later));
    assert_memory_not_equal(out, later, 16);
    assert_cu(answer(13005, seconds, out), CUDA_ERROR_INVALID_VALUE);
    assert_cu(answer(13002, seconds, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* ---------------------------------------------------------------- ordinary functions */

static void functions_the_runtime_looks_up(void **state)
{
    (void)state;
    CUmoduleLoadingMode mode = 0;
    assert_cu_ok(cuModuleGetLoadingMode(&mode));
    assert_int_equal(mode, CU_MODULE_LAZY_LOADING);
    assert_cu(cuModuleGetLoadingMode(NULL), CUDA_ERROR_INVALID_VALUE);

    /* cudaDeviceReset looks these up at version 7000: the v1 ABIs, implemented. */
    void *release = NULL, *reset = NULL;
    assert_cu_ok(cuGetProcAddress("cuDevicePrimaryCtxRelease", &release, 7000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_cu_ok(cuGetProcAddress("cuDevicePrimaryCtxReset", &reset, 7000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_ptr_equal(release, dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRelease"));
    assert_ptr_equal(reset, dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxReset"));
    CUcontext ctx = NULL;
    assert_cu_ok(cuDevicePrimaryCtxRetain(&ctx, tdev.dev));
    assert_cu_ok(((primary_v1_fn *)release)(tdev.dev));
    assert_cu_ok(((primary_v1_fn *)reset)(tdev.dev));
    unsigned flags = 0;
    int active = 0;
    assert_cu_ok(cuDevicePrimaryCtxGetState(tdev.dev, &flags, &active));
    assert_int_equal(active, 1); /* the fixture's retain survives the reset */
    assert_cu(((primary_v1_fn *)release)(99), CUDA_ERROR_INVALID_DEVICE);
    assert_cu_ok(cuCtxSetCurrent(tdev.primary));

    /* 13.0 forwards cudaFree(0) to the driver. */
    assert_cu_ok(cuMemFree(0));
}

int run_simcuda_export_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(tables_the_runtime_needs_are_served),
        conformance_test(unknown_and_refused_tables_are_not_found),
        conformance_test(an_unknown_slot_says_which_once),
        conformance_test(trace_traps_measure_unknown_tables),
        conformance_test(storage_put_get_delete),
        conformance_test(destroying_a_context_runs_its_destructors),
        conformance_test(primary_context_destructors_run_when_it_goes),
        conformance_test(storage_is_safe_from_four_threads_on_two_devices),
        conformance_test(integrity_answers_the_runtimes_three_questions),
        conformance_test(functions_the_runtime_looks_up),
    };
    return cmocka_run_group_tests_name("simcuda export tables (what the CUDA runtime asks)", tests,
                                       setup_primary_context, teardown_primary_context);
}
