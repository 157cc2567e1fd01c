/* sim_nvml_query.c — what simcuda's libnvidia-ml.so.1 asks of the emulated device. NVML
 * sees a device without any context: its memory, and what is allocated on it now. Not a
 * driver entry point, so no interposer in front of libcuda ever catches it, as it never
 * catches the real NVML's own queries. */
#include "tools/simcuda/sim_internal.h"
#include "tools/simcuda/nvml/sim_nvml.h"

SIM_EXPORT int simcuda_nvml_device_count(void)
{
    return cuInit(0) == CUDA_SUCCESS ? 1 : 0;
}

SIM_EXPORT int simcuda_nvml_memory(unsigned int ordinal, uint64_t *total, uint64_t *used)
{
    if (ordinal != 0 || !total || !used || cuInit(0) != CUDA_SUCCESS)
        return -1;
    sim_lock();
    *total = sim.config.device_capacity;
    *used = sim.device_used;
    sim_unlock();
    return 0;
}
