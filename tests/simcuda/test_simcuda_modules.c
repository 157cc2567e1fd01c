/* test_simcuda_modules.c — the host-kernel ABI of simcuda (tools/simcuda/simcuda.h):
 * modules are shared libraries marked with SIMCUDA_MODULE(), loaded from a path or from
 * their bytes; a kernel is called once per launch with the launch as the caller gave it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

#ifndef SIMCUDA_NOT_A_MODULE
#error "SIMCUDA_NOT_A_MODULE must name a shared library without the module marker"
#endif

static uint8_t *read_bytes(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    uint8_t *bytes = malloc((size_t)n);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return bytes;
}

static void fill_and_check(CUfunction fill, uint32_t base)
{
    uint32_t n = 300;
    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, n * 4));
    void *params[] = {&out, &n, &base};
    assert_cu_ok(cuLaunchKernel(fill, 2, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    uint32_t host[300];
    assert_cu_ok(cuMemcpyDtoH(host, out, sizeof host));
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(host[i], base + i);
    assert_cu_ok(cuMemFree(out));
}

/* simcuda.h: the kernel receives grid, block, dynamic shared memory, "the CUstream of the
 * launch" and "kernelParams exactly as the caller passed them: params[i] points at the
 * i-th argument's value"; "simcuda does not iterate over blocks or threads" (one call per
 * launch). */
static void launch_hands_the_kernel_the_callers_launch(void **state)
{
    (void)state;
    CUmodule module = NULL;
    CUfunction probe = NULL;
    assert_cu_ok(cuModuleLoad(&module, CONFORMANCE_MODULE));
    assert_cu_ok(cuModuleGetFunction(&probe, module, "probe"));
    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr out = 0;
    assert_cu_ok(cuMemAlloc(&out, sizeof(struct probe_record)));
    assert_cu_ok(cuMemsetD8(out, 0, sizeof(struct probe_record)));
    int32_t a = 41;
    double b = -0.25;
    uint8_t c = 200;
    struct probe_triple t = {{7, 8, 9}};
    void *params[] = {&out, &a, &b, &c, &t};
    assert_cu_ok(cuLaunchKernel(probe, 5, 6, 7, 32, 2, 3, 4096, stream, params, NULL));
    assert_cu_ok(cuStreamSynchronize(stream));
    struct probe_record got;
    assert_cu_ok(cuMemcpyDtoH(&got, out, sizeof got));
    assert_int_equal(got.grid[0], 5);
    assert_int_equal(got.grid[1], 6);
    assert_int_equal(got.grid[2], 7);
    assert_int_equal(got.block[0], 32);
    assert_int_equal(got.block[1], 2);
    assert_int_equal(got.block[2], 3);
    assert_int_equal(got.shared_mem_bytes, 4096);
    assert_true(got.stream == (uint64_t)(uintptr_t)stream);
    assert_true(got.params == (uint64_t)(uintptr_t)params);
    for (int i = 0; i < 5; i++)
        assert_true(got.param_ptrs[i] == (uint64_t)(uintptr_t)params[i]);
    assert_int_equal(got.a, 41);
    assert_true(got.b == -0.25);
    assert_int_equal(got.c, 200);
    assert_int_equal(got.t.v[2], 9);
    assert_int_equal(got.runs, 1);
    assert_cu_ok(cuMemFree(out));
    assert_cu_ok(cuStreamDestroy(stream));
    assert_cu_ok(cuModuleUnload(module));
}

/* simcuda.h: "a shared library without that marker is refused with
 * CUDA_ERROR_INVALID_IMAGE", by path and by bytes; so is a file that is no library. */
static void libraries_without_the_marker_are_refused(void **state)
{
    (void)state;
    CUmodule module = NULL;
    assert_cu(cuModuleLoad(&module, SIMCUDA_NOT_A_MODULE), CUDA_ERROR_INVALID_IMAGE);
    size_t size = 0;
    uint8_t *bytes = read_bytes(SIMCUDA_NOT_A_MODULE, &size);
    assert_cu(cuModuleLoadData(&module, bytes), CUDA_ERROR_INVALID_IMAGE);
    free(bytes);

    char path[] = "/tmp/simcuda-garbage-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char text[] = "this is not a shared library\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    CUresult rc = cuModuleLoad(&module, path);
    unlink(path);
    assert_cu(rc, CUDA_ERROR_INVALID_IMAGE);
    assert_cu(cuModuleLoadData(&module, text), CUDA_ERROR_INVALID_IMAGE);
}

/* Two modules from the same library (by path and by bytes) are independent: unloading
 * one leaves the other's kernels working. */
static void modules_of_one_library_are_independent(void **state)
{
    (void)state;
    CUmodule by_path = NULL, by_path_again = NULL, by_bytes = NULL;
    CUfunction f1 = NULL, f2 = NULL, f3 = NULL;
    assert_cu_ok(cuModuleLoad(&by_path, CONFORMANCE_MODULE));
    assert_cu_ok(cuModuleLoad(&by_path_again, CONFORMANCE_MODULE));
    size_t size = 0;
    uint8_t *bytes = read_bytes(CONFORMANCE_MODULE, &size);
    assert_cu_ok(cuModuleLoadData(&by_bytes, bytes));
    free(bytes);
    assert_true(by_path != by_path_again && by_path != by_bytes);
    assert_cu_ok(cuModuleGetFunction(&f1, by_path, "fill_u32"));
    assert_cu_ok(cuModuleGetFunction(&f2, by_path_again, "fill_u32"));
    assert_cu_ok(cuModuleGetFunction(&f3, by_bytes, "fill_u32"));
    assert_cu_ok(cuModuleUnload(by_path));
    fill_and_check(f2, 10);
    fill_and_check(f3, 20);
    assert_cu_ok(cuModuleUnload(by_bytes));
    fill_and_check(f2, 30);
    assert_cu_ok(cuModuleUnload(by_path_again));
}

/* Each cuModuleLoadData loads the image it is given, whatever was loaded or unloaded
 * before: the refused library's bytes stay refused after the real one was loaded and
 * unloaded, and the real one loads after the refused one. */
static void load_data_loads_the_bytes_it_is_given(void **state)
{
    (void)state;
    size_t kernels_size = 0, other_size = 0;
    uint8_t *kernels = read_bytes(CONFORMANCE_MODULE, &kernels_size);
    uint8_t *other = read_bytes(SIMCUDA_NOT_A_MODULE, &other_size);
    CUmodule module = NULL;
    CUfunction f = NULL;
    for (int round = 0; round < 3; round++) {
        assert_cu(cuModuleLoadData(&module, other), CUDA_ERROR_INVALID_IMAGE);
        assert_cu_ok(cuModuleLoadData(&module, kernels));
        assert_cu_ok(cuModuleGetFunction(&f, module, "probe"));
        assert_cu_ok(cuModuleUnload(module));
    }
    free(kernels);
    free(other);
}

/* simcuda completes all work at submission, as a real driver does with
 * CUDA_LAUNCH_BLOCKING=1 (the lead's decision, /work/coord/simcuda-issues.md): cuLaunchKernel
 * returns once the kernel ran, so a kernel waiting for the host runs into its timeout, and
 * queries never report CUDA_ERROR_NOT_READY. The portable tests that need pending work
 * skip themselves on such a driver; this pins the behaviour they detect. */
static void work_completes_at_submission(void **state)
{
    (void)state;
    struct test_module tm;
    load_test_module(&tm);
    CUstream stream = NULL;
    CUevent event = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    assert_cu_ok(cuEventCreate(&event, CU_EVENT_DEFAULT));
    struct mapped_buffer flags;
    mapped_buffer_alloc(&flags, 2 * sizeof(uint32_t));
    CUdeviceptr flag = flags.dev, done = flags.dev + 4;
    uint64_t timeout_ns = 100000000u;
    void *params[] = {&flag, &done, &timeout_ns};
    double start = now_ms();
    assert_cu_ok(cuLaunchKernel(tm.gate, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL));
    double took = now_ms() - start;
    assert_int_equal(load_u32((uint32_t *)flags.host + 1), GATE_TIMED_OUT);
    assert_true(took >= 90.0);
    assert_cu_ok(cuStreamQuery(stream));
    assert_cu_ok(cuEventRecord(event, stream));
    assert_cu_ok(cuEventQuery(event));
    assert_true(driver_completes_work_at_submission());
    mapped_buffer_free(&flags);
    assert_cu_ok(cuEventDestroy(event));
    assert_cu_ok(cuStreamDestroy(stream));
    unload_test_module(&tm);
}

/* cuModuleGetFunction finds exported kernels only: a missing name is CUDA_ERROR_NOT_FOUND. */
static void missing_kernel_is_not_found(void **state)
{
    (void)state;
    CUmodule module = NULL;
    CUfunction f = NULL;
    assert_cu_ok(cuModuleLoad(&module, CONFORMANCE_MODULE));
    assert_cu(cuModuleGetFunction(&f, module, "monotonic_ns"), CUDA_ERROR_NOT_FOUND); /* static */
    assert_cu(cuModuleGetFunction(&f, module, "missing_kernel"), CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuModuleUnload(module));
}

/* What libraries (cuBLAS) ask while they set up: occupancy follows the device's sm_90
 * attributes (233472 bytes of shared memory and 2048 threads an SM, 1 KiB kept per block,
 * 32 registers a thread), cluster attributes are kept, and context limits read back. */
static void occupancy_cluster_attributes_and_limits(void **state)
{
    (void)state;
    CUmodule module = NULL;
    CUfunction fill = NULL;
    assert_cu_ok(cuModuleLoad(&module, CONFORMANCE_MODULE));
    assert_cu_ok(cuModuleGetFunction(&fill, module, "fill_u32"));
    size_t shared = 0;
    assert_cu_ok(cuOccupancyAvailableDynamicSMemPerBlock(&shared, fill, 2, 256));
    assert_int_equal(shared, 233472 / 2 - 1024);
    assert_cu_ok(cuOccupancyAvailableDynamicSMemPerBlock(&shared, fill, 1, 1024));
    assert_int_equal(shared, 232448); /* the opt-in per-block limit */
    assert_cu_ok(cuOccupancyAvailableDynamicSMemPerBlock(&shared, fill, 3, 1024));
    assert_int_equal(shared, 0); /* three blocks of 1024 threads do not fit an SM */
    assert_cu(cuOccupancyAvailableDynamicSMemPerBlock(&shared, fill, 0, 256), CUDA_ERROR_INVALID_VALUE);
    int blocks = 0;
    assert_cu_ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fill, 256, 0));
    assert_int_equal(blocks, 8); /* 65536 registers / (256 threads x 32) */
    assert_cu_ok(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, fill, 128, 64 << 10, 0));
    assert_int_equal(blocks, 3); /* 233472 / (64 KiB + 1 KiB) */

    int value = -1;
    assert_cu(cuFuncSetAttribute(fill, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 2), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuFuncSetAttribute(fill, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
    assert_cu_ok(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, fill));
    assert_int_equal(value, 1);
    assert_cu_ok(cuFuncSetAttribute(fill, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2));
    assert_cu_ok(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, fill));
    assert_int_equal(value, 2);
    CUlaunchConfig config;
    memset(&config, 0, sizeof config);
    config.blockDimX = 256;
    config.blockDimY = config.blockDimZ = 1;
    int clusters = 0, dim = 0, sms = 0;
    assert_cu_ok(cuOccupancyMaxActiveClusters(&clusters, fill, &config));
    assert_cu_ok(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    assert_int_equal(clusters, sms * 8 / 2); /* clusters of the two blocks it requires */
    assert_cu_ok(cuOccupancyMaxPotentialClusterSize(&dim, fill, &config));
    assert_int_equal(dim, 16); /* non-portable sizes allowed */

    size_t limit = 0;
    assert_cu_ok(cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE));
    assert_int_equal(limit, 1024);
    assert_cu_ok(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
    assert_cu_ok(cuCtxGetLimit(&limit, CU_LIMIT_STACK_SIZE));
    assert_int_equal(limit, 4096);
    assert_cu_ok(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024));
    assert_cu(cuCtxSetLimit(CU_LIMIT_CIG_ENABLED, 1), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuCtxGetLimit(&limit, CU_LIMIT_MAX), CUDA_ERROR_UNSUPPORTED_LIMIT);
    assert_cu_ok(cuModuleUnload(module));
}

int run_simcuda_module_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(launch_hands_the_kernel_the_callers_launch),
        conformance_test(libraries_without_the_marker_are_refused),
        conformance_test(modules_of_one_library_are_independent),
        conformance_test(load_data_loads_the_bytes_it_is_given),
        conformance_test(work_completes_at_submission),
        conformance_test(missing_kernel_is_not_found),
        conformance_test(occupancy_cluster_attributes_and_limits),
    };
    return cmocka_run_group_tests_name("simcuda host-kernel modules", tests, setup_primary_context,
                                       teardown_primary_context);
}
