/* alloc.h — the allocations the interposer tracks: chunked ones it places itself, and the
 * small and managed ones the driver makes that it counts. Every path of hook_alloc.c and
 * the teardown hooks of hook_context.c go through here. */
#ifndef TM_PRELOAD_ALLOC_H
#define TM_PRELOAD_ALLOC_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/heat.h"
#include "policy/place.h"
#include "preload/mem/backing.h"
#include "preload/driver/cuda_api.h"
#include "preload/tiers/device.h"
#include "preload/mem/registry.h"
#include "preload/model/tensor_table.h"

typedef struct tm_file_chunks tm_file_chunks;

typedef struct tm_alloc {
    tm_range range;         /* base: the program's pointer; size: the bytes it asked for */
    CUcontext ctx;          /* the context current at allocation */
    tm_device *device;      /* its device, when tiered (HBM is counted per device) */
    uint32_t path;          /* enum tm_stats_path */
    bool managed;           /* cuMemAllocManaged: counted, not placed */
    bool baseline;          /* managed memory made in place of chunks (TIERMEM_POLICY=managed*) */
    bool read_mostly;       /* advised read-mostly (set once, atomically) */
    int stats_slot;         /* its record in the stats region, or -1 */
    uint64_t id;            /* the buffer id pointer attributes report for chunked memory */
    tm_backing *backing;    /* chunked: the chunks; NULL for memory the driver made */
    const tm_tensor **label;/* chunked: [backing->plan.chunks] the model-file tensor copied
                             * into each chunk's first written byte (NULL: none seen);
                             * NULL until the first such copy (provenance.c) */
    tm_heat_chunk *heat;    /* [heat_chunks] access heat per chunk; NULL without heat */
    uint32_t heat_chunks;
    uint32_t heat_chunk_shift; /* log2 of the heat chunk size */
    int heat_lock;          /* held while a sample credits and publishes the chunks */
    tm_file_chunks *file;   /* chunked: the file tier's view of its chunks (file_tier.h), or NULL */
    bool ipc_pinned;        /* exported with cuIpcGetMemHandle: its chunks never move, so
                             * importers keep seeing the same memory (set under the
                             * remap lock) */
    bool graph_pinned;      /* a launch captured into a CUDA graph points into it: the file
                             * tier never drops its chunks, since a replay's parameters are
                             * never seen (set under the remap lock) */
} tm_alloc;

/* ---------------------------------------------------------------- events */

/* Why a record goes. */
typedef enum tm_release_kind {
    TM_RELEASE_FREED,       /* its memory is released now: a chunked one with the remap lock
                             * held (mem/backing.h) and its backing still mapped */
    TM_RELEASE_FORGOTTEN,   /* a fork child drops the parent's record; the memory is not its own */
} tm_release_kind;

/* What the rooms above do as allocations come and go (each entry may leave any out). The
 * core calls nothing above itself: preload/lifecycle.c lists the watchers, in order. */
typedef struct tm_alloc_watcher {
    const char *name;
    /* A record was made: in the registry, with its stats record (stats_slot, may be -1). */
    void (*created)(tm_alloc *alloc);
    /* A record leaves: out of the registry, its memory about to go as `how` says. */
    void (*released)(tm_alloc *alloc, tm_release_kind how);
    /* No tier has room for `chunks` chunks of `device`: give some back if you can; how many
     * were (placement then starts over). */
    uint64_t (*make_room)(tm_device *device, uint64_t chunks);
} tm_alloc_watcher;

/* NULL-terminated: preload/lifecycle.c defines it. */
extern const tm_alloc_watcher *const tm_alloc_watchers[];

/* ---------------------------------------------------------------- requests */

/* Routes a request of `bytes` on the calling thread's current device (policy/place.h, one
 * question per request); TM_ROUTE_DRIVER leaves *device and *ctx unset. */
tm_route tm_route_allocation(uint64_t bytes, tm_device **device, CUcontext *ctx);

/* The driver's own allocation call for one path; `args` carries its extra arguments. */
typedef CUresult (*tm_driver_alloc)(CUdeviceptr *dptr, size_t bytes, const void *args);

/* Serves one allocation request of the program: routed, then chunked across the tiers, or
 * made by `driver` and counted (HBM the driver itself is out of sends it to the lower
 * tiers). */
CUresult tm_alloc_serve(size_t bytes, uint32_t path, CUdeviceptr *dptr, tm_driver_alloc driver, const void *args);

/* Makes a chunked allocation (under a managed policy: managed memory, managed.h). Returns
 * false when the call must pass through to the driver instead (an internal error, logged
 * once). Otherwise *result is the program's answer: CUDA_SUCCESS with *dptr set, or
 * CUDA_ERROR_OUT_OF_MEMORY when no tier had room. */
bool tm_alloc_chunked(tm_device *device, CUcontext ctx, uint64_t bytes, uint32_t path,
                      CUdeviceptr *dptr, CUresult *result);
/* The same in the tiers below HBM, or across all of them when those have no room. */
bool tm_alloc_chunked_lower(tm_device *device, CUcontext ctx, uint64_t bytes, uint32_t path,
                            CUdeviceptr *dptr, CUresult *result);

/* Counts memory the driver allocated (small or managed); the record, or NULL when it could
 * not be kept. */
tm_alloc *tm_track_driver_alloc(tm_device *device, CUcontext ctx, CUdeviceptr dptr, uint64_t bytes, uint32_t path, bool managed);

/* Takes the record of the allocation starting exactly at `dptr` out of the registry
 * (NULL when there is none). The caller then frees it, or puts it back. */
tm_alloc *tm_untrack(CUdeviceptr dptr);
void tm_retrack(tm_alloc *alloc);

/* After the driver freed memory it made: drops the counts and the record. */
void tm_forget(tm_alloc *alloc);

/* Puts chunks [first, first + count) of a chunked allocation in `tier` without keeping
 * their bytes: the caller guarantees they are dead (about to be overwritten whole, nothing
 * in flight using them). Charges the tiers, keeps the stats record right, and leaves a
 * chunk where it is when the tier is absent, full or the driver refuses; memory shared with
 * other processes never moves. Returns the chunks moved. (Chunks whose bytes live move by
 * migration: move/migrate.h.) */
uint64_t tm_alloc_replace_chunks(tm_device *device, tm_alloc *alloc, uint64_t first, uint64_t count,
                                 tm_tier_id tier);

/* The allocation's stats record shows its chunks per tier as its backing holds them now. */
void tm_alloc_publish_tiers(const tm_alloc *alloc);

/* Its first chunk holds a model file's stack of matrices, a tensor of three dimensions or
 * more (a mixture's experts, [expert][rows][cols]): a launch reads the few matrices its
 * router picked on the device, which the launch's parameters do not say. */
bool tm_alloc_holds_stack(const tm_alloc *alloc);

/* How to wait for work that may still use a chunked allocation before releasing it. */
typedef enum tm_wait {
    TM_WAIT_CONTEXT,        /* cuMemFree: the allocation's context */
    TM_WAIT_STREAM,         /* cuMemFreeAsync: the stream */
    TM_WAIT_STREAM_PTSZ,    /* cuMemFreeAsync_ptsz: the stream, per-thread default */
    TM_WAIT_NOTHING,        /* the context is gone already */
} tm_wait;

/* Waits as told, releases the chunks (or the managed memory made in their place), drops
 * the counts and the record. */
void tm_free_chunked(tm_alloc *alloc, tm_wait wait, CUstream stream);

/* Marks the managed allocation made in place of chunks that contains `address` as
 * read-mostly; true (with its range) only for the call that marked it. */
bool tm_claim_read_mostly(CUdeviceptr address, CUdeviceptr *base, uint64_t *size);

/* What the info hooks report about an address inside a tracked allocation. */
typedef struct tm_alloc_view {
    CUdeviceptr base;
    uint64_t size;          /* requested */
    uint64_t extent;        /* mapped: chunked allocations round up to whole chunks */
    CUcontext ctx;
    CUdevice device;        /* the device it was allocated on */
    bool chunked;
    uint64_t id;
} tm_alloc_view;

bool tm_lookup(CUdeviceptr address, tm_alloc_view *view);

/* The tracked allocation containing `address`: `visit` runs on it while it cannot go away
 * (what it changes there has locks or atomics of its own). False, without a visit, when
 * none contains it. */
bool tm_alloc_find(CUdeviceptr address, void (*visit)(tm_alloc *alloc, void *arg), void *arg);

/* The tracked allocation containing `address`, or NULL. The record may be used after the
 * call only while the caller holds the remap lock (mem/backing.h), which its release takes. */
tm_alloc *tm_alloc_at(CUdeviceptr address);

/* Every tracked allocation, while none can go away (every shard locked: keep it short). */
void tm_alloc_each(void (*visit)(tm_alloc *alloc, void *arg), void *arg);

/* Teardown: everything a context allocated (before it is destroyed, or after, with
 * `context_alive` false). Nothing is released at exit: that is the driver's. */
void tm_release_context(CUcontext ctx, bool context_alive);

/* Gives device `accessor` read-write access to every chunked allocation of `owner` (peer
 * access the program enabled). */
void tm_grant_peer_access(tm_device *owner, CUdevice accessor);

/* A fork child drops the parent's records without touching the memory. */
void tm_forget_all_in_child(void);

#endif /* TM_PRELOAD_ALLOC_H */
