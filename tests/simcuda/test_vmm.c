/* test_vmm.c — conformance: the virtual memory management API (reserve, create, map,
 * access, unmap, release) with DEVICE, HOST and HOST_NUMA locations.
 *
 * Documentation references are to the doc comments in cuda.h (CUDA 13.0) unless noted.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

static size_t gran; /* device_granularity(), set by the group setup */

static int setup_vmm(void **state)
{
    if (setup_primary_context(state) != 0)
        return -1;
    CUmemAllocationProp prop = device_alloc_prop();
    if (cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
            CUDA_SUCCESS ||
        gran == 0) {
        print_error("no DEVICE allocation granularity\n");
        return -1;
    }
    return 0;
}

static CUdeviceptr reserve(size_t bytes)
{
    CUdeviceptr ptr = 0;
    assert_cu_ok(cuMemAddressReserve(&ptr, bytes, 0, 0, 0));
    assert_true(ptr != 0);
    return ptr;
}

static CUmemGenericAllocationHandle create_with(const CUmemAllocationProp *prop, size_t bytes)
{
    CUmemGenericAllocationHandle handle = 0;
    assert_cu_ok(cuMemCreate(&handle, bytes, prop, 0));
    assert_true(handle != 0);
    return handle;
}

static CUmemGenericAllocationHandle create_device(size_t bytes)
{
    CUmemAllocationProp prop = device_alloc_prop();
    return create_with(&prop, bytes);
}

static CUmemAccessDesc device_rw(void)
{
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof desc);
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = tdev.dev;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return desc;
}

static void set_device_rw(CUdeviceptr ptr, size_t bytes)
{
    CUmemAccessDesc desc = device_rw();
    assert_cu_ok(cuMemSetAccess(ptr, bytes, &desc, 1));
}

static unsigned long long device_access(CUdeviceptr ptr)
{
    CUmemLocation location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = tdev.dev};
    unsigned long long flags = 0xff;
    assert_cu_ok(cuMemGetAccess(&flags, &location, ptr));
    return flags;
}

/* Writes a pattern over [ptr, ptr+bytes) and reads it back through the driver. */
static void assert_round_trip(CUdeviceptr ptr, size_t bytes, uint32_t seed)
{
    uint32_t *src = malloc(bytes), *dst = malloc(bytes);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < bytes / 4; i++)
        src[i] = (uint32_t)i * 2654435761u + seed;
    memset(dst, 0, bytes);
    assert_cu_ok(cuMemcpyHtoD(ptr, src, bytes));
    assert_cu_ok(cuMemcpyDtoH(dst, ptr, bytes));
    assert_memory_equal(dst, src, bytes);
    free(src);
    free(dst);
}

/* The host NUMA node a HOST_NUMA allocation can use: the one closest to the device, or 0
 * ("On systems where NUMA is not available ... id must be set to 0"). */
static int host_numa_node(void)
{
    int id = -1;
    assert_cu_ok(cuDeviceGetAttribute(&id, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, tdev.dev));
    return id >= 0 ? id : 0;
}

static int host_numa_vmm_supported(void)
{
    int supported = -1;
    assert_cu_ok(cuDeviceGetAttribute(
        &supported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, tdev.dev));
    return supported;
}

static CUmemAllocationProp host_numa_prop(int node)
{
    CUmemAllocationProp prop = device_alloc_prop();
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = node;
    return prop;
}

/* =======================================================================================
 * Granularity and reservations
 * ==================================================================================== */

/* cuMemGetAllocationGranularity: a size usable "as a multiple for alignment, size, or
 * address mapping": a power of two, a multiple of the host page; RECOMMENDED is a multiple
 * of MINIMUM. */
static void granularity(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal(gran & (gran - 1), 0);
    assert_int_equal(gran % page, 0);
    CUmemAllocationProp prop = device_alloc_prop();
    size_t recommended = 0;
    assert_cu_ok(cuMemGetAllocationGranularity(&recommended, &prop,
                                               CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    assert_true(recommended >= gran && recommended % gran == 0);

    size_t g = 0;
    assert_cu(cuMemGetAllocationGranularity(NULL, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemGetAllocationGranularity(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp bad = prop;
    bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    assert_cu(cuMemGetAllocationGranularity(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_ERROR_INVALID_VALUE);
    bad = prop;
    bad.location.type = CU_MEM_LOCATION_TYPE_INVALID;
    assert_cu(cuMemGetAllocationGranularity(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_ERROR_INVALID_VALUE);
}

/* cuMemAddressReserve: "The size and address parameters must be a multiple of the host page
 * size and the alignment must be a power of two or zero"; "flags - Currently unused, must
 * be zero". cuMemAddressFree: "The size must match what was given to memAddressReserve and
 * the ptr given must match what was returned". */
static void reserve_and_free(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    CUdeviceptr ptr = reserve(4 * gran);
    CUdeviceptr aligned = 0;
    assert_cu_ok(cuMemAddressReserve(&aligned, 2 * gran, 8 * gran, 0, 0));
    assert_int_equal(aligned % (8 * gran), 0);
    assert_true(aligned + 2 * gran <= ptr || ptr + 4 * gran <= aligned); /* disjoint */

    assert_cu(cuMemAddressFree(ptr, 2 * gran), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAddressFree(ptr + gran, 3 * gran), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemAddressFree(ptr, 4 * gran));
    assert_cu(cuMemAddressFree(ptr, 4 * gran), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemAddressFree(aligned, 2 * gran));

    CUdeviceptr plain = 0;
    assert_cu_ok(cuMemAlloc(&plain, gran));
    assert_cu(cuMemAddressFree(plain, gran), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemFree(plain));

    assert_cu(cuMemAddressReserve(&ptr, 0, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAddressReserve(&ptr, gran + page / 2, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAddressReserve(&ptr, gran, 3 * page, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAddressReserve(&ptr, gran, 0, 0, 1), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemAddressReserve(NULL, gran, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
}

/* =======================================================================================
 * cuMemCreate / cuMemRelease / properties
 * ==================================================================================== */

/* cuMemCreate: size "must be a multiple of" the minimum granularity; "flags for future use,
 * must be zero now"; an unknown device is CUDA_ERROR_INVALID_DEVICE; "Specifying
 * CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT as the CUmemLocation::type will result in
 * CUDA_ERROR_INVALID_VALUE"; HOST allocations' "requestedHandleTypes must be 0, any other
 * value will result in CUDA_ERROR_INVALID_VALUE". */
static void create_rejects_bad_arguments(void **state)
{
    (void)state;
    CUmemAllocationProp prop = device_alloc_prop();
    CUmemGenericAllocationHandle handle = 0;
    int count = 0;
    assert_cu_ok(cuDeviceGetCount(&count));
    assert_cu(cuMemCreate(&handle, gran / 2, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemCreate(&handle, gran + gran / 2, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemCreate(&handle, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemCreate(&handle, gran, &prop, 1), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemCreate(NULL, gran, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemCreate(&handle, gran, NULL, 0), CUDA_ERROR_INVALID_VALUE);

    CUmemAllocationProp bad = prop;
    bad.location.id = count;
    assert_cu(cuMemCreate(&handle, gran, &bad, 0), CUDA_ERROR_INVALID_DEVICE);
    bad = prop;
    bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    assert_cu(cuMemCreate(&handle, gran, &bad, 0), CUDA_ERROR_INVALID_VALUE);
    bad = prop;
    bad.location.type = CU_MEM_LOCATION_TYPE_INVALID;
    assert_cu(cuMemCreate(&handle, gran, &bad, 0), CUDA_ERROR_INVALID_VALUE);
    bad = prop;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
    assert_cu(cuMemCreate(&handle, gran, &bad, 0), CUDA_ERROR_INVALID_VALUE);
    bad = prop;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
    bad.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    assert_cu(cuMemCreate(&handle, gran, &bad, 0), CUDA_ERROR_INVALID_VALUE);
}

/* cuMemGetAllocationPropertiesFromHandle returns the properties the handle was created
 * with. */
static void properties_from_handle(void **state)
{
    (void)state;
    CUmemGenericAllocationHandle handle = create_device(2 * gran);
    CUmemAllocationProp got;
    memset(&got, 0xff, sizeof got);
    assert_cu_ok(cuMemGetAllocationPropertiesFromHandle(&got, handle));
    assert_int_equal(got.type, CU_MEM_ALLOCATION_TYPE_PINNED);
    assert_int_equal(got.location.type, CU_MEM_LOCATION_TYPE_DEVICE);
    assert_int_equal(got.location.id, tdev.dev);
    assert_cu(cuMemGetAllocationPropertiesFromHandle(NULL, handle), CUDA_ERROR_INVALID_VALUE);
    assert_cu_ok(cuMemRelease(handle));
}

/* =======================================================================================
 * Map, access, unmap
 * ==================================================================================== */

/* cuMemMap + cuMemSetAccess make the range usable; "Please note calling cuMemMap does not
 * make the address accessible": until cuMemSetAccess the device has no access. */
static void map_set_access_and_use(void **state)
{
    (void)state;
    size_t bytes = 2 * gran;
    CUdeviceptr base = reserve(bytes);
    CUmemGenericAllocationHandle handle = create_device(bytes);
    assert_cu_ok(cuMemMap(base, bytes, 0, handle, 0));
    assert_int_equal(device_access(base), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    set_device_rw(base, bytes);
    assert_int_equal(device_access(base + gran + 12), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    assert_round_trip(base, bytes, 1);
    assert_cu_ok(cuMemsetD32(base, 0x12345678u, bytes / 4));
    uint32_t last = 0;
    assert_cu_ok(cuMemcpyDtoH(&last, base + bytes - 4, 4));
    assert_int_equal(last, 0x12345678u);
    assert_cu_ok(cuMemUnmap(base, bytes));
    assert_cu_ok(cuMemRelease(handle));
    assert_cu_ok(cuMemAddressFree(base, bytes));
}

/* "cuMemMap can only create mappings on VA range reservations that are not currently
 * mapped"; the range "must be an address reservation previously reserved with
 * cuMemAddressReserve". */
static void map_only_onto_unmapped_reserved_range(void **state)
{
    (void)state;
    CUdeviceptr base = reserve(4 * gran);
    CUmemGenericAllocationHandle a = create_device(2 * gran), b = create_device(2 * gran);
    assert_cu_ok(cuMemMap(base, 2 * gran, 0, a, 0));
    assert_cu(cuMemMap(base, 2 * gran, 0, b, 0), CUDA_ERROR_INVALID_VALUE);       /* same range */
    assert_cu(cuMemMap(base + gran, 2 * gran, 0, b, 0), CUDA_ERROR_INVALID_VALUE); /* overlaps */
    assert_cu(cuMemMap(base + 3 * gran, 2 * gran, 0, b, 0),
              CUDA_ERROR_INVALID_VALUE); /* runs past the reservation */
    assert_cu_ok(cuMemMap(base + 2 * gran, 2 * gran, 0, b, 0)); /* the free half */

    CUdeviceptr plain = 0;
    assert_cu_ok(cuMemAlloc(&plain, 2 * gran));
    CUmemGenericAllocationHandle c = create_device(gran);
    assert_cu(cuMemMap(plain, gran, 0, c, 0), CUDA_ERROR_INVALID_VALUE); /* not reserved */
    CUdeviceptr freed = reserve(gran);
    assert_cu_ok(cuMemAddressFree(freed, gran));
    assert_cu(cuMemMap(freed, gran, 0, c, 0), CUDA_ERROR_INVALID_VALUE); /* no longer reserved */

    assert_cu_ok(cuMemUnmap(base, 2 * gran));
    assert_cu_ok(cuMemUnmap(base + 2 * gran, 2 * gran));
    assert_cu_ok(cuMemRelease(a));
    assert_cu_ok(cuMemRelease(b));
    assert_cu_ok(cuMemRelease(c));
    assert_cu_ok(cuMemFree(plain));
    assert_cu_ok(cuMemAddressFree(base, 4 * gran));
}

/* cuMemMap: ptr, size and offset "must be a multiple of" the granularity; offset "currently
 * must be zero"; "offset + size must be less than the size of the memory allocation";
 * "flags for future use, must be zero now". */
static void map_rejects_bad_arguments(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    CUdeviceptr base = reserve(4 * gran);
    CUmemGenericAllocationHandle handle = create_device(2 * gran);
    assert_cu(cuMemMap(base, 2 * gran, gran, handle, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemMap(base, 4 * gran, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemMap(base, gran / 2, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemMap(base + page, gran, 0, handle, 0), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemMap(base, 2 * gran, 0, handle, 1), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemMap(base, 2 * gran, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    /* None of the failures left a mapping behind. */
    assert_cu_ok(cuMemMap(base, 2 * gran, 0, handle, 0));
    assert_cu_ok(cuMemUnmap(base, 2 * gran));
    assert_cu_ok(cuMemRelease(handle));
    assert_cu_ok(cuMemAddressFree(base, 4 * gran));
}

/* cuMemUnmap: "The range must be the entire contiguous address range that was mapped to.
 * In other words, cuMemUnmap cannot unmap a sub-range". A refused unmap leaves the
 * mapping intact. */
static void unmap_whole_mappings_only(void **state)
{
    (void)state;
    CUdeviceptr base = reserve(4 * gran);
    CUmemGenericAllocationHandle handle = create_device(2 * gran);
    assert_cu_ok(cuMemMap(base, 2 * gran, 0, handle, 0));
    set_device_rw(base, 2 * gran);
    assert_round_trip(base, 2 * gran, 2);
    assert_cu(cuMemUnmap(base, gran), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemUnmap(base + gran, gran), CUDA_ERROR_INVALID_VALUE);
    assert_round_trip(base, 2 * gran, 3);
    assert_cu_ok(cuMemUnmap(base, 2 * gran));
    assert_cu(cuMemUnmap(base, 2 * gran), CUDA_ERROR_INVALID_VALUE);          /* not mapped */
    assert_cu(cuMemUnmap(base + 2 * gran, 2 * gran), CUDA_ERROR_INVALID_VALUE); /* never was */
    assert_cu_ok(cuMemRelease(handle));
    assert_cu_ok(cuMemAddressFree(base, 4 * gran));
}

/* cuMemUnmap: "the address range is converted to an address reservation and can be used
 * for a future calls to cuMemMap. Any new mapping to this virtual address will need to
 * have access granted through cuMemSetAccess, as all mappings start with no
 * accessibility setup." */
static void remap_same_address_needs_access_again(void **state)
{
    (void)state;
    CUdeviceptr base = reserve(2 * gran);
    CUmemGenericAllocationHandle first = create_device(2 * gran), second = create_device(2 * gran);
    assert_cu_ok(cuMemMap(base, 2 * gran, 0, first, 0));
    set_device_rw(base, 2 * gran);
    assert_cu_ok(cuMemsetD32(base, 0x1111u, 2 * gran / 4));
    assert_cu_ok(cuMemUnmap(base, 2 * gran));

    assert_cu_ok(cuMemMap(base, 2 * gran, 0, second, 0));
    assert_int_equal(device_access(base), CU_MEM_ACCESS_FLAGS_PROT_NONE);
    set_device_rw(base, 2 * gran);
    assert_cu_ok(cuMemsetD32(base, 0x2222u, 2 * gran / 4));
    assert_cu_ok(cuMemUnmap(base, 2 * gran));

    /* Each handle kept its own contents. */
    uint32_t word = 0;
    assert_cu_ok(cuMemMap(base, 2 * gran, 0, first, 0));
    set_device_rw(base, 2 * gran);
    assert_cu_ok(cuMemcpyDtoH(&word, base + gran, 4));
    assert_int_equal(word, 0x1111u);
    assert_cu_ok(cuMemUnmap(base, 2 * gran));

    assert_cu_ok(cuMemRelease(first));
    assert_cu_ok(cuMemRelease(second));
    assert_cu_ok(cuMemAddressFree(base, 2 * gran));
}

/* cuMemRelease: "The generic memory handle can be freed when there are still outstanding
 * mappings made with this handle"; the memory lives until the mapping goes. */
static void release_while_mapped(void **state)
{
    (void)state;
    CUdeviceptr base = reserve(gran);
    CUmemGenericAllocationHandle handle = create_device(gran);
    assert_cu_ok(cuMemMap(base, gran, 0, handle, 0));
    assert_cu_ok(cuMemRelease(handle));
    set_device_rw(base, gran);
    assert_round_trip(base, gran, 4);
    assert_cu_ok(cuMemUnmap(base, gran));
    assert_cu_ok(cuMemAddressFree(base, gran));
}

/* cuMemSetAccess: "The range must be a fully mapped address range containing all
 * allocations created by cuMemMap / cuMemCreate" — it may span adjacent mappings; an
 * unknown device is CUDA_ERROR_INVALID_DEVICE; "Users cannot specify
 * CU_MEM_LOCATION_TYPE_HOST_NUMA accessibility for allocations created on with other
 * location types". */
static void set_access_covers_whole_mappings(void **state)
{
    (void)state;
    CUdeviceptr base = reserve(3 * gran);
    CUmemGenericAllocationHandle a = create_device(gran), b = create_device(gran);
    assert_cu_ok(cuMemMap(base, gran, 0, a, 0));
    assert_cu_ok(cuMemMap(base + gran, gran, 0, b, 0));

    CUmemAccessDesc desc = device_rw();
    assert_cu(cuMemSetAccess(base, 3 * gran, &desc, 1), CUDA_ERROR_INVALID_VALUE); /* unmapped tail */
    assert_cu(cuMemSetAccess(base, 2 * gran, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    int count = 0;
    assert_cu_ok(cuDeviceGetCount(&count));
    CUmemAccessDesc bad = desc;
    bad.location.id = count;
    assert_cu(cuMemSetAccess(base, 2 * gran, &bad, 1), CUDA_ERROR_INVALID_DEVICE);
    bad = desc;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    bad.location.id = host_numa_node();
    assert_cu_either(cuMemSetAccess(base, 2 * gran, &bad, 1), CUDA_ERROR_INVALID_VALUE,
                     CUDA_ERROR_NOT_SUPPORTED);

    /* One call over two adjacent mappings; one copy across their boundary. */
    assert_cu_ok(cuMemSetAccess(base, 2 * gran, &desc, 1));
    assert_int_equal(device_access(base), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    assert_int_equal(device_access(base + gran), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    assert_round_trip(base, 2 * gran, 5);

    CUmemLocation location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = tdev.dev};
    assert_cu(cuMemGetAccess(NULL, &location, base), CUDA_ERROR_INVALID_VALUE);
    unsigned long long flags = 0;
    assert_cu(cuMemGetAccess(&flags, NULL, base), CUDA_ERROR_INVALID_VALUE);

    assert_cu_ok(cuMemUnmap(base, gran));
    assert_cu_ok(cuMemUnmap(base + gran, gran));
    assert_cu_ok(cuMemRelease(a));
    assert_cu_ok(cuMemRelease(b));
    assert_cu_ok(cuMemAddressFree(base, 3 * gran));
}

/* cuMemRetainAllocationHandle: "The handle is guaranteed to be the same handle value used
 * to map the memory"; addr "can be any address in a range previously mapped"; "If the
 * address requested is not mapped, the function will fail"; each retain needs a
 * cuMemRelease. */
static void retain_allocation_handle(void **state)
{
    (void)state;
    CUdeviceptr base = reserve(4 * gran);
    CUmemGenericAllocationHandle handle = create_device(2 * gran), retained = 0;
    assert_cu_ok(cuMemMap(base + gran, 2 * gran, 0, handle, 0));
    assert_cu_ok(cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)(base + gran + 100)));
    assert_true(retained == handle);
    assert_cu_ok(cuMemRelease(retained));
    assert_cu(cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)base),
              CUDA_ERROR_INVALID_VALUE); /* reserved, not mapped */
    int on_stack = 0;
    assert_cu(cuMemRetainAllocationHandle(&retained, &on_stack), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuMemRetainAllocationHandle(NULL, (void *)(uintptr_t)(base + gran)),
              CUDA_ERROR_INVALID_VALUE);

    /* The retained reference keeps the memory: release the creator's, keep using it. */
    assert_cu_ok(cuMemRetainAllocationHandle(&retained, (void *)(uintptr_t)(base + gran)));
    assert_cu_ok(cuMemRelease(handle));
    set_device_rw(base + gran, 2 * gran);
    assert_round_trip(base + gran, 2 * gran, 6);
    assert_cu_ok(cuMemUnmap(base + gran, 2 * gran));
    assert_cu_ok(cuMemRelease(retained));
    assert_cu_ok(cuMemAddressFree(base, 4 * gran));
}

/* Pointer attributes of a mapping: CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/RANGE_SIZE give
 * "the address of the mappable address range ptr references (e.g. from
 * cuMemAddressReserve)"; "To retrieve the size of the mapped region, see
 * cuMemGetAddressRange". */
static void attributes_and_range_of_a_mapping(void **state)
{
    (void)state;
    CUdeviceptr base = reserve(4 * gran);
    CUmemGenericAllocationHandle handle = create_device(2 * gran);
    CUdeviceptr mapping = base + gran;
    assert_cu_ok(cuMemMap(mapping, 2 * gran, 0, handle, 0));
    set_device_rw(mapping, 2 * gran);

    unsigned int type = 0, mapped = 0;
    assert_cu_ok(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, mapping + 5));
    assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
    assert_cu_ok(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, mapping + 5));
    assert_int_equal(mapped, 1);
    CUdeviceptr start = 0;
    size_t size = 0;
    assert_cu_ok(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, mapping + 5));
    assert_true(start == base);
    assert_cu_ok(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, mapping + 5));
    assert_int_equal(size, 4 * gran);

    CUdeviceptr range_base = 0;
    assert_cu_ok(cuMemGetAddressRange(&range_base, &size, mapping + gran + 7));
    assert_true(range_base == mapping);
    assert_int_equal(size, 2 * gran);

    assert_cu_ok(cuMemUnmap(mapping, 2 * gran));
    assert_cu_ok(cuMemRelease(handle));
    assert_cu_ok(cuMemAddressFree(base, 4 * gran));
}

/* =======================================================================================
 * Host locations
 * ==================================================================================== */

/* HOST_NUMA: "CUmemLocation::id must specify the NUMA ID of the CPU". Where the device
 * reports HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED the memory maps and the device
 * reads and writes it; where it does not, cuMemCreate must fail. */
static void host_numa_allocation(void **state)
{
    (void)state;
    int node = host_numa_node();
    CUmemAllocationProp prop = host_numa_prop(node);
    CUmemGenericAllocationHandle handle = 0;
    if (!host_numa_vmm_supported()) {
        assert_true(cuMemCreate(&handle, gran, &prop, 0) != CUDA_SUCCESS);
        return;
    }
    size_t g = 0;
    assert_cu_ok(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    assert_true(g > 0 && (g & (g - 1)) == 0);
    size_t bytes = 2 * (g > gran ? g : gran);
    handle = create_with(&prop, bytes);
    CUmemAllocationProp got;
    memset(&got, 0, sizeof got);
    assert_cu_ok(cuMemGetAllocationPropertiesFromHandle(&got, handle));
    assert_int_equal(got.location.type, CU_MEM_LOCATION_TYPE_HOST_NUMA);
    assert_int_equal(got.location.id, node);

    CUdeviceptr base = reserve(bytes);
    assert_cu_ok(cuMemMap(base, bytes, 0, handle, 0));
    set_device_rw(base, bytes);
    assert_round_trip(base, bytes, 7);
    assert_cu_ok(cuMemUnmap(base, bytes));
    assert_cu_ok(cuMemRelease(handle));
    assert_cu_ok(cuMemAddressFree(base, bytes));

    /* A node id no machine has is refused: the documented codes for a bad property. */
    prop.location.id = 1 << 20;
    assert_cu_either(cuMemCreate(&handle, bytes, &prop, 0), CUDA_ERROR_INVALID_VALUE,
                     CUDA_ERROR_INVALID_DEVICE);
}

/* HOST: "To create a CPU allocation that doesn't target any specific NUMA nodes,
 * applications must set CUmemAllocationProp::CUmemLocation::type to
 * CU_MEM_LOCATION_TYPE_HOST. CUmemAllocationProp::CUmemLocation::id is ignored". */
static void host_allocation(void **state)
{
    (void)state;
    CUmemAllocationProp prop = device_alloc_prop();
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    prop.location.id = 12345; /* ignored */
    size_t g = 0;
    assert_cu_ok(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t bytes = 2 * (g > gran ? g : gran);
    CUmemGenericAllocationHandle handle = create_with(&prop, bytes);
    CUdeviceptr base = reserve(bytes);
    assert_cu_ok(cuMemMap(base, bytes, 0, handle, 0));
    set_device_rw(base, bytes);
    assert_round_trip(base, bytes, 8);
    assert_cu_ok(cuMemUnmap(base, bytes));
    assert_cu_ok(cuMemRelease(handle));
    assert_cu_ok(cuMemAddressFree(base, bytes));
}

/* =======================================================================================
 * Groups
 * ==================================================================================== */

int run_vmm_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(granularity),
        conformance_test(reserve_and_free),
        conformance_test(create_rejects_bad_arguments),
        conformance_test(properties_from_handle),
        conformance_test(map_set_access_and_use),
        conformance_test(map_only_onto_unmapped_reserved_range),
        conformance_test(map_rejects_bad_arguments),
        conformance_test(unmap_whole_mappings_only),
        conformance_test(remap_same_address_needs_access_again),
        conformance_test(release_while_mapped),
        conformance_test(set_access_covers_whole_mappings),
        conformance_test(retain_allocation_handle),
        conformance_test(attributes_and_range_of_a_mapping),
        conformance_test(host_numa_allocation),
        conformance_test(host_allocation),
    };
    return cmocka_run_group_tests_name("virtual memory management", tests, setup_vmm,
                                       teardown_primary_context);
}
