/* test_proc_address.c — conformance: cuGetProcAddress and error names.
 *
 * cuGetProcAddress(symbol, pfn, cudaVersion, flags, symbolStatus) must hand out, for a
 * base name, the exported function whose ABI matches cudaVersion: "if the specified CUDA
 * version is greater than or equal to the CUDA version in which the driver symbol was
 * introduced, this API will return the function pointer to the corresponding versioned
 * function" (cuda.h). The versions below are those of the PFN_* typedefs of
 * cudaTypedefs.h (PFN_cuMemAlloc_v3020 is cuMemAlloc_v2, and so on). The expected pointer
 * is what dlsym finds for the versioned name, so a program that compares the two (as an
 * interposer does) always agrees with the driver.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

/* =======================================================================================
 * The ABI table of the functions in scope
 * ==================================================================================== */

struct abi_version {
    int since;        /* CUDA version that introduced this ABI (cudaTypedefs.h) */
    const char *name; /* its exported symbol */
};

struct proc_entry {
    const char *symbol;            /* base name passed to cuGetProcAddress */
    struct abi_version abi[3];     /* ascending by `since`; unused slots are zero */
    int per_thread_since;          /* 0: the function has no per-thread variant */
    const char *per_thread;        /* the _ptds/_ptsz symbol of the newest ABI */
};

#define V(since, name) {since, #name}
#define ONE(sym, since) {#sym, {V(since, sym)}, 0, NULL}

static const struct proc_entry proc_table[] = {
    ONE(cuInit, 2000),
    ONE(cuDriverGetVersion, 2020),
    ONE(cuDeviceGet, 2000),
    ONE(cuDeviceGetCount, 2000),
    ONE(cuDeviceGetName, 2000),
    ONE(cuDeviceGetAttribute, 2000),
    {"cuDeviceTotalMem", {V(3020, cuDeviceTotalMem_v2)}, 0, NULL},
    {"cuDeviceGetUuid", {V(9020, cuDeviceGetUuid), V(11040, cuDeviceGetUuid_v2)}, 0, NULL},
    ONE(cuDevicePrimaryCtxRetain, 7000),
    {"cuDevicePrimaryCtxRelease",
     {V(7000, cuDevicePrimaryCtxRelease), V(11000, cuDevicePrimaryCtxRelease_v2)}, 0, NULL},
    {"cuDevicePrimaryCtxReset",
     {V(7000, cuDevicePrimaryCtxReset), V(11000, cuDevicePrimaryCtxReset_v2)}, 0, NULL},
    {"cuCtxCreate", {V(3020, cuCtxCreate_v2), V(11040, cuCtxCreate_v3), V(12050, cuCtxCreate_v4)},
     0, NULL},
    {"cuCtxDestroy", {V(4000, cuCtxDestroy_v2)}, 0, NULL},
    {"cuCtxPushCurrent", {V(4000, cuCtxPushCurrent_v2)}, 0, NULL},
    {"cuCtxPopCurrent", {V(4000, cuCtxPopCurrent_v2)}, 0, NULL},
    ONE(cuCtxSetCurrent, 4000),
    ONE(cuCtxGetCurrent, 4000),
    {"cuCtxGetDevice", {V(2000, cuCtxGetDevice), V(13000, cuCtxGetDevice_v2)}, 0, NULL},
    {"cuCtxSynchronize", {V(2000, cuCtxSynchronize), V(13000, cuCtxSynchronize_v2)}, 0, NULL},
    {"cuMemAlloc", {V(3020, cuMemAlloc_v2)}, 0, NULL},
    {"cuMemAllocPitch", {V(3020, cuMemAllocPitch_v2)}, 0, NULL},
    {"cuMemFree", {V(3020, cuMemFree_v2)}, 0, NULL},
    {"cuMemGetInfo", {V(3020, cuMemGetInfo_v2)}, 0, NULL},
    {"cuMemGetAddressRange", {V(3020, cuMemGetAddressRange_v2)}, 0, NULL},
    {"cuMemAllocHost", {V(3020, cuMemAllocHost_v2)}, 0, NULL},
    ONE(cuMemFreeHost, 2000),
    ONE(cuMemHostAlloc, 2020),
    {"cuMemHostRegister", {V(4000, cuMemHostRegister), V(6050, cuMemHostRegister_v2)}, 0, NULL},
    ONE(cuMemHostUnregister, 4000),
    {"cuMemHostGetDevicePointer", {V(3020, cuMemHostGetDevicePointer_v2)}, 0, NULL},
    ONE(cuMemAllocManaged, 6000),
    {"cuMemAllocAsync", {V(11020, cuMemAllocAsync)}, 11020, "cuMemAllocAsync_ptsz"},
    {"cuMemFreeAsync", {V(11020, cuMemFreeAsync)}, 11020, "cuMemFreeAsync_ptsz"},
    {"cuMemcpy", {V(4000, cuMemcpy)}, 7000, "cuMemcpy_ptds"},
    {"cuMemcpyAsync", {V(4000, cuMemcpyAsync)}, 7000, "cuMemcpyAsync_ptsz"},
    {"cuMemcpyHtoD", {V(3020, cuMemcpyHtoD_v2)}, 7000, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyDtoH", {V(3020, cuMemcpyDtoH_v2)}, 7000, "cuMemcpyDtoH_v2_ptds"},
    {"cuMemcpyDtoD", {V(3020, cuMemcpyDtoD_v2)}, 7000, "cuMemcpyDtoD_v2_ptds"},
    {"cuMemcpyHtoDAsync", {V(3020, cuMemcpyHtoDAsync_v2)}, 7000, "cuMemcpyHtoDAsync_v2_ptsz"},
    {"cuMemcpyDtoHAsync", {V(3020, cuMemcpyDtoHAsync_v2)}, 7000, "cuMemcpyDtoHAsync_v2_ptsz"},
    {"cuMemcpyDtoDAsync", {V(3020, cuMemcpyDtoDAsync_v2)}, 7000, "cuMemcpyDtoDAsync_v2_ptsz"},
    {"cuMemsetD8", {V(3020, cuMemsetD8_v2)}, 7000, "cuMemsetD8_v2_ptds"},
    {"cuMemsetD32", {V(3020, cuMemsetD32_v2)}, 7000, "cuMemsetD32_v2_ptds"},
    {"cuMemsetD8Async", {V(3020, cuMemsetD8Async)}, 7000, "cuMemsetD8Async_ptsz"},
    {"cuMemsetD32Async", {V(3020, cuMemsetD32Async)}, 7000, "cuMemsetD32Async_ptsz"},
    ONE(cuPointerGetAttribute, 4000),
    ONE(cuPointerGetAttributes, 7000),
    ONE(cuMemAddressReserve, 10020),
    ONE(cuMemAddressFree, 10020),
    ONE(cuMemCreate, 10020),
    ONE(cuMemRelease, 10020),
    ONE(cuMemMap, 10020),
    ONE(cuMemUnmap, 10020),
    ONE(cuMemSetAccess, 10020),
    ONE(cuMemGetAccess, 10020),
    ONE(cuMemGetAllocationGranularity, 10020),
    ONE(cuMemGetAllocationPropertiesFromHandle, 10020),
    ONE(cuMemRetainAllocationHandle, 11000),
    ONE(cuStreamCreate, 2000),
    {"cuStreamDestroy", {V(4000, cuStreamDestroy_v2)}, 0, NULL},
    {"cuStreamSynchronize", {V(2000, cuStreamSynchronize)}, 7000, "cuStreamSynchronize_ptsz"},
    {"cuStreamQuery", {V(2000, cuStreamQuery)}, 7000, "cuStreamQuery_ptsz"},
    {"cuStreamWaitEvent", {V(3020, cuStreamWaitEvent)}, 7000, "cuStreamWaitEvent_ptsz"},
    ONE(cuEventCreate, 2000),
    {"cuEventRecord", {V(2000, cuEventRecord)}, 7000, "cuEventRecord_ptsz"},
    ONE(cuEventQuery, 2000),
    ONE(cuEventSynchronize, 2000),
    {"cuEventDestroy", {V(4000, cuEventDestroy_v2)}, 0, NULL},
    {"cuEventElapsedTime", {V(2000, cuEventElapsedTime), V(12080, cuEventElapsedTime_v2)}, 0, NULL},
    ONE(cuModuleLoad, 2000),
    ONE(cuModuleLoadData, 2000),
    ONE(cuModuleGetFunction, 2000),
    ONE(cuModuleUnload, 2000),
    {"cuLaunchKernel", {V(4000, cuLaunchKernel)}, 7000, "cuLaunchKernel_ptsz"},
    {"cuGetProcAddress", {V(11030, cuGetProcAddress), V(12000, cuGetProcAddress_v2)}, 0, NULL},
    ONE(cuGetErrorName, 6000),
    ONE(cuGetErrorString, 6000),
};
enum { N_PROC = sizeof proc_table / sizeof proc_table[0] };

/* The symbol cuGetProcAddress must return, or NULL when cudaVersion predates the function. */
static const char *expected_symbol(const struct proc_entry *e, int version, cuuint64_t flags)
{
    const char *name = NULL;
    for (int i = 0; i < 3 && e->abi[i].name; i++)
        if (e->abi[i].since <= version)
            name = e->abi[i].name;
    if (name && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && e->per_thread &&
        e->per_thread_since <= version)
        name = e->per_thread;
    return name;
}

static void *exported(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

/* =======================================================================================
 * cuGetProcAddress
 * ==================================================================================== */

/* For CUDA 12.0 and 13.0 and every flag: DEFAULT is LEGACY_STREAM for code built without
 * per-thread default streams, LEGACY_STREAM finds all versions "except the corresponding
 * per-thread versions", PER_THREAD_DEFAULT_STREAM returns the per-thread version and "If a
 * per-thread version is not found, the API will return the legacy version". */
static void proc_address_follows_abi_versions(void **state)
{
    (void)state;
    static const int versions[] = {12000, 13000};
    static const cuuint64_t flags[] = {CU_GET_PROC_ADDRESS_DEFAULT,
                                       CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
    int mismatches = 0;
    for (size_t i = 0; i < N_PROC; i++)
        for (size_t v = 0; v < 2; v++)
            for (size_t f = 0; f < 3; f++) {
                const struct proc_entry *e = &proc_table[i];
                const char *want = expected_symbol(e, versions[v], flags[f]);
                void *want_pfn = want ? exported(want) : NULL;
                void *pfn = (void *)(uintptr_t)0x1;
                CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)99;
                CUresult rc = cuGetProcAddress(e->symbol, &pfn, versions[v], flags[f], &status);
                bool found = rc == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS;
                bool ok = want_pfn ? found && pfn == want_pfn : pfn == NULL;
                if (!ok) {
                    print_error("%s @%d flags %d: %s status %d pfn %p, expected %s (%p)\n",
                                e->symbol, versions[v], (int)flags[f], cu_result_name(rc),
                                (int)status, pfn, want ? want : "none", want_pfn);
                    mismatches++;
                }
            }
    assert_int_equal(mismatches, 0);
}

/* Every function in scope resolves at the driver's own version, 13.0. */
static void proc_address_resolves_every_function(void **state)
{
    (void)state;
    int missing = 0;
    for (size_t i = 0; i < N_PROC; i++) {
        for (cuuint64_t flags = 0; flags <= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; flags++) {
            void *pfn = NULL;
            CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            CUresult rc = cuGetProcAddress(proc_table[i].symbol, &pfn, 13000, flags, &status);
            const char *want = expected_symbol(&proc_table[i], 13000, flags);
            if (rc != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || pfn == NULL ||
                exported(want) == NULL) {
                print_error("%s @13000 flags %d: %s status %d pfn %p; dlsym(%s) = %p\n",
                            proc_table[i].symbol, (int)flags, cu_result_name(rc), (int)status,
                            pfn, want, exported(want));
                missing++;
            }
        }
    }
    assert_int_equal(missing, 0);
}

/* The two ABIs of cuCtxSynchronize and cuCtxGetDevice are different functions: at 12000
 * the v1 (no context argument), at 13000 the _v2 that takes one ("If the specified
 * context is NULL, the API will operate on the current context"). Each works when called
 * with its own prototype. */
static void proc_address_distinguishes_abis(void **state)
{
    (void)state;
    PFN_cuCtxSynchronize_v2000 sync_v1 = NULL;
    PFN_cuCtxSynchronize_v13000 sync_v2 = NULL;
    assert_cu_ok(cuGetProcAddress("cuCtxSynchronize", (void **)&sync_v1, 12000,
                                  CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_cu_ok(cuGetProcAddress("cuCtxSynchronize", (void **)&sync_v2, 13000,
                                  CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_non_null(sync_v1);
    assert_non_null(sync_v2);
    assert_true((void *)sync_v1 != (void *)sync_v2);
    assert_ptr_equal((void *)sync_v1, exported("cuCtxSynchronize"));
    assert_ptr_equal((void *)sync_v2, exported("cuCtxSynchronize_v2"));
    assert_cu_ok(sync_v1());
    assert_cu_ok(sync_v2(NULL));
    assert_cu_ok(sync_v2(tdev.primary));

    PFN_cuCtxGetDevice_v2000 get_device_v1 = NULL;
    PFN_cuCtxGetDevice_v13000 get_device_v2 = NULL;
    assert_cu_ok(cuGetProcAddress("cuCtxGetDevice", (void **)&get_device_v1, 12000,
                                  CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_cu_ok(cuGetProcAddress("cuCtxGetDevice", (void **)&get_device_v2, 13000,
                                  CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_non_null(get_device_v1);
    assert_non_null(get_device_v2);
    CUdevice dev = -1;
    assert_cu_ok(get_device_v1(&dev));
    assert_int_equal(dev, tdev.dev);
    dev = -1;
    assert_cu_ok(get_device_v2(&dev, NULL));
    assert_int_equal(dev, tdev.dev);
    dev = -1;
    assert_cu_ok(get_device_v2(&dev, tdev.primary));
    assert_int_equal(dev, tdev.dev);
}

/* The per-thread variants handed out for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM are
 * working functions, with the NULL stream meaning the calling thread's default stream. */
static void proc_address_per_thread_variants_work(void **state)
{
    (void)state;
    PFN_cuMemcpyHtoD_v7000_ptds htod = NULL;
    PFN_cuMemsetD32Async_v7000_ptsz memset_async = NULL;
    PFN_cuMemcpyDtoHAsync_v7000_ptsz dtoh_async = NULL;
    PFN_cuStreamSynchronize_v7000_ptsz sync = NULL;
    cuuint64_t per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    assert_cu_ok(cuGetProcAddress("cuMemcpyHtoD", (void **)&htod, 13000, per_thread, NULL));
    assert_cu_ok(cuGetProcAddress("cuMemsetD32Async", (void **)&memset_async, 13000, per_thread,
                                  NULL));
    assert_cu_ok(cuGetProcAddress("cuMemcpyDtoHAsync", (void **)&dtoh_async, 13000, per_thread,
                                  NULL));
    assert_cu_ok(cuGetProcAddress("cuStreamSynchronize", (void **)&sync, 13000, per_thread, NULL));
    assert_non_null(htod);
    assert_non_null(memset_async);
    assert_non_null(dtoh_async);
    assert_non_null(sync);

    uint32_t in[256], out[256];
    for (uint32_t i = 0; i < 256; i++)
        in[i] = i * 3u;
    CUdeviceptr dev = 0;
    assert_cu_ok(cuMemAlloc(&dev, sizeof in));
    assert_cu_ok(htod(dev, in, sizeof in));
    assert_cu_ok(memset_async(dev, 0xabcdu, 16, NULL));
    memset(out, 0, sizeof out);
    assert_cu_ok(dtoh_async(out, dev, sizeof out, NULL));
    assert_cu_ok(sync(NULL));
    for (uint32_t i = 0; i < 256; i++)
        assert_int_equal(out[i], i < 16 ? 0xabcdu : i * 3u);
    assert_cu_ok(cuMemFree(dev));
}

/* "symbolStatus - Optional location": NULL is accepted and changes nothing else. */
static void proc_address_accepts_null_status(void **state)
{
    (void)state;
    void *pfn = NULL;
    assert_cu_ok(cuGetProcAddress("cuMemAlloc", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    assert_non_null(pfn);
    assert_ptr_equal(pfn, exported("cuMemAlloc_v2"));
    pfn = (void *)(uintptr_t)0x1;
    CUresult rc = cuGetProcAddress("cuNoSuchFunction", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                   NULL);
    assert_true(rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND);
    assert_null(pfn);
}

/* An unknown name: "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND - The requested symbol was not
 * found" with pfn NULL. cuda.h says the call returns CUDA_SUCCESS; drivers in the field
 * return CUDA_ERROR_NOT_FOUND (simcuda's own test pins that down). A known name asked for
 * a version before its introduction: "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT - The
 * requested symbol was found but is not supported by cudaVersion specified". */
static void proc_address_not_found_and_too_old(void **state)
{
    (void)state;
    void *pfn = (void *)(uintptr_t)0x1;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc = cuGetProcAddress("cuNoSuchFunction", &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                   &status);
    assert_true(rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND);
    assert_null(pfn);
    assert_int_equal(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);

    static const struct {
        const char *symbol;
        int version;
    } too_old[] = {{"cuMemAllocAsync", 11000}, {"cuMemCreate", 10010}, {"cuGetProcAddress", 11020}};
    for (size_t i = 0; i < sizeof too_old / sizeof too_old[0]; i++) {
        pfn = (void *)(uintptr_t)0x1;
        status = CU_GET_PROC_ADDRESS_SUCCESS;
        rc = cuGetProcAddress(too_old[i].symbol, &pfn, too_old[i].version,
                              CU_GET_PROC_ADDRESS_DEFAULT, &status);
        if (!((rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND) && pfn == NULL &&
              status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)) {
            print_error("%s @%d: %s status %d pfn %p\n", too_old[i].symbol, too_old[i].version,
                        cu_result_name(rc), (int)status, pfn);
            fail();
        }
    }
}

/* "If the specified CUDA version is greater than the driver version, the API will return
 * CUDA_ERROR_INVALID_VALUE"; NULL symbol or pfn are invalid values. */
static void proc_address_rejects_bad_arguments(void **state)
{
    (void)state;
    int driver = 0;
    assert_cu_ok(cuDriverGetVersion(&driver));
    void *pfn = NULL;
    assert_cu(cuGetProcAddress("cuMemAlloc", &pfn, driver + 1000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuGetProcAddress(NULL, &pfn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuGetProcAddress("cuMemAlloc", NULL, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
              CUDA_ERROR_INVALID_VALUE);
}

/* The first entry point, cuGetProcAddress (v11030, no symbolStatus), resolves the same way. */
static void proc_address_v1_entry_point(void **state)
{
    (void)state;
    PFN_cuGetProcAddress_v11030 v1 = (PFN_cuGetProcAddress_v11030)exported("cuGetProcAddress");
    assert_non_null(v1);
    void *pfn = NULL;
    assert_cu_ok(v1("cuMemAlloc", &pfn, 12000, CU_GET_PROC_ADDRESS_DEFAULT));
    assert_ptr_equal(pfn, exported("cuMemAlloc_v2"));
    assert_cu_ok(v1("cuMemcpyHtoD", &pfn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
    assert_ptr_equal(pfn, exported("cuMemcpyHtoD_v2_ptds"));
}

/* =======================================================================================
 * cuGetErrorName / cuGetErrorString
 * ==================================================================================== */

/* cuGetErrorName "Sets *pStr to the address of a NULL-terminated string representation of
 * the name of the enum error code", for every code cuda.h declares; cuGetErrorString gives
 * a description. "If the error code is not recognized, CUDA_ERROR_INVALID_VALUE will be
 * returned and *pStr will be set to the NULL address." */
static void error_names_and_strings(void **state)
{
    (void)state;
    static const struct {
        CUresult code;
        const char *name;
    } codes[] = {
#define CU_RESULT(name) {name, #name},
#include "cu_results.inc"
#undef CU_RESULT
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *name = NULL, *text = NULL;
        CUresult rn = cuGetErrorName(codes[i].code, &name);
        CUresult rs = cuGetErrorString(codes[i].code, &text);
        if (rn != CUDA_SUCCESS || !name || strcmp(name, codes[i].name) != 0 || rs != CUDA_SUCCESS ||
            !text || text[0] == '\0') {
            print_error("%s (%d): name %s -> \"%s\", string %s -> \"%s\"\n", codes[i].name,
                        (int)codes[i].code, cu_result_name(rn), name ? name : "(null)",
                        cu_result_name(rs), text ? text : "(null)");
            wrong++;
        }
    }
    assert_int_equal(wrong, 0);

    const char *s = "unchanged";
    assert_cu(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    assert_null(s);
    s = "unchanged";
    assert_cu(cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
    assert_null(s);
    assert_cu(cuGetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuGetErrorString(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* =======================================================================================
 * Groups
 * ==================================================================================== */

int run_proc_address_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(proc_address_follows_abi_versions),
        conformance_test(proc_address_resolves_every_function),
        conformance_test(proc_address_distinguishes_abis),
        conformance_test(proc_address_per_thread_variants_work),
        conformance_test(proc_address_accepts_null_status),
        conformance_test(proc_address_not_found_and_too_old),
        conformance_test(proc_address_rejects_bad_arguments),
        conformance_test(proc_address_v1_entry_point),
        conformance_test(error_names_and_strings),
    };
    return cmocka_run_group_tests_name("entry points and error names", tests,
                                       setup_primary_context, teardown_primary_context);
}
