/* discover.h — the tiers of this machine (DESIGN decision 4).
 *
 * HBM is the device's memory, or TIERMEM_HBM_LIMIT. DDR is the NUMA node closest to the
 * GPU: TIERMEM_DDR_NODE, else the device's CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, else the
 * node of its PCI device, else the node this thread runs on. CXL is TIERMEM_CXL_NODE, else
 * a CPU-less NUMA node whose memory libcxl shows to lie in a CXL region (the one closest
 * to the DDR node); without one there is no CXL tier. */
#ifndef TM_PRELOAD_DISCOVER_H
#define TM_PRELOAD_DISCOVER_H

#include <stdint.h>

#include "policy/config.h"
#include "policy/tier.h"
#include "preload/driver/cuda_api.h"

typedef struct tm_discovery {
    tm_tiers tiers;
    char source[TM_TIER_COUNT][64]; /* how each tier was found, for the start-up line */
} tm_discovery;

/* The driver's minimum VMM granularity for a location, or 0 when it refuses the location. */
uint64_t tm_minimum_granularity(CUmemLocationType type, int id);

/* Fills every tier but the HBM reserve, which depends on the chunk size. */
void tm_discover_tiers(const tm_config *config, CUdevice device, uint64_t device_memory, tm_discovery *out);

#endif /* TM_PRELOAD_DISCOVER_H */
