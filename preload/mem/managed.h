/* managed.h — the managed-memory baseline's mechanism (its decisions: policy/managed.h):
 * managed memory made in place of chunks, the advice given at birth, and the host fills
 * the read-mostly rule watches until the first kernel launch (driver/launch.h). */
#ifndef TM_PRELOAD_MANAGED_H
#define TM_PRELOAD_MANAGED_H

#include <stdbool.h>
#include <stdint.h>

#include "preload/driver/cuda_api.h"
#include "preload/tiers/device.h"

/* tm_alloc_chunked's answer under a managed policy: cuMemAllocManaged memory, tracked and
 * counted as managed, advised as the policy says. Same contract as tm_alloc_chunked. */
bool tm_alloc_managed(tm_device *device, CUcontext ctx, uint64_t bytes, uint32_t path, CUdeviceptr *dptr,
                      CUresult *result);

/* The host wrote [dst, ...) of device memory (a host-to-device copy that succeeded). */
void tm_managed_note_fill(CUdeviceptr dst);

#endif /* TM_PRELOAD_MANAGED_H */
