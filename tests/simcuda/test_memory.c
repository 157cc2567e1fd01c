/* test_memory.c — conformance: device, host and managed memory, copies, memset, pointer
 * attributes.
 *
 * Documentation references are to the doc comments in cuda.h (CUDA 13.0) unless noted.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

#define MIB ((size_t)1 << 20)

static void fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

static CUdeviceptr alloc_device(size_t bytes)
{
    CUdeviceptr ptr = 0;
    assert_cu_ok(cuMemAlloc(&ptr, bytes));
    assert_true(ptr != 0);
    return ptr;
}

/* =======================================================================================
 * cuMemAlloc / cuMemFree / cuMemGetInfo / cuMemGetAddressRange / cuMemAllocPitch
 * ==================================================================================== */

/* cuMemAlloc: "If bytesize is 0, cuMemAlloc() returns CUDA_ERROR_INVALID_VALUE". Returned
 * memory is "suitably aligned for any kind of variable"; the CUDA C++ Programming Guide
 * (device memory accesses) states allocations are aligned to at least 256 bytes. */
static void alloc_and_free(void **state)
{
    (void)state;
    CUdeviceptr big = alloc_device(MIB), tiny = alloc_device(1), odd = alloc_device(1000);
    assert_int_equal(big % 256, 0);
    assert_int_equal(tiny % 256, 0);
    assert_int_equal(odd % 256, 0);
    assert_true(big != tiny && tiny != odd && big != odd);
    assert_cu_ok(cuMemFree(big));
    assert_cu_ok(cuMemFree(tiny));
    assert_cu_ok(cuMemFree(odd));

    CUdeviceptr ptr = 0;
    assert_cu(cuMemAlloc(&ptr, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAlloc(NULL, 4096), CUDA_ERROR_INVALID_VALUE);
}

/* cuMemFree: dptr "must have been returned by a previous call to one of the following
 * memory allocation APIs"; anything else (freed already, inside an allocation, a host
 * address) is CUDA_ERROR_INVALID_VALUE, the only argument error it lists. */
static void free_rejects_what_it_did_not_allocate(void **state)
{
    (void)state;
    CUdeviceptr ptr = alloc_device(MIB);
    assert_cu(cuMemFree(ptr + 256), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFree(ptr));
    assert_cu(cuMemFree(ptr), CUDA_ERROR_INVALID_VALUE);
    int on_stack = 0;
    assert_cu(cuMemFree((CUdeviceptr)(uintptr_t)&on_stack), CUDA_ERROR_INVALID_VALUE);
}

static void mem_get_info(void **state)
{
    (void)state;
    size_t free0 = 0, total = 0, device_total = 0;
    assert_cu_ok(cuMemGetInfo(&free0, &total));
    assert_cu_ok(cuDeviceTotalMem(&device_total, tdev.dev));
    assert_true(total > 0 && total <= device_total);
    assert_true(free0 <= total);

    size_t bytes = 64 * MIB;
    CUdeviceptr ptr = alloc_device(bytes);
    size_t free1 = 0;
    assert_cu_ok(cuMemGetInfo(&free1, &total));
    assert_true(free1 + bytes <= free0);
    assert_cu_ok(cuMemFree(ptr));

    assert_cu(cuMemGetInfo(NULL, &total), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemGetInfo(&free0, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* cuMemGetAddressRange: base and size of the allocation containing dptr; either output is
 * optional; an address in no allocation is CUDA_ERROR_NOT_FOUND. */
static void address_range(void **state)
{
    (void)state;
    size_t bytes = 4 * MIB;
    CUdeviceptr ptr = alloc_device(bytes);
    CUdeviceptr base = 0;
    size_t size = 0;
    assert_cu_ok(cuMemGetAddressRange(&base, &size, ptr + bytes / 2 + 3));
    assert_true(base == ptr);
    assert_int_equal(size, bytes);
    base = 0;
    assert_cu_ok(cuMemGetAddressRange(&base, NULL, ptr + bytes - 1));
    assert_true(base == ptr);
    size = 0;
    assert_cu_ok(cuMemGetAddressRange(NULL, &size, ptr));
    assert_int_equal(size, bytes);

    CUdeviceptr odd = alloc_device(1000);
    assert_cu_ok(cuMemGetAddressRange(&base, &size, odd + 999));
    assert_true(base == odd);
    assert_true(size >= 1000);
    assert_cu_ok(cuMemFree(odd));

    int on_stack = 0;
    assert_cu(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)&on_stack),
              CUDA_ERROR_NOT_FOUND);
    assert_cu_ok(cuMemFree(ptr));
    assert_cu(cuMemGetAddressRange(&base, &size, ptr), CUDA_ERROR_NOT_FOUND);
}

/* cuMemAllocPitch: at least WidthInBytes * Height bytes, rows Pitch apart;
 * "ElementSizeBytes may be 4, 8 or 16". */
static void alloc_pitch(void **state)
{
    (void)state;
    size_t width = 1000, height = 10, pitch = 0;
    CUdeviceptr ptr = 0;
    assert_cu_ok(cuMemAllocPitch(&ptr, &pitch, width, height, 4));
    assert_true(ptr != 0);
    assert_true(pitch >= width);
    size_t size = 0;
    assert_cu_ok(cuMemGetAddressRange(NULL, &size, ptr));
    assert_true(size >= pitch * (height - 1) + width);

    uint8_t row[1000], back[1000];
    for (size_t r = 0; r < height; r++) {
        fill_pattern(row, width, (uint32_t)r);
        assert_cu_ok(cuMemcpyHtoD(ptr + r * pitch, row, width));
    }
    for (size_t r = 0; r < height; r++) {
        fill_pattern(row, width, (uint32_t)r);
        assert_cu_ok(cuMemcpyDtoH(back, ptr + r * pitch, width));
        assert_memory_equal(back, row, width);
    }
    assert_cu_ok(cuMemFree(ptr));

    assert_cu(cuMemAllocPitch(&ptr, &pitch, width, height, 3), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAllocPitch(&ptr, &pitch, width, height, 32), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAllocPitch(&ptr, NULL, width, height, 4), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAllocPitch(NULL, &pitch, width, height, 4), CUDA_ERROR_INVALID_VALUE);
}

/* =======================================================================================
 * Copies and memset
 * ==================================================================================== */

static void synchronous_copies(void **state)
{
    (void)state;
    size_t n = MIB + 123;
    uint8_t *src = malloc(n), *dst = malloc(n);
    assert_non_null(src);
    assert_non_null(dst);
    fill_pattern(src, n, 7);
    CUdeviceptr a = alloc_device(n), b = alloc_device(n);

    assert_cu_ok(cuMemcpyHtoD(a, src, n));
    assert_cu_ok(cuMemcpyDtoD(b, a, n));
    memset(dst, 0, n);
    assert_cu_ok(cuMemcpyDtoH(dst, b, n));
    assert_memory_equal(dst, src, n);

    /* Sub-ranges at odd offsets land exactly where asked. */
    assert_cu_ok(cuMemcpyHtoD(b + 17, src + 1000, 333));
    memset(dst, 0, n);
    assert_cu_ok(cuMemcpyDtoH(dst, b, n));
    assert_memory_equal(dst, src, 17);
    assert_memory_equal(dst + 17, src + 1000, 333);
    assert_memory_equal(dst + 350, src + 350, n - 350);

    /* cuMemcpy "infers the type of the transfer ... from the pointer values". */
    fill_pattern(src, n, 99);
    assert_cu_ok(cuMemcpy(a, (CUdeviceptr)(uintptr_t)src, n));      /* host -> device */
    assert_cu_ok(cuMemcpy(b, a, n));                                  /* device -> device */
    memset(dst, 0, n);
    assert_cu_ok(cuMemcpy((CUdeviceptr)(uintptr_t)dst, b, n));      /* device -> host */
    assert_memory_equal(dst, src, n);
    memset(dst, 0, n);
    assert_cu_ok(cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
    assert_memory_equal(dst, src, n);                                 /* host -> host */

    assert_cu_ok(cuMemFree(a));
    assert_cu_ok(cuMemFree(b));
    free(src);
    free(dst);
}

static void asynchronous_copies(void **state)
{
    (void)state;
    size_t n = 2 * MIB + 5;
    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    uint8_t *src = NULL, *dst = NULL;
    assert_cu_ok(cuMemAllocHost((void **)&src, n));
    assert_cu_ok(cuMemAllocHost((void **)&dst, n));
    fill_pattern(src, n, 3);
    memset(dst, 0, n);
    CUdeviceptr a = alloc_device(n), b = alloc_device(n);

    /* One stream runs its work in order: each copy reads what the previous one wrote. */
    assert_cu_ok(cuMemcpyHtoDAsync(a, src, n, stream));
    assert_cu_ok(cuMemcpyDtoDAsync(b, a, n, stream));
    assert_cu_ok(cuMemcpyDtoHAsync(dst, b, n, stream));
    assert_cu_ok(cuStreamSynchronize(stream));
    assert_memory_equal(dst, src, n);

    fill_pattern(src, n, 4);
    memset(dst, 0, n);
    assert_cu_ok(cuMemcpyAsync(b, (CUdeviceptr)(uintptr_t)src, n, stream));
    assert_cu_ok(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, b, n, stream));
    assert_cu_ok(cuStreamSynchronize(stream));
    assert_memory_equal(dst, src, n);

    /* The NULL stream takes async copies too. */
    memset(dst, 0, n);
    assert_cu_ok(cuMemcpyDtoHAsync(dst, b, n, NULL));
    assert_cu_ok(cuStreamSynchronize(NULL));
    assert_memory_equal(dst, src, n);

    assert_cu_ok(cuMemFree(a));
    assert_cu_ok(cuMemFree(b));
    assert_cu_ok(cuMemFreeHost(src));
    assert_cu_ok(cuMemFreeHost(dst));
    assert_cu_ok(cuStreamDestroy(stream));
}

/* cuMemsetD8/D32 set N elements; cuMemsetD32: "The dstDevice pointer must be four byte
 * aligned" (CUDA_ERROR_INVALID_VALUE otherwise). */
static void memset_8_and_32(void **state)
{
    (void)state;
    size_t n = 4096;
    CUdeviceptr ptr = alloc_device(n);
    uint8_t host[4096], expect[4096];
    memset(expect, 0x11, n);
    assert_cu_ok(cuMemsetD8(ptr, 0x11, n));
    assert_cu_ok(cuMemsetD8(ptr + 3, 0xab, 1000));
    memset(expect + 3, 0xab, 1000);
    assert_cu_ok(cuMemcpyDtoH(host, ptr, n));
    assert_memory_equal(host, expect, n);

    assert_cu_ok(cuMemsetD32(ptr + 8, 0xdeadbeefu, 100));
    assert_cu_ok(cuMemcpyDtoH(host, ptr, n));
    for (size_t i = 0; i < 100; i++) {
        uint32_t word;
        memcpy(&word, host + 8 + 4 * i, 4);
        assert_int_equal(word, 0xdeadbeefu);
    }
    assert_memory_equal(host, expect, 8);
    assert_memory_equal(host + 408, expect + 408, n - 408);

    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
    assert_cu_ok(cuMemsetD8Async(ptr, 0x5a, n, stream));
    assert_cu_ok(cuMemsetD32Async(ptr + 4, 0x01020304u, 2, stream));
    assert_cu_ok(cuStreamSynchronize(stream));
    assert_cu_ok(cuMemcpyDtoH(host, ptr, 16));
    static const uint8_t want[16] = {0x5a, 0x5a, 0x5a, 0x5a, 4, 3, 2, 1,
                                     4,    3,    2,    1,    0x5a, 0x5a, 0x5a, 0x5a};
    assert_memory_equal(host, want, 16);
    assert_cu_ok(cuStreamDestroy(stream));

    assert_cu(cuMemsetD32(ptr + 2, 0, 4), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemsetD32Async(ptr + 1, 0, 4, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFree(ptr));
}

/* =======================================================================================
 * Page-locked host memory
 * ==================================================================================== */

static unsigned int pointer_memory_type(CUdeviceptr ptr)
{
    unsigned int type = 0;
    assert_cu_ok(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr));
    return type;
}

/* cuMemAllocHost: "The device pointer that may be used to access this host memory from
 * those contexts is always equal to the returned host pointer"; cuMemFreeHost takes only
 * what cuMemAllocHost returned. */
static void alloc_host(void **state)
{
    (void)state;
    size_t n = 64 * 1024;
    uint8_t *host = NULL;
    assert_cu_ok(cuMemAllocHost((void **)&host, n));
    assert_non_null(host);
    fill_pattern(host, n, 5);
    CUdeviceptr dev = alloc_device(n);
    assert_cu_ok(cuMemcpyHtoD(dev, host, n));
    uint8_t *back = malloc(n);
    assert_non_null(back);
    assert_cu_ok(cuMemcpyDtoH(back, dev, n));
    assert_memory_equal(back, host, n);

    CUdeviceptr as_device = (CUdeviceptr)(uintptr_t)host;
    assert_int_equal(pointer_memory_type(as_device), CU_MEMORYTYPE_HOST);
    void *host_pointer = NULL;
    assert_cu_ok(cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                       as_device + 10));
    assert_ptr_equal(host_pointer, host + 10);
    CUdeviceptr device_pointer = 0;
    assert_cu_ok(cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                       as_device));
    assert_true(device_pointer == as_device);

    assert_cu_ok(cuMemFreeHost(host));
    assert_cu(cuMemFreeHost(host), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemFreeHost(back), CUDA_ERROR_INVALID_VALUE);
    free(back);
    assert_cu_ok(cuMemFree(dev));
}

/* cuMemHostAlloc: flags PORTABLE, DEVICEMAP, WRITECOMBINED; without WRITECOMBINED the
 * device pointer equals the host pointer. cuMemHostGetDevicePointer: "Flags ... must be
 * set to 0"; it passes back the device pointer of memory "allocated by cuMemHostAlloc". */
static void host_alloc_and_device_pointer(void **state)
{
    (void)state;
    size_t n = 64 * 1024;
    uint8_t *host = NULL;
    assert_cu_ok(cuMemHostAlloc((void **)&host, n,
                                CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr mapped = 0;
    assert_cu_ok(cuMemHostGetDevicePointer(&mapped, host, 0));
    assert_true(mapped == (CUdeviceptr)(uintptr_t)host);
    fill_pattern(host, n, 11);
    uint8_t *back = malloc(n);
    assert_non_null(back);
    assert_cu_ok(cuMemcpyDtoH(back, mapped, n)); /* the device side sees the host's bytes */
    assert_memory_equal(back, host, n);

    assert_cu(cuMemHostGetDevicePointer(&mapped, host, 1), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemHostGetDevicePointer(&mapped, back, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemHostGetDevicePointer(NULL, host, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFreeHost(host));
    free(back);

    void *wc = NULL;
    assert_cu_ok(cuMemHostAlloc(&wc, n, CU_MEMHOSTALLOC_WRITECOMBINED | CU_MEMHOSTALLOC_DEVICEMAP));
    assert_cu_ok(cuMemHostGetDevicePointer(&mapped, wc, 0));
    assert_true(mapped != 0);
    assert_cu_ok(cuMemFreeHost(wc));

    void *bad = NULL;
    assert_cu(cuMemHostAlloc(&bad, n, 0x80), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemHostAlloc(NULL, n, 0), CUDA_ERROR_INVALID_VALUE);
}

/* cuMemHostRegister / cuMemHostUnregister: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED for a
 * range registered already, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED to unregister one that
 * is not; "The base address must be the same one specified to cuMemHostRegister()". */
static void host_register(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 16 * page;
    uint8_t *buf = NULL;
    assert_int_equal(posix_memalign((void **)&buf, page, n), 0);
    fill_pattern(buf, n, 21);
    assert_cu_ok(cuMemHostRegister(buf, n, CU_MEMHOSTREGISTER_DEVICEMAP));
    CUdeviceptr mapped = 0;
    assert_cu_ok(cuMemHostGetDevicePointer(&mapped, buf, 0));
    assert_true(mapped != 0);

    CUdeviceptr dev = alloc_device(n);
    assert_cu_ok(cuMemcpyDtoD(dev, mapped, n)); /* read through the device mapping */
    uint8_t *back = malloc(n);
    assert_non_null(back);
    assert_cu_ok(cuMemcpyDtoH(back, dev, n));
    assert_memory_equal(back, buf, n);
    assert_int_equal(pointer_memory_type((CUdeviceptr)(uintptr_t)buf), CU_MEMORYTYPE_HOST);
    CUdeviceptr device_pointer = 0;
    assert_cu_ok(cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                       (CUdeviceptr)(uintptr_t)buf));
    assert_true(device_pointer == mapped);

    assert_cu(cuMemHostRegister(buf + page, page, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    assert_cu_either(cuMemHostUnregister(buf + page), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                     CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemHostUnregister(buf));
    assert_cu(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    assert_cu(cuMemHostUnregister(back), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

    assert_cu(cuMemHostRegister(NULL, n, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemHostRegister(buf, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemHostRegister(buf, n, 0x40), CUDA_ERROR_INVALID_VALUE);

    assert_cu_ok(cuMemFree(dev));
    free(back);
    free(buf);
}

/* =======================================================================================
 * Managed and stream-ordered memory
 * ==================================================================================== */

/* cuMemAllocManaged: "flags must be one of CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST";
 * "If bytesize is 0, cuMemAllocManaged returns CUDA_ERROR_INVALID_VALUE"; the pointer "is
 * valid on the CPU and on all GPUs"; released with cuMemFree. */
static void alloc_managed(void **state)
{
    (void)state;
    size_t n = 256 * 1024;
    CUdeviceptr ptr = 0;
    assert_cu_ok(cuMemAllocManaged(&ptr, n, CU_MEM_ATTACH_GLOBAL));
    uint8_t *host = (uint8_t *)(uintptr_t)ptr;
    fill_pattern(host, n, 31);
    uint8_t *back = malloc(n);
    assert_non_null(back);
    assert_cu_ok(cuMemcpyDtoH(back, ptr, n));
    assert_memory_equal(back, host, n);
    assert_cu_ok(cuMemsetD8(ptr, 0x77, 16));
    assert_cu_ok(cuCtxSynchronize());
    assert_int_equal(host[15], 0x77);

    unsigned int managed = 0;
    assert_cu_ok(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr));
    assert_int_equal(managed, 1);
    assert_cu_ok(cuMemFree(ptr));
    free(back);

    assert_cu_ok(cuMemAllocManaged(&ptr, n, CU_MEM_ATTACH_HOST));
    assert_cu_ok(cuMemFree(ptr));
    assert_cu(cuMemAllocManaged(&ptr, n, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAllocManaged(&ptr, n, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAllocManaged(&ptr, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
}

/* cuMemAllocAsync / cuMemFreeAsync on the device's default pool: the allocation is usable
 * by later work in the same stream. */
static void alloc_async(void **state)
{
    (void)state;
    size_t words = 65536;
    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    uint32_t *host = NULL;
    assert_cu_ok(cuMemAllocHost((void **)&host, words * 4));
    memset(host, 0, words * 4);
    CUdeviceptr ptr = 0;
    assert_cu_ok(cuMemAllocAsync(&ptr, words * 4, stream));
    assert_true(ptr != 0);
    assert_cu_ok(cuMemsetD32Async(ptr, 0xc0ffee00u, words, stream));
    assert_cu_ok(cuMemcpyDtoHAsync(host, ptr, words * 4, stream));
    assert_cu_ok(cuMemFreeAsync(ptr, stream));
    assert_cu_ok(cuStreamSynchronize(stream));
    for (size_t i = 0; i < words; i++)
        assert_int_equal(host[i], 0xc0ffee00u);

    /* The NULL stream works with a current context. */
    assert_cu_ok(cuMemAllocAsync(&ptr, 4096, NULL));
    assert_cu_ok(cuMemFreeAsync(ptr, NULL));
    assert_cu_ok(cuStreamSynchronize(NULL));

    assert_cu(cuMemAllocAsync(NULL, 4096, stream), CUDA_ERROR_INVALID_VALUE);
    int on_stack = 0;
    assert_cu(cuMemFreeAsync((CUdeviceptr)(uintptr_t)&on_stack, stream), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFreeHost(host));
    assert_cu_ok(cuStreamDestroy(stream));
}

/* =======================================================================================
 * Pointer attributes
 * ==================================================================================== */

/* cuPointerGetAttribute on cuMemAlloc memory: CONTEXT is the allocating context,
 * MEMORY_TYPE is DEVICE, DEVICE_POINTER equals ptr, no HOST_POINTER exists
 * (CUDA_ERROR_INVALID_VALUE), RANGE_START_ADDR/RANGE_SIZE describe the allocation,
 * BUFFER_ID is unique and never reused. */
static void pointer_attributes_of_device_memory(void **state)
{
    (void)state;
    size_t bytes = 2 * MIB;
    CUdeviceptr ptr = alloc_device(bytes), inner = ptr + 1000;
    CUcontext ctx = NULL;
    assert_cu_ok(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, inner));
    assert_ptr_equal(ctx, tdev.primary);
    assert_int_equal(pointer_memory_type(inner), CU_MEMORYTYPE_DEVICE);
    CUdeviceptr device_pointer = 0;
    assert_cu_ok(cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, inner));
    assert_true(device_pointer == inner);
    void *host_pointer = NULL;
    assert_cu(cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, inner),
              CUDA_ERROR_INVALID_VALUE);
    int ordinal = -1;
    assert_cu_ok(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, inner));
    assert_int_equal(ordinal, tdev.dev);
    unsigned int managed = 7, mapped = 7;
    assert_cu_ok(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, inner));
    assert_int_equal(managed, 0);
    assert_cu_ok(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, inner));
    assert_int_equal(mapped, 1);
    CUdeviceptr start = 0;
    size_t size = 0;
    assert_cu_ok(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inner));
    assert_true(start == ptr);
    assert_cu_ok(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, inner));
    assert_true(size >= bytes);

    unsigned long long id1 = 0, id2 = 0, id3 = 0;
    assert_cu_ok(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr));
    CUdeviceptr other = alloc_device(bytes);
    assert_cu_ok(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, other));
    assert_true(id1 != id2);
    assert_cu_ok(cuMemFree(ptr));
    CUdeviceptr again = alloc_device(bytes);
    assert_cu_ok(cuPointerGetAttribute(&id3, CU_POINTER_ATTRIBUTE_BUFFER_ID, again));
    assert_true(id3 != id1 && id3 != id2);
    assert_cu_ok(cuMemFree(other));
    assert_cu_ok(cuMemFree(again));
}

/* cuPointerGetAttributes returns the same values as cuPointerGetAttribute; for an address
 * CUDA does not know it "will not return an error ... the attributes are assigned default
 * NULL values and CUDA_SUCCESS is returned", while cuPointerGetAttribute reports
 * CUDA_ERROR_INVALID_VALUE. */
static void pointer_attributes_in_bulk(void **state)
{
    (void)state;
    CUdeviceptr ptr = alloc_device(MIB);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR};
    CUcontext ctx = NULL;
    unsigned int type = 0, managed = 9;
    CUdeviceptr device_pointer = 0, start = 0;
    void *data[] = {&ctx, &type, &device_pointer, &managed, &start};
    assert_cu_ok(cuPointerGetAttributes(5, attrs, data, ptr + 64));
    assert_ptr_equal(ctx, tdev.primary);
    assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
    assert_true(device_pointer == ptr + 64);
    assert_int_equal(managed, 0);
    assert_true(start == ptr);

    int on_stack = 0;
    CUdeviceptr unknown = (CUdeviceptr)(uintptr_t)&on_stack;
    ctx = (CUcontext)(uintptr_t)0x1;
    type = 99;
    device_pointer = 99;
    managed = 99;
    assert_cu_ok(cuPointerGetAttributes(4, attrs, data, unknown));
    assert_null(ctx);
    assert_int_equal(type, 0);
    assert_true(device_pointer == 0);
    assert_int_equal(managed, 0);
    assert_cu(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, unknown),
              CUDA_ERROR_INVALID_VALUE);

    assert_cu(cuPointerGetAttributes(4, NULL, data, ptr), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuPointerGetAttributes(4, attrs, NULL, ptr), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFree(ptr));
}

/* =======================================================================================
 * Groups
 * ==================================================================================== */

int run_memory_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(alloc_and_free),
        conformance_test(free_rejects_what_it_did_not_allocate),
        conformance_test(mem_get_info),
        conformance_test(address_range),
        conformance_test(alloc_pitch),
        conformance_test(synchronous_copies),
        conformance_test(asynchronous_copies),
        conformance_test(memset_8_and_32),
        conformance_test(alloc_host),
        conformance_test(host_alloc_and_device_pointer),
        conformance_test(host_register),
        conformance_test(alloc_managed),
        conformance_test(alloc_async),
        conformance_test(pointer_attributes_of_device_memory),
        conformance_test(pointer_attributes_in_bulk),
    };
    return cmocka_run_group_tests_name("memory", tests, setup_primary_context,
                                       teardown_primary_context);
}
