/* test_simcuda_handles.c — simcuda's answers where a real driver's behaviour is undefined
 * or unchecked: destroyed and made-up handles, copies outside allocations, memory mapped
 * without access, exact cuGetProcAddress codes. simcuda must answer with an error from
 * the function's documented list and never crash (issue 2: "never a crash, never a silent
 * success").
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/simcuda_only.h"

#define MIB ((size_t)1 << 20)

/* A handle value no driver object has. */
#define MADE_UP(type) ((type)(uintptr_t)0xdead0000u)

/* Streams and events: CUDA_ERROR_INVALID_HANDLE is the code their functions document. */
static void destroyed_streams_and_events(void **state)
{
    (void)state;
    CUstream stream = NULL;
    CUevent event = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
    assert_cu_ok(cuEventCreate(&event, CU_EVENT_DEFAULT));
    assert_cu_ok(cuStreamDestroy(stream));
    assert_cu_ok(cuEventDestroy(event));
    assert_cu(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuStreamQuery(stream), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuStreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuEventQuery(event), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuEventSynchronize(event), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuEventRecord(event, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuEventDestroy(event), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuStreamSynchronize(MADE_UP(CUstream)), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuEventQuery(MADE_UP(CUevent)), CUDA_ERROR_INVALID_HANDLE);
    CUdeviceptr ptr = 0;
    assert_cu_ok(cuMemAlloc(&ptr, 4096));
    assert_cu(cuMemsetD8Async(ptr, 0, 16, MADE_UP(CUstream)), CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(cuMemFree(ptr));
}

/* Contexts: CUDA_ERROR_INVALID_CONTEXT (or INVALID_VALUE, both documented). */
static void destroyed_contexts(void **state)
{
    (void)state;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext ctx = NULL;
    assert_cu_ok(cuCtxCreate(&ctx, &params, 0, tdev.dev));
    assert_cu_ok(cuCtxDestroy(ctx));
    assert_cu_either(cuCtxDestroy(ctx), CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuCtxPushCurrent(ctx), CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuCtxSetCurrent(ctx), CUDA_ERROR_INVALID_CONTEXT);
    assert_cu(cuCtxSetCurrent(MADE_UP(CUcontext)), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext current = NULL;
    assert_cu_ok(cuCtxGetCurrent(&current));
    assert_ptr_equal(current, tdev.primary);
}

/* Modules and functions: an unloaded module and its kernels are gone. */
static void unloaded_modules(void **state)
{
    (void)state;
    CUmodule module = NULL;
    CUfunction fill = NULL, f = NULL;
    assert_cu_ok(cuModuleLoad(&module, CONFORMANCE_MODULE));
    assert_cu_ok(cuModuleGetFunction(&fill, module, "fill_u32"));
    assert_cu_ok(cuModuleUnload(module));
    assert_cu_either(cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuModuleGetFunction(&f, module, "fill_u32"), CUDA_ERROR_INVALID_HANDLE,
                     CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr out = 0;
    uint32_t n = 4, base = 0;
    assert_cu_ok(cuMemAlloc(&out, 16));
    void *args[] = {&out, &n, &base};
    assert_cu(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuLaunchKernel(MADE_UP(CUfunction), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
              CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(cuMemFree(out));
}

/* Memory handles: released, made-up or zero handles are CUDA_ERROR_INVALID_VALUE, the
 * code the VMM functions list. */
static void released_memory_handles(void **state)
{
    (void)state;
    CUmemAllocationProp prop = device_alloc_prop();
    CUmemGenericAllocationHandle handle = 0;
    assert_cu_ok(cuMemCreate(&handle, 2 * MIB, &prop, 0));
    assert_cu_ok(cuMemRelease(handle));
    assert_cu(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemRelease(0xdead0000u), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp got;
    assert_cu(cuMemGetAllocationPropertiesFromHandle(&got, handle), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr base = 0;
    assert_cu_ok(cuMemAddressReserve(&base, 2 * MIB, 0, 0, 0));
    assert_cu(cuMemMap(base, 2 * MIB, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemMap(base, 2 * MIB, 0, 0xdead0000u, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemAddressFree(base, 2 * MIB));
}

/* Copies and memsets must stay inside what the driver allocated: outside it they are
 * invalid values, not writes to random host memory. */
static void copies_outside_allocations(void **state)
{
    (void)state;
    CUdeviceptr a = 0, b = 0, gone = 0;
    assert_cu_ok(cuMemAlloc(&a, MIB));
    assert_cu_ok(cuMemAlloc(&b, MIB));
    assert_cu_ok(cuMemAlloc(&gone, MIB));
    assert_cu_ok(cuMemFree(gone));
    static uint8_t host[2 * 1024 * 1024];
    assert_cu(cuMemcpyHtoD(a + MIB - 16, host, 32), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemcpyDtoH(host, a + 16, MIB), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemcpyDtoD(b, a + 1, MIB), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemsetD8(a + MIB - 1, 0, 2), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemsetD32(a + MIB - 4, 0, 2), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemcpyHtoD(gone, host, 16), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemcpyDtoH(host, gone, 16), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemcpyHtoD(0, host, 16), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemcpyHtoDAsync(a + MIB - 16, host, 32, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFree(a));
    assert_cu_ok(cuMemFree(b));
}

/* Mapped but no access set yet ("cuMemMap does not make the address accessible"): a copy
 * into it fails instead of faulting the process, and works once access is set; the same
 * when the handle is unmapped and mapped again. */
int child_copy_without_access(void)
{
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    child_expect_cu(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    child_expect_cu(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    CUmemGenericAllocationHandle handle = 0;
    CUdeviceptr base = 0;
    child_expect_cu(cuMemCreate(&handle, 2 * MIB, &prop, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemAddressReserve(&base, 2 * MIB, 0, 0, 0), CUDA_SUCCESS);
    child_expect_cu(cuMemMap(base, 2 * MIB, 0, handle, 0), CUDA_SUCCESS);
    uint32_t word = 0x600dcafe, back = 0;
    CUresult rc = cuMemcpyHtoD(base, &word, 4);
    child_expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_ILLEGAL_ADDRESS,
                 "copy into a mapping without access returned %s", cu_result_name(rc));
    rc = cuMemsetD32(base, 1, 4);
    child_expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_ILLEGAL_ADDRESS,
                 "memset of a mapping without access returned %s", cu_result_name(rc));
    CUmemAccessDesc rw;
    memset(&rw, 0, sizeof rw);
    rw.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    rw.location.id = dev;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    child_expect_cu(cuMemSetAccess(base, 2 * MIB, &rw, 1), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyHtoD(base, &word, 4), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyDtoH(&back, base, 4), CUDA_SUCCESS);
    child_expect(back == word, "read back %#x", back);
    /* mapped again (simcuda moves the pages it kept aside back in): no access until it is
     * set again, and the same bytes */
    child_expect_cu(cuMemUnmap(base, 2 * MIB), CUDA_SUCCESS);
    child_expect_cu(cuMemMap(base, 2 * MIB, 0, handle, 0), CUDA_SUCCESS);
    rc = cuMemcpyHtoD(base, &word, 4);
    child_expect(rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_ILLEGAL_ADDRESS,
                 "copy into a mapping made again without access returned %s", cu_result_name(rc));
    child_expect_cu(cuMemSetAccess(base, 2 * MIB, &rw, 1), CUDA_SUCCESS);
    back = 0;
    child_expect_cu(cuMemcpyDtoH(&back, base, 4), CUDA_SUCCESS);
    child_expect(back == word, "read back after mapping again %#x", back);
    return child_failures;
}

static void copy_into_mapping_without_access(void **state)
{
    (void)state;
    assert_child_passes("copy_without_access", NULL);
}

/* cuMemcpyPeer and cuMemcpyPeerAsync between the primary contexts of two devices: each
 * side is checked against its own context's device (no peer access needed), a range
 * outside any allocation is CUDA_ERROR_INVALID_VALUE, and an unknown context
 * CUDA_ERROR_INVALID_CONTEXT. */
int child_copy_peer(void)
{
    CUcontext ctx[2] = { NULL, NULL };
    CUdeviceptr buffer[2] = { 0, 0 };
    child_expect_cu(cuInit(0), CUDA_SUCCESS);
    for (int d = 0; d < 2; d++) {
        child_expect_cu(cuDevicePrimaryCtxRetain(&ctx[d], d), CUDA_SUCCESS);
        child_expect_cu(cuCtxSetCurrent(ctx[d]), CUDA_SUCCESS);
        child_expect_cu(cuMemAlloc(&buffer[d], MIB), CUDA_SUCCESS);
        child_expect_cu(cuMemsetD32(buffer[d], 0x11111111u * (unsigned)(d + 1), MIB / 4), CUDA_SUCCESS);
    }
    child_expect_cu(cuCtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyPeer(buffer[0], ctx[0], buffer[1] + 4096, ctx[1], 8192), CUDA_SUCCESS);
    uint32_t words[4096];
    child_expect_cu(cuMemcpyDtoH(words, buffer[0], sizeof words), CUDA_SUCCESS);
    child_expect(words[0] == 0x22222222u && words[2047] == 0x22222222u && words[2048] == 0x11111111u,
                 "device 0 after the peer copy: %#x %#x %#x", words[0], words[2047], words[2048]);
    CUstream stream = NULL;
    child_expect_cu(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    child_expect_cu(cuMemsetD32(buffer[0], 0x33333333u, MIB / 4), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyPeerAsync(buffer[1], ctx[1], buffer[0], ctx[0], MIB, stream), CUDA_SUCCESS);
    child_expect_cu(cuStreamSynchronize(stream), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(ctx[1]), CUDA_SUCCESS);
    child_expect_cu(cuMemcpyDtoH(words, buffer[1] + MIB - sizeof words, sizeof words), CUDA_SUCCESS);
    child_expect(words[0] == 0x33333333u && words[4095] == 0x33333333u, "device 1 after the async copy: %#x",
                 words[0]);
    child_expect_cu(cuMemcpyPeer(buffer[0] + MIB - 4, ctx[0], buffer[1], ctx[1], 4096), CUDA_ERROR_INVALID_VALUE);
    child_expect_cu(cuMemcpyPeer(buffer[0], (CUcontext)&words, buffer[1], ctx[1], 4096), CUDA_ERROR_INVALID_CONTEXT);
    child_expect_cu(cuStreamDestroy(stream), CUDA_SUCCESS);
    child_expect_cu(cuMemFree(buffer[1]), CUDA_SUCCESS);
    child_expect_cu(cuCtxSetCurrent(ctx[0]), CUDA_SUCCESS);
    child_expect_cu(cuMemFree(buffer[0]), CUDA_SUCCESS);
    return child_failures;
}

static void copy_between_devices(void **state)
{
    (void)state;
    const char *env[] = { "SIMCUDA_DEVICES=2", NULL };
    assert_child_passes("copy_peer", env);
}

/* cuGetProcAddress on simcuda: an unknown name is CUDA_ERROR_NOT_FOUND with
 * CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND (what drivers in the field return; cuda.h's text
 * says CUDA_SUCCESS with a NULL pfn, which the portable test also accepts). */
static void proc_address_unknown_symbol_is_not_found(void **state)
{
    (void)state;
    void *pfn = (void *)(uintptr_t)0x1;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_cu(cuGetProcAddress("cuNoSuchFunction", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                               &status),
              CUDA_ERROR_NOT_FOUND);
    assert_null(pfn);
    assert_int_equal(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    pfn = (void *)(uintptr_t)0x1;
    assert_cu(cuGetProcAddress("cuNoSuchFunction", &pfn, 13000,
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL),
              CUDA_ERROR_NOT_FOUND);
    assert_null(pfn);
}

int run_simcuda_handle_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(destroyed_streams_and_events),
        conformance_test(destroyed_contexts),
        conformance_test(unloaded_modules),
        conformance_test(released_memory_handles),
        conformance_test(copies_outside_allocations),
        conformance_test(copy_into_mapping_without_access),
        conformance_test(copy_between_devices),
        conformance_test(proc_address_unknown_symbol_is_not_found),
    };
    return cmocka_run_group_tests_name("simcuda invalid handles and ranges", tests,
                                       setup_primary_context, teardown_primary_context);
}
