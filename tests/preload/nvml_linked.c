/* nvml_linked.c — NVML as a program linked with libnvidia-ml.so.1 calls it.
 *
 *   nvml_linked SIZE...   see nvml_view.h */
#include "tests/preload/nvml_view.h"

int main(int argc, char **argv)
{
    const nvml_calls calls = {
        .init = nvmlInit_v2,
        .handle_by_index = nvmlDeviceGetHandleByIndex_v2,
        .handle_by_bus_id = nvmlDeviceGetHandleByPciBusId_v2,
        .memory_info = nvmlDeviceGetMemoryInfo,
        .memory_info_v2 = nvmlDeviceGetMemoryInfo_v2,
        .name = nvmlDeviceGetName,
        .shutdown = nvmlShutdown,
    };
    return nvml_view_run(&calls, argc - 1, argv + 1);
}
