/* nvml.c — simcuda's libnvidia-ml.so.1: NVML for the emulated device, the subset that
 * vLLM and PyTorch read (init, device count and handles, name, UUID, memory). Its memory
 * answers come from simcuda itself, like the real NVML's from the kernel driver: never
 * through a CUDA driver entry point, and without any context. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "tools/simcuda/nvml/nvml_api.h"
#include "tools/simcuda/nvml/sim_nvml.h"

#define NVML_EXPORT __attribute__((visibility("default")))

/* The one emulated device, at the PCI address NVML reports for it. */
struct nvmlDevice_st {
    unsigned int index;
};
static struct nvmlDevice_st devices[1] = { { 0 } };
static const unsigned int pci_domain = 0, pci_bus = 1, pci_device = 0, pci_function = 0;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_count; /* nvmlInit calls not yet matched by nvmlShutdown */

static bool initialized(void)
{
    return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE) > 0;
}

static nvmlReturn_t check_device(nvmlDevice_t device)
{
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    return device == &devices[0] ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* ---------------------------------------------------------------- init */

NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    if (simcuda_nvml_device_count() <= 0)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    pthread_mutex_lock(&init_lock);
    __atomic_add_fetch(&init_count, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&init_lock);
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t result = NVML_SUCCESS;
    pthread_mutex_lock(&init_lock);
    if (init_count == 0)
        result = NVML_ERROR_UNINITIALIZED;
    else
        __atomic_sub_fetch(&init_count, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&init_lock);
    return result;
}

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
    }
}

/* ---------------------------------------------------------------- devices */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned int)simcuda_nvml_device_count();
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= (unsigned int)simcuda_nvml_device_count())
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[index];
    return NVML_SUCCESS;
}

/* "domain:bus:device.function" in hex, with a 4- or 8-digit domain (or none), any case. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    if (!initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!pciBusId || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int domain = 0, bus, dev, function;
    char end;
    if (sscanf(pciBusId, "%x:%x:%x.%x%c", &domain, &bus, &dev, &function, &end) != 4) {
        domain = 0;
        if (sscanf(pciBusId, "%x:%x.%x%c", &bus, &dev, &function, &end) != 3)
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (domain != pci_domain || bus != pci_bus || dev != pci_device || function != pci_function)
        return NVML_ERROR_NOT_FOUND;
    *device = &devices[0];
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    nvmlReturn_t result = check_device(device);
    if (result != NVML_SUCCESS)
        return result;
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = device->index;
    return NVML_SUCCESS;
}

/* Copies text with its terminator, as NVML does, when `length` holds it. */
static nvmlReturn_t copy_text(char *out, unsigned int length, const char *text)
{
    if (strlen(text) >= length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    nvmlReturn_t result = check_device(device);
    if (result != NVML_SUCCESS)
        return result;
    if (!name)
        return NVML_ERROR_INVALID_ARGUMENT;
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    if (cuDeviceGetName(text, (int)sizeof text, (CUdevice)device->index) != CUDA_SUCCESS)
        return NVML_ERROR_UNKNOWN;
    return copy_text(name, length, text);
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", from the driver's UUID of the device. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    nvmlReturn_t result = check_device(device);
    if (result != NVML_SUCCESS)
        return result;
    if (!uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    CUuuid id;
    if (cuDeviceGetUuid_v2(&id, (CUdevice)device->index) != CUDA_SUCCESS)
        return NVML_ERROR_UNKNOWN;
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    const unsigned char *b = (const unsigned char *)id.bytes;
    snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return copy_text(uuid, length, text);
}

/* ---------------------------------------------------------------- memory */

static nvmlReturn_t device_memory(nvmlDevice_t device, uint64_t *total, uint64_t *used)
{
    nvmlReturn_t result = check_device(device);
    if (result != NVML_SUCCESS)
        return result;
    return simcuda_nvml_memory(device->index, total, used) == 0 ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    uint64_t total, used;
    if (!memory)
        return check_device(device) == NVML_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT : check_device(device);
    nvmlReturn_t result = device_memory(device, &total, &used);
    if (result != NVML_SUCCESS)
        return result;
    *memory = (nvmlMemory_t){ .total = total, .free = total - used, .used = used };
    return NVML_SUCCESS;
}

/* The emulated device keeps nothing back for the system: reserved is 0. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    uint64_t total, used;
    if (!memory)
        return check_device(device) == NVML_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT : check_device(device);
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlReturn_t result = device_memory(device, &total, &used);
    if (result != NVML_SUCCESS)
        return result;
    *memory = (nvmlMemory_v2_t){ .version = nvmlMemory_v2, .total = total, .reserved = 0, .free = total - used,
                                 .used = used };
    return NVML_SUCCESS;
}
