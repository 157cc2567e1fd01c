/* ipc.h — legacy CUDA IPC (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle) on
 * tiered memory.
 *
 * A driver refuses legacy IPC on VMM memory, and chunked allocations are VMM ranges. So
 * tiermem shares them itself, between processes that both run it:
 *   - chunks are created exportable as POSIX file descriptors (when the device can);
 *   - cuIpcGetMemHandle on a chunked pointer returns a 64-byte handle of tiermem's own
 *     (ipc_wire.h: magic, version, exporter pid, allocation id, size, a random nonce) and
 *     pins the allocation: its chunks never migrate again, so importers and exporter keep
 *     seeing the same bytes;
 *   - the exporter serves the chunks' descriptors on a Unix socket in the abstract
 *     namespace ("tiermem-ipc.<pid>", gone with the process), to peers of the same user
 *     or root only (SO_PEERCRED), over SCM_RIGHTS (ipc_export.c);
 *   - cuIpcOpenMemHandle with such a handle connects, checks that the server is the
 *     exporter (its pid and user), receives the descriptors, maps the same chunks in a
 *     range of its own and gives the device access (ipc_import.c); cuIpcCloseMemHandle
 *     unmaps it when the last open is closed.
 * Everything else (plain pointers, driver handles) passes through to the driver. A
 * process without tiermem cannot open a tiermem handle: the driver refuses it.
 * TIERMEM_IPC=passthrough, or a `size...=plain` rule, keeps allocations plain driver
 * memory, which the driver shares with any process. */
#ifndef TM_PRELOAD_IPC_H
#define TM_PRELOAD_IPC_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/tier.h"
#include "preload/mem/backing.h"
#include "preload/tiers/device.h"
#include "preload/driver/cuda_api.h"

/* At a device's set-up (tm_device_watcher): the handle types its chunks are created
 * with. POSIX file descriptors when the device can export them and every tier in use
 * takes them (one chunk of each is tried), else none (tiered memory is then not
 * shareable; said at info level). TIERMEM_IPC=passthrough, which keeps allocations HBM has
 * room for plain driver memory, is the router's to apply (mem/alloc.c). */
void tm_ipc_device_set_up(tm_device *device);

/* Whether the chunked allocation containing `address` can be exported (its chunks are
 * VMM handles created exportable): CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE. */
bool tm_ipc_capable(CUdeviceptr address);

/* cuIpcGetMemHandle on a chunked allocation: a tiermem handle, served from now on. */
CUresult tm_ipc_export(CUdeviceptr address, CUipcMemHandle *handle);

/* Whether a handle is tiermem's (else the driver's, to pass through). */
bool tm_ipc_is_ours(const CUipcMemHandle *handle);

/* cuIpcOpenMemHandle of a tiermem handle. */
CUresult tm_ipc_open(const CUipcMemHandle *handle, CUdeviceptr *pdptr);

/* An address inside memory opened from a tiermem handle: the start and the size the
 * exporter allocated (cuMemGetAddressRange answers with them). False for any other. */
bool tm_ipc_import_range(CUdeviceptr address, CUdeviceptr *base, uint64_t *size);

/* cuIpcCloseMemHandle: false when `dptr` is not a tiermem import (pass it through). */
bool tm_ipc_close(CUdeviceptr dptr, CUresult *result);

#endif /* TM_PRELOAD_IPC_H */
