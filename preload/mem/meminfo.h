/* meminfo.h — what cuMemGetInfo and NVML tell a program about a tiered device. */
#ifndef TM_PRELOAD_MEM_MEMINFO_H
#define TM_PRELOAD_MEM_MEMINFO_H

#include <stdint.h>

#include "preload/tiers/device.h"

/* The free and total of `device` in the configured view (TIERMEM_MEMINFO), from the
 * driver's answer; pooled chunks count as free, since any allocation may have them. */
void tm_meminfo_view_of(const tm_device *device, uint64_t driver_free, uint64_t driver_total, uint64_t *free,
                        uint64_t *total);

#endif /* TM_PRELOAD_MEM_MEMINFO_H */
