/* test_init.c — conformance: initialisation, devices and contexts.
 *
 * Documentation references are to the doc comments in cuda.h (CUDA 13.0) unless noted.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

/* =======================================================================================
 * Before cuInit (fresh processes)
 * ==================================================================================== */

/* cuInit: "If cuInit() has not been called, any function from the driver API will return
 * CUDA_ERROR_NOT_INITIALIZED." */
int child_before_init(void)
{
    int count = 0;
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    CUdeviceptr ptr = 0;
    size_t free_bytes = 0, total_bytes = 0, granularity = 0;
    CUstream stream = NULL;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;

    child_expect_cu(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuDeviceGet(&dev, 0), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuCtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuMemAlloc(&ptr, 4096), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuMemGetAllocationGranularity(&granularity, &prop,
                                                  CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                    CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuMemAddressReserve(&ptr, 2u << 20, 0, 0, 0), CUDA_ERROR_NOT_INITIALIZED);
    child_expect_cu(cuStreamCreate(&stream, 0), CUDA_ERROR_NOT_INITIALIZED);

    /* Entry points and error names must work before cuInit: the CUDA runtime resolves the
     * driver's functions (cuInit among them) through cuGetProcAddress before it calls
     * cuInit, and programs report a failed cuInit with cuGetErrorName. */
    void *pfn = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    child_expect_cu(cuGetProcAddress("cuInit", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
                    CUDA_SUCCESS);
    child_expect(pfn != NULL && pfn == dlsym(RTLD_DEFAULT, "cuInit"), "pfn %p", pfn);
    child_expect(status == CU_GET_PROC_ADDRESS_SUCCESS, "status %d", (int)status);
    const char *name = NULL;
    child_expect_cu(cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &name), CUDA_SUCCESS);
    child_expect(name && strcmp(name, "CUDA_ERROR_NOT_INITIALIZED") == 0, "name %s",
                 name ? name : "(null)");
    return child_failures;
}

/* cuInit: "Currently, the Flags parameter must be 0" (CUDA_ERROR_INVALID_VALUE); cuInit(0)
 * may be called again (every library in a process calls it). */
int child_init_flags(void)
{
    int count = 0;
    child_expect_cu(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    child_expect_cu(cuDeviceGetCount(&count), CUDA_SUCCESS);
    child_expect(count >= 1, "count %d", count);
    return child_failures;
}

/* cuDevicePrimaryCtxRelease: "Releasing a primary context that has not been previously
 * retained will fail with CUDA_ERROR_INVALID_CONTEXT." */
int child_release_unretained(void)
{
    CUdevice dev = 0;
    int count = 0;
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    child_expect_cu(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    child_expect_cu(cuDeviceGetCount(&count), CUDA_SUCCESS);
    child_expect_cu(cuDevicePrimaryCtxRelease(dev), CUDA_ERROR_INVALID_CONTEXT);
    child_expect_cu(cuDevicePrimaryCtxRelease((CUdevice)count), CUDA_ERROR_INVALID_DEVICE);
    return child_failures;
}

/* cuDevicePrimaryCtxReset destroys the context's allocations; "Resetting the primary
 * context does not release it": the retained context is usable again and one release is
 * still owed, after which a further release fails (never retained). */
int child_primary_reset(void)
{
    CUdevice dev = 0;
    CUcontext ctx = NULL, again = NULL;
    CUdeviceptr ptr = 0;
    int count = 0;
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    child_expect_cu(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    child_expect_cu(cuDeviceGetCount(&count), CUDA_SUCCESS);
    child_expect_cu(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    child_expect_cu(cuMemAlloc(&ptr, 1u << 20), CUDA_SUCCESS);
    child_expect_cu(cuDevicePrimaryCtxReset(dev), CUDA_SUCCESS);
    child_expect_cu(cuDevicePrimaryCtxReset((CUdevice)count), CUDA_ERROR_INVALID_DEVICE);
    child_expect_cu(cuDevicePrimaryCtxRetain(&again, dev), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(again), CUDA_SUCCESS);
    child_expect_cu(cuMemAlloc(&ptr, 1u << 20), CUDA_SUCCESS);
    child_expect_cu(cuMemFree(ptr), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    child_expect_cu(cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS); /* `again` */
    child_expect_cu(cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS); /* `ctx`, kept by reset */
    child_expect_cu(cuDevicePrimaryCtxRelease(dev), CUDA_ERROR_INVALID_CONTEXT);
    return child_failures;
}

static void before_init_fails_with_not_initialized(void **state)
{
    (void)state;
    assert_child_passes("before_init", NULL);
}

static void init_rejects_nonzero_flags(void **state)
{
    (void)state;
    assert_child_passes("init_flags", NULL);
}

static void primary_release_without_retain_fails(void **state)
{
    (void)state;
    assert_child_passes("release_unretained", NULL);
}

static void primary_reset_keeps_the_retain(void **state)
{
    (void)state;
    assert_child_passes("primary_reset", NULL);
}

/* =======================================================================================
 * Devices
 * ==================================================================================== */

static int device_count(void)
{
    int count = 0;
    assert_cu_ok(cuDeviceGetCount(&count));
    return count;
}

/* cuDriverGetVersion: (1000 * major + 10 * minor); NULL -> CUDA_ERROR_INVALID_VALUE.
 * This program is built against the 13.0 header and calls its _v2 entry points, so the
 * driver must support at least 13000. */
static void driver_version(void **state)
{
    (void)state;
    int version = 0;
    assert_cu_ok(cuDriverGetVersion(&version));
    assert_true(version >= 13000);
    assert_int_equal(version % 10, 0);
    assert_cu(cuDriverGetVersion(NULL), CUDA_ERROR_INVALID_VALUE);
}

/* cuDeviceGet: ordinal in [0, cuDeviceGetCount()-1], else CUDA_ERROR_INVALID_DEVICE. */
static void device_count_and_get(void **state)
{
    (void)state;
    int count = device_count();
    assert_true(count >= 1);
    CUdevice dev = -1;
    assert_cu_ok(cuDeviceGet(&dev, 0));
    assert_int_equal(dev, tdev.dev);
    assert_cu(cuDeviceGet(&dev, count), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuDeviceGet(&dev, -1), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);
}

/* cuDeviceGetName: NUL-terminated; "name is shortened to the specified len". */
static void device_name(void **state)
{
    (void)state;
    char full[256];
    assert_cu_ok(cuDeviceGetName(full, sizeof full, tdev.dev));
    assert_true(strlen(full) > 0);

    char shortened[16];
    memset(shortened, 'Z', sizeof shortened);
    assert_cu_ok(cuDeviceGetName(shortened, 4, tdev.dev));
    assert_true(memchr(shortened, '\0', 4) != NULL);
    assert_int_equal(strncmp(shortened, full, strlen(shortened)), 0);
    for (size_t i = 4; i < sizeof shortened; i++)
        assert_int_equal(shortened[i], 'Z'); /* nothing written past len */

    assert_cu(cuDeviceGetName(full, sizeof full, (CUdevice)device_count()),
              CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuDeviceGetName(NULL, 16, tdev.dev), CUDA_ERROR_INVALID_VALUE);
}

struct attribute_range {
    CUdevice_attribute attr;
    const char *name;
    int min, max;
};
#define ATTR(a, lo, hi) {CU_DEVICE_ATTRIBUTE_##a, #a, lo, hi}

/* cuDeviceGetAttribute: the limits every CUDA device has, and the features this project
 * needs (VMM, unified addressing, mapped host memory, managed memory, memory pools). */
static void device_attributes(void **state)
{
    (void)state;
    static const struct attribute_range ranges[] = {
        ATTR(MAX_THREADS_PER_BLOCK, 64, 1 << 16),
        ATTR(MAX_BLOCK_DIM_X, 64, 1 << 16),
        ATTR(MAX_BLOCK_DIM_Y, 1, 1 << 16),
        ATTR(MAX_BLOCK_DIM_Z, 1, 1 << 16),
        ATTR(MAX_GRID_DIM_X, 65535, 0x7fffffff),
        ATTR(MAX_GRID_DIM_Y, 1, 0x7fffffff),
        ATTR(MAX_GRID_DIM_Z, 1, 0x7fffffff),
        ATTR(MAX_SHARED_MEMORY_PER_BLOCK, 16384, 1 << 30),
        ATTR(TOTAL_CONSTANT_MEMORY, 1, 0x7fffffff),
        ATTR(WARP_SIZE, 32, 32),
        ATTR(MAX_REGISTERS_PER_BLOCK, 1, 0x7fffffff),
        ATTR(MULTIPROCESSOR_COUNT, 1, 1 << 16),
        ATTR(COMPUTE_CAPABILITY_MAJOR, 1, 100),
        ATTR(COMPUTE_CAPABILITY_MINOR, 0, 9),
        ATTR(CAN_MAP_HOST_MEMORY, 1, 1),
        ATTR(UNIFIED_ADDRESSING, 1, 1),
        ATTR(MANAGED_MEMORY, 1, 1),
        ATTR(MEMORY_POOLS_SUPPORTED, 1, 1),
        ATTR(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1, 1),
        ATTR(HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0, 1),
        ATTR(HOST_NUMA_ID, -1, 1 << 16), /* "-1 when system does not support NUMA" */
        ATTR(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 16384, 1 << 30),
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        int value = -12345;
        CUresult rc = cuDeviceGetAttribute(&value, ranges[i].attr, tdev.dev);
        if (rc != CUDA_SUCCESS || value < ranges[i].min || value > ranges[i].max) {
            print_error("%s: %s, value %d, expected %d..%d\n", ranges[i].name, cu_result_name(rc),
                        value, ranges[i].min, ranges[i].max);
            fail();
        }
    }
    int value = 0;
    assert_cu(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, tdev.dev),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE,
                                   (CUdevice)device_count()),
              CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, tdev.dev),
              CUDA_ERROR_INVALID_VALUE);
}

static void device_total_mem(void **state)
{
    (void)state;
    size_t bytes = 0;
    assert_cu_ok(cuDeviceTotalMem(&bytes, tdev.dev));
    assert_true(bytes >= (size_t)1 << 30);
    assert_cu(cuDeviceTotalMem(&bytes, (CUdevice)device_count()), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuDeviceTotalMem(NULL, tdev.dev), CUDA_ERROR_INVALID_VALUE);
}

/* cuDeviceGetUuid: 16 octets identifying the device (the same device, the same octets). */
static void device_uuid(void **state)
{
    (void)state;
    CUuuid first, second;
    memset(&first, 0, sizeof first);
    memset(&second, 0xff, sizeof second);
    assert_cu_ok(cuDeviceGetUuid(&first, tdev.dev));
    assert_cu_ok(cuDeviceGetUuid(&second, tdev.dev));
    assert_memory_equal(first.bytes, second.bytes, sizeof first.bytes);
    assert_cu(cuDeviceGetUuid(&first, (CUdevice)device_count()), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuDeviceGetUuid(NULL, tdev.dev), CUDA_ERROR_INVALID_VALUE);
}

/* =======================================================================================
 * Contexts
 * ==================================================================================== */

static CUcontext current_context(void)
{
    CUcontext ctx = (CUcontext)(uintptr_t)0x1;
    assert_cu_ok(cuCtxGetCurrent(&ctx));
    return ctx;
}

static CUcontext create_context(void)
{
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext ctx = NULL;
    assert_cu_ok(cuCtxCreate(&ctx, &params, 0, tdev.dev));
    assert_non_null(ctx);
    return ctx;
}

/* cuDevicePrimaryCtxRetain: the same context for every retain; "Unlike cuCtxCreate() the
 * newly retained context is not pushed onto the stack". */
struct retain_on_thread {
    CUresult retain_rc, get_rc, release_rc;
    CUcontext retained, current;
};

static void *retain_without_push(void *arg)
{
    struct retain_on_thread *r = arg;
    r->retain_rc = cuDevicePrimaryCtxRetain(&r->retained, tdev.dev);
    r->get_rc = cuCtxGetCurrent(&r->current);
    r->release_rc = cuDevicePrimaryCtxRelease(tdev.dev);
    return NULL;
}

static void primary_context_is_shared_and_not_pushed(void **state)
{
    (void)state;
    CUcontext again = NULL;
    assert_cu_ok(cuDevicePrimaryCtxRetain(&again, tdev.dev));
    assert_ptr_equal(again, tdev.primary);
    assert_cu_ok(cuDevicePrimaryCtxRelease(tdev.dev));

    struct retain_on_thread r = {.current = (CUcontext)(uintptr_t)0x1};
    run_on_new_thread(retain_without_push, &r);
    assert_cu_ok(r.retain_rc);
    assert_ptr_equal(r.retained, tdev.primary);
    assert_cu_ok(r.get_rc);
    assert_null(r.current);
    assert_cu_ok(r.release_rc);

    CUcontext ctx = NULL;
    assert_cu(cuDevicePrimaryCtxRetain(&ctx, (CUdevice)device_count()), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuDevicePrimaryCtxRetain(NULL, tdev.dev), CUDA_ERROR_INVALID_VALUE);
}

/* cuCtxCreate: the new context becomes current, supplanting the current one, which
 * cuCtxPopCurrent restores; cuCtxDestroy of the current context pops it. */
static void context_create_push_pop_destroy(void **state)
{
    (void)state;
    assert_ptr_equal(current_context(), tdev.primary);
    CUcontext ctx = create_context();
    assert_true(ctx != tdev.primary);
    assert_ptr_equal(current_context(), ctx);
    CUdevice dev = -1;
    assert_cu_ok(cuCtxGetDevice(&dev));
    assert_int_equal(dev, tdev.dev);

    CUcontext popped = NULL;
    assert_cu_ok(cuCtxPopCurrent(&popped));
    assert_ptr_equal(popped, ctx);
    assert_ptr_equal(current_context(), tdev.primary);

    assert_cu_ok(cuCtxPushCurrent(ctx));
    assert_ptr_equal(current_context(), ctx);
    assert_cu_ok(cuCtxSynchronize());
    assert_cu_ok(cuCtxDestroy(ctx));
    assert_ptr_equal(current_context(), tdev.primary);
}

/* The context stack is per thread. cuCtxSetCurrent "will replace the top of that stack";
 * with NULL it is "equivalent to popping the top". Popping an empty stack fails with
 * CUDA_ERROR_INVALID_CONTEXT. */
struct stack_on_thread {
    CUcontext b, c;
    CUcontext initial, after_create_c, popped_c, after_pop_c, after_set_c, popped_set, after_pop_set,
        after_set_null;
    CUresult pop_empty, push_primary, create_b, create_c, pop1, set_c, pop2, set_null;
};

static void *exercise_stack(void *arg)
{
    struct stack_on_thread *s = arg;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext scratch = NULL;
    cuCtxGetCurrent(&s->initial);
    s->pop_empty = cuCtxPopCurrent(&scratch);
    s->push_primary = cuCtxPushCurrent(tdev.primary);       /* [P]       */
    s->create_b = cuCtxCreate(&s->b, &params, 0, tdev.dev); /* [P, B]    */
    s->create_c = cuCtxCreate(&s->c, &params, 0, tdev.dev); /* [P, B, C] */
    cuCtxGetCurrent(&s->after_create_c);
    s->pop1 = cuCtxPopCurrent(&s->popped_c); /* [P, B] */
    cuCtxGetCurrent(&s->after_pop_c);
    s->set_c = cuCtxSetCurrent(s->c); /* [P, C] */
    cuCtxGetCurrent(&s->after_set_c);
    s->pop2 = cuCtxPopCurrent(&s->popped_set); /* [P] */
    cuCtxGetCurrent(&s->after_pop_set);
    s->set_null = cuCtxSetCurrent(NULL); /* [] */
    cuCtxGetCurrent(&s->after_set_null);
    return NULL;
}

static void context_stack_is_per_thread(void **state)
{
    (void)state;
    struct stack_on_thread s;
    memset(&s, 0, sizeof s);
    s.initial = (CUcontext)(uintptr_t)0x1;
    run_on_new_thread(exercise_stack, &s);
    assert_null(s.initial);
    assert_cu(s.pop_empty, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu_ok(s.push_primary);
    assert_cu_ok(s.create_b);
    assert_cu_ok(s.create_c);
    assert_ptr_equal(s.after_create_c, s.c);
    assert_cu_ok(s.pop1);
    assert_ptr_equal(s.popped_c, s.c);
    assert_ptr_equal(s.after_pop_c, s.b);
    assert_cu_ok(s.set_c);
    assert_ptr_equal(s.after_set_c, s.c);
    assert_cu_ok(s.pop2);
    assert_ptr_equal(s.popped_set, s.c);
    assert_ptr_equal(s.after_pop_set, tdev.primary);
    assert_cu_ok(s.set_null);
    assert_null(s.after_set_null);
    /* The other thread's stack never touched this one. */
    assert_ptr_equal(current_context(), tdev.primary);
    assert_cu_ok(cuCtxDestroy(s.b));
    assert_cu_ok(cuCtxDestroy(s.c));
    assert_ptr_equal(current_context(), tdev.primary);
}

/* cuCtxCreate: an unknown device is CUDA_ERROR_INVALID_DEVICE; "Only one of the scheduling
 * flags can be set"; invalid parameters fail with CUDA_ERROR_INVALID_VALUE. */
static void context_create_rejects_bad_arguments(void **state)
{
    (void)state;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext ctx = NULL;
    assert_cu(cuCtxCreate(&ctx, &params, 0, (CUdevice)device_count()), CUDA_ERROR_INVALID_DEVICE);
    assert_cu(cuCtxCreate(&ctx, &params, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD, tdev.dev),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuCtxCreate(&ctx, &params, CU_CTX_FLAGS_MASK + 1, tdev.dev),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuCtxCreate(NULL, &params, 0, tdev.dev), CUDA_ERROR_INVALID_VALUE);
    assert_ptr_equal(current_context(), tdev.primary);

    /* A NULL context is not a context: both codes are in the documented lists. */
    assert_cu_either(cuCtxDestroy(NULL), CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu_either(cuCtxPushCurrent(NULL), CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(cuCtxGetDevice(NULL), CUDA_ERROR_INVALID_VALUE);
    assert_ptr_equal(current_context(), tdev.primary);
}

/* Functions that work on the current context fail with CUDA_ERROR_INVALID_CONTEXT on a
 * thread that has none; cuCtxGetCurrent "is set to NULL and CUDA_SUCCESS is returned";
 * cuMemAllocAsync: "CUDA_ERROR_INVALID_CONTEXT (default stream specified with no current
 * context)". */
struct no_context_results {
    CUcontext current;
    CUresult get_current, synchronize, get_device, mem_alloc, mem_get_info, mem_alloc_host,
        mem_alloc_async, stream_create, event_create, module_load;
};

static void *call_without_context(void *arg)
{
    struct no_context_results *r = arg;
    CUdevice dev;
    CUdeviceptr ptr;
    size_t free_bytes, total_bytes;
    void *host;
    CUstream stream;
    CUevent event;
    CUmodule module;
    r->get_current = cuCtxGetCurrent(&r->current);
    r->synchronize = cuCtxSynchronize();
    r->get_device = cuCtxGetDevice(&dev);
    r->mem_alloc = cuMemAlloc(&ptr, 4096);
    r->mem_get_info = cuMemGetInfo(&free_bytes, &total_bytes);
    r->mem_alloc_host = cuMemAllocHost(&host, 4096);
    r->mem_alloc_async = cuMemAllocAsync(&ptr, 4096, NULL);
    r->stream_create = cuStreamCreate(&stream, CU_STREAM_DEFAULT);
    r->event_create = cuEventCreate(&event, CU_EVENT_DEFAULT);
    r->module_load = cuModuleLoad(&module, CONFORMANCE_MODULE);
    return NULL;
}

static void calls_without_current_context(void **state)
{
    (void)state;
    struct no_context_results r;
    memset(&r, 0, sizeof r);
    r.current = (CUcontext)(uintptr_t)0x1;
    run_on_new_thread(call_without_context, &r);
    assert_cu_ok(r.get_current);
    assert_null(r.current);
    assert_cu(r.synchronize, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.get_device, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.mem_alloc, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.mem_get_info, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.mem_alloc_host, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.mem_alloc_async, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.stream_create, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.event_create, CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(r.module_load, CUDA_ERROR_INVALID_CONTEXT);
}

/* =======================================================================================
 * Groups
 * ==================================================================================== */

int run_init_tests(void)
{
    const struct CMUnitTest fresh_process[] = {
        conformance_test(before_init_fails_with_not_initialized),
        conformance_test(init_rejects_nonzero_flags),
        conformance_test(primary_release_without_retain_fails),
        conformance_test(primary_reset_keeps_the_retain),
    };
    const struct CMUnitTest devices[] = {
        conformance_test(driver_version),
        conformance_test(device_count_and_get),
        conformance_test(device_name),
        conformance_test(device_attributes),
        conformance_test(device_total_mem),
        conformance_test(device_uuid),
    };
    const struct CMUnitTest contexts[] = {
        conformance_test(primary_context_is_shared_and_not_pushed),
        conformance_test(context_create_push_pop_destroy),
        conformance_test(context_stack_is_per_thread),
        conformance_test(context_create_rejects_bad_arguments),
        conformance_test(calls_without_current_context),
    };
    int failed = 0;
    failed += cmocka_run_group_tests_name("init (fresh processes)", fresh_process, NULL, NULL);
    failed += cmocka_run_group_tests_name("devices", devices, setup_primary_context,
                                          teardown_primary_context);
    failed += cmocka_run_group_tests_name("contexts", contexts, setup_primary_context,
                                          teardown_primary_context);
    return failed;
}
