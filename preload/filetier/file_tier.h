/* file_tier.h — the file-backed tier (TIERMEM_FILE_TIER=1): chunks holding read-only
 * bytes of a model file give their memory back when every other tier is full, and are read
 * back from the file before work needs them.
 *
 * A chunk qualifies when a copy from host memory filled from a model file wrote every live
 * byte of it (provenance.h); a hash of those bytes is kept. When placement finds no room
 * (an allocation, or a read-back), the coldest such chunks (least recently needed by a
 * launch) are dropped: with the submission gate closed and the context drained, the device
 * copy is hashed again (a kernel, memset or other copy may have written it since: then it
 * is not dropped, and never again until a file copy fills it anew), unmapped and its
 * physical chunk released; its address range stays reserved, with no access.
 *
 * Before a launch, the pointer-sized parameters are read (heat_launch.h's layouts); every
 * dropped chunk of an allocation one points into is read back: a chunk of a tier with room
 * (HBM first) is mapped at the same address, the file range is read with io_uring (the
 * file opened once, O_RDONLY | O_NOFOLLOW, and checked by device, inode, size and
 * modification time before every read: a changed file is refused with one error line and
 * the launch fails with CUDA_ERROR_FILE_NOT_FOUND rather than run on other bytes) into a
 * host buffer and copied in. Copies into and out of device memory do the same for the
 * range they touch. A drop counts an epoch; a launch or copy is submitted under the gate
 * only if no drop happened since its chunks were read back (else it reads them again).
 *
 * The read-back waits for storage: on simcuda it is charged to the time model with
 * simcuda_storage_read at the profile's NVME_GBPS. The allocations a launch captured into
 * a CUDA graph points into are never dropped again (a replay's parameters are never seen);
 * what was dropped of them before is read back before the next graph launch, since the
 * capture itself may not synchronise. Not covered: memory a kernel
 * reaches through pointers stored in device memory, and graphs built node by node
 * (cuGraphAddKernelNode), whose launches the hooks do not see. */
#ifndef TM_PRELOAD_FILE_TIER_H
#define TM_PRELOAD_FILE_TIER_H

#include <stdbool.h>
#include <stdint.h>

#include "preload/driver/launch.h"
#include "preload/mem/alloc.h"
#include "preload/tiers/device.h"
#include "preload/model/model_files.h"
#include "preload/driver/submit_gate.h"

/* Turns the tier on for `device` (TIERMEM_FILE_TIER=1, VMM backings only). */
void tm_file_tier_start(tm_device *device);

/* True while some chunk is dropped: the hooks' fast path is this one load. */
extern uint64_t tm_file_tier_dropped_now;
static inline bool tm_file_tier_active(void)
{
    return __atomic_load_n(&tm_file_tier_dropped_now, __ATOMIC_RELAXED) != 0;
}

/* Provenance saw a copy write file bytes into chunk `index` of `a`: from file offset
 * `offset` over every live byte of it (`whole`, with `src` the host bytes), or only part
 * (then it no longer qualifies). */
void tm_file_tier_filled(tm_alloc *a, uint64_t index, const tm_model_file *file, uint64_t offset, bool whole,
                         const void *src);

/* Placement found no room for `chunks` chunks: drops up to that many of the coldest
 * qualifying chunks. Returns how many it dropped. */
uint64_t tm_file_tier_make_room(tm_device *device, uint64_t chunks);

/* Reads back the dropped chunks that [address, address + bytes) overlaps (a copy); *epoch
 * the drop count they were read back at. CUDA_SUCCESS, or the error the call must fail
 * with. */
CUresult tm_file_tier_prepare_range(CUdeviceptr address, uint64_t bytes, uint64_t *epoch);
/* Both ranges of a device-to-device copy; *epoch that of the first (a drop after it, even
 * one that made room to read the second back, sends the caller round again). */
CUresult tm_file_tier_prepare_copy(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes, uint64_t *epoch);

/* The tier as a watcher of launches (driver/launch.h). While the tier is on, a launch
 * whose stream is capturing a graph pins the chunked allocations its parameters point
 * into (graph_pinned) and goes without read-backs, whose synchronisation would end the
 * capture; while chunks are dropped, every other launch has the dropped chunks its
 * parameters point into read back first, and a graph launch every dropped chunk of the
 * pinned allocations (a capture saw them dropped; once read back they stay). */
extern bool tm_file_tier_on;
extern const tm_launch_watcher tm_file_tier_launch_watcher;

/* True when no chunk was dropped since `epoch` (call with the gate entered). */
bool tm_file_tier_epoch_holds(uint64_t epoch);

/* A free: forgets the allocation's chunks (called with the remap lock held, before its
 * backing is destroyed). */
void tm_file_tier_forget(tm_alloc *a);

/* As a watcher of allocations: a free forgets their chunks; placement that finds no room
 * has the coldest qualifying chunks dropped (tm_file_tier_make_room). */
extern const tm_alloc_watcher tm_file_tier_alloc_watcher;

/* A fork child: the parent's allocations and ring are not its own (the records went with
 * tm_forget_all_in_child). */
void tm_file_tier_forget_in_child(void);

/* A submission that may need dropped chunks: read back, then submitted under the gate
 * unless a drop came between (then again). */
#define TM_FILE_GATED_(prepare, call)                                                       \
    ({                                                                                      \
        CUresult tm_file_result_;                                                           \
        if (!tm_file_tier_active()) {                                                       \
            tm_file_result_ = TM_GATED(call);                                               \
        } else {                                                                            \
            for (;;) {                                                                      \
                uint64_t tm_file_epoch_;                                                    \
                tm_file_result_ = (prepare);                                                \
                if (tm_file_result_ != CUDA_SUCCESS)                                        \
                    break;                                                                  \
                tm_gate_enter();                                                            \
                bool tm_file_holds_ = tm_file_tier_epoch_holds(tm_file_epoch_);             \
                if (tm_file_holds_)                                                         \
                    tm_file_result_ = (call);                                               \
                tm_gate_leave();                                                            \
                if (tm_file_holds_)                                                         \
                    break;                                                                  \
            }                                                                               \
        }                                                                                   \
        tm_file_result_;                                                                    \
    })
#define TM_FILE_GATED_RANGE(address, bytes, call) \
    TM_FILE_GATED_(tm_file_tier_prepare_range(address, bytes, &tm_file_epoch_), call)
#define TM_FILE_GATED_COPY(dst, src, bytes, call) \
    TM_FILE_GATED_(tm_file_tier_prepare_copy(dst, src, bytes, &tm_file_epoch_), call)

#endif /* TM_PRELOAD_FILE_TIER_H */
