/* vmm_handles.h — physical handles the program creates itself with cuMemCreate at a
 * DEVICE location: counted in HBM, or created in a lower tier when HBM has no room. The
 * map remembers each handle's tier, size and the properties the program asked for, and
 * where the program mapped it: a handle's memory lives until it is released and every
 * mapping of it is gone (create → map → release is how memory pools grow), so that is
 * when its charge ends. cuMemRetainAllocationHandle gives out more references to the
 * handle, each ended by one more cuMemRelease. */
#ifndef TM_PRELOAD_VMM_HANDLES_H
#define TM_PRELOAD_VMM_HANDLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/tier.h"
#include "preload/driver/cuda_api.h"

typedef struct tm_vmm_handle_info {
    uint64_t bytes;                 /* size of the handle */
    tm_tier_id tier;                /* where it really is */
    CUmemAllocationProp asked;      /* the properties the program passed */
    int stats_slot;
} tm_vmm_handle_info;

bool tm_vmm_handles_add(CUmemGenericAllocationHandle handle, const tm_vmm_handle_info *info);
/* Copies what is known about a handle without removing it. */
bool tm_vmm_handles_find(CUmemGenericAllocationHandle handle, tm_vmm_handle_info *info);

/* After the driver released `handle`: forgets the handle once every reference to it is
 * released. Returns true with *info set
 * when its memory is gone too (no mapping left), so the caller ends its charge. */
bool tm_vmm_handles_released(CUmemGenericAllocationHandle handle, tm_vmm_handle_info *info);

/* After the driver gave out one more reference to `handle`, found mapped at `va`: the
 * handle lives until a release for each (known again if the program had released it while
 * mapped). */
void tm_vmm_handles_retained(CUmemGenericAllocationHandle handle, CUdeviceptr va);

/* After the driver mapped `handle` at [va, va + size): remembers the mapping. */
void tm_vmm_handles_mapped(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle handle);

/* After the driver unmapped [va, va + size): forgets the mappings inside it and calls
 * `gone` for each released handle whose last mapping that was. */
void tm_vmm_handles_unmapped(CUdeviceptr va, size_t size, void (*gone)(const tm_vmm_handle_info *info));

/* Whether `ptr` falls in a mapping of one of the program's handles that lives in a lower
 * tier (asked for at a DEVICE location, created at HOST_NUMA): true with *info set. The
 * driver calls such memory host memory; the program must see the device memory it asked
 * for. Answers at once while no such mapping exists, else in time bounded by the mappings. */
bool tm_vmm_handles_spilled_at(CUdeviceptr ptr, tm_vmm_handle_info *info);

void tm_vmm_handles_lock(void);
void tm_vmm_handles_unlock(void);
void tm_vmm_handles_forget_in_child(void);

#endif /* TM_PRELOAD_VMM_HANDLES_H */
