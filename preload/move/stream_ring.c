/* stream_ring.c — the HBM staging ring (see stream_ring.h). */
#include "preload/move/stream_ring.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "policy/prefetch_order.h"
#include "policy/units.h"
#include "preload/mem/alloc.h"
#include "preload/mem/chunk_pool.h"
#include "preload/driver/driver.h"
#include "preload/heat/heat.h"
#include "preload/heat/heat_launch.h"
#include "preload/base/log.h"
#include "preload/move/migrate.h"
#include "preload/move/stream_trial.h"
#include "preload/region/stats.h"
#include "preload/driver/submit_gate.h"

#define REFS_MAX TM_STREAM_SLOTS_MAX /* streamable chunks of one launch looked after; more are read in place */
#define IN_PLACE_EVENTS 16  /* launches reading a spilled chunk in place, tracked until a remap */

bool tm_stream_ready;

typedef enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_MAPPED } slot_state;

typedef struct slot {
    CUmemGenericAllocationHandle handle; /* an HBM chunk */
    CUdeviceptr staging;   /* where `handle` stays mapped: the copies' destination */
    CUevent filled;        /* recorded on the ring's stream after the copy into it */
    CUevent read;          /* recorded after the last launch that read it */
    bool read_recorded;
    CUstream read_on;      /* the stream `read` was recorded on */
    slot_state state;
    bool wanted;           /* it holds a chunk the launch between before and after reads */
    CUdeviceptr key;       /* FILLING, MAPPED: the address of the chunk it holds */
    uint64_t last_use;     /* launch number of its last reader: the oldest is recycled first */
} slot;

/* A launch that read spilled chunks in place: none of them is remapped before it ends. */
typedef struct in_place {
    CUdeviceptr lo, hi;    /* the chunks [lo, hi) it may have read; lo == hi: the entry is free */
    CUevent done;
} in_place;

/* A streamable chunk a launch references, and how far the launch may read on from it. */
typedef struct ref {
    CUdeviceptr key;
    CUdeviceptr end;       /* the end of its allocation's chunks */
    int slot;              /* the slot mapped at it for this launch, or -1: read in place */
} ref;

static struct {
    pthread_mutex_t lock;          /* taken after the remap lock */
    tm_device *device;
    uint64_t chunk;
    bool have_slots;               /* the chunks were taken at start */
    CUcontext ctx;                 /* of the stream and events; NULL until the first spilled launch */
    CUstream stream;               /* the ring's copy stream */
    CUdeviceptr staging;           /* `slots` chunks of address space */
    int slots;                     /* chunks of the ring */
    slot slot[TM_STREAM_SLOTS_MAX];
    in_place in_place[IN_PLACE_EVENTS];
    int in_place_next;
    tm_prefetch_order order;
    bool failed;
    bool measure;                  /* TIERMEM_STREAM=auto: stream only where the trial says it pays */
    ref refs[REFS_MAX];            /* the launch between before and after */
    int ref_count;
    bool overflow;                 /* it referenced more streamable chunks than refs holds */
    uint64_t launches;
    double typical_density;        /* heat per byte of the chunks pointers fall in, averaged */
    /* figures for the exit line */
    uint64_t streamed, streamed_bytes, in_place_reads, copy_waits, copy_wait_ns, slot_waits;
} ring = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---------------------------------------------------------------- start */

/* The ring streams, or stops: the fast path of launches and the router's view of the
 * device (its weights may spill while loading, to stream) follow. */
static void set_ready(bool on)
{
    if (ring.device)
        __atomic_store_n(&ring.device->streams, on, __ATOMIC_RELEASE);
    __atomic_store_n(&tm_stream_ready, on, __ATOMIC_RELEASE);
}

void tm_stream_ring_start(tm_device *device, const tm_config *config)
{
    if (config->policy != TM_POLICY_HEAT || ring.have_slots)
        return;
    int slots = tm_stream_ring_slots(config->stream_ring.set ? config->stream_ring.bytes : 0,
                                     device->tiers.tier[TM_TIER_HBM].limit, device->policy.chunk_size);
    uint64_t ring_bytes = (uint64_t)slots * device->policy.chunk_size;
    char size[32], large[128];
    tm_format_size(ring_bytes, size, sizeof size);
    snprintf(large, sizeof large, "its %s would be more than 1/%d of HBM; TIERMEM_STREAM=on streams anyway", size,
             TM_STREAM_AUTO_SHARE);
    const char *why = config->stream == TM_STREAM_OFF ? "TIERMEM_STREAM=off"
                      : config->stream == TM_STREAM_AUTO &&
                                ring_bytes * TM_STREAM_AUTO_SHARE > device->tiers.tier[TM_TIER_HBM].limit
                          ? large
                      : device->target.pinned_host ? "lower tiers are pinned host memory"
                      : config->file_tier ? "TIERMEM_FILE_TIER=1 drops chunks the ring would map"
                      : !tm_real.cuEventCreate || !tm_real.cuStreamWaitEvent ? "the driver lacks events"
                      : NULL;
    int taken = 0;
    while (!why && taken < slots && tm_chunk_pool_take(device, TM_TIER_HBM, &ring.slot[taken].handle))
        taken++;
    if (!why && taken < slots) {
        while (taken > 0)
            tm_chunk_pool_give(device, TM_TIER_HBM, ring.slot[--taken].handle);
        why = "HBM has no room for its chunks";
    }
    if (why) {
        tm_info("policy heat: spilled chunks are read in place, not streamed (%s)", why);
        return;
    }
    if (!tm_prefetch_order_init(&ring.order)) {
        while (taken > 0)
            tm_chunk_pool_give(device, TM_TIER_HBM, ring.slot[--taken].handle);
        tm_info("policy heat: spilled chunks are read in place, not streamed (out of memory)");
        return;
    }
    ring.device = device;
    ring.chunk = device->policy.chunk_size;
    ring.slots = slots;
    ring.have_slots = true;
    ring.measure = config->stream == TM_STREAM_AUTO;
    tm_info("policy heat: spilled weights stream through a ring of %d HBM chunks (%s)", slots, size);
    set_ready(true);
}

int tm_stream_ring_slots(uint64_t asked, uint64_t hbm, uint64_t chunk)
{
    uint64_t want = chunk ? (asked ? asked : hbm / TM_STREAM_RING_SHARE) / chunk : 0;
    return want < TM_STREAM_SLOTS_MIN ? TM_STREAM_SLOTS_MIN : want > TM_STREAM_SLOTS_MAX ? TM_STREAM_SLOTS_MAX : (int)want;
}

/* The ring lets go of everything it holds, its chunks back to HBM's pool, and streaming
 * stops for the run (lock held, in the ring's context, nothing mapped onto a slot). */
static void give_back(void)
{
    for (int s = 0; s < ring.slots; s++) {
        slot *sl = &ring.slot[s];
        if (sl->staging)
            tm_real.cuMemUnmap(sl->staging, ring.chunk);
        if (sl->filled)
            tm_real.cuEventDestroy_v2(sl->filled);
        if (sl->read)
            tm_real.cuEventDestroy_v2(sl->read);
        tm_chunk_pool_give(ring.device, TM_TIER_HBM, sl->handle);
        memset(sl, 0, sizeof *sl);
    }
    for (int i = 0; i < IN_PLACE_EVENTS; i++)
        if (ring.in_place[i].done)
            tm_real.cuEventDestroy_v2(ring.in_place[i].done);
    if (ring.staging)
        tm_release_call(tm_real.cuMemAddressFree(ring.staging, (uint64_t)ring.slots * ring.chunk));
    if (ring.stream)
        tm_real.cuStreamDestroy_v2(ring.stream);
    ring.staging = 0;
    ring.stream = NULL;
    ring.have_slots = false;
    ring.failed = true;
    set_ready(false);
}

/* TIERMEM_STREAM=auto: one remap and one copy of a chunk, timed; where two remaps cost more
 * than the copy saves over reading in place, the ring gives its HBM back (true: it did). */
static bool decline_if_it_does_not_pay(void)
{
    tm_stream_trial trial;
    bool measured = tm_stream_trial_run(ring.slot[0].staging, ring.slot[0].handle, ring.chunk,
                                        ring.device->target.device, ring.stream, &trial);
    if (measured && tm_stream_trial_pays(&trial))
        return false;
    if (measured)
        tm_info("policy heat: spilled chunks are read in place, not streamed: a remap costs %.1f us, two a chunk, "
                "against the %.1f us its copy saves over reading it in place (its copy takes %.1f us); the ring's %d "
                "HBM chunks go back (TIERMEM_STREAM=on streams anyway)",
                (double)trial.remap_ns / 1e3, tm_stream_trial_saved_ns(&trial) / 1e3,
                (double)trial.copy_ns / 1e3, ring.slots);
    else
        tm_info("policy heat: spilled chunks are read in place, not streamed: timing a remap failed");
    give_back();
    return true;
}

/* The stream, events and staging range, in the context of the first spilled launch. */
static bool set_up_in(CUcontext ctx)
{
    if (tm_real.cuStreamCreate(&ring.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        ring.stream = NULL;
        return false;
    }
    ring.ctx = ctx;
    if (tm_real.cuMemAddressReserve(&ring.staging, (uint64_t)ring.slots * ring.chunk, ring.chunk, 0, 0) !=
        CUDA_SUCCESS) {
        ring.staging = 0;
        return false;
    }
    CUmemAccessDesc access = {
        .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = ring.device->target.device },
        .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    for (int s = 0; s < ring.slots; s++) {
        slot *sl = &ring.slot[s];
        CUdeviceptr at = ring.staging + (uint64_t)s * ring.chunk;
        if (tm_real.cuMemMap(at, ring.chunk, 0, sl->handle, 0) != CUDA_SUCCESS)
            return false;
        sl->staging = at;
        if (tm_real.cuMemSetAccess(at, ring.chunk, &access, 1) != CUDA_SUCCESS ||
            tm_real.cuEventCreate(&sl->filled, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
            tm_real.cuEventCreate(&sl->read, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            return false;
    }
    for (int i = 0; i < IN_PLACE_EVENTS; i++)
        if (tm_real.cuEventCreate(&ring.in_place[i].done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            return false;
    if (ring.measure)
        decline_if_it_does_not_pay();
    return true;
}

/* ---------------------------------------------------------------- chunks */

/* Whether the chunk of `a` at `address` streams: spilled below HBM in a VMM backing and
 * holding a model-file tensor (weights: read-only). Its address and the bytes worth
 * copying (the program's part of it) in *key and *bytes. */
static bool streamable(const tm_alloc *a, CUdeviceptr address, CUdeviceptr *key, uint64_t *bytes, CUdeviceptr *end)
{
    const tm_backing *b = a ? a->backing : NULL;
    if (!b || b->pinned_host || b->plan.chunk_size != ring.chunk || address < b->base ||
        address >= b->base + b->bytes)
        return false;
    uint64_t i = (address - b->base) / ring.chunk;
    const tm_tensor **labels = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE);
    tm_tier_id tier = tm_backing_chunk_tier(b, i);
    if (!labels || !__atomic_load_n(&labels[i], __ATOMIC_RELAXED) || tier == TM_TIER_HBM || tier == TM_TIER_DROPPED)
        return false;
    *key = b->base + i * ring.chunk;
    *end = b->base + b->bytes;
    uint64_t left = a->range.size - i * ring.chunk;
    *bytes = left < ring.chunk ? left : ring.chunk;
    return true;
}

/* The chunk's own (lower-tier) handle; false when its allocation is gone. */
static bool own_handle(CUdeviceptr key, CUmemGenericAllocationHandle *handle)
{
    tm_alloc *a = tm_alloc_at(key);
    if (!a || !a->backing || key < a->backing->base || key >= a->backing->base + a->backing->bytes)
        return false;
    *handle = a->backing->handle[(key - a->backing->base) / ring.chunk];
    return true;
}

static int slot_of(CUdeviceptr key)
{
    for (int s = 0; s < ring.slots; s++)
        if (ring.slot[s].state != SLOT_FREE && ring.slot[s].key == key)
            return s;
    return -1;
}

/* ---------------------------------------------------------------- remaps */

static CUresult map_at(CUdeviceptr at, CUmemGenericAllocationHandle handle)
{
    CUresult r = tm_real.cuMemMap(at, ring.chunk, 0, handle, 0);
    if (r != CUDA_SUCCESS)
        return r;
    CUmemAccessDesc access = {
        .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = ring.device->target.device },
        .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    r = tm_real.cuMemSetAccess(at, ring.chunk, &access, 1);
    if (r != CUDA_SUCCESS)
        tm_release_call(tm_real.cuMemUnmap(at, ring.chunk));
    return r;
}

/* Maps `to` at `at` in place of `from`, with the gate closed; on failure `from` is mapped
 * there again. The caller has fenced every reader of `from` at `at`. */
static CUresult swap_mapping(CUdeviceptr at, CUmemGenericAllocationHandle from, CUmemGenericAllocationHandle to)
{
    tm_gate_close();
    CUresult r = tm_real.cuMemUnmap(at, ring.chunk);
    if (r == CUDA_SUCCESS) {
        r = map_at(at, to);
        if (r != CUDA_SUCCESS && map_at(at, from) != CUDA_SUCCESS)
            tm_log_once(TM_LOG_WARN, "streaming could not map a chunk back at 0x%llx", (unsigned long long)at);
    }
    tm_gate_open();
    return r;
}

static void stop_streaming(const char *what, CUresult r);

/* The slot's chunk goes back to its own backing once its last reader is done (`wait`:
 * the host waits for it; else only when it is done already). False when it is not. */
static bool unmap_slot(int s, bool wait)
{
    slot *sl = &ring.slot[s];
    if (sl->read_recorded) {
        CUresult r = wait ? tm_real.cuEventSynchronize(sl->read) : tm_real.cuEventQuery(sl->read);
        if (r == CUDA_ERROR_NOT_READY)
            return false;
        if (r != CUDA_SUCCESS) {
            stop_streaming("waiting for a reader", r);
            return false;
        }
    }
    CUmemGenericAllocationHandle own;
    if (own_handle(sl->key, &own)) {
        CUresult r = swap_mapping(sl->key, sl->handle, own);
        if (r != CUDA_SUCCESS) {
            /* the slot stays mapped there, holding the chunk's bytes: still right */
            tm_log_once(TM_LOG_WARN, "streaming stops: a chunk could not go back to its own backing (%d)", (int)r);
            ring.failed = true;
            set_ready(false);
            return false;
        }
    }
    sl->state = SLOT_FREE;
    sl->key = 0;
    return true;
}

/* Waits for every launch that may have read `key` in place (none may run while it is
 * remapped). */
static bool fence_in_place(CUdeviceptr key)
{
    for (int i = 0; i < IN_PLACE_EVENTS; i++) {
        in_place *e = &ring.in_place[i];
        if (key < e->lo || key >= e->hi)
            continue;
        CUresult r = tm_real.cuEventSynchronize(e->done);
        if (r != CUDA_SUCCESS) {
            stop_streaming("waiting for an in-place reader", r);
            return false;
        }
        e->lo = e->hi = 0;
    }
    return true;
}

/* The chunk the slot is filling is wanted now: wait for the copy and map the slot at it. */
static void map_slot(int s)
{
    slot *sl = &ring.slot[s];
    uint64_t start = now_ns();
    CUresult r = tm_real.cuEventSynchronize(sl->filled);
    ring.copy_waits++;
    ring.copy_wait_ns += now_ns() - start;
    if (r != CUDA_SUCCESS) {
        stop_streaming("waiting for a copy", r);
        return;
    }
    CUmemGenericAllocationHandle own;
    if (!own_handle(sl->key, &own)) {
        sl->state = SLOT_FREE;
        return;
    }
    if (!fence_in_place(sl->key))
        return;
    r = swap_mapping(sl->key, own, sl->handle);
    if (r != CUDA_SUCCESS) {
        sl->state = SLOT_FREE; /* the chunk is read in place, as it was */
        stop_streaming("mapping a chunk onto the ring", r);
        return;
    }
    sl->state = SLOT_MAPPED;
    ring.streamed++;
}

/* Every chunk back to its own backing, every copy finished; nothing streams after. */
static void drain(void)
{
    for (int s = 0; s < ring.slots; s++) {
        slot *sl = &ring.slot[s];
        if (sl->state == SLOT_FILLING) {
            tm_real.cuEventSynchronize(sl->filled);
            sl->state = SLOT_FREE;
        }
        if (sl->state == SLOT_MAPPED)
            unmap_slot(s, true); /* stays mapped, holding the chunk's bytes, if that fails */
    }
}

static void stop_streaming(const char *what, CUresult r)
{
    tm_log_once(TM_LOG_WARN, "streaming stops: %s failed (%d); spilled chunks are read in place", what, (int)r);
    bool first = !ring.failed;
    ring.failed = true;
    set_ready(false);
    if (first)
        drain();
}

/* ---------------------------------------------------------------- prefetching */

/* A slot to fill: a free one, else (`force`) the one read longest ago, once its reader
 * is done. -1 when none. */
static int take_slot(bool force)
{
    int oldest = -1;
    for (int s = 0; s < ring.slots; s++) {
        slot *sl = &ring.slot[s];
        if (sl->state == SLOT_FREE)
            return s;
        if (sl->state == SLOT_MAPPED && !sl->wanted && (oldest < 0 || sl->last_use < ring.slot[oldest].last_use))
            oldest = s;
    }
    if (!force || oldest < 0)
        return -1;
    ring.slot_waits++;
    return unmap_slot(oldest, true) ? oldest : -1;
}

static void fill(int s, CUdeviceptr key, uint64_t bytes)
{
    slot *sl = &ring.slot[s];
    /* the copy overwrites the slot only after its last reader is done */
    CUresult r = sl->read_recorded ? tm_real.cuStreamWaitEvent(ring.stream, sl->read, 0) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        r = tm_real.cuMemcpyDtoDAsync_v2(sl->staging, key, bytes, ring.stream);
    if (r == CUDA_SUCCESS && (r = tm_real.cuEventRecord(sl->filled, ring.stream)) != CUDA_SUCCESS)
        tm_real.cuStreamSynchronize(ring.stream); /* the copy is queued: the slot is not reused under it */
    if (r != CUDA_SUCCESS) {
        stop_streaming("a copy into the ring", r);
        return;
    }
    sl->state = SLOT_FILLING;
    sl->key = key;
    ring.streamed_bytes += bytes;
    tm_stat_add(streamed_bytes, bytes);
}

/* A chunk the launch reads that no slot holds: copied now into a slot an earlier launch
 * read (after it ends), when one is free of this launch; -1 when none is. The copy engines
 * move it faster than the kernel would read it in place, even with the wait. */
static int fetch_now(CUdeviceptr key)
{
    CUdeviceptr start, end;
    uint64_t bytes;
    if (!streamable(tm_alloc_at(key), key, &start, &bytes, &end))
        return -1;
    int s = take_slot(true);
    if (s >= 0)
        fill(s, start, bytes);
    return ring.failed ? -1 : s;
}

/* Starts copies of the chunks predicted next into the slots that are free (the very next
 * one may wait for a slot's reader). */
static void prefetch(void)
{
    uint64_t next[TM_STREAM_SLOTS_MAX];
    uint32_t count = tm_prefetch_order_next(&ring.order, next, (uint32_t)ring.slots);
    for (uint32_t i = 0; i < count && !ring.failed; i++) {
        CUdeviceptr key;
        uint64_t bytes;
        CUdeviceptr end;
        if (slot_of(next[i]) >= 0 || !streamable(tm_alloc_at(next[i]), next[i], &key, &bytes, &end))
            continue;
        int s = take_slot(i == 0);
        if (s < 0)
            return;
        fill(s, key, bytes);
    }
}

/* ---------------------------------------------------------------- launches */

static bool spilled(void)
{
    return __atomic_load_n(&tm_stats->tier[TM_TIER_CXL].chunks, __ATOMIC_RELAXED) +
               __atomic_load_n(&tm_stats->tier[TM_TIER_DDR].chunks, __ATOMIC_RELAXED) > 0;
}

static bool capturing(CUstream stream, bool per_thread)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = per_thread && tm_real.cuStreamIsCapturing_ptsz ? tm_real.cuStreamIsCapturing_ptsz(stream, &status)
                 : tm_real.cuStreamIsCapturing ? tm_real.cuStreamIsCapturing(stream, &status)
                                               : CUDA_ERROR_NOT_SUPPORTED;
    return r != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Heat per byte the allocation holds in chunk `c` (0 without heat). */
static double chunk_density(const tm_alloc *a, uint64_t c)
{
    if (!a->heat)
        return 0;
    uint64_t start = c * ring.chunk, held = a->range.size - start < ring.chunk ? a->range.size - start : ring.chunk;
    double per_chunk = tm_heat_alloc_density(a, (uint32_t)(start >> a->heat_chunk_shift), tm_heat_now_tick());
    return held ? per_chunk * (double)ring.chunk / (double)held : 0;
}

/* Notes the chunk at `key` as one this launch reads; false when refs is full. */
static bool add_ref(CUdeviceptr key, CUdeviceptr end)
{
    for (int j = 0; j < ring.ref_count; j++)
        if (ring.refs[j].key == key)
            return true;
    if (ring.ref_count == REFS_MAX) {
        ring.overflow = true;
        return false;
    }
    ring.refs[ring.ref_count++] = (ref){ .key = key, .end = end, .slot = -1 };
    return true;
}

/* The streamable chunks each pointer parameter reaches: its own, and the chunks after it
 * that hold the same tensor (a kernel handed a weight matrix reads it whole), as many as
 * the ring could map at once, while each is read about as much as the chunks pointers
 * fall in are: a kernel gathering rows of a table (the token embedding) reads a sliver of
 * each, which copying all of them every step would cost many times over. */
#define STREAM_GATHER_SHARE 16 /* under 1/16 of the typical heat per byte: a gather */
static void collect_refs(const uint64_t *values, size_t n)
{
    ring.overflow = false;
    for (size_t i = 0; i < n; i++) {
        CUdeviceptr key, end;
        uint64_t bytes;
        tm_alloc *a = values[i] ? tm_alloc_at(values[i]) : NULL;
        if (!a || !streamable(a, values[i], &key, &bytes, &end) || !add_ref(key, end))
            continue;
        const tm_tensor **labels = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE);
        uint64_t first = (key - a->backing->base) / ring.chunk;
        const tm_tensor *tensor = __atomic_load_n(&labels[first], __ATOMIC_RELAXED);
        double density = chunk_density(a, first);
        if (density > 0)
            ring.typical_density += (density - ring.typical_density) / 32;
        /* (what refs cannot hold of it is read in place, tracked from the first chunk on) */
        for (uint64_t c = first + 1;
             c < first + (uint64_t)ring.slots && c < a->backing->plan.chunks && ring.ref_count < REFS_MAX; c++) {
            CUdeviceptr next = a->backing->base + c * ring.chunk, next_key;
            if (__atomic_load_n(&labels[c], __ATOMIC_RELAXED) != tensor ||
                chunk_density(a, c) * STREAM_GATHER_SHARE < ring.typical_density ||
                !streamable(a, next, &next_key, &bytes, &end) || !add_ref(next_key, end))
                break;
        }
    }
}

static bool before_launch(CUfunction f, CUstream stream, bool per_thread, void **params, void **extra)
{
    if (!spilled())
        return false;
    uint64_t values[TM_LAUNCH_MAX_POINTERS];
    size_t n = tm_launch_pointers(f, params, extra, values, NULL);
    CUcontext ctx;
    if (n == 0 || tm_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        return false;
    tm_remap_lock();
    pthread_mutex_lock(&ring.lock);
    ring.ref_count = 0;
    if (!ring.failed && !ring.ctx && !set_up_in(ctx))
        stop_streaming("setting up the ring", CUDA_ERROR_UNKNOWN);
    if (!ring.failed && ring.ctx == ctx && !capturing(stream, per_thread))
        collect_refs(values, n);
    if (ring.ref_count == 0) {
        pthread_mutex_unlock(&ring.lock);
        tm_remap_unlock();
        return false;
    }
    ring.launches++;
    for (int s = 0; s < ring.slots; s++)
        ring.slot[s].wanted = false;
    for (int i = 0; i < ring.ref_count; i++) {
        tm_prefetch_order_note(&ring.order, ring.refs[i].key);
        int s = slot_of(ring.refs[i].key);
        if (s >= 0)
            ring.slot[s].wanted = true;
    }
    for (int i = 0; i < ring.ref_count && !ring.failed; i++) {
        ref *rf = &ring.refs[i];
        int s = slot_of(rf->key);
        if (s < 0 && ring.order.cyclic)
            s = fetch_now(rf->key);
        if (s >= 0)
            ring.slot[s].wanted = true; /* no later fetch of this launch takes it */
        if (s >= 0 && ring.slot[s].state == SLOT_FILLING)
            map_slot(s);
        if (s >= 0 && ring.slot[s].state == SLOT_MAPPED && ring.slot[s].key == rf->key) {
            rf->slot = s;
            ring.slot[s].last_use = ring.launches;
        }
    }
    /* slots whose reader is done go back, so the next copies have room */
    for (int s = 0; s < ring.slots && !ring.failed; s++)
        if (ring.slot[s].state == SLOT_MAPPED && !ring.slot[s].wanted)
            unmap_slot(s, false);
    if (!ring.failed)
        prefetch();
    if (ring.failed)
        for (int i = 0; i < ring.ref_count; i++)
            ring.refs[i].slot = -1; /* drained: every chunk is back in place */
    return true;
}

/* Records that the launch may have read the chunks [lo, hi) in place, in the next tracking
 * entry (whose previous launch is waited for first: its chunks may then be remapped). */
static void note_in_place(CUdeviceptr lo, CUdeviceptr hi, CUstream stream)
{
    in_place *e = &ring.in_place[ring.in_place_next];
    ring.in_place_next = (ring.in_place_next + 1) % IN_PLACE_EVENTS;
    if (e->lo != e->hi && tm_real.cuEventSynchronize(e->done) != CUDA_SUCCESS) {
        stop_streaming("waiting for an in-place reader", CUDA_ERROR_UNKNOWN);
        return;
    }
    e->lo = e->hi = 0;
    if (tm_real.cuEventRecord(e->done, stream) != CUDA_SUCCESS) {
        stop_streaming("recording an in-place read", CUDA_ERROR_UNKNOWN);
        return;
    }
    e->lo = lo;
    e->hi = hi;
}

/* Records the launch as the slot's reader; a reader on another stream is waited for first
 * (one event tells about one stream). */
static void note_slot_read(slot *sl, CUstream stream)
{
    if (sl->read_recorded && sl->read_on != stream && tm_real.cuEventSynchronize(sl->read) != CUDA_SUCCESS) {
        stop_streaming("waiting for a reader", CUDA_ERROR_UNKNOWN);
        return;
    }
    sl->read_recorded = tm_real.cuEventRecord(sl->read, stream) == CUDA_SUCCESS;
    sl->read_on = stream;
    if (!sl->read_recorded) /* without the event nothing tells when it ends: wait for it */
        tm_real.cuStreamSynchronize(stream);
}

static void after_launch(CUstream stream, bool per_thread, CUresult launched)
{
    CUstream on = per_thread && !stream ? CU_STREAM_PER_THREAD : stream;
    /* streamable chunks beyond what refs holds were read in place untracked: wait for them */
    if (ring.overflow && launched == CUDA_SUCCESS)
        tm_real.cuStreamSynchronize(on);
    for (int i = 0; i < ring.ref_count && launched == CUDA_SUCCESS && !ring.failed; i++) {
        ref *rf = &ring.refs[i];
        /* from a mapped chunk the launch may read on into the next ones, in place */
        CUdeviceptr from = rf->slot < 0 ? rf->key : rf->key + ring.chunk;
        if (from < rf->end && !ring.failed) {
            note_in_place(from, rf->end, on);
            ring.in_place_reads += rf->slot < 0;
        }
        if (rf->slot >= 0 && !ring.failed)
            note_slot_read(&ring.slot[rf->slot], on);
    }
    ring.ref_count = 0;
    pthread_mutex_unlock(&ring.lock);
    tm_remap_unlock();
}

/* ---------------------------------------------------------------- release, exit, fork */

void tm_stream_ring_forget(CUdeviceptr base, uint64_t bytes)
{
    if (!ring.have_slots)
        return;
    pthread_mutex_lock(&ring.lock);
    for (int s = 0; s < ring.slots; s++) {
        slot *sl = &ring.slot[s];
        if (sl->state == SLOT_FREE || sl->key < base || sl->key >= base + bytes)
            continue;
        /* its copy reads the chunk, its reader the slot: both end before the release */
        if (sl->state == SLOT_FILLING)
            tm_real.cuEventSynchronize(sl->filled);
        else if (sl->read_recorded)
            tm_real.cuEventSynchronize(sl->read);
        sl->state = SLOT_FREE; /* the release unmaps the whole range, the slot's mapping with it */
        sl->key = 0;
    }
    for (int i = 0; i < IN_PLACE_EVENTS; i++)
        if (ring.in_place[i].lo >= base && ring.in_place[i].lo < base + bytes)
            ring.in_place[i].lo = ring.in_place[i].hi = 0;
    pthread_mutex_unlock(&ring.lock);
}

void tm_stream_ring_stop(void)
{
    if (!ring.have_slots)
        return;
    tm_remap_lock();
    pthread_mutex_lock(&ring.lock);
    set_ready(false);
    if (ring.ctx) {
        CUcontext popped;
        bool pushed = tm_real.cuCtxPushCurrent_v2(ring.ctx) == CUDA_SUCCESS;
        if (!ring.failed)
            drain();
        for (int s = 0; s < ring.slots; s++) {
            if (ring.slot[s].staging)
                tm_real.cuMemUnmap(ring.slot[s].staging, ring.chunk);
            if (ring.slot[s].filled)
                tm_real.cuEventDestroy_v2(ring.slot[s].filled);
            if (ring.slot[s].read)
                tm_real.cuEventDestroy_v2(ring.slot[s].read);
        }
        for (int i = 0; i < IN_PLACE_EVENTS; i++)
            if (ring.in_place[i].done)
                tm_real.cuEventDestroy_v2(ring.in_place[i].done);
        if (ring.staging)
            tm_release_call(tm_real.cuMemAddressFree(ring.staging, (uint64_t)ring.slots * ring.chunk));
        if (ring.stream) /* refused when the program released its context first: the stream went with it */
            tm_real.cuStreamDestroy_v2(ring.stream);
        if (pushed)
            tm_real.cuCtxPopCurrent_v2(&popped);
    }
    for (int s = 0; s < ring.slots; s++) {
        if (ring.slot[s].state == SLOT_FREE) {
            tm_chunk_pool_give(ring.device, TM_TIER_HBM, ring.slot[s].handle);
        } else { /* still mapped after a driver error: released once the program's range goes */
            tm_release_call(tm_real.cuMemRelease(ring.slot[s].handle));
            tm_device_charge(ring.device, TM_TIER_HBM, -(int64_t)ring.chunk, 0);
        }
    }
    char moved[32];
    tm_info("exit: stream: %llu chunks streamed (%s copied), %llu read in place; waited for copies %llu times "
            "(%.1f ms), for a slot %llu times; order of %u chunks, %llu predicted, %llu missed, %llu relearned",
            (unsigned long long)ring.streamed, tm_format_size(ring.streamed_bytes, moved, sizeof moved),
            (unsigned long long)ring.in_place_reads, (unsigned long long)ring.copy_waits, ring.copy_wait_ns / 1e6,
            (unsigned long long)ring.slot_waits, ring.order.len, (unsigned long long)ring.order.hits,
            (unsigned long long)ring.order.misses, (unsigned long long)ring.order.restarts);
    tm_prefetch_order_free(&ring.order);
    ring.have_slots = false;
    ring.ctx = NULL;
    pthread_mutex_unlock(&ring.lock);
    tm_remap_unlock();
}

void tm_stream_ring_forget_in_child(void)
{
    pthread_mutex_init(&ring.lock, NULL);
    set_ready(false);
    ring.have_slots = false; /* the slots, stream and events are the parent's */
    ring.ctx = NULL;
}

/* ---------------------------------------------------------------- the watcher */

static bool ring_before_launch(tm_launch *l)
{
    return before_launch(l->f, l->stream, l->per_thread, l->params, l->extra);
}

static void ring_after_launch(tm_launch *l, CUresult launched)
{
    after_launch(l->stream, l->per_thread, launched);
}

const tm_launch_watcher tm_stream_ring_launch_watcher = {
    .name = "stream ring",
    .watching = &tm_stream_ready,
    .before = ring_before_launch,
    .after = ring_after_launch,
};

static void ring_released(tm_alloc *a, tm_release_kind how)
{
    if (how == TM_RELEASE_FREED && a->backing)
        tm_stream_ring_forget(a->backing->base, a->backing->bytes);
}

const tm_alloc_watcher tm_stream_ring_alloc_watcher = {
    .name = "stream ring",
    .released = ring_released,
};
