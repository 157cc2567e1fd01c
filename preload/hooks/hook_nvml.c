/* hook_nvml.c — nvmlDeviceGetMemoryInfo and _v2 report the view cuMemGetInfo reports: the
 * same total (the device's plan), and free in the same view of the tiers. NVML's own
 * answer is device-wide; its free bytes stand in for the driver's free memory. */
#include "preload/hooks/hook_nvml.h"

#include <dlfcn.h>
#include <string.h>

#include "preload/tiers/device.h"
#include "preload/mem/meminfo.h"
#include "preload/tiers/device_plan.h"
#include "preload/driver/driver.h"
#include "preload/base/settings.h"
#include "preload/base/libc_real.h"
#include "tools/simcuda/nvml/nvml_api.h"

#define NVML_HOOK __attribute__((visibility("default")))

/* ---------------------------------------------------------------- the real NVML */

static struct {
    PFN_nvmlDeviceGetMemoryInfo memory_info;
    PFN_nvmlDeviceGetMemoryInfo_v2 memory_info_v2;
    PFN_nvmlDeviceGetIndex device_index;
} nvml_real;

/* NVML's own definition of `symbol`, from the copy of libnvidia-ml.so.1 already loaded. */
static void *loaded_nvml_symbol(const char *symbol)
{
    void *handle = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        return NULL;
    void *found = tm_real_dlsym(handle, symbol);
    dlclose(handle);
    return found;
}

#define REAL_NVML(member, symbol)                                                                    \
    (__atomic_load_n(&nvml_real.member, __ATOMIC_ACQUIRE)                                            \
         ? nvml_real.member                                                                          \
         : (__atomic_store_n(&nvml_real.member, (__typeof__(nvml_real.member))loaded_nvml_symbol(symbol), \
                             __ATOMIC_RELEASE),                                                      \
            nvml_real.member))

/* ---------------------------------------------------------------- the view */

/* Rewrites NVML's free and total of a device in the configured view; false when NVML's
 * answer stands (tiering off, a device tiermem does not plan). */
static bool nvml_view(nvmlDevice_t handle, unsigned long long *free, unsigned long long *total)
{
    PFN_nvmlDeviceGetIndex device_index = REAL_NVML(device_index, "nvmlDeviceGetIndex");
    unsigned int ordinal;
    uint64_t view_free, view_total;
    if (!tm_tiering_on() || !device_index || device_index(handle, &ordinal) != NVML_SUCCESS ||
        !tm_device_view_total((CUdevice)ordinal, &view_total))
        return false;
    const tm_device *device = tm_device_of((CUdevice)ordinal);
    if (device) {
        tm_meminfo_view_of(device, *free, *total, &view_free, &view_total);
    } else { /* before any allocation on it: nothing used yet */
        const tm_tiers *tiers = &tm_device_plan_of((CUdevice)ordinal)->tiers;
        tm_meminfo(tiers, &tm_settings()->order, tm_settings()->meminfo, *free, *total, &view_free, &view_total);
    }
    *free = view_free;
    *total = view_total;
    return true;
}

static unsigned long long saturating_sub(unsigned long long a, unsigned long long b)
{
    return a > b ? a - b : 0;
}

/* ---------------------------------------------------------------- the hooks */

NVML_HOOK nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    PFN_nvmlDeviceGetMemoryInfo real = REAL_NVML(memory_info, "nvmlDeviceGetMemoryInfo");
    nvmlReturn_t result = real ? real(device, memory) : NVML_ERROR_UNINITIALIZED;
    if (result == NVML_SUCCESS && nvml_view(device, &memory->free, &memory->total))
        memory->used = saturating_sub(memory->total, memory->free);
    return result;
}

NVML_HOOK nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    PFN_nvmlDeviceGetMemoryInfo_v2 real = REAL_NVML(memory_info_v2, "nvmlDeviceGetMemoryInfo_v2");
    nvmlReturn_t result = real ? real(device, memory) : NVML_ERROR_UNINITIALIZED;
    if (result == NVML_SUCCESS && nvml_view(device, &memory->free, &memory->total))
        memory->used = saturating_sub(saturating_sub(memory->total, memory->free), memory->reserved);
    return result;
}

/* ---------------------------------------------------------------- dlsym */

void *tm_nvml_dlsym(const char *symbol, void *found)
{
    void *wrapper = NULL;
    if (strcmp(symbol, "nvmlDeviceGetMemoryInfo") == 0)
        wrapper = (void *)nvmlDeviceGetMemoryInfo;
    else if (strcmp(symbol, "nvmlDeviceGetMemoryInfo_v2") == 0)
        wrapper = (void *)nvmlDeviceGetMemoryInfo_v2;
    if (!wrapper || !found)
        return found;
    /* our own export answers a global lookup; it stands only for what NVML has */
    if (found == wrapper)
        return loaded_nvml_symbol(symbol) ? wrapper : NULL;
    return wrapper;
}
