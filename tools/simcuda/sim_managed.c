/* sim_managed.c — managed memory as UVM serves it: cuMemPrefetchAsync and cuMemAdvise in
 * every ABI cuda.h has, and the glue that feeds accesses to the fault model (sim_uvm.c).
 *
 * What is modelled: kernels' declared accesses (ABI 2) and memsets of managed ranges are
 * device accesses that fault and migrate; copies between host memory and a managed range
 * are host accesses (the pages come back to the host, a host write invalidates device
 * copies); copies between device memory and a managed range are device accesses. The
 * time model charges what is resident at HBM speed, what is read in place over the link,
 * and stalls the work for the fault service (sim_time_managed). Managed-to-managed
 * copies count as host accesses on both sides. Data itself never moves
 * (device memory is host memory here): only residency and its cost are tracked. The
 * resident set is capped by the device memory that cuMemAlloc and VMM device memory
 * leave free. */
#include "tools/simcuda/sim_internal.h"

/* Lock held: the model, created on first use with the configured parameters and the
 * profile's link. */
static sim_uvm *model(void)
{
    if (!sim.uvm) {
        sim_uvm_params params = sim.config.uvm;
        params.link_h2d_gbps = sim.config.profile.h2d_gbps;
        params.link_d2h_gbps = sim.config.profile.d2h_gbps;
        sim.uvm = sim_uvm_create(&params);
    }
    if (sim.uvm)
        sim_uvm_set_capacity(sim.uvm, sim.config.device_capacity - sim.device_used_of[0]);
    return sim.uvm;
}

void sim_managed_add(uintptr_t base, size_t size)
{
    sim_uvm *uvm = model();
    if (!uvm || !sim_uvm_add(uvm, base, size))
        sim_log("managed allocation at 0x%llx is not tracked by the fault model (out of memory)",
                (unsigned long long)base);
}

void sim_managed_remove(uintptr_t base)
{
    if (sim.uvm)
        sim_uvm_remove(sim.uvm, base);
}

bool sim_managed_contains(uintptr_t address)
{
    return sim.uvm && sim_uvm_contains(sim.uvm, address);
}

bool sim_managed_device_access(uintptr_t address, size_t bytes, bool write, sim_uvm_cost *cost)
{
    if (!sim.uvm || !sim_uvm_contains(sim.uvm, address))
        return false;
    sim_uvm_device_access(model(), address, bytes, write, cost);
    return true;
}

void sim_managed_copy(uintptr_t dst, sim_location dst_loc, uintptr_t src, sim_location src_loc, size_t bytes,
                      sim_uvm_cost *cost)
{
    if (!sim.uvm)
        return;
    sim_uvm *uvm = model();
    sim_uvm_cost device = { 0 };
    if (src_loc == SIM_LOC_MANAGED) {
        if (dst_loc == SIM_LOC_DEVICE)
            sim_uvm_device_access(uvm, src, bytes, false, &device);
        else
            sim_uvm_host_access(uvm, src, bytes, false, cost);
    }
    if (dst_loc == SIM_LOC_MANAGED) {
        if (src_loc == SIM_LOC_DEVICE)
            sim_uvm_device_access(uvm, dst, bytes, true, &device);
        else
            sim_uvm_host_access(uvm, dst, bytes, true, cost);
    }
    sim_uvm_settle(uvm, &device);
    sim_uvm_cost_add(cost, &device);
}

void sim_managed_settle(sim_uvm_cost *op)
{
    if (sim.uvm)
        sim_uvm_settle(sim.uvm, op);
}

void sim_managed_totals(sim_uvm_cost *totals)
{
    *totals = (sim_uvm_cost){ 0 };
    if (sim.uvm)
        sim_uvm_totals(sim.uvm, totals);
}

/* ---------------------------------------------------------------- API entry checks */

/* Lock held: [ptr, ptr + count) lies inside one managed allocation. */
static CUresult managed_range(CUdeviceptr ptr, size_t count)
{
    if (count == 0 || ptr + count < ptr)
        return CUDA_ERROR_INVALID_VALUE;
    sim_region *region = sim_region_find(TREE_REGIONS, (uintptr_t)ptr);
    if (!region || !region->managed || ptr + count > region->base + region->size)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* A location the device or the host stands for; *to_device says which. */
static CUresult location_side(CUmemLocation location, bool *to_device)
{
    switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        *to_device = true;
        return location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        *to_device = false;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        *to_device = false;
        return sim_config_numa_node_ok(&sim.config, location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The CUdevice of the version-1 calls as a location (CU_DEVICE_CPU is the host). */
static CUmemLocation device_location(CUdevice device)
{
    if (device == CU_DEVICE_CPU)
        return (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_HOST };
    return (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device };
}

/* ---------------------------------------------------------------- cuMemPrefetchAsync */

static CUresult prefetch(CUdeviceptr ptr, size_t count, CUmemLocation location, unsigned int flags,
                         CUstream stream_handle)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_stream *stream = NULL;
    CUresult result = sim_stream_enter(stream_handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool to_device = false;
    result = managed_range(ptr, count);
    if (result == CUDA_SUCCESS)
        result = location_side(location, &to_device);
    sim_uvm *uvm = result == CUDA_SUCCESS ? model() : NULL;
    if (uvm) {
        /* in stream order, on the link: a prefetch is a migration without faults */
        double submitted = sim_time_host_enter();
        if (sim.config.async)
            sim_async_wait_stream(stream); /* stream order: the work queued before it */
        sim_uvm_cost cost = { 0 };
        sim_uvm_prefetch(uvm, (uintptr_t)ptr, count, to_device, &cost);
        sim_time_advance(stream, sim_time_managed(sim_time_ready(stream, submitted), &cost));
        sim_time_host_leave();
    }
    sim_unlock();
    return result;
}

/* cuda.h maps the plain names to the newest ABI; every ABI is exported. */
#undef cuMemPrefetchAsync
#undef cuMemAdvise
CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr ptr, size_t count, CUdevice device, CUstream stream);
CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr ptr, size_t count, CUdevice device, CUstream stream);
CUresult CUDAAPI cuMemAdvise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUdevice device);

SIM_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr ptr, size_t count, CUdevice device, CUstream stream)
{ return prefetch(ptr, count, device_location(device), 0, stream); }
SIM_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr ptr, size_t count, CUdevice device, CUstream stream)
{ return prefetch(ptr, count, device_location(device), 0, stream ? stream : CU_STREAM_PER_THREAD); }
SIM_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count, CUmemLocation location, unsigned int flags,
                                          CUstream stream)
{ return prefetch(ptr, count, location, flags, stream); }
SIM_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr ptr, size_t count, CUmemLocation location,
                                               unsigned int flags, CUstream stream)
{ return prefetch(ptr, count, location, flags, stream ? stream : CU_STREAM_PER_THREAD); }

/* ---------------------------------------------------------------- cuMemAdvise */

static CUresult advise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    CUresult result = sim_current_context(NULL);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    result = managed_range(ptr, count);
    bool on_device = false;
    bool needs_location = advice != CU_MEM_ADVISE_SET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY &&
                          advice != CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION;
    if (result == CUDA_SUCCESS && needs_location)
        result = location_side(location, &on_device);
    sim_uvm *uvm = result == CUDA_SUCCESS ? model() : NULL;
    if (uvm) {
        uintptr_t p = (uintptr_t)ptr;
        switch (advice) {
        case CU_MEM_ADVISE_SET_READ_MOSTLY: sim_uvm_advise(uvm, p, count, SIM_UVM_READ_MOSTLY, true); break;
        case CU_MEM_ADVISE_UNSET_READ_MOSTLY: sim_uvm_advise(uvm, p, count, SIM_UVM_READ_MOSTLY, false); break;
        case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
            sim_uvm_advise(uvm, p, count, on_device ? SIM_UVM_PREFER_DEVICE : SIM_UVM_PREFER_HOST, true);
            break;
        case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
            sim_uvm_advise(uvm, p, count, SIM_UVM_PREFER_DEVICE, false);
            sim_uvm_advise(uvm, p, count, SIM_UVM_PREFER_HOST, false);
            break;
        case CU_MEM_ADVISE_SET_ACCESSED_BY: sim_uvm_advise(uvm, p, count, SIM_UVM_ACCESSED_BY, true); break;
        case CU_MEM_ADVISE_UNSET_ACCESSED_BY: sim_uvm_advise(uvm, p, count, SIM_UVM_ACCESSED_BY, false); break;
        default: result = CUDA_ERROR_INVALID_VALUE; break;
        }
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuMemAdvise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUdevice device)
{ return advise(ptr, count, advice, device_location(device)); }
SIM_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation location)
{ return advise(ptr, count, advice, location); }
