/* device_plan.h — what a device's tiers are, decided once per device from configuration
 * and discovery alone.
 *
 * Every view of memory a program can ask for (cuDeviceTotalMem before any context,
 * cuMemGetInfo inside one, NVML) derives its total from this one plan, so the totals never
 * change when a context appears. The set-up of the tiered device takes its tiers from it. */
#ifndef TM_PRELOAD_DEVICE_PLAN_H
#define TM_PRELOAD_DEVICE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/tier.h"
#include "preload/driver/cuda_api.h"
#include "preload/tiers/discover.h"

typedef struct tm_device_plan {
    bool usable;           /* false: the device cannot be tiered (why_not says why) */
    const char *why_not;
    uint64_t memory;       /* what the device has */
    uint64_t chunk_size;   /* the VMM granularity of every tier */
    bool host_numa;        /* lower tiers are VMM HOST_NUMA chunks (else pinned host memory) */
    tm_discovery found;    /* how each tier was found, for the start-up line */
    tm_tiers tiers;        /* presence, nodes, limits and the HBM reserve; no usage */
} tm_device_plan;

/* The plan of a device, made at the first call (driver calls that need no context; the
 * settings warnings come out then, once). NULL while the driver is not initialised (NVML
 * may be asked before cuInit, and tiermem never initialises the driver itself: a process
 * that forks workers must not), or when it cannot describe the device. */
const tm_device_plan *tm_device_plan_of(CUdevice ordinal);

/* The total memory a program is told the device has, in the configured view; false when the
 * device is not tiered (the driver's answer stands). */
bool tm_device_view_total(CUdevice ordinal, uint64_t *total);

/* Fork handling: a child plans again (its machine is the same, but it may set up anew). */
void tm_device_plan_forget_in_child(void);

#endif /* TM_PRELOAD_DEVICE_PLAN_H */
