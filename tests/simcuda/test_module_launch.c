/* test_module_launch.c — conformance: modules and kernel launches.
 *
 * The module is CONFORMANCE_MODULE (harness.h): a simcuda host-kernel library or a GPU
 * fatbin with the same kernels (test_kernels.h).
 * Documentation references are to the doc comments in cuda.h (CUDA 13.0) unless noted.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

static struct test_module tm;

static int setup_modules(void **state)
{
    if (setup_primary_context(state) != 0)
        return -1;
    if (cuModuleLoad(&tm.module, CONFORMANCE_MODULE) != CUDA_SUCCESS ||
        cuModuleGetFunction(&tm.probe, tm.module, "probe") != CUDA_SUCCESS ||
        cuModuleGetFunction(&tm.fill_u32, tm.module, "fill_u32") != CUDA_SUCCESS ||
        cuModuleGetFunction(&tm.gate, tm.module, "gate") != CUDA_SUCCESS) {
        print_error("cannot load the test module %s\n", CONFORMANCE_MODULE);
        return -1;
    }
    return 0;
}

static int teardown_modules(void **state)
{
    cuModuleUnload(tm.module);
    return teardown_primary_context(state);
}

/* The bytes of a file, NUL-terminated (malloc'ed). */
static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    uint8_t *bytes = malloc((size_t)n + 1);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, (size_t)n, f), (size_t)n);
    bytes[n] = 0;
    fclose(f);
    *size = (size_t)n;
    return bytes;
}

/* Launches fill_u32 over n words of `out` with `base` and checks the result. */
static void launch_fill_and_check(CUfunction fill, CUstream stream, uint32_t n, uint32_t base)
{
    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, (size_t)n * 4));
    assert_cu_ok(cuMemsetD32(out, 0xffffffffu, n));
    void *params[] = {&out, &n, &base};
    unsigned int blocks = (n + 255) / 256;
    assert_cu_ok(cuLaunchKernel(fill, blocks, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    assert_cu_ok(cuCtxSynchronize());
    uint32_t *host = malloc((size_t)n * 4);
    assert_non_null(host);
    assert_cu_ok(cuMemcpyDtoH(host, out, (size_t)n * 4));
    for (uint32_t i = 0; i < n; i++)
        if (host[i] != base + i) {
            print_error("out[%u] = %u, expected %u\n", i, host[i], base + i);
            fail();
        }
    free(host);
    assert_cu_ok(cuMemFree(out));
}

/* =======================================================================================
 * Modules
 * ==================================================================================== */

/* cuModuleLoad "Takes a filename fname and loads the corresponding module"; cuModuleUnload
 * unloads it. */
static void module_load_launch_unload(void **state)
{
    (void)state;
    CUmodule module = NULL;
    CUfunction fill = NULL;
    assert_cu_ok(cuModuleLoad(&module, CONFORMANCE_MODULE));
    assert_non_null(module);
    assert_cu_ok(cuModuleGetFunction(&fill, module, "fill_u32"));
    assert_non_null(fill);
    launch_fill_and_check(fill, NULL, 65536, 1000);
    assert_cu_ok(cuModuleUnload(module));
}

/* cuModuleLoadData "Takes a pointer image and loads the corresponding module"; the module
 * is the driver's from then on (the caller's buffer is overwritten before the launch). */
static void module_load_data(void **state)
{
    (void)state;
    size_t size = 0;
    uint8_t *image = read_file(CONFORMANCE_MODULE, &size);
    CUmodule module = NULL;
    CUfunction fill = NULL;
    assert_cu_ok(cuModuleLoadData(&module, image));
    memset(image, 0, size);
    free(image);
    assert_cu_ok(cuModuleGetFunction(&fill, module, "fill_u32"));
    launch_fill_and_check(fill, NULL, 1000, 7);
    assert_cu_ok(cuModuleUnload(module));
}

/* cuModuleLoad: CUDA_ERROR_FILE_NOT_FOUND for a missing file; a file that is no module
 * image fails with one of the image errors (a driver may read unknown bytes as PTX, hence
 * INVALID_PTX/INVALID_SOURCE); NULL arguments are CUDA_ERROR_INVALID_VALUE. */
static void module_load_errors(void **state)
{
    (void)state;
    CUmodule module = NULL;
    assert_cu(cuModuleLoad(&module, "/nonexistent/conformance/module.bin"),
              CUDA_ERROR_FILE_NOT_FOUND);

    char path[] = "/tmp/conformance-not-a-module-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    for (int i = 0; i < 4096; i++)
        fputc((i * 37 + 11) & 0xff, f);
    fclose(f);
    CUresult rc = cuModuleLoad(&module, path);
    unlink(path);
    if (rc != CUDA_ERROR_INVALID_IMAGE && rc != CUDA_ERROR_INVALID_PTX &&
        rc != CUDA_ERROR_INVALID_SOURCE && rc != CUDA_ERROR_NO_BINARY_FOR_GPU) {
        print_error("cuModuleLoad(garbage) returned %s, expected an image error\n",
                    cu_result_name(rc));
        fail();
    }

    assert_cu(cuModuleLoad(NULL, CONFORMANCE_MODULE), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuModuleLoad(&module, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuModuleLoadData(&module, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuModuleUnload(NULL), CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_HANDLE);
}

/* cuModuleGetFunction: "If no function of that name exists, cuModuleGetFunction() returns
 * CUDA_ERROR_NOT_FOUND". */
static void module_get_function_errors(void **state)
{
    (void)state;
    CUfunction f = NULL;
    assert_cu(cuModuleGetFunction(&f, tm.module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    assert_cu(cuModuleGetFunction(&f, tm.module, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuModuleGetFunction(NULL, tm.module, "probe"), CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuModuleGetFunction(&f, NULL, "probe"), CUDA_ERROR_INVALID_VALUE,
                     CUDA_ERROR_INVALID_HANDLE);
}

/* =======================================================================================
 * Launches
 * ==================================================================================== */

static void launch_probe(CUstream stream, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned shared, struct probe_record *got)
{
    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, sizeof *got));
    assert_cu_ok(cuMemsetD8(out, 0, sizeof *got));
    int32_t a = -7;
    double b = 2.5;
    uint8_t c = 'x';
    struct probe_triple t = {{1, -2, 3}};
    void *params[] = {&out, &a, &b, &c, &t};
    assert_cu_ok(cuLaunchKernel(tm.probe, gx, gy, gz, bx, by, bz, shared, stream, params, NULL));
    assert_cu_ok(cuStreamSynchronize(stream));
    assert_cu_ok(cuMemcpyDtoH(got, out, sizeof *got));
    assert_cu_ok(cuMemFree(out));
}

/* cuLaunchKernel runs f on a gridDimX x gridDimY x gridDimZ grid of blockDimX x blockDimY
 * x blockDimZ blocks with sharedMemBytes of dynamic shared memory; kernelParams[i] points
 * at the i-th argument. */
static void launch_passes_geometry_and_arguments(void **state)
{
    (void)state;
    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    struct probe_record got;
    launch_probe(stream, 2, 3, 4, 8, 4, 2, 256, &got);
    assert_int_equal(got.grid[0], 2);
    assert_int_equal(got.grid[1], 3);
    assert_int_equal(got.grid[2], 4);
    assert_int_equal(got.block[0], 8);
    assert_int_equal(got.block[1], 4);
    assert_int_equal(got.block[2], 2);
    assert_int_equal(got.shared_mem_bytes, 256);
    assert_int_equal(got.a, -7);
    assert_true(got.b == 2.5);
    assert_int_equal(got.c, 'x');
    assert_int_equal(got.t.v[0], 1);
    assert_int_equal(got.t.v[1], -2);
    assert_int_equal(got.t.v[2], 3);
    assert_int_equal(got.runs, 1);
    assert_cu_ok(cuStreamDestroy(stream));
}

/* kernelParams[i] "must point to a region of memory from which the actual kernel parameter
 * will be copied": the values are taken at the launch, so changing them after
 * cuLaunchKernel returns (while the launch still waits behind a held kernel) changes
 * nothing. */
static void launch_copies_arguments_at_launch(void **state)
{
    (void)state;
    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    uint32_t n = 1024, base = 100;
    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, (size_t)n * 4));
    struct gate g;
    gate_launch(&g, &tm, stream);
    void *params[] = {&out, &n, &base};
    assert_cu_ok(cuLaunchKernel(tm.fill_u32, 4, 1, 1, 256, 1, 1, 0, stream, params, NULL));
    base = 999;
    n = 1;
    gate_open(&g);
    assert_cu_ok(cuStreamSynchronize(stream));
    assert_int_equal(gate_state(&g), GATE_DONE);
    uint32_t host[1024];
    assert_cu_ok(cuMemcpyDtoH(host, out, sizeof host));
    for (uint32_t i = 0; i < 1024; i++)
        assert_int_equal(host[i], 100 + i);
    gate_free(&g);
    assert_cu_ok(cuMemFree(out));
    assert_cu_ok(cuStreamDestroy(stream));
}

/* A launch on CU_STREAM_LEGACY, CU_STREAM_PER_THREAD and through cuLaunchKernel_ptsz
 * (cuGetProcAddress with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), where the NULL
 * stream is the per-thread default stream. */
static void launch_on_implicit_streams(void **state)
{
    (void)state;
    launch_fill_and_check(tm.fill_u32, CU_STREAM_LEGACY, 5000, 1);
    launch_fill_and_check(tm.fill_u32, CU_STREAM_PER_THREAD, 5000, 2);

    PFN_cuLaunchKernel_v7000_ptsz launch_ptsz = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    assert_cu_ok(cuGetProcAddress("cuLaunchKernel", (void **)&launch_ptsz, 13000,
                                  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
    assert_int_equal(status, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_non_null(launch_ptsz);
    assert_ptr_equal((void *)launch_ptsz, dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"));
    uint32_t n = 4096, base = 77;
    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, (size_t)n * 4));
    void *params[] = {&out, &n, &base};
    assert_cu_ok(launch_ptsz(tm.fill_u32, 16, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    assert_cu_ok(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    uint32_t host[4096];
    assert_cu_ok(cuMemcpyDtoH(host, out, sizeof host));
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(host[i], base + i);
    assert_cu_ok(cuMemFree(out));
}

/* cuLaunchKernel: "The error CUDA_ERROR_INVALID_VALUE will be returned if kernel parameters
 * are specified with both kernelParams and extra"; a grid or block outside the device's
 * limits (CU_DEVICE_ATTRIBUTE_MAX_*) is an invalid launch configuration. A refused launch
 * runs nothing. */
/* cuFuncGetParamInfo (CUDA 12.4): "Returns the offset and size of a kernel parameter in
 * the device-side parameter layout"; probe(struct probe_record *, int32_t, double,
 * uint8_t, struct probe_triple) packs each at its natural alignment. An index past the
 * last parameter is CUDA_ERROR_INVALID_VALUE. */
static void func_get_param_info(void **state)
{
    (void)state;
    static const size_t want_offset[] = {0, 8, 16, 24, 28}, want_size[] = {8, 4, 8, 1, 12};
    for (size_t i = 0; i < 5; i++) {
        size_t offset = 99, size = 99;
        assert_cu_ok(cuFuncGetParamInfo(tm.probe, i, &offset, &size));
        assert_int_equal(offset, want_offset[i]);
        assert_int_equal(size, want_size[i]);
    }
    size_t offset, size;
    assert_cu(cuFuncGetParamInfo(tm.probe, 5, &offset, &size), CUDA_ERROR_INVALID_VALUE);
}

static void launch_rejects_bad_configurations(void **state)
{
    (void)state;
    int max_threads = 0, max_x = 0, max_z = 0, max_shared = 0;
    assert_cu_ok(cuDeviceGetAttribute(&max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                      tdev.dev));
    assert_cu_ok(cuDeviceGetAttribute(&max_x, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, tdev.dev));
    assert_cu_ok(cuDeviceGetAttribute(&max_z, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, tdev.dev));
    assert_cu_ok(cuDeviceGetAttribute(&max_shared,
                                      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                      tdev.dev));

    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, sizeof(struct probe_record)));
    assert_cu_ok(cuMemsetD8(out, 0, sizeof(struct probe_record)));
    int32_t a = 1;
    double b = 1;
    uint8_t c = 1;
    struct probe_triple t = {{0, 0, 0}};
    void *params[] = {&out, &a, &b, &c, &t};
    size_t buffer_size = 0;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &buffer_size, CU_LAUNCH_PARAM_END};
    CUfunction f = tm.probe;
    assert_cu(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, extra), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLaunchKernel(f, 1, 0, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLaunchKernel(f, 1, 1, 1, 0, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLaunchKernel(f, 1, 1, 1, (unsigned)max_x + 1, 1, 1, 0, NULL, params, NULL),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLaunchKernel(f, 1, 1, 1, 1, 1, (unsigned)max_z + 1, 0, NULL, params, NULL),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuLaunchKernel(f, 1, 1, 1, (unsigned)max_threads, 2, 1, 0, NULL, params, NULL),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, (unsigned)max_shared + 1, NULL, params,
                                    NULL),
                     CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    assert_cu_either(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
                     CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuCtxSynchronize());

    struct probe_record got;
    assert_cu_ok(cuMemcpyDtoH(&got, out, sizeof got));
    assert_int_equal(got.runs, 0);
    assert_cu_ok(cuMemFree(out));
}

struct launch_on_thread {
    CUfunction f;
    CUresult rc;
};

static void *launch_without_context(void *arg)
{
    struct launch_on_thread *l = arg;
    CUdeviceptr out = 0;
    uint32_t n = 0, base = 0;
    void *params[] = {&out, &n, &base};
    l->rc = cuLaunchKernel(l->f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    return NULL;
}

/* A launch on the NULL stream needs a current context (CUDA_ERROR_INVALID_CONTEXT). */
static void launch_needs_a_context(void **state)
{
    (void)state;
    struct launch_on_thread l = {tm.fill_u32, CUDA_SUCCESS};
    run_on_new_thread(launch_without_context, &l);
    assert_cu(l.rc, CUDA_ERROR_INVALID_CONTEXT);
}

/* =======================================================================================
 * Groups
 * ==================================================================================== */

int run_module_launch_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(module_load_launch_unload),
        conformance_test(module_load_data),
        conformance_test(module_load_errors),
        conformance_test(module_get_function_errors),
        conformance_test(launch_passes_geometry_and_arguments),
        conformance_test(launch_on_implicit_streams),
        conformance_test(func_get_param_info),
        conformance_test(launch_rejects_bad_configurations),
        conformance_test(launch_needs_a_context),
    };
    /* Holds the launch back with the gate kernel: needs launches that return first. */
    const struct CMUnitTest pending[] = {
        conformance_test(launch_copies_arguments_at_launch),
    };
    int failed = cmocka_run_group_tests_name("modules and launches", tests, setup_modules,
                                             teardown_modules);
    failed += run_pending_work_group("launches with pending work", pending,
                                     sizeof pending / sizeof pending[0], setup_modules,
                                     teardown_modules);
    return failed;
}
