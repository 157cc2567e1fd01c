/* test_simcuda_managed.c — managed memory as simcuda models it: cuMemPrefetchAsync and
 * cuMemAdvise in every ABI (arguments checked as the driver documents them), and the
 * fault counts of the SIMCUDA_LOG=info exit summary: first touch faults, a working set
 * twice the device thrashes, one that fits does not. Device accesses come from
 * device-to-device copies out of the managed range. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

#define MIB ((size_t)1 << 20)

/* The version-1 ABIs, as a program built against an older cuda.h resolves them. */
static void *driver_symbol(const char *name)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    child_expect_cu(cuGetProcAddress(name, &fn, 8000, CU_GET_PROC_ADDRESS_DEFAULT, &status), CUDA_SUCCESS);
    return fn;
}

/* Every ABI and every advice on a managed range; the errors the driver documents. */
int child_managed_api(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    CUdeviceptr m = 0, plain = 0;
    child_expect_cu(cuMemAllocManaged(&m, 8 * MIB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    child_expect_cu(cuMemAlloc(&plain, 4 * MIB), CUDA_SUCCESS);
    CUmemLocation device = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
    CUmemLocation host = { .type = CU_MEM_LOCATION_TYPE_HOST };
    CUmemLocation bad_device = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 7 };

    child_expect_cu(cuMemPrefetchAsync_v2(m, 8 * MIB, device, 0, NULL), CUDA_SUCCESS);
    child_expect_cu(cuMemPrefetchAsync_v2(m, 8 * MIB, host, 0, NULL), CUDA_SUCCESS);
    child_expect_cu(cuMemPrefetchAsync_v2(m, 8 * MIB, device, 1, NULL), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(cuMemPrefetchAsync_v2(m, 8 * MIB, bad_device, 0, NULL), CUDA_ERROR_INVALID_DEVICE);
    child_expect_cu(cuMemPrefetchAsync_v2(plain, MIB, device, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(cuMemPrefetchAsync_v2(m, 9 * MIB, device, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    PFN_cuMemPrefetchAsync_v8000 prefetch_v1 = driver_symbol("cuMemPrefetchAsync");
    PFN_cuMemAdvise_v8000 advise_v1 = driver_symbol("cuMemAdvise");
    if (prefetch_v1 && advise_v1) {
        child_expect_cu(prefetch_v1(m, MIB, 0, NULL), CUDA_SUCCESS);
        child_expect_cu(prefetch_v1(m, MIB, CU_DEVICE_CPU, NULL), CUDA_SUCCESS);
        child_expect_cu(advise_v1(m, MIB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU), CUDA_SUCCESS);
        child_expect_cu(advise_v1(m, MIB, CU_MEM_ADVISE_SET_ACCESSED_BY, 0), CUDA_SUCCESS);
    }
    static const CUmem_advise advices[] = {
        CU_MEM_ADVISE_SET_READ_MOSTLY, CU_MEM_ADVISE_UNSET_READ_MOSTLY, CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, CU_MEM_ADVISE_SET_ACCESSED_BY, CU_MEM_ADVISE_UNSET_ACCESSED_BY,
    };
    for (size_t i = 0; i < sizeof advices / sizeof advices[0]; i++)
        child_expect_cu(cuMemAdvise_v2(m, 8 * MIB, advices[i], device), CUDA_SUCCESS);
    child_expect_cu(cuMemAdvise_v2(m, 8 * MIB, (CUmem_advise)99, device), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(cuMemAdvise_v2(plain, MIB, CU_MEM_ADVISE_SET_READ_MOSTLY, device), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(cuMemAdvise_v2(m, MIB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, bad_device),
                    CUDA_ERROR_INVALID_DEVICE);
    child_expect_cu(cuMemFree(m), CUDA_SUCCESS);
    child_expect_cu(cuMemFree(plain), CUDA_SUCCESS);
    return child_failures;
}

/* Fills a managed buffer from the host, then reads it on the device three times through
 * a 4 MiB window. MANAGED_TEST_MIB sets its size. */
int child_managed_sweeps(void)
{
    CUdevice dev;
    if (child_start(&dev))
        return child_failures;
    const char *mib = getenv("MANAGED_TEST_MIB");
    size_t bytes = (size_t)atoi(mib ? mib : "16") * MIB, window = 4 * MIB;
    CUdeviceptr m = 0, out = 0;
    child_expect_cu(cuMemAllocManaged(&m, bytes, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    child_expect_cu(cuMemAlloc(&out, window), CUDA_SUCCESS);
    char *fill = calloc(1, bytes);
    child_expect(fill != NULL, "out of memory");
    if (child_failures)
        return child_failures;
    child_expect_cu(cuMemcpyHtoD(m, fill, bytes), CUDA_SUCCESS);
    for (int sweep = 0; sweep < 3; sweep++)
        for (size_t off = 0; off < bytes; off += window)
            child_expect_cu(cuMemcpyDtoD(out, m + off, window), CUDA_SUCCESS);
    free(fill);
    return child_failures;
}

/* Runs the sweeps and reads the exit summary's managed-memory line. */
static void sweep_counts(const char *mib, unsigned long long *faults, unsigned long long *migrated,
                         unsigned long long *evicted)
{
    char size[64];
    snprintf(size, sizeof size, "MANAGED_TEST_MIB=%s", mib);
    const char *env[] = { "SIMCUDA_MEM=64M", "SIMCUDA_LOG=info", size, NULL };
    static char output[1 << 16];
    int status = run_child("managed_sweeps", env, output, sizeof output);
    const char *line = strstr(output, "exit: managed memory: ");
    unsigned long long batches = 0, back = 0, remote = 0;
    if (status != 0 || !line ||
        sscanf(line, "exit: managed memory: %llu faults in %llu batches, %llu bytes migrated to the device, "
                     "%llu written back, %llu read in place, %llu blocks evicted", faults, &batches, migrated,
               &back, &remote, evicted) != 6) {
        print_error("status %d; expected the managed-memory exit line, got:\n%s\n", status, output);
        fail();
    }
}

static void managed_faults_on_first_touch(void **state)
{
    (void)state;
    unsigned long long faults = 0, migrated = 0, evicted = 0;
    sweep_counts("16", &faults, &migrated, &evicted);
    /* a quarter of the device: every 4 KiB page faults once, then stays */
    assert_int_equal(faults, 16 * MIB / 4096);
    assert_int_equal(migrated, 16 * MIB);
    assert_int_equal(evicted, 0);
}

static void managed_thrashes_beyond_the_device(void **state)
{
    (void)state;
    unsigned long long faults = 0, migrated = 0, evicted = 0;
    sweep_counts("128", &faults, &migrated, &evicted);
    /* twice the device: each of the three sweeps faults every page in again */
    assert_int_equal(faults, 3 * 128 * MIB / 4096);
    assert_int_equal(migrated, 3 * 128 * MIB);
    assert_true(evicted >= 2 * 128 / 2);
}

static void managed_api(void **state)
{
    (void)state;
    assert_child_passes("managed_api", NULL);
}

static void uvm_bad_values_are_reported(void **state)
{
    (void)state;
    static const char *settings[][2] = {
        { "SIMCUDA_UVM_BATCH=0", "SIMCUDA_UVM_BATCH" },
        { "SIMCUDA_UVM_FAULT_US=fast", "SIMCUDA_UVM_FAULT_US" },
        { "SIMCUDA_UVM_PREFETCH=101", "SIMCUDA_UVM_PREFETCH" },
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const char *env[] = { settings[i][0], NULL };
        char output[4096];
        int status = run_child("report_init", env, output, sizeof output);
        if (status != 0 || !strstr(output, settings[i][1])) {
            print_error("with %s: status %d; expected a message naming %s, got:\n%s\n", settings[i][0], status,
                        settings[i][1], output);
            fail();
        }
    }
}

int run_simcuda_managed_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(managed_api),
        conformance_test(managed_faults_on_first_touch),
        conformance_test(managed_thrashes_beyond_the_device),
        conformance_test(uvm_bad_values_are_reported),
    };
    return cmocka_run_group_tests_name("simcuda managed memory (fresh processes)", tests, NULL, NULL);
}
