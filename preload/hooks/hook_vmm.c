/* hook_vmm.c — the program's own VMM use. A cuMemCreate at a DEVICE location is counted
 * in HBM when the HBM budget holds it; otherwise the handle is created in the first lower
 * tier with room (HOST_NUMA at the tier's node), which the program maps and uses exactly
 * as it would device memory. Host locations are the program's business and never count
 * against HBM. A handle stays charged while it is mapped, even after its release, and
 * while a reference cuMemRetainAllocationHandle gave out is held (see vmm_handles.h). */
#include <pthread.h>
#include <string.h>

#include "preload/tiers/device.h"
#include "preload/mem/alloc.h"
#include "preload/hooks/hook.h"
#include "preload/ipc/ipc.h"
#include "preload/base/log.h"
#include "preload/mem/spill_note.h"
#include "preload/mem/vmm_handles.h"

/* Bytes only: the program's handles are not tiermem's chunks, which the `available` view
 * counts as movable out of HBM (these never move). */
static void charge(tm_device *device, tm_tier_id tier, uint64_t bytes, int sign)
{
    tm_device_charge(device, tier, sign * (int64_t)bytes, 0);
}

/* Picks the tier for a handle of `bytes` and charges it, as one step. */
static bool choose_tier(tm_device *device, uint64_t bytes, const bool *excluded, tm_tier_id *tier)
{
    tm_alloc_desc desc = { .size = bytes };
    tm_device_place_lock(device);
    tm_tiers now;
    tm_device_tiers_now(device, &now);
    for (int t = 0; t < TM_TIER_COUNT; t++)
        if (excluded[t])
            now.tier[t].present = false;
    bool found = tm_policy_place_whole(&device->policy, &now, &desc, !device->target.pinned_host, tier);
    if (found)
        charge(device, *tier, bytes, +1);
    tm_device_place_unlock(device);
    return found;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags)
{
    TM_HOOK_ENTER(cuMemCreate);
    CUcontext ctx;
    tm_device *device;
    if (!handle || !prop || size == 0 || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        !(device = tm_device_current(&ctx)) || prop->location.id != device->ordinal ||
        size % device->policy.chunk_size != 0)
        return tm_real.cuMemCreate(handle, size, prop, flags);

    bool excluded[TM_TIER_COUNT] = { false };
    tm_tier_id tier;
    while (choose_tier(device, size, excluded, &tier)) {
        CUmemAllocationProp placed = *prop;
        if (tier != TM_TIER_HBM) {
            placed.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
            placed.location.id = device->target.node[tier];
        }
        CUresult result = tm_real.cuMemCreate(handle, size, &placed, flags);
        if (result == CUDA_SUCCESS) {
            uint32_t chunks[TM_STATS_TIERS] = { 0 };
            chunks[tier] = (uint32_t)(size / device->policy.chunk_size);
            tm_vmm_handle_info info = { .bytes = size, .tier = tier, .asked = *prop };
            info.stats_slot = tm_stats_record_add(TM_PATH_MEM_CREATE, 0, size, chunks, 0);
            if (!tm_vmm_handles_add(*handle, &info)) {
                tm_stats_record_remove(info.stats_slot);
                charge(device, tier, size, -1);
            }
            tm_stat_add(alloc_total, 1);
            uint64_t per_tier[TM_TIER_COUNT] = { 0 };
            per_tier[tier] = size / device->policy.chunk_size;
            tm_note_spill(size, per_tier, device->policy.chunk_size);
            if (tier != TM_TIER_HBM)
                tm_debug("cuMemCreate of %zu bytes at the device placed in %s (node %d)", size, tm_tier_name(tier),
                         placed.location.id);
            return CUDA_SUCCESS;
        }
        charge(device, tier, size, -1);
        if (result != CUDA_ERROR_OUT_OF_MEMORY && tier == TM_TIER_HBM)
            return result; /* the driver's own verdict on the program's request */
        excluded[tier] = true;
    }
    if (device->target.pinned_host) /* no lower tier can back a handle: the driver decides */
        return tm_real.cuMemCreate(handle, size, prop, flags);
    tm_stat_add(oom_total, 1);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* A handle's memory ends when it is released and no mapping of it is left. */
static void memory_gone(const tm_vmm_handle_info *info)
{
    tm_device *device = tm_device_of(info->asked.location.id);
    if (!device)
        return;
    charge(device, info->tier, info->bytes, -1);
    tm_stats_record_remove(info->stats_slot);
    tm_stat_add(free_total, 1);
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    TM_HOOK_ENTER(cuMemRelease);
    CUresult result = tm_real.cuMemRelease(handle);
    tm_vmm_handle_info info;
    if (result == CUDA_SUCCESS && tm_vmm_handles_released(handle, &info))
        memory_gone(&info);
    return result;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags)
{
    TM_HOOK_ENTER(cuMemMap);
    CUresult result = tm_real.cuMemMap(ptr, size, offset, handle, flags);
    if (result == CUDA_SUCCESS)
        tm_vmm_handles_mapped(ptr, size, handle);
    return result;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    TM_HOOK_ENTER(cuMemUnmap);
    CUresult result = tm_real.cuMemUnmap(ptr, size);
    if (result == CUDA_SUCCESS)
        tm_vmm_handles_unmapped(ptr, size, memory_gone);
    return result;
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
    TM_HOOK_ENTER(cuMemGetAllocationPropertiesFromHandle);
    CUresult result = tm_real.cuMemGetAllocationPropertiesFromHandle(prop, handle);
    tm_vmm_handle_info info;
    if (result == CUDA_SUCCESS && prop && tm_vmm_handles_find(handle, &info))
        prop->location = info.asked.location; /* the program sees the location it asked for */
    return result;
}

/* Memory tiermem chunked or imported is cuMemAlloc or IPC memory to the program, which the
 * driver would never have mapped with cuMemMap: it gets the driver's answer for such an
 * address, CUDA_ERROR_INVALID_VALUE, never tiermem's physical handle of one chunk (released
 * by the program, it would end a chunk a migration or a free still counts on). The
 * program's own handles pass through, and the reference counts. */
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    TM_HOOK_ENTER(cuMemRetainAllocationHandle);
    CUdeviceptr at = (CUdeviceptr)(uintptr_t)addr, base;
    uint64_t size;
    tm_alloc_view view;
    if (handle && ((tm_lookup(at, &view) && view.chunked) || tm_ipc_import_range(at, &base, &size)))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = tm_real.cuMemRetainAllocationHandle(handle, addr);
    if (result == CUDA_SUCCESS && handle)
        tm_vmm_handles_retained(*handle, at);
    return result;
}
