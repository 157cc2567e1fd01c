/* test_ipc.c — conformance: memory shared between processes. Legacy IPC handles of
 * cuMemAlloc memory, POSIX file descriptors of VMM allocations, and the pointer attribute
 * that says which memory legacy IPC can share.
 *
 * Each test is two processes: this one exports and a child of this program (--child)
 * imports; each writes a pattern the other reads back, so the bytes are shared both ways,
 * not copied. Documentation references are to cuda.h (CUDA 13.0).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

#define MIB ((size_t)1 << 20)
#define SHARED_BYTES (4 * MIB)
#define EXPORTER_SEED 7u
#define IMPORTER_SEED 99u

static void fill_words(uint32_t *words, size_t count, uint32_t seed)
{
    for (size_t i = 0; i < count; i++)
        words[i] = (uint32_t)i * 2654435761u + seed;
}

/* The index of the first word that differs from the pattern, or `count`. */
static size_t first_mismatch(const uint32_t *words, size_t count, uint32_t seed)
{
    for (size_t i = 0; i < count; i++)
        if (words[i] != (uint32_t)i * 2654435761u + seed)
            return i;
    return count;
}

static void put_pattern(CUdeviceptr ptr, size_t bytes, uint32_t seed)
{
    uint32_t *host = malloc(bytes);
    assert_non_null(host);
    fill_words(host, bytes / 4, seed);
    assert_cu_ok(cuMemcpyHtoD(ptr, host, bytes));
    free(host);
}

static void expect_pattern(CUdeviceptr ptr, size_t bytes, uint32_t seed)
{
    uint32_t *host = malloc(bytes);
    assert_non_null(host);
    assert_cu_ok(cuMemcpyDtoH(host, ptr, bytes));
    size_t at = first_mismatch(host, bytes / 4, seed);
    free(host);
    assert_int_equal(at, bytes / 4);
}

/* In a child: the pattern the exporter wrote is there; then the importer's replaces it. */
static void child_swap_pattern(CUdeviceptr ptr, size_t bytes)
{
    uint32_t *host = malloc(bytes);
    child_expect(host != NULL, "out of memory");
    if (!host)
        return;
    child_expect_cu(cuMemcpyDtoH(host, ptr, bytes), CUDA_SUCCESS);
    size_t at = first_mismatch(host, bytes / 4, EXPORTER_SEED);
    child_expect(at == bytes / 4, "the exporter's pattern differs at word %zu", at);
    fill_words(host, bytes / 4, IMPORTER_SEED);
    child_expect_cu(cuMemcpyHtoD(ptr, host, bytes), CUDA_SUCCESS);
    free(host);
}

/* =======================================================================================
 * Legacy IPC: cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle
 * ==================================================================================== */

/* The importer: cuIpcOpenMemHandle "Maps memory exported from another process with
 * cuIpcGetMemHandle into the current device address space"; cuIpcCloseMemHandle
 * "Decrements the reference count of the memory returned by cuIpcOpenMemHandle by 1. When
 * the reference count reaches 0, this API unmaps the memory": a second open of the same
 * handle shares the first one's mapping. */
int child_ipc_import(void)
{
    CUipcMemHandle handle;
    char **env = environ;
    const char *hex = NULL;
    for (; *env; env++)
        if (strncmp(*env, "TEST_IPC_HANDLE=", 16) == 0)
            hex = *env + 16;
    child_expect(ipc_handle_from_hex(hex, &handle), "no handle in TEST_IPC_HANDLE");
    CUdevice dev;
    if (child_failures || child_start(&dev) != 0)
        return child_failures;
    CUdeviceptr ptr = 0, again = 0;
    child_expect_cu(cuIpcOpenMemHandle(&ptr, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
    if (ptr == 0)
        return child_failures;
    child_expect_cu(cuIpcOpenMemHandle(&again, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
    child_expect(again == ptr, "a second open mapped the memory again at %#llx (first %#llx)",
                 (unsigned long long)again, (unsigned long long)ptr);
    child_swap_pattern(ptr, SHARED_BYTES);
    child_expect_cu(cuIpcCloseMemHandle(again), CUDA_SUCCESS);
    child_expect_cu(cuIpcCloseMemHandle(ptr), CUDA_SUCCESS);
    return child_failures;
}

/* cuIpcGetMemHandle "Takes a pointer to the base of an existing device memory allocation
 * created with cuMemAlloc and exports it for use in another process"; the child's writes
 * are seen here afterwards. */
static void legacy_ipc_between_processes(void **state)
{
    (void)state;
    CUdeviceptr ptr = 0;
    assert_cu_ok(cuMemAlloc(&ptr, SHARED_BYTES));
    put_pattern(ptr, SHARED_BYTES, EXPORTER_SEED);
    int capable = -1;
    assert_cu_ok(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, ptr));
    assert_int_equal(capable, 1);

    CUipcMemHandle handle;
    assert_cu_ok(cuIpcGetMemHandle(&handle, ptr));
    assert_cu(cuIpcGetMemHandle(NULL, ptr), CUDA_ERROR_INVALID_VALUE);
    char hex[2 * CU_IPC_HANDLE_SIZE + 1], var[sizeof "TEST_IPC_HANDLE=" + sizeof hex];
    ipc_handle_to_hex(&handle, hex);
    snprintf(var, sizeof var, "TEST_IPC_HANDLE=%s", hex);
    const char *env[] = {var, NULL};
    assert_child_passes("ipc_import", env);

    expect_pattern(ptr, SHARED_BYTES, IMPORTER_SEED);
    assert_cu_ok(cuMemFree(ptr));
}

/* IS_LEGACY_CUDA_IPC_CAPABLE: "1 if this pointer maps to an allocation that is suitable
 * for cudaIpcGetMemHandle, 0 otherwise"; VMM and managed memory are not. */
static void legacy_ipc_capable_attribute(void **state)
{
    (void)state;
    size_t gran = device_granularity();
    CUmemAllocationProp prop = device_alloc_prop();
    CUmemGenericAllocationHandle handle;
    CUdeviceptr range = 0, managed = 0;
    assert_cu_ok(cuMemCreate(&handle, gran, &prop, 0));
    assert_cu_ok(cuMemAddressReserve(&range, gran, 0, 0, 0));
    assert_cu_ok(cuMemMap(range, gran, 0, handle, 0));
    int capable = -1;
    assert_cu_ok(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, range));
    assert_int_equal(capable, 0);
    assert_cu_ok(cuMemAllocManaged(&managed, SHARED_BYTES, CU_MEM_ATTACH_GLOBAL));
    capable = -1;
    assert_cu_ok(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, managed));
    assert_int_equal(capable, 0);
    assert_cu_ok(cuMemFree(managed));
    assert_cu_ok(cuMemUnmap(range, gran));
    assert_cu_ok(cuMemAddressFree(range, gran));
    assert_cu_ok(cuMemRelease(handle));
}

/* =======================================================================================
 * Shareable handles of VMM allocations (POSIX file descriptors)
 * ==================================================================================== */

static bool posix_fd_supported(void)
{
    int supported = 0;
    assert_cu_ok(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                      tdev.dev));
    if (!supported)
        print_message("# the device cannot export POSIX file descriptors "
                      "(HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED is 0): nothing to share\n");
    return supported != 0;
}

/* The importer maps the allocation the descriptor (inherited, its number in TEST_VMM_FD)
 * names: cuMemImportFromShareableHandle takes "the shareable handle ... For
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, osHandle is the file descriptor cast to void*". */
int child_vmm_import(void)
{
    int fd = -1;
    for (char **env = environ; *env; env++)
        if (strncmp(*env, "TEST_VMM_FD=", 12) == 0)
            fd = atoi(*env + 12);
    child_expect(fd >= 0, "no descriptor in TEST_VMM_FD");
    CUdevice dev;
    if (child_failures || child_start(&dev) != 0)
        return child_failures;
    CUmemGenericAllocationHandle handle = 0;
    child_expect_cu(cuMemImportFromShareableHandle(&handle, (void *)(intptr_t)fd,
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), CUDA_SUCCESS);
    close(fd);
    CUmemAllocationProp prop;
    child_expect_cu(cuMemGetAllocationPropertiesFromHandle(&prop, handle), CUDA_SUCCESS);
    child_expect(prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE, "the import's location type is %d",
                 (int)prop.location.type);
    CUdeviceptr range = 0;
    child_expect_cu(cuMemAddressReserve(&range, SHARED_BYTES, 0, 0, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemMap(range, SHARED_BYTES, 0, handle, 0), CUDA_SUCCESS);
    CUmemAccessDesc access = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    child_expect_cu(cuMemSetAccess(range, SHARED_BYTES, &access, 1), CUDA_SUCCESS);
    if (child_failures)
        return child_failures;
    child_swap_pattern(range, SHARED_BYTES);
    child_expect_cu(cuMemUnmap(range, SHARED_BYTES), CUDA_SUCCESS);
    child_expect_cu(cuMemAddressFree(range, SHARED_BYTES), CUDA_SUCCESS);
    child_expect_cu(cuMemRelease(handle), CUDA_SUCCESS);
    return child_failures;
}

/* cuMemCreate with requestedHandleTypes POSIX_FILE_DESCRIPTOR, then
 * cuMemExportToShareableHandle: the descriptor maps the same memory in another process.
 * An allocation created without the handle type cannot be exported. */
static void vmm_descriptor_between_processes(void **state)
{
    (void)state;
    if (!posix_fd_supported())
        return;
    size_t gran = device_granularity();
    assert_int_equal(SHARED_BYTES % gran, 0);
    CUmemAllocationProp prop = device_alloc_prop();
    CUmemGenericAllocationHandle plain;
    int fd = -1;
    assert_cu_ok(cuMemCreate(&plain, gran, &prop, 0));
    assert_true(cuMemExportToShareableHandle(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
                CUDA_SUCCESS);
    assert_cu_ok(cuMemRelease(plain));

    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr range = 0;
    assert_cu_ok(cuMemCreate(&handle, SHARED_BYTES, &prop, 0));
    assert_cu_ok(cuMemAddressReserve(&range, SHARED_BYTES, 0, 0, 0));
    assert_cu_ok(cuMemMap(range, SHARED_BYTES, 0, handle, 0));
    CUmemAccessDesc access = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    assert_cu_ok(cuMemSetAccess(range, SHARED_BYTES, &access, 1));
    unsigned long long types = 0;
    assert_cu_ok(cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, range));
    assert_true(types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    put_pattern(range, SHARED_BYTES, EXPORTER_SEED);

    assert_cu_ok(cuMemExportToShareableHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_SETFD, 0), 0); /* the child inherits it */
    char var[32];
    snprintf(var, sizeof var, "TEST_VMM_FD=%d", fd);
    const char *env[] = {var, NULL};
    assert_child_passes("vmm_import", env);
    close(fd);

    expect_pattern(range, SHARED_BYTES, IMPORTER_SEED);
    assert_cu_ok(cuMemUnmap(range, SHARED_BYTES));
    assert_cu_ok(cuMemAddressFree(range, SHARED_BYTES));
    assert_cu_ok(cuMemRelease(handle));
}

int run_ipc_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(legacy_ipc_between_processes),
        conformance_test(legacy_ipc_capable_attribute),
        conformance_test(vmm_descriptor_between_processes),
    };
    return cmocka_run_group_tests_name("ipc", tests, setup_primary_context, teardown_primary_context);
}
