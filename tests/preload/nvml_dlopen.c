/* nvml_dlopen.c — NVML as Python bindings reach it: dlopen("libnvidia-ml.so.1") and dlsym
 * of each function on that handle.
 *
 *   nvml_dlopen SIZE...   see nvml_view.h */
#include <dlfcn.h>
#include <stdio.h>

#include "tests/preload/nvml_view.h"

#define LOOKUP(library, field, symbol)                                    \
    do {                                                                  \
        *(void **)&calls.field = dlsym(library, symbol);                  \
        if (!calls.field) {                                               \
            printf("FAIL: dlsym(libnvidia-ml.so.1, %s): %s\n", symbol, dlerror()); \
            return 3;                                                     \
        }                                                                 \
    } while (0)

int main(int argc, char **argv)
{
    void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        printf("FAIL: dlopen(libnvidia-ml.so.1): %s\n", dlerror());
        return 3;
    }
    nvml_calls calls;
    LOOKUP(library, init, "nvmlInit_v2");
    LOOKUP(library, handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    LOOKUP(library, handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    LOOKUP(library, memory_info, "nvmlDeviceGetMemoryInfo");
    LOOKUP(library, memory_info_v2, "nvmlDeviceGetMemoryInfo_v2");
    LOOKUP(library, name, "nvmlDeviceGetName");
    LOOKUP(library, shutdown, "nvmlShutdown");
    return nvml_view_run(&calls, argc - 1, argv + 1);
}
