/* device_plan.c — a device's tiers, decided once (see device_plan.h). */
#include "preload/tiers/device_plan.h"

#include <pthread.h>

#include "preload/driver/driver.h"
#include "preload/tiers/settings_check.h"
#include "preload/base/settings.h"

enum { PLANNED_DEVICES = 64 };

static tm_device_plan plans[PLANNED_DEVICES];
static bool planned[PLANNED_DEVICES];
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

static int device_attribute(CUdevice_attribute attribute, CUdevice ordinal)
{
    int value = 0;
    if (tm_real.cuDeviceGetAttribute(&value, attribute, ordinal) != CUDA_SUCCESS)
        return 0;
    return value;
}

/* False when the driver cannot answer yet (no cuInit): nothing is decided then. */
static bool make_plan(CUdevice ordinal, tm_device_plan *plan)
{
    const tm_config *config = tm_settings();
    size_t memory = 0;
    CUresult result = tm_real.cuDeviceTotalMem_v2(&memory, ordinal);
    if (result == CUDA_ERROR_NOT_INITIALIZED)
        return false;
    if (result != CUDA_SUCCESS || memory == 0) {
        plan->why_not = "the device's memory size cannot be read";
        return true;
    }
    plan->memory = memory;
    uint64_t chunk = tm_minimum_granularity(CU_MEM_LOCATION_TYPE_DEVICE, ordinal);
    if (!device_attribute(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, ordinal) || chunk == 0) {
        plan->why_not = "the device does not support virtual memory management (VMM)";
        return true;
    }
    tm_discover_tiers(config, ordinal, memory, &plan->found);
    int ddr_node = plan->found.tiers.tier[TM_TIER_DDR].node;
    bool host_numa = device_attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, ordinal);
    if (host_numa) {
        uint64_t host_chunk = tm_minimum_granularity(CU_MEM_LOCATION_TYPE_HOST_NUMA, ddr_node);
        if (host_chunk == 0)
            host_numa = false;
        else if (host_chunk > chunk)
            chunk = host_chunk;
    }
    plan->chunk_size = chunk;
    plan->host_numa = host_numa;
    plan->tiers = plan->found.tiers;
    plan->tiers.hbm_reserve = config->hbm_reserve.set
                                  ? config->hbm_reserve.bytes
                                  : tm_default_hbm_reserve(plan->tiers.tier[TM_TIER_HBM].limit, chunk);
    tm_settings_check(config, &plan->tiers, chunk);
    plan->usable = true;
    return true;
}

const tm_device_plan *tm_device_plan_of(CUdevice ordinal)
{
    if (ordinal < 0 || ordinal >= PLANNED_DEVICES || !tm_real.cuDeviceTotalMem_v2)
        return NULL;
    pthread_mutex_lock(&plan_lock);
    if (!planned[ordinal]) {
        plans[ordinal] = (tm_device_plan){ 0 };
        planned[ordinal] = make_plan(ordinal, &plans[ordinal]);
    }
    bool ready = planned[ordinal];
    pthread_mutex_unlock(&plan_lock);
    return ready ? &plans[ordinal] : NULL;
}

bool tm_device_view_total(CUdevice ordinal, uint64_t *total)
{
    if (!tm_tiering_on())
        return false;
    const tm_device_plan *plan = tm_device_plan_of(ordinal);
    if (!plan || !plan->usable)
        return false;
    *total = tm_meminfo_total(&plan->tiers, &tm_settings()->order, tm_settings()->meminfo, plan->memory);
    return true;
}

void tm_device_plan_forget_in_child(void)
{
    pthread_mutex_init(&plan_lock, NULL);
}
