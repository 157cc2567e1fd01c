/* test_simcuda_ipc.c — simcuda's answers to IPC handles a real driver leaves undefined:
 * handles from a process that has exited, made-up handles, a handle opened by the
 * process that made it, allocations too small for simcuda to share. Each is an error,
 * never a crash and never memory that is not the exporter's.
 */
#include <stdio.h>
#include <string.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

#define MIB ((size_t)1 << 20)

/* Exports 2 MiB, prints the handle and exits: the memory goes with the process. */
int child_ipc_export_and_exit(void)
{
    CUdevice dev;
    if (child_start(&dev) != 0)
        return 1;
    CUdeviceptr ptr = 0;
    CUipcMemHandle handle;
    child_expect_cu(cuMemAlloc(&ptr, 2 * MIB), CUDA_SUCCESS);
    child_expect_cu(cuIpcGetMemHandle(&handle, ptr), CUDA_SUCCESS);
    char hex[2 * CU_IPC_HANDLE_SIZE + 1];
    ipc_handle_to_hex(&handle, hex);
    printf("handle=%s\n", hex);
    return child_failures;
}

static void handle_of_exited_process(void **state)
{
    (void)state;
    char output[4096];
    assert_int_equal(run_child("ipc_export_and_exit", NULL, output, sizeof output), 0);
    const char *at = strstr(output, "handle=");
    assert_non_null(at);
    CUipcMemHandle handle;
    assert_true(ipc_handle_from_hex(at + 7, &handle));
    CUdeviceptr ptr = 0;
    assert_cu(cuIpcOpenMemHandle(&ptr, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ptr, 0);
}

static void made_up_and_own_handles(void **state)
{
    (void)state;
    CUipcMemHandle handle;
    CUdeviceptr ptr = 0;
    memset(&handle, 0, sizeof handle);
    assert_cu(cuIpcOpenMemHandle(&ptr, handle, 0), CUDA_ERROR_INVALID_VALUE);
    memcpy(handle.reserved, "TIERMEM", 8);
    assert_cu(cuIpcOpenMemHandle(&ptr, handle, 0), CUDA_ERROR_INVALID_VALUE);

    CUdeviceptr mine = 0;
    assert_cu_ok(cuMemAlloc(&mine, 2 * MIB));
    assert_cu_ok(cuIpcGetMemHandle(&handle, mine));
    assert_cu(cuIpcOpenMemHandle(&ptr, handle, 0), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(cuIpcOpenMemHandle(&ptr, handle, 2), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuIpcCloseMemHandle(mine), CUDA_ERROR_INVALID_VALUE); /* not opened, allocated */
    assert_cu_ok(cuMemFree(mine));
}

/* Under 1 MiB an allocation lives on the heap: not shareable, and the attribute says so. */
static void small_allocations_are_not_shareable(void **state)
{
    (void)state;
    CUdeviceptr small = 0;
    CUipcMemHandle handle;
    assert_cu_ok(cuMemAlloc(&small, 4096));
    int capable = -1;
    assert_cu_ok(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, small));
    assert_int_equal(capable, 0);
    assert_cu(cuIpcGetMemHandle(&handle, small), CUDA_ERROR_NOT_SUPPORTED);
    assert_cu_ok(cuMemFree(small));
}

int run_simcuda_ipc_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handle_of_exited_process),
        cmocka_unit_test(made_up_and_own_handles),
        cmocka_unit_test(small_allocations_are_not_shareable),
    };
    return cmocka_run_group_tests_name("simcuda ipc", tests, setup_primary_context, teardown_primary_context);
}
