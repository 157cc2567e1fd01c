/* hook_info.c — what the program is told about memory: free and total memory in the
 * configured view, and address ranges and pointer attributes of chunked allocations,
 * which must read exactly like those of cuMemAlloc memory (the size asked for, one
 * buffer, device memory of the allocating context). */
#include <string.h>

#include "preload/mem/alloc.h"
#include "preload/mem/meminfo.h"
#include "preload/tiers/device_plan.h"
#include "preload/hooks/hook.h"
#include "preload/ipc/ipc.h"
#include "preload/base/settings.h"
#include "preload/mem/stream_free.h"
#include "preload/mem/vmm_handles.h"

/* ---------------------------------------------------------------- free and total */

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    TM_HOOK_ENTER(cuMemGetInfo_v2);
    if (!free || !total)
        return tm_real.cuMemGetInfo_v2(free, total);
    tm_stream_free_drain();
    size_t driver_free, driver_total;
    CUresult result = tm_real.cuMemGetInfo_v2(&driver_free, &driver_total);
    if (result != CUDA_SUCCESS)
        return result;
    CUcontext ctx;
    tm_device *device = tm_device_current(&ctx);
    uint64_t view_free = driver_free, view_total = driver_total;
    if (device)
        tm_meminfo_view_of(device, driver_free, driver_total, &view_free, &view_total);
    *free = (size_t)view_free;
    *total = (size_t)view_total;
    return CUDA_SUCCESS;
}

/* The same total before and after any context: it comes from the device's plan alone. */
CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    TM_HOOK_ENTER(cuDeviceTotalMem_v2);
    CUresult result = tm_real.cuDeviceTotalMem_v2(bytes, dev);
    uint64_t total;
    if (result == CUDA_SUCCESS && tm_device_view_total(dev, &total))
        *bytes = (size_t)total;
    return result;
}

/* ---------------------------------------------------------------- address ranges */

static bool chunked_at(CUdeviceptr address, tm_alloc_view *view)
{
    return tm_lookup(address, view) && view->chunked;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    TM_HOOK_ENTER(cuMemGetAddressRange_v2);
    tm_alloc_view view;
    if (!chunked_at(dptr, &view) && !tm_ipc_import_range(dptr, &view.base, &view.size))
        return tm_real.cuMemGetAddressRange_v2(pbase, psize, dptr);
    if (pbase)
        *pbase = view.base;
    if (psize)
        *psize = (size_t)view.size;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- pointer attributes */

/* Writes the attribute as cuMemAlloc memory would have it (legacy IPC: when tiermem can
 * share it, ipc.h). Returns false for attributes the driver answers alike for chunked
 * memory (managed, mapped, access flags...). */
static bool chunked_attribute(const tm_alloc_view *view, CUdeviceptr ptr, CUpointer_attribute attribute, void *data,
                              CUresult *result)
{
    *result = CUDA_SUCCESS;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = view->ctx; return true;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data = CU_MEMORYTYPE_DEVICE; return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; return true;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *result = CUDA_ERROR_INVALID_VALUE; return true;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: *(unsigned long long *)data = view->id; return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
        *(int *)data = (int)view->device;
        return true;
    }
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = view->base; return true;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = (size_t)view->size; return true;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *(CUdeviceptr *)data = view->base; return true;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *(size_t *)data = (size_t)view->extent; return true;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *(int *)data = tm_ipc_capable(ptr); return true;
    default: return false;
    }
}

/* The program's own handle that HBM had no room for lives at HOST_NUMA, which the driver
 * calls host memory: it reads as the device memory the program asked for (hook_vmm.c).
 * Returns false for attributes the driver answers alike. */
static bool spilled_handle_attribute(const tm_vmm_handle_info *info, CUdeviceptr ptr, CUpointer_attribute attribute,
                                     void *data, CUresult *result)
{
    *result = CUDA_SUCCESS;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data = CU_MEMORYTYPE_DEVICE; return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; return true;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *result = CUDA_ERROR_INVALID_VALUE; return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = info->asked.location.id; return true;
    default: return false;
    }
}

/* Either kind of memory whose answers tiermem gives: writes one attribute and returns true,
 * or returns false for the driver's answer. */
static bool tiered_attribute(CUdeviceptr ptr, CUpointer_attribute attribute, void *data, CUresult *result)
{
    tm_alloc_view view;
    tm_vmm_handle_info handle;
    if (chunked_at(ptr, &view))
        return chunked_attribute(&view, ptr, attribute, data, result);
    return tm_vmm_handles_spilled_at(ptr, &handle) && spilled_handle_attribute(&handle, ptr, attribute, data, result);
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    TM_HOOK_ENTER(cuPointerGetAttribute);
    CUresult result;
    if (data && tiered_attribute(ptr, attribute, data, &result))
        return result;
    return tm_real.cuPointerGetAttribute(data, attribute, ptr);
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                        CUdeviceptr ptr)
{
    TM_HOOK_ENTER(cuPointerGetAttributes);
    CUresult result = tm_real.cuPointerGetAttributes(numAttributes, attributes, data, ptr);
    if (result != CUDA_SUCCESS || !attributes || !data)
        return result;
    for (unsigned int i = 0; i < numAttributes; i++) {
        CUresult one;
        if (!data[i] || !tiered_attribute(ptr, attributes[i], data[i], &one))
            continue;
        if (one == CUDA_ERROR_INVALID_VALUE) /* the host pointer of device memory reads NULL here */
            *(void **)data[i] = NULL;
    }
    return result;
}
