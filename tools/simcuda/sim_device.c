/* sim_device.c — cuInit, the driver version, and the emulated devices (SIMCUDA_DEVICES,
 * one by default): their name, attributes (an H200-class part: compute capability 9.0),
 * memory size, UUID, PCI bus id, and peer access between them. */
#include <stdio.h>
#include <string.h>

#include "tools/simcuda/sim_internal.h"

#define SIM_DRIVER_VERSION 13000
#define SIM_DEVICE_NAME "simcuda emulated GPU (H200-class, host memory)"

SIM_EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = CUDA_SUCCESS;
    sim_lock();
    if (sim.forked_after_init) {
        result = CUDA_ERROR_NOT_INITIALIZED;
    } else if (!sim.initialized && sim.init_error == CUDA_SUCCESS) {
        result = sim_config_load(&sim.config);
        if (result != CUDA_SUCCESS) {
            sim.init_error = result;
        } else {
            static sim_context primaries[SIM_MAX_DEVICES];
            static sim_pool default_pool = { .device = 0, .is_default = true };
            for (int d = 0; d < sim.config.device_count; d++) {
                primaries[d] = (sim_context){ .primary = true, .device = d };
                sim_object_add(&primaries[d].obj, SIM_CONTEXT);
                primaries[d].id = ++sim.next_id;
                sim.primaries[d] = &primaries[d];
            }
            sim_object_add(&default_pool.obj, SIM_POOL);
            sim.primary = sim.primaries[0];
            sim.default_pool = &default_pool;
            sim.initialized = true;
            sim_info("device memory %zu MiB%s, HOST_NUMA nodes %d%s", sim.config.device_capacity >> 20,
                     sim.config.capacity_default ? " (SIMCUDA_MEM unset: 16 GiB or half the host's memory, the less)"
                                                 : "",
                     sim.config.numa_node_count, sim.config.host_numa_vmm ? "" : " (HOST_NUMA VMM off)");
        }
    } else if (!sim.initialized) {
        result = sim.init_error;
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuDriverGetVersion(int *version)
{
    SIM_FAIL_POINT(cuDriverGetVersion);
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = SIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult sim_device_check(CUdevice device)
{
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    return device >= 0 && device < sim.config.device_count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
#define check_device sim_device_check

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    SIM_FAIL_POINT(cuDeviceGet);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= sim.config.device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetCount(int *count)
{
    SIM_FAIL_POINT(cuDeviceGetCount);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = sim.config.device_count;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int length, CUdevice device)
{
    SIM_FAIL_POINT(cuDeviceGetName);
    CUresult result = check_device(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!name || length <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, SIM_DEVICE_NAME, (size_t)length - 1);
    name[length - 1] = '\0';
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device)
{
    SIM_FAIL_POINT(cuDeviceTotalMem_v2);
    CUresult result = check_device(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = sim.config.device_capacities[device];
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice device)
{
    CUresult result = check_device(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    char bytes[16] = "simcuda-device-0";
    bytes[15] = (char)('0' + device); /* device < SIM_MAX_DEVICES */
    memcpy(uuid->bytes, bytes, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}

/* cuda.h maps the name to _v2; both ABIs are exported. */
#undef cuDeviceGetUuid
SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device) { SIM_FAIL_POINT(cuDeviceGetUuid); return device_uuid(uuid, device); }
SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice device) { SIM_FAIL_POINT(cuDeviceGetUuid_v2); return device_uuid(uuid, device); }

/* Attributes of an H200-class device. Attributes not listed read 0, like a feature the
 * device does not have. */
static int attribute_value(CUdevice_attribute attribute, CUdevice device)
{
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x1b + device;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: return 0;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return sim.config.posix_fd ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return sim.config.numa_nodes[0];
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        return sim.config.host_numa_vmm ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: return CU_DEVICE_NUMA_CONFIG_NONE;
    default: return 0;
    }
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice device)
{
    SIM_FAIL_POINT(cuDeviceGetAttribute);
    CUresult result = check_device(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!value || attribute <= 0 || attribute >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *value = attribute_value(attribute, device);
    return CUDA_SUCCESS;
}

/* "0000:1b:00.0" for device 0, the next bus for each further device. */
SIM_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice device)
{
    SIM_FAIL_POINT(cuDeviceGetPCIBusId);
    CUresult result = check_device(device);
    if (result != CUDA_SUCCESS)
        return result;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x1b + device);
    return CUDA_SUCCESS;
}

/* Every pair of distinct devices can reach each other (as over NVLink). */
SIM_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    SIM_FAIL_POINT(cuDeviceCanAccessPeer);
    CUresult result = check_device(dev);
    if (result == CUDA_SUCCESS)
        result = check_device(peerDev);
    if (result != CUDA_SUCCESS)
        return result;
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}
