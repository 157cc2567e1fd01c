/* managed.c — the managed-memory baseline: managed memory in place of chunks, and the
 * advice the managed-advised policy gives (see managed.h, policy/managed.h). */
#include "preload/mem/managed.h"

#include "policy/managed.h"
#include "preload/mem/alloc.h"
#include "preload/driver/driver.h"
#include "preload/driver/launch.h"
#include "preload/base/log.h"
#include "preload/region/stats.h"

static bool watching;   /* advised managed memory exists (made before any kernel ran): fills matter */

static CUmemLocation device_location(const tm_device *device)
{
    return (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device->ordinal };
}

bool tm_alloc_managed(tm_device *device, CUcontext ctx, uint64_t bytes, uint32_t path, CUdeviceptr *dptr,
                      CUresult *result)
{
    CUresult r = tm_real.cuMemAllocManaged(dptr, bytes, CU_MEM_ATTACH_GLOBAL);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        tm_stat_add(oom_total, 1);
        *result = r;
        return true;
    }
    if (r != CUDA_SUCCESS) {
        tm_log_once(TM_LOG_WARN, "cuMemAllocManaged failed (error %d); passing such calls through", (int)r);
        tm_stat_add(passthrough_total, 1);
        return false;
    }
    tm_alloc *a = tm_track_driver_alloc(device, ctx, *dptr, bytes, path, true);
    if (a)
        a->baseline = true;
    bool prefer = tm_managed_prefers_device(&device->policy) && tm_real.cuMemAdvise_v2;
    if (prefer) {
        r = tm_real.cuMemAdvise_v2(*dptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, device_location(device));
        if (r != CUDA_SUCCESS)
            tm_log_once(TM_LOG_WARN, "the driver refused a preferred location for managed memory (error %d)",
                        (int)r);
        if (!tm_launch_seen())
            __atomic_store_n(&watching, true, __ATOMIC_RELEASE);
    }
    tm_debug("0x%llx: %llu bytes of managed memory%s", (unsigned long long)*dptr, (unsigned long long)bytes,
             prefer ? ", preferred on the device" : "");
    *result = CUDA_SUCCESS;
    return true;
}

void tm_managed_note_fill(CUdeviceptr dst)
{
    if (!__atomic_load_n(&watching, __ATOMIC_ACQUIRE))
        return;
    tm_device *device = tm_device_ready(); /* the managed policy's settings are every device's */
    if (!device || !tm_managed_read_mostly_on_fill(&device->policy, tm_launch_seen()))
        return;
    CUdeviceptr base;
    uint64_t size;
    if (!tm_claim_read_mostly(dst, &base, &size) || !tm_real.cuMemAdvise_v2)
        return;
    CUresult r = tm_real.cuMemAdvise_v2(base, size, CU_MEM_ADVISE_SET_READ_MOSTLY, device_location(device));
    tm_debug("0x%llx: read-mostly (filled from the host before the first kernel launch)%s",
             (unsigned long long)base, r == CUDA_SUCCESS ? "" : "; the driver refused the advice");
}
