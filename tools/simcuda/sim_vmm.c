/* sim_vmm.c — the virtual memory management API: address reservations, physical
 * allocations (cuMemCreate), mappings and access.
 *
 * The shape follows the real driver. A reservation is a PROT_NONE anonymous mapping.
 * A physical allocation is a memfd (DEVICE memory counts against SIMCUDA_MEM; HOST_NUMA
 * memory on a real host node gets that node as its shared memory policy). cuMemMap is
 * mmap(MAP_FIXED | MAP_SHARED) of the memfd over part of a reservation, still PROT_NONE:
 * cuMemSetAccess makes it readable and writable. cuMemUnmap puts the reservation's
 * PROT_NONE mapping back. Two mappings of one handle share their bytes, as on a GPU.
 *
 * Mapping a memfd afresh costs a page fault per 4 KiB page on first touch (milliseconds
 * per 2 MiB chunk, where a driver takes microseconds), and pooled chunks are mapped and
 * unmapped over and over. So cuMemUnmap of a whole allocation that lives on moves its
 * page tables aside (mremap with MREMAP_DONTUNMAP, which leaves no hole another mmap
 * could take), and its next whole mapping moves them in. Where the kernel refuses, both
 * map plainly. */
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tools/simcuda/sim_internal.h"

static bool granular(uint64_t value)
{
    return value % SIM_GRANULARITY == 0;
}

static int protection_of(CUmemAccess_flags access)
{
    switch (access) {
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: return PROT_READ | PROT_WRITE;
    case CU_MEM_ACCESS_FLAGS_PROT_READ: return PROT_READ;
    default: return PROT_NONE;
    }
}

/* Checks an allocation location; HOST_NUMA ids are the configured node list. */
static CUresult location_check(const CUmemLocation *location)
{
    switch (location->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return location->id >= 0 && location->id < sim.config.device_count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (!sim.config.host_numa_vmm)
            return CUDA_ERROR_NOT_SUPPORTED;
        return sim_config_numa_node_ok(&sim.config, location->id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: /* including HOST_NUMA_CURRENT, which cuMemCreate documents as invalid */
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Checks the allocation properties shared by cuMemCreate and the granularity query. */
static CUresult prop_check(const CUmemAllocationProp *prop)
{
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    /* Host allocations cannot be exported: requestedHandleTypes must be 0. */
    if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST && prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    return location_check(&prop->location);
}

/* ---------------------------------------------------------------- reservations */

/* An inaccessible range of `size` bytes at a multiple of `alignment` (a power of two),
 * or MAP_FAILED. */
static void *reserve_aligned(size_t size, size_t alignment)
{
    const int map_flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    /* Over-reserve, then trim to the alignment. */
    char *raw = mmap(NULL, size + alignment, PROT_NONE, map_flags, -1, 0);
    if (raw == MAP_FAILED)
        return MAP_FAILED;
    uintptr_t aligned = ((uintptr_t)raw + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (aligned > (uintptr_t)raw)
        munmap(raw, aligned - (uintptr_t)raw);
    size_t tail = (uintptr_t)raw + size + alignment - (aligned + size);
    if (tail)
        munmap((void *)(aligned + size), tail);
    return (void *)aligned;
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                        unsigned long long flags)
{
    SIM_FAIL_POINT(cuMemAddressReserve);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!ptr || size == 0 || !granular(size) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment == 0)
        alignment = SIM_GRANULARITY;
    if ((alignment & (alignment - 1)) != 0 || !granular(alignment) || size > SIZE_MAX - alignment)
        return CUDA_ERROR_INVALID_VALUE;
    sim_region *reservation = calloc(1, sizeof *reservation);
    if (!reservation)
        return CUDA_ERROR_OUT_OF_MEMORY;

    void *base = MAP_FAILED;
    if (addr != 0 && addr % alignment == 0) /* the address is a hint */
        base = mmap((void *)addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                    -1, 0);
    if (base == MAP_FAILED)
        base = reserve_aligned(size, alignment);
    if (base == MAP_FAILED) {
        free(reservation);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    reservation->base = (uintptr_t)base;
    reservation->size = reservation->backing_size = size;
    reservation->kind = REGION_RESERVATION;
    reservation->id = ++sim.next_id;
    sim_lock();
    sim_region_insert(TREE_RESERVATIONS, reservation);
    sim_unlock();
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    SIM_FAIL_POINT(cuMemAddressFree);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_region *reservation = sim_region_find(TREE_RESERVATIONS, (uintptr_t)ptr);
    if (!reservation || reservation->base != (uintptr_t)ptr || reservation->size != size) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else if (reservation->mapping_count > 0) {
        sim_log("cuMemAddressFree: %d mappings are still live in the range at %#lx; unmap them first",
                reservation->mapping_count, (unsigned long)ptr);
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        sim_region_delete(TREE_RESERVATIONS, reservation);
        munmap((void *)reservation->base, reservation->size);
        free(reservation);
    }
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- physical allocations */

static void bind_to_node(int fd, size_t size, int node)
{
    if (numa_available() < 0 || node > numa_max_node() ||
        !numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)node))
        return; /* an emulated node (SIMCUDA_NUMA_NODES): nothing to bind */
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return;
    numa_tonode_memory(p, size, node); /* the policy stays with the shared object */
    munmap(p, size);
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                unsigned long long flags)
{
    SIM_FAIL_POINT(cuMemCreate);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle || !prop || size == 0 || !granular(size) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = prop_check(prop)) != CUDA_SUCCESS)
        return result;
    /* every allocation is a memfd: POSIX file descriptors are the one type it can share */
    if ((prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0)
        return sim_not_supported("cuMemCreate with shareable handle types other than POSIX file descriptors");
    if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE && !sim.config.posix_fd)
        return CUDA_ERROR_NOT_SUPPORTED; /* SIMCUDA_POSIX_FD=0: a device that cannot export */

    sim_phys *phys = calloc(1, sizeof *phys);
    if (!phys)
        return CUDA_ERROR_OUT_OF_MEMORY;
    phys->prop = *prop;
    phys->size = size;
    phys->handle_refs = 1;
    bool device = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (device) {
        sim_lock();
        bool fits = sim_device_reserve(prop->location.id, size);
        sim_unlock();
        if (!fits) {
            free(phys);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    char name[48];
    snprintf(name, sizeof name, SIM_PHYS_NAME_FORMAT, (int)prop->location.type, prop->location.id);
    phys->fd = memfd_create(name, MFD_CLOEXEC);
    if (phys->fd < 0 || ftruncate(phys->fd, (off_t)size) != 0) {
        if (phys->fd >= 0)
            close(phys->fd);
        if (device) {
            sim_lock();
            sim_device_release(prop->location.id, size);
            sim_unlock();
        }
        free(phys);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
        bind_to_node(phys->fd, size, prop->location.id);
    sim_lock();
    sim_object_add(&phys->obj, SIM_PHYS);
    sim_time_vmm(SIM_VMM_CREATE, size, 0);
    sim_unlock();
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)phys;
    return CUDA_SUCCESS;
}

/* Lock held: frees the physical memory once no handle and no mapping refers to it. */
static void phys_maybe_destroy(sim_phys *phys)
{
    if (phys->handle_refs > 0 || phys->mapping_refs > 0)
        return;
    sim_object_remove(&phys->obj);
    if (phys->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE && !phys->imported)
        sim_device_release(phys->prop.location.id, phys->size);
    if (phys->park)
        munmap((void *)phys->park, phys->size);
    close(phys->fd);
    free(phys);
}

static sim_phys *phys_find(CUmemGenericAllocationHandle handle)
{
    return sim_object_find((const void *)(uintptr_t)handle, SIM_PHYS);
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    SIM_FAIL_POINT(cuMemRelease);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_phys *phys = phys_find(handle);
    if (!phys || phys->handle_refs == 0) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        sim_time_vmm(SIM_VMM_RELEASE, phys->size, 0);
        phys->handle_refs--;
        phys_maybe_destroy(phys);
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                  CUmemAllocationGranularity_flags option)
{
    SIM_FAIL_POINT(cuMemGetAllocationGranularity);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return CUDA_ERROR_INVALID_VALUE;
    if ((result = prop_check(prop)) != CUDA_SUCCESS)
        return result;
    *granularity = SIM_GRANULARITY;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                           CUmemGenericAllocationHandle handle)
{
    SIM_FAIL_POINT(cuMemGetAllocationPropertiesFromHandle);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_phys *phys = phys_find(handle);
    if (phys)
        *prop = phys->prop;
    sim_unlock();
    return phys ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    SIM_FAIL_POINT(cuMemRetainAllocationHandle);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_region *mapping = sim_region_find(TREE_REGIONS, (uintptr_t)addr);
    if (!mapping || mapping->kind != REGION_MAPPING) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else {
        mapping->phys->handle_refs++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)mapping->phys;
    }
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- mappings */

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7; shared mappings since 5.13 */
#endif

/* Lock held: moves the page tables of a whole mapping of `phys` at `at` to its park,
 * inaccessible there; the memfd stays mapped at `at` without them. */
static void park(sim_phys *phys, uintptr_t at)
{
    if (phys->parked)
        return;
    if (!phys->park) {
        void *p = reserve_aligned(phys->size, SIM_GRANULARITY);
        if (p == MAP_FAILED)
            return;
        phys->park = (uintptr_t)p;
    }
    if (mremap((void *)at, phys->size, phys->size, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
               (void *)phys->park) == MAP_FAILED)
        return;
    mprotect((void *)phys->park, phys->size, PROT_NONE);
    phys->parked = true;
}

/* Lock held: maps the whole of `phys` at `ptr`, inaccessible, with its parked page tables
 * when it has them. False when mmap fails. */
static bool map_at(sim_phys *phys, uintptr_t ptr, size_t size)
{
    if (phys->parked && size == phys->size) {
        phys->parked = false;
        if (mremap((void *)phys->park, size, size, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
                   (void *)ptr) != MAP_FAILED)
            return true;
    }
    return mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, phys->fd, 0) != MAP_FAILED;
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                             unsigned long long flags)
{
    SIM_FAIL_POINT(cuMemMap);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0 || !granular(ptr) || !granular(size) || offset != 0 || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_region *mapping = calloc(1, sizeof *mapping);
    if (!mapping)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_phys *phys = phys_find(handle);
    sim_region *reservation = sim_region_find(TREE_RESERVATIONS, (uintptr_t)ptr);
    if (!phys || phys->handle_refs == 0 || size > phys->size) {
        result = CUDA_ERROR_INVALID_VALUE;
    } else if (!reservation || (uintptr_t)ptr + size > reservation->base + reservation->size ||
               (uintptr_t)ptr + size < (uintptr_t)ptr) {
        result = CUDA_ERROR_INVALID_VALUE; /* outside any reservation */
    } else if (sim_region_overlap(TREE_REGIONS, (uintptr_t)ptr, size)) {
        result = CUDA_ERROR_INVALID_VALUE; /* part of the range is already mapped */
    } else if (!map_at(phys, (uintptr_t)ptr, size)) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        mapping->base = (uintptr_t)ptr;
        mapping->size = mapping->backing_size = size;
        mapping->kind = REGION_MAPPING;
        mapping->phys = phys;
        mapping->access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        mapping->id = ++sim.next_id;
        sim_region_insert(TREE_REGIONS, mapping);
        phys->mapping_refs++;
        reservation->mapping_count++;
        mapping = NULL;
        sim_time_vmm(SIM_VMM_MAP, size, 0);
    }
    sim_unlock();
    free(mapping);
    return result;
}

/* Lock held: the mappings that exactly tile [ptr, ptr + size), or an error. */
static CUresult whole_mappings(uintptr_t ptr, size_t size, sim_region **first_out, int *count_out)
{
    int count = 0;
    uintptr_t end = ptr + size;
    if (end < ptr)
        return CUDA_ERROR_INVALID_VALUE;
    for (uintptr_t at = ptr; at < end;) {
        sim_region *mapping = sim_region_find(TREE_REGIONS, at);
        if (!mapping || mapping->kind != REGION_MAPPING || mapping->base != at ||
            mapping->base + mapping->size > end)
            return CUDA_ERROR_INVALID_VALUE;
        if (count == 0 && first_out)
            *first_out = mapping;
        count++;
        at = mapping->base + mapping->size;
    }
    *count_out = count;
    return count > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    SIM_FAIL_POINT(cuMemUnmap);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_async_wait_all(); /* queued work may still read the mapping (SIMCUDA_ASYNC) */
    int count;
    result = whole_mappings((uintptr_t)ptr, size, NULL, &count);
    /* As on a GPU, the unmap waits for the work submitted on the range. */
    if (result == CUDA_SUCCESS)
        sim_time_vmm(SIM_VMM_UNMAP, size, sim_time_range_busy((uintptr_t)ptr, size));
    for (uintptr_t at = ptr; result == CUDA_SUCCESS && at < (uintptr_t)ptr + size;) {
        sim_region *mapping = sim_region_find(TREE_REGIONS, at);
        sim_region *reservation = sim_region_find(TREE_RESERVATIONS, at);
        at = mapping->base + mapping->size;
        sim_phys *phys = mapping->phys;
        if (mapping->size == phys->size && (phys->handle_refs > 0 || phys->mapping_refs > 1))
            park(phys, mapping->base); /* it lives on: its next mapping finds its pages mapped */
        /* Put the reservation's inaccessible placeholder back over the range. */
        mmap((void *)mapping->base, mapping->size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        sim_region_delete(TREE_REGIONS, mapping);
        reservation->mapping_count--;
        mapping->phys->mapping_refs--;
        phys_maybe_destroy(mapping->phys);
        free(mapping);
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    SIM_FAIL_POINT(cuMemSetAccess);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUmemAccess_flags device_access[SIM_MAX_DEVICES];
    bool device_named[SIM_MAX_DEVICES] = { false }, any_device = false, host_numa_named = false;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
        if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
            int d = desc[i].location.id;
            if (d < 0 || d >= sim.config.device_count)
                return CUDA_ERROR_INVALID_DEVICE;
            device_access[d] = desc[i].flags;
            device_named[d] = any_device = true;
        } else if (desc[i].location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
            host_numa_named = true;
        } else if (desc[i].location.type != CU_MEM_LOCATION_TYPE_HOST) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    sim_lock();
    int mappings;
    result = whole_mappings((uintptr_t)ptr, size, NULL, &mappings);
    /* HOST_NUMA access may only be given to memory allocated on a HOST_NUMA location. */
    for (uintptr_t at = ptr; result == CUDA_SUCCESS && host_numa_named && at < (uintptr_t)ptr + size;) {
        sim_region *mapping = sim_region_find(TREE_REGIONS, at);
        at = mapping->base + mapping->size;
        if (mapping->phys->prop.location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
            result = CUDA_ERROR_INVALID_VALUE;
    }
    for (uintptr_t at = ptr; result == CUDA_SUCCESS && any_device && at < (uintptr_t)ptr + size;) {
        sim_region *mapping = sim_region_find(TREE_REGIONS, at);
        at = mapping->base + mapping->size;
        /* the host view is one mapping for every device: it gets the most any of them has */
        CUmemAccess_flags most = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        for (int d = 0; d < sim.config.device_count; d++) {
            CUmemAccess_flags access = device_named[d] ? device_access[d] : mapping->access_by[d];
            if (access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE || (access == CU_MEM_ACCESS_FLAGS_PROT_READ && !most))
                most = access;
        }
        if (mprotect((void *)mapping->base, mapping->size, protection_of(most)) != 0) {
            result = CUDA_ERROR_UNKNOWN;
        } else {
            mapping->access = most;
            for (int d = 0; d < sim.config.device_count; d++)
                if (device_named[d])
                    mapping->access_by[d] = device_access[d];
        }
    }
    /* Changing access waits for the work submitted on the range, as unmapping does. */
    if (result == CUDA_SUCCESS)
        sim_time_vmm(SIM_VMM_SET_ACCESS, size, sim_time_range_busy((uintptr_t)ptr, size));
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    SIM_FAIL_POINT(cuMemGetAccess);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (location->id < 0 || location->id >= sim.config.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    sim_lock();
    sim_region *mapping = sim_region_find(TREE_REGIONS, (uintptr_t)ptr);
    if (!mapping || mapping->kind != REGION_MAPPING)
        result = CUDA_ERROR_INVALID_VALUE;
    else
        *flags = mapping->access_by[location->id];
    sim_unlock();
    return result;
}
