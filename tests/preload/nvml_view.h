/* nvml_view.h — what the two NVML test programs share: NVML's memory answers beside
 * cuMemGetInfo's, before any context and after each allocation. */
#ifndef TM_TEST_NVML_VIEW_H
#define TM_TEST_NVML_VIEW_H

#include "tools/simcuda/nvml/nvml_api.h"

typedef struct nvml_calls {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*handle_by_index)(unsigned int index, nvmlDevice_t *device);
    nvmlReturn_t (*handle_by_bus_id)(const char *bus_id, nvmlDevice_t *device);
    nvmlReturn_t (*memory_info)(nvmlDevice_t device, nvmlMemory_t *memory);
    nvmlReturn_t (*memory_info_v2)(nvmlDevice_t device, nvmlMemory_v2_t *memory);
    nvmlReturn_t (*name)(nvmlDevice_t device, char *name, unsigned int length);
    nvmlReturn_t (*shutdown)(void);
} nvml_calls;

/* Prints "early NVML_TOTAL NVML_FREE" before cuInit, "before TOTAL NVML_TOTAL NVML_FREE NVML2_TOTAL NVML2_FREE" before any context,
 * then "info CU_FREE CU_TOTAL NVML_FREE NVML_TOTAL NVML2_FREE NVML2_TOTAL" in one, after
 * each allocation of sizes[] and after freeing them. Returns the exit status. */
int nvml_view_run(const nvml_calls *calls, int count, char **sizes);

#endif /* TM_TEST_NVML_VIEW_H */
