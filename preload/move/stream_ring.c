/* stream_ring.c — the HBM staging ring (see stream_ring.h). */
#include "preload/move/stream_ring.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "policy/prefetch_order.h"
#include "policy/rebalance.h"
#include "policy/staging_ring.h"
#include "policy/stream_plan.h"
#include "policy/units.h"
#include "preload/base/log.h"
#include "preload/driver/driver.h"
#include "preload/driver/launch_params.h"
#include "preload/heat/heat_launch.h"
#include "preload/mem/chunk_pool.h"
#include "preload/move/migrate.h"
#include "preload/region/stats.h"

#define REFS_MAX 32      /* weights one launch reads that are looked after; more are read in place */
#define LOOKAHEAD 64     /* weights predicted next that a launch looks at for prefetching */
/* A launch whose threads reach (TM_HEAT_BYTES_PER_THREAD each) under 1/GATHER_SHARE of the
 * weight from its pointer on reads rows of it, not all of it (an embedding gathered): a
 * matrix-vector product reaches 1/8 of its matrix by that count, a gather of one token's
 * row of a 32k-token table 1/32768. */
#define GATHER_SHARE 64
/* Launches that read weights seen without a cycle of them showing: nothing will stream. */
#define LEARN_LAUNCHES_MAX (1u << 16)

bool tm_stream_ready;
bool tm_stream_weights_known;

/* What the ring keeps per extent (the same index as policy/staging_ring.h's entries). */
typedef struct stage {
    CUevent filled;        /* recorded on the ring's stream after the copy into the extent */
    CUevent read;          /* recorded after the last launch that read it */
    bool read_recorded;
    CUstream read_on;      /* the stream `read` was recorded on */
} stage;

/* A weight some launch read, and how. */
typedef struct weight {
    CUdeviceptr base;      /* the key */
    bool read_whole;       /* some launch reached all of it: it streams; else it is only
                            * ever gathered, and read in place */
    bool rewritten;        /* a copy or memset wrote it while it streamed: read in place
                            * from then on (a copy into the ring would not wait for the write) */
    UT_hash_handle hh;
} weight;

/* Chunked memory that is no weight (KV cache, activations) a launch read below HBM while
 * the cycle was learned. */
typedef struct other {
    CUdeviceptr base;      /* the key */
    UT_hash_handle hh;
} other;

/* A weight the launch in progress reads. */
typedef struct ref {
    CUdeviceptr base;      /* the weight's address, its key */
    uint64_t size;         /* the bytes the program asked for */
    bool streams;          /* below HBM in part, read whole, no larger than the ring */
    int entry;             /* its extent for this launch, or -1: read in place */
} ref;

static struct {
    pthread_mutex_t lock;               /* taken after the remap lock */
    tm_device *device;
    uint64_t chunk;
    uint64_t asked;                     /* TIERMEM_STREAM_RING, or 0 */
    bool forced;                        /* TIERMEM_STREAM=on */
    bool may_demote;                    /* resident weights may move below HBM to make room: not
                                         * under TIERMEM_MIGRATE_RATE=0 or TIERMEM_RULES */
    uint64_t largest;                   /* bytes of the largest weight the ring could ever hold */
    bool learning;                      /* launches watched, no ring yet */
    bool plan_due;                      /* a cycle was seen: the ring is sized at the next launch */
    bool failed;                        /* it declined or stopped: launches are left alone */
    bool learn_only;                    /* HBM holds no ring: the cycle is learned for the
                                         * rebalancer alone (tm_stream_weights_known) */
    bool streaming;                     /* the ring is set up and streams (atomic) */
    tm_prefetch_order order;
    weight *weights;                    /* every weight a launch read, by address (uthash) */
    other *others;                      /* memory that cannot stream read below HBM while learning */
    /* the ring, once sized */
    CUcontext ctx;
    CUstream stream;                    /* the ring's copies */
    CUdeviceptr staging;                /* `chunks` chunks of address space, mapped once */
    CUmemGenericAllocationHandle *handle; /* [chunks] its HBM chunks */
    int chunks;                         /* taken */
    int mapped;                         /* of them mapped at `staging` */
    tm_staging_ring *extents;
    stage *stage;                       /* [TM_STAGING_MAX] */
    uint32_t evicted[TM_STAGING_MAX];
    /* the launch between before and after */
    ref refs[REFS_MAX];
    int ref_count;
    CUstream on;                        /* its stream, as events see it */
    void **params, **extra;             /* its own arguments, given back after it */
    tm_launch_args args;
    /* figures for the exit line */
    uint64_t staged, staged_bytes, late, replaced, in_place, demoted_bytes, lifted_bytes;
    uint64_t rewrites;                  /* staged copies dropped because their weight was written */
    uint64_t learned;                   /* launches that read weights while learning */
} ring = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The ring streams, or no longer: the rebalancer and the router's view of the device
 * (spilled weights may then be placed below HBM while loading) follow. */
static void set_streaming(bool on)
{
    __atomic_store_n(&ring.streaming, on, __ATOMIC_RELEASE);
    if (ring.device)
        __atomic_store_n(&ring.device->streams, on, __ATOMIC_RELEASE);
}

/* Launches are watched, or no longer: off, nothing streams any more. */
static void set_ready(bool on)
{
    if (!on)
        set_streaming(false);
    __atomic_store_n(&tm_stream_ready, on, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------- start */

void tm_stream_ring_start(tm_device *device, const tm_config *config)
{
    if (config->policy != TM_POLICY_HEAT || ring.device)
        return;
    const char *why = config->stream == TM_STREAM_OFF ? "TIERMEM_STREAM=off"
                      : device->target.pinned_host    ? "lower tiers are pinned host memory"
                      : config->file_tier             ? "TIERMEM_FILE_TIER=1 drops chunks the ring would copy"
                      : !tm_real.cuEventCreate || !tm_real.cuStreamWaitEvent || !tm_real.cuMemcpyDtoDAsync_v2
                          ? "the driver lacks events or asynchronous copies"
                      : !tm_real.cuFuncGetParamInfo ? "the driver does not describe kernel parameters (cuFuncGetParamInfo)"
                          : NULL;
    if (!why && !tm_prefetch_order_init(&ring.order))
        why = "out of memory";
    if (why) {
        tm_info("policy heat: spilled weights are read in place, not streamed (%s)", why);
        return;
    }
    ring.learn_only = !config->stream_ring.set &&
                      tm_stream_plan_most(device->tiers.tier[TM_TIER_HBM].limit, device->policy.chunk_size) == 0;
    if (ring.learn_only)
        tm_info("policy heat: spilled weights are read in place, not streamed (HBM is too small for a ring of two "
                "chunks in a quarter of it)");
    ring.device = device;
    ring.chunk = device->policy.chunk_size;
    ring.asked = config->stream_ring.set ? config->stream_ring.bytes : 0;
    ring.forced = config->stream == TM_STREAM_ON;
    ring.may_demote = config->migrate_rate > 0 && device->policy.rules.count == 0;
    uint64_t hbm = device->tiers.tier[TM_TIER_HBM].limit;
    /* learning alone, every weight is in the cycle */
    ring.largest = ring.asked ? ring.asked : ring.learn_only ? UINT64_MAX : hbm / TM_STREAM_PLAN_HBM_SHARE;
    ring.learning = true;
    set_ready(true);
    if (ring.learn_only)
        return;
    /* weights load before a cycle shows whether they stream; where a ring of two chunks is a
     * small share of HBM, the router loads them as for streaming: small weights leave the
     * reserve to what comes after them (the KV cache) */
    if (hbm < (uint64_t)TM_STREAM_AUTO_SHARE * TM_STREAM_PLAN_MIN_CHUNKS * ring.chunk)
        return;
    __atomic_store_n(&device->streams, true, __ATOMIC_RELEASE);
    /* the smallest ring is taken now: weights a chunk or smaller are driver memory that
     * cannot move below HBM later to make room for it */
    ring.handle = calloc(TM_STREAM_PLAN_MIN_CHUNKS, sizeof *ring.handle);
    while (ring.handle && ring.chunks < TM_STREAM_PLAN_MIN_CHUNKS &&
           tm_chunk_pool_take(device, TM_TIER_HBM, &ring.handle[ring.chunks]))
        ring.chunks++;
}

/* ---------------------------------------------------------------- weights */

/* A chunked allocation whose chunks hold model-file data (provenance.h: read-only): its
 * first, middle and last chunks are looked at. */
static bool holds_weights(const tm_alloc *a)
{
    const tm_backing *b = a ? a->backing : NULL;
    if (!b || b->pinned_host || b->plan.chunk_size != ring.chunk || b->plan.chunks == 0)
        return false;
    const tm_tensor **labels = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE);
    uint64_t last = b->plan.chunks - 1;
    return labels && __atomic_load_n(&labels[0], __ATOMIC_RELAXED) &&
           __atomic_load_n(&labels[last / 2], __ATOMIC_RELAXED) && __atomic_load_n(&labels[last], __ATOMIC_RELAXED);
}

/* ... and small enough for a ring: a weight that may stream. */
static bool is_weight(const tm_alloc *a)
{
    return holds_weights(a) && a->range.size <= ring.largest;
}

static bool below_hbm(const tm_alloc *a)
{
    const tm_plan *p = &a->backing->plan;
    return __atomic_load_n(&p->per_tier[TM_TIER_HBM], __ATOMIC_RELAXED) < p->chunks;
}

/* The record of the weight at `base`, made when `create` (NULL without memory). */
static weight *weight_at(CUdeviceptr base, bool create)
{
    weight *w;
    HASH_FIND(hh, ring.weights, &base, sizeof base, w);
    if (!w && create && (w = calloc(1, sizeof *w))) {
        w->base = base;
        HASH_ADD(hh, ring.weights, base, sizeof w->base, w);
    }
    return w;
}

/* Only ever gathered by the launches seen: copying it whole would cost many times what
 * reading its rows in place does. */
static bool only_gathered(CUdeviceptr base)
{
    const weight *w = weight_at(base, false);
    return w && !w->read_whole;
}

static bool rewritten(CUdeviceptr base)
{
    const weight *w = weight_at(base, false);
    return w && w->rewritten;
}

static void note_other(CUdeviceptr base)
{
    other *o;
    HASH_FIND(hh, ring.others, &base, sizeof base, o);
    if (!o && (o = calloc(1, sizeof *o))) {
        o->base = base;
        HASH_ADD(hh, ring.others, base, sizeof o->base, o);
    }
}

static void forget_weights(void)
{
    weight *w, *next;
    HASH_ITER(hh, ring.weights, w, next)
    {
        HASH_DEL(ring.weights, w);
        free(w);
    }
}

static void forget_others(void)
{
    other *o, *next;
    HASH_ITER(hh, ring.others, o, next)
    {
        HASH_DEL(ring.others, o);
        free(o);
    }
}

/* Whether the launch's `threads` (TM_HEAT_BYTES_PER_THREAD each) reach all of `a` from its
 * pointer `value` on (never a stack of experts); noted in the weight's record. */
static bool note_reach(const tm_alloc *a, uint64_t value, uint64_t threads)
{
    uint64_t ahead = value - a->range.base < a->range.size ? a->range.base + a->range.size - value : 0;
    bool whole = ahead > 0 && threads * TM_HEAT_BYTES_PER_THREAD * GATHER_SHARE >= ahead && !tm_alloc_holds_stack(a);
    weight *w = weight_at(a->range.base, true);
    if (w && whole)
        w->read_whole = true;
    return whole;
}

/* Notes the weight `a` that the launch's pointer `value` falls in, read whole or not. */
static void add_ref(tm_alloc *a, bool whole)
{
    for (int i = 0; i < ring.ref_count; i++)
        if (ring.refs[i].base == a->range.base)
            return;
    if (ring.ref_count == REFS_MAX)
        return; /* read in place */
    bool fits = ring.extents && tm_staging_extent(ring.extents, a->range.size) <= ring.extents->capacity;
    ring.refs[ring.ref_count++] = (ref){ .base = a->range.base, .size = a->range.size, .entry = -1,
                                         .streams = fits && whole && below_hbm(a) && !rewritten(a->range.base) };
}

/* The weights the launch reads: every one's reach noted, those a ring could hold kept. */
static void collect_refs(const uint64_t *values, size_t n, uint64_t threads)
{
    ring.ref_count = 0;
    for (size_t i = 0; i < n; i++) {
        tm_alloc *a = values[i] ? tm_alloc_at(values[i]) : NULL;
        if (ring.learning && a && a->backing && !a->backing->pinned_host && a->backing->plan.chunk_size == ring.chunk &&
            !holds_weights(a) && below_hbm(a))
            note_other(a->range.base);
        if (!holds_weights(a))
            continue;
        bool whole = note_reach(a, values[i], threads);
        if (a->range.size <= ring.largest)
            add_ref(a, whole);
    }
}

bool tm_stream_ring_streaming(void)
{
    return __atomic_load_n(&ring.streaming, __ATOMIC_ACQUIRE);
}

bool tm_stream_ring_only_gathered(CUdeviceptr base)
{
    pthread_mutex_lock(&ring.lock);
    bool gathered = ring.device && only_gathered(base);
    pthread_mutex_unlock(&ring.lock);
    return gathered;
}

/* ---------------------------------------------------------------- the ring's memory */

static void stop_streaming(const char *what, CUresult r);

/* The ring's own records of its memory go (what they named is released, or another
 * process's). */
static void drop_records(void)
{
    free(ring.handle);
    free(ring.extents);
    free(ring.stage);
    ring.handle = NULL;
    ring.extents = NULL;
    ring.stage = NULL;
    ring.staging = 0;
    ring.stream = NULL;
    ring.chunks = ring.mapped = 0;
}

/* What launches taught it goes: the order, the weights, the memory noted while learning. */
static void forget_learned(void)
{
    tm_prefetch_order_free(&ring.order);
    forget_others();
    forget_weights();
    __atomic_store_n(&tm_stream_weights_known, false, __ATOMIC_RELEASE);
    ring.device = NULL;
}

/* Everything the ring holds goes back: its copies and readers are waited for, its chunks
 * go to HBM's pool (in the ring's context; lock held). */
static void release_ring(void)
{
    if (ring.stream) /* launches may still read the ring: everything in the context ends first */
        tm_real.cuCtxSynchronize();
    if (ring.extents && ring.stage)
        for (uint32_t e = 0; e < TM_STAGING_MAX; e++) {
            stage *s = &ring.stage[e];
            if (s->read_recorded)
                tm_real.cuEventSynchronize(s->read);
            if (s->filled)
                tm_real.cuEventDestroy_v2(s->filled);
            if (s->read)
                tm_real.cuEventDestroy_v2(s->read);
        }
    if (ring.staging) {
        for (int c = 0; c < ring.mapped; c++)
            tm_release_call(tm_real.cuMemUnmap(ring.staging + (uint64_t)c * ring.chunk, ring.chunk));
        tm_release_call(tm_real.cuMemAddressFree(ring.staging, (uint64_t)ring.chunks * ring.chunk));
    }
    if (ring.stream) /* refused when the program released its context first: the stream went with it */
        tm_real.cuStreamDestroy_v2(ring.stream);
    for (int c = 0; c < ring.chunks; c++)
        tm_chunk_pool_give(ring.device, TM_TIER_HBM, ring.handle[c]);
    drop_records();
}

/* A weight resident in HBM that could go below it to make room for the ring. */
typedef struct candidate {
    CUdeviceptr base;
    uint64_t size;
    bool gathered;
    uint32_t position;     /* in the cycle's order */
} candidate;

/* Gathered weights first: read in place they cost the link nearly nothing. Then the largest:
 * the fewest moves, and the fewest weights made to stream. */
static int by_room_given(const void *x, const void *y)
{
    const candidate *a = x, *b = y;
    if (a->gathered != b->gathered)
        return a->gathered ? -1 : 1;
    if (a->size != b->size)
        return a->size < b->size ? 1 : -1;
    return (a->position > b->position) - (a->position < b->position);
}

/* Moves a resident weight below HBM, into the first lower tier of the order with room. */
static bool demote(const candidate *c)
{
    const tm_tier_order *order = &ring.device->policy.order;
    for (int i = 0; i < order->count; i++) {
        tm_tier_id t = order->tier[i];
        if (t == TM_TIER_HBM || !ring.device->tiers.tier[t].present)
            continue;
        if (tm_migrate_range(c->base, c->size, t) == CUDA_SUCCESS) {
            ring.demoted_bytes += c->size;
            return true;
        }
    }
    return false;
}

/* Takes the ring's chunks: from HBM's room, then from resident weights moved below HBM
 * (cand[*next] on). No lock held (migrations take the remap lock). */
static bool take_chunks(int chunks, const candidate *cand, size_t cand_count, size_t *next)
{
    CUmemGenericAllocationHandle *grown = realloc(ring.handle, (size_t)chunks * sizeof *ring.handle);
    if (!grown)
        return false;
    ring.handle = grown;
    while (ring.chunks < chunks) {
        if (tm_chunk_pool_take(ring.device, TM_TIER_HBM, &ring.handle[ring.chunks])) {
            ring.chunks++;
            continue;
        }
        while (ring.may_demote && *next < cand_count && !demote(&cand[*next]))
            ++*next;
        if (!ring.may_demote || (*next)++ >= cand_count)
            return false;
    }
    return true;
}

/* Moves memory that cannot stream up into HBM, resident weights (cand[*next] on) going
 * below to make room, as far as they can. No lock held. */
static void lift(const candidate *up, size_t up_count, const candidate *cand, size_t cand_count, size_t *next)
{
    for (size_t i = 0; i < up_count; i++) {
        for (;;) {
            CUresult r = tm_migrate_range(up[i].base, up[i].size, TM_TIER_HBM);
            if (r == CUDA_SUCCESS) {
                ring.lifted_bytes += up[i].size;
                break;
            }
            if (r != CUDA_ERROR_OUT_OF_MEMORY)
                break; /* freed meanwhile, or shared with another process: it stays */
            while (*next < cand_count && !demote(&cand[*next]))
                ++*next;
            if ((*next)++ >= cand_count)
                return;
        }
    }
}

/* Maps the chunks once at a range of their own (in the current context). */
static bool map_ring(void)
{
    uint64_t bytes = (uint64_t)ring.chunks * ring.chunk;
    if (tm_real.cuStreamCreate(&ring.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        ring.stream = NULL;
        return false;
    }
    if (tm_real.cuMemAddressReserve(&ring.staging, bytes, ring.chunk, 0, 0) != CUDA_SUCCESS) {
        ring.staging = 0;
        return false;
    }
    CUmemAccessDesc access = {
        .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = ring.device->target.device },
        .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    for (int c = 0; c < ring.chunks; c++) {
        CUdeviceptr at = ring.staging + (uint64_t)c * ring.chunk;
        if (tm_real.cuMemMap(at, ring.chunk, 0, ring.handle[c], 0) != CUDA_SUCCESS)
            return false;
        ring.mapped++;
        if (tm_real.cuMemSetAccess(at, ring.chunk, &access, 1) != CUDA_SUCCESS)
            return false;
    }
    ring.extents = malloc(sizeof *ring.extents);
    ring.stage = calloc(TM_STAGING_MAX, sizeof *ring.stage);
    if (!ring.extents || !ring.stage)
        return false;
    tm_staging_init(ring.extents, bytes, TM_STAGING_ALIGN);
    return true;
}

/* ---------------------------------------------------------------- sizing */

/* What one cycle reads below HBM, and what could make room for it. */
typedef struct cycle {
    uint64_t *spilled;      /* [count] sizes of the weights below HBM that stream */
    size_t count;
    candidate *cand;        /* [cand_count] resident weights that could go below HBM */
    size_t cand_count;
    candidate *lift;        /* [lift_count] memory that cannot stream, below HBM in part */
    size_t lift_count;
    uint64_t other;         /* its bytes below HBM */
    uint64_t resident;      /* the candidates' bytes, gathered ones left out */
    uint64_t resident_largest;
} cycle;

static void cycle_free(cycle *c)
{
    free(c->spilled);
    free(c->cand);
    free(c->lift);
}

/* What one cycle reads, from the learned order and the memory noted while learning (locks
 * held); false without memory. */
static bool survey(cycle *c)
{
    memset(c, 0, sizeof *c);
    size_t others = HASH_COUNT(ring.others);
    c->spilled = malloc((ring.order.len + 1) * sizeof *c->spilled);
    c->cand = malloc((ring.order.len + 1) * sizeof *c->cand);
    c->lift = malloc((others + 1) * sizeof *c->lift);
    if (!c->spilled || !c->cand || !c->lift)
        return false;
    for (uint32_t i = 0; i < ring.order.len; i++) {
        tm_alloc *a = tm_alloc_at(ring.order.key[i]);
        if (!is_weight(a) || a->range.base != ring.order.key[i] || tm_alloc_holds_stack(a))
            continue; /* a stack of experts is read in place: not streamed, not moved for the ring */
        bool gather = only_gathered(a->range.base);
        tm_debug("stream: weight %u of the cycle at 0x%llx, %llu bytes, %s%s", i, (unsigned long long)a->range.base,
                 (unsigned long long)a->range.size, below_hbm(a) ? "below hbm" : "in hbm", gather ? ", gathered" : "");
        if (below_hbm(a)) {
            if (!gather)
                c->spilled[c->count++] = a->range.size;
        } else if (!a->ipc_pinned) {
            c->cand[c->cand_count++] =
                (candidate){ .base = a->range.base, .size = a->range.size, .gathered = gather, .position = i };
            if (!gather) {
                c->resident += a->range.size;
                if (a->range.size > c->resident_largest)
                    c->resident_largest = a->range.size;
            }
        }
    }
    other *o, *next;
    HASH_ITER(hh, ring.others, o, next)
    {
        tm_alloc *a = tm_alloc_at(o->base);
        if (!a || a->range.base != o->base || !a->backing || !below_hbm(a) || a->ipc_pinned)
            continue;
        const tm_plan *p = &a->backing->plan;
        /* in HBM it takes whole chunks, and as many weight bytes stream in its place: worth it
         * only where reading its bytes in place costs the link more than copying that many */
        if ((double)a->range.size < TM_REBALANCE_STREAMED_COST * (double)(p->chunks * ring.chunk))
            continue;
        uint64_t below = (p->chunks - __atomic_load_n(&p->per_tier[TM_TIER_HBM], __ATOMIC_RELAXED)) * ring.chunk;
        c->other += below < a->range.size ? below : a->range.size;
        c->lift[c->lift_count++] = (candidate){ .base = a->range.base, .size = a->range.size };
    }
    if (c->other > c->resident)
        c->other = c->resident;
    if (!ring.may_demote)
        c->other = 0; /* nothing may make room for it */
    forget_others();
    return true;
}

static void decline(const char *why, uint64_t spilled, size_t count)
{
    char bytes[32];
    tm_format_size(spilled, bytes, sizeof bytes);
    if (!ring.learn_only) /* learning alone, the line at start said why nothing streams */
        tm_info("policy heat: spilled weights are read in place, not streamed: %s (a cycle reads %zu weights below "
                "HBM, %s; TIERMEM_STREAM=on streams anyway)", why, count, bytes);
    ring.failed = true;
    set_ready(false);
    release_ring(); /* the chunks taken at start go back */
}

/* Takes and maps the ring's chunks, and lets memory that cannot stream into HBM in place
 * of weights (no lock held: the migrations that make room take the remap lock themselves). */
static void set_up(const tm_stream_plan *p, cycle *c)
{
    uint64_t spilled = p->streamable + p->in_place;
    qsort(c->cand, c->cand_count, sizeof *c->cand, by_room_given);
    size_t next = 0;
    bool taken = take_chunks((int)(p->ring / ring.chunk), c->cand, c->cand_count, &next);
    if (taken && p->lifted)
        lift(c->lift, c->lift_count, c->cand, c->cand_count, &next);
    tm_remap_lock();
    pthread_mutex_lock(&ring.lock);
    CUcontext ctx = NULL;
    if (!taken || tm_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
        release_ring();
        decline("HBM could not give the ring its chunks", spilled, c->count);
    } else if ((ring.ctx = ctx, !map_ring())) {
        stop_streaming("setting up the ring", CUDA_ERROR_UNKNOWN);
        release_ring();
    } else {
        set_streaming(true);
        char size[32], moved[32], below[32], alone[32], up[32];
        tm_info("policy heat: spilled weights stream through a ring of %d HBM chunks (%s): a cycle reads %zu weights "
                "below HBM (%s, %s of them in weights larger than the ring, read in place); %s of resident weights "
                "went below HBM to make room for the ring and for %s of other memory a cycle reads; streaming should "
                "cross the link %.2fx faster than reading in place",
                ring.chunks, tm_format_size(p->ring, size, sizeof size), c->count,
                tm_format_size(spilled, below, sizeof below), tm_format_size(p->in_place, alone, sizeof alone),
                tm_format_size(ring.demoted_bytes, moved, sizeof moved),
                tm_format_size(ring.lifted_bytes, up, sizeof up), p->gain);
    }
    pthread_mutex_unlock(&ring.lock);
    tm_remap_unlock();
}

/* Sizes the ring once a cycle was seen (no lock held). */
static void plan(void)
{
    tm_remap_lock();
    pthread_mutex_lock(&ring.lock);
    bool due = ring.plan_due && ring.learning && !ring.failed;
    ring.plan_due = false;
    ring.learning = false;
    if (due)
        __atomic_store_n(&tm_stream_weights_known, true, __ATOMIC_RELEASE);
    if (due && ring.learn_only) { /* what was learned is all there is to do: launches go by */
        ring.failed = true;
        set_ready(false);
        due = false;
    }
    cycle c = { 0 };
    bool surveyed = due && survey(&c);
    if (due && !surveyed)
        decline("out of memory", 0, 0);
    pthread_mutex_unlock(&ring.lock);
    tm_remap_unlock();
    if (surveyed) {
        tm_stream_plan_input in = { .spilled = c.spilled, .count = c.count, .other = c.other,
                                    .resident_largest = c.resident_largest, .asked = ring.asked,
                                    .forced = ring.forced, .chunk = ring.chunk,
                                    .hbm_limit = ring.device->tiers.tier[TM_TIER_HBM].limit,
                                    .streamed_cost = TM_REBALANCE_STREAMED_COST };
        tm_stream_plan p = tm_stream_plan_make(&in);
        if (p.ring) {
            set_up(&p, &c);
        } else {
            tm_remap_lock();
            pthread_mutex_lock(&ring.lock);
            decline(p.why_not, p.streamable + p.in_place, c.count);
            pthread_mutex_unlock(&ring.lock);
            tm_remap_unlock();
        }
    }
    cycle_free(&c);
}

/* ---------------------------------------------------------------- copies */

/* The extent `e` may hold a new weight once its last reader is done: the ring's stream
 * waits for it (on the GPU). */
static bool wait_for_reader(uint32_t e)
{
    stage *s = &ring.stage[e];
    if (!s->read_recorded)
        return true;
    CUresult r = tm_real.cuStreamWaitEvent(ring.stream, s->read, 0);
    if (r != CUDA_SUCCESS) {
        stop_streaming("ordering a copy after a reader", r);
        return false;
    }
    s->read_recorded = false;
    return true;
}

static bool events_of(uint32_t e)
{
    stage *s = &ring.stage[e];
    if (!s->filled && tm_real.cuEventCreate(&s->filled, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        s->filled = NULL;
    if (!s->read && tm_real.cuEventCreate(&s->read, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        s->read = NULL;
    return s->filled && s->read;
}

/* Copies the weight at `base` into a new extent (`force`: evicting weights copied for
 * launches still to come); the extent, or -1. */
static int fill(CUdeviceptr base, uint64_t size, bool force)
{
    uint32_t evictions;
    int e = tm_staging_place(ring.extents, base, size, force, ring.evicted, &evictions);
    if (e < 0)
        return -1;
    for (uint32_t i = 0; i < evictions; i++)
        if (!wait_for_reader(ring.evicted[i]))
            return -1;
    if (!events_of((uint32_t)e)) {
        stop_streaming("creating the ring's events", CUDA_ERROR_OUT_OF_MEMORY);
        return -1;
    }
    CUdeviceptr to = ring.staging + ring.extents->entry[e].offset;
    CUresult r = tm_real.cuMemcpyDtoDAsync_v2(to, base, size, ring.stream);
    if (r == CUDA_SUCCESS)
        r = tm_real.cuEventRecord(ring.stage[e].filled, ring.stream);
    if (r != CUDA_SUCCESS) {
        stop_streaming("a copy into the ring", r);
        return -1;
    }
    ring.staged++;
    ring.staged_bytes += size;
    tm_stat_add(streamed_bytes, size);
    return e;
}

/* The weights this launch reads that the ring holds, or can take now, are held for it,
 * and the launch's stream waits for their copies. */
static void stage_refs(void)
{
    for (int i = 0; i < ring.ref_count && !ring.failed; i++) {
        ref *rf = &ring.refs[i];
        if (!rf->streams)
            continue;
        int e = tm_staging_find(ring.extents, rf->base);
        if (e < 0 && ring.order.cyclic && (e = fill(rf->base, rf->size, true)) >= 0)
            ring.late++;
        if (e >= 0) {
            rf->entry = e;
            ring.extents->entry[e].held = true;
        }
    }
    for (int i = 0; i < ring.ref_count && !ring.failed; i++) {
        ref *rf = &ring.refs[i];
        if (rf->entry < 0)
            continue;
        CUresult r = tm_real.cuStreamWaitEvent(ring.on, ring.stage[rf->entry].filled, 0);
        if (r != CUDA_SUCCESS)
            stop_streaming("ordering a launch after its copy", r);
    }
}

/* Copies the weights predicted next into the ring, as far as it has room that no launch
 * still needs. */
static void prefetch(void)
{
    uint64_t next[LOOKAHEAD];
    uint32_t count = tm_prefetch_order_next(&ring.order, next, LOOKAHEAD);
    uint64_t ahead = 0;
    for (uint32_t i = 0; i < count && !ring.failed; i++) {
        int e = tm_staging_find(ring.extents, next[i]);
        if (e >= 0) {
            ahead += ring.extents->entry[e].bytes;
            continue;
        }
        tm_alloc *a = tm_alloc_at(next[i]);
        if (!is_weight(a) || a->range.base != next[i] || !below_hbm(a) || only_gathered(a->range.base) ||
            rewritten(a->range.base))
            continue;
        uint64_t extent = tm_staging_extent(ring.extents, a->range.size);
        if (ahead + extent > ring.extents->capacity || fill(a->range.base, a->range.size, false) < 0)
            return;
        ahead += extent;
    }
}

/* The value a pointer parameter is launched with: the same offset in the ring when it
 * falls in a weight held for this launch. */
static uint64_t to_ring(uint64_t value, void *arg)
{
    (void)arg;
    for (int i = 0; i < ring.ref_count; i++) {
        const ref *rf = &ring.refs[i];
        if (rf->entry >= 0 && value >= rf->base && value - rf->base < rf->size)
            return ring.staging + ring.extents->entry[rf->entry].offset + (value - rf->base);
    }
    return value;
}

static void stop_streaming(const char *what, CUresult r)
{
    tm_log_once(TM_LOG_WARN, "streaming stops: %s failed (%d); spilled weights are read in place", what, (int)r);
    ring.failed = true;
    set_ready(false);
    for (int i = 0; i < ring.ref_count; i++)
        ring.refs[i].entry = -1; /* this launch reads in place too */
}

/* ---------------------------------------------------------------- launches */

static bool spilled(void)
{
    return __atomic_load_n(&tm_stats->tier[TM_TIER_CXL].chunks, __ATOMIC_RELAXED) +
               __atomic_load_n(&tm_stats->tier[TM_TIER_DDR].chunks, __ATOMIC_RELAXED) > 0;
}

static bool before_launch(tm_launch *l)
{
    if (!spilled())
        return false;
    if (__atomic_load_n(&ring.plan_due, __ATOMIC_RELAXED))
        plan();
    uint64_t values[TM_LAUNCH_MAX_POINTERS];
    size_t n = tm_launch_pointers(l->f, l->params, l->extra, values, NULL);
    if (n == 0)
        return false;
    tm_remap_lock();
    pthread_mutex_lock(&ring.lock);
    if (!ring.failed)
        collect_refs(values, n, l->threads);
    CUcontext ctx;
    if (ring.failed || ring.ref_count == 0 || tm_launch_capturing(l) || tm_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) {
        ring.ref_count = 0;
        pthread_mutex_unlock(&ring.lock);
        tm_remap_unlock();
        return false;
    }
    for (int i = 0; i < ring.ref_count; i++)
        tm_prefetch_order_note(&ring.order, ring.refs[i].base);
    if (ring.learning && ring.order.cyclic)
        __atomic_store_n(&ring.plan_due, true, __ATOMIC_RELAXED);
    else if (ring.learning && ++ring.learned > LEARN_LAUNCHES_MAX)
        decline("the launches read weights in no repeating order", 0, 0);
    ring.params = l->params;
    ring.extra = l->extra;
    if (ring.extents && ctx == ring.ctx) {
        ring.on = l->per_thread && !l->stream ? CU_STREAM_PER_THREAD : l->stream;
        stage_refs();
        if (!ring.failed)
            prefetch();
        if (!ring.failed) {
            size_t held = 0;
            for (int i = 0; i < ring.ref_count; i++)
                held += ring.refs[i].entry >= 0;
            size_t replaced = held ? tm_launch_replace_pointers(l->f, &l->params, &l->extra, to_ring, NULL, &ring.args)
                                   : 0;
            ring.replaced += replaced;
            ring.in_place += replaced ? 0 : held;
        }
    }
    return true;
}

/* Records the launch as the extent's reader; the reader before it, on another stream, is
 * waited for by the ring's stream first (one event tells about one stream). */
static void note_read(int e)
{
    stage *s = &ring.stage[e];
    if (s->read_recorded && s->read_on != ring.on && !wait_for_reader((uint32_t)e))
        return;
    CUresult r = tm_real.cuEventRecord(s->read, ring.on);
    if (r != CUDA_SUCCESS) {
        stop_streaming("recording a reader", r);
        return;
    }
    s->read_recorded = true;
    s->read_on = ring.on;
    ring.extents->entry[e].read = true;
}

static void after_launch(tm_launch *l, CUresult launched)
{
    (void)launched; /* a launch that failed read nothing: recording it as the reader is harmless */
    for (int i = 0; i < ring.ref_count; i++) {
        ref *rf = &ring.refs[i];
        if (rf->entry < 0)
            continue;
        if (!ring.failed)
            note_read(rf->entry);
        if (ring.extents)
            ring.extents->entry[rf->entry].held = false;
    }
    if (ring.failed && ring.extents)
        release_ring();
    l->params = ring.params;
    l->extra = ring.extra;
    ring.ref_count = 0;
    pthread_mutex_unlock(&ring.lock);
    tm_remap_unlock();
}

/* ---------------------------------------------------------------- staged copies that must go */

/* Drops the staged copy of every weight whose extent overlaps [lo, lo + bytes), once its
 * copy is done; a later copy into the extent waits for its last reader. `written`: the
 * program writes the range, so the weight is read in place from then on (lock held). */
static void drop_staged(uint64_t lo, uint64_t bytes, bool written)
{
    uint64_t end = bytes > UINT64_MAX - lo ? UINT64_MAX : lo + bytes; /* the driver refuses a wrap */
    for (uint32_t e = 0; ring.extents && e < ring.extents->used; e++) {
        uint64_t key = ring.extents->entry[e].key, size = ring.extents->entry[e].bytes;
        if (!key || lo >= key + size || key >= end)
            continue;
        if (written) {
            weight *w = weight_at(key, true);
            if (w)
                w->rewritten = true;
        }
        tm_real.cuEventSynchronize(ring.stage[e].filled);
        if (ring.stage[e].read_recorded && !wait_for_reader(e))
            break;
        tm_staging_drop(ring.extents, (int)e);
        ring.rewrites += written;
    }
}

void tm_stream_ring_written(CUdeviceptr dst, uint64_t bytes)
{
    if (!__atomic_load_n(&ring.streaming, __ATOMIC_ACQUIRE) || bytes == 0)
        return;
    /* the copy in the ring holds what the weight held; launches after this write must read
     * the weight itself (launches before it were handed the copy, as they should) */
    pthread_mutex_lock(&ring.lock);
    drop_staged(dst, bytes, true);
    pthread_mutex_unlock(&ring.lock);
}

/* ---------------------------------------------------------------- release, exit, fork */

void tm_stream_ring_forget(CUdeviceptr base, uint64_t bytes)
{
    if (!ring.device)
        return;
    pthread_mutex_lock(&ring.lock);
    drop_staged(base, bytes, false); /* their copies read the memory going away */
    weight *w = weight_at(base, false); /* records are keyed by an allocation's base */
    if (w) {
        HASH_DEL(ring.weights, w);
        free(w);
    }
    other *o;
    HASH_FIND(hh, ring.others, &base, sizeof base, o);
    if (o) {
        HASH_DEL(ring.others, o);
        free(o);
    }
    pthread_mutex_unlock(&ring.lock);
}

void tm_stream_ring_stop(void)
{
    if (!ring.device)
        return;
    tm_remap_lock();
    pthread_mutex_lock(&ring.lock);
    set_ready(false);
    int chunks = ring.chunks;
    CUcontext popped; /* set up: its stream and events are the ring's context's */
    bool pushed = ring.extents && tm_real.cuCtxPushCurrent_v2(ring.ctx) == CUDA_SUCCESS;
    release_ring();
    if (pushed)
        tm_real.cuCtxPopCurrent_v2(&popped);
    if (ring.staged) {
        char moved[32], size[32];
        tm_info("exit: stream: %llu weights streamed (%s copied) through a ring of %d chunks (%s), %llu copied when "
                "their launch came; %llu parameters pointed at the ring, %llu staged weights read in place; order of "
                "%u weights, %llu predicted, %llu missed, %llu relearned; %llu copies dropped as their weight was "
                "written",
                (unsigned long long)ring.staged, tm_format_size(ring.staged_bytes, moved, sizeof moved), chunks,
                tm_format_size((uint64_t)chunks * ring.chunk, size, sizeof size), (unsigned long long)ring.late,
                (unsigned long long)ring.replaced, (unsigned long long)ring.in_place, ring.order.len,
                (unsigned long long)ring.order.hits, (unsigned long long)ring.order.misses,
                (unsigned long long)ring.order.restarts, (unsigned long long)ring.rewrites);
    }
    forget_learned();
    pthread_mutex_unlock(&ring.lock);
    tm_remap_unlock();
}

void tm_stream_ring_forget_in_child(void)
{
    pthread_mutex_init(&ring.lock, NULL);
    set_ready(false);
    /* the chunks, stream and events are the parent's; the records are this process's copies */
    drop_records();
    forget_learned();
}

/* ---------------------------------------------------------------- the watchers */

const tm_launch_watcher tm_stream_ring_launch_watcher = {
    .name = "stream ring",
    .watching = &tm_stream_ready,
    .before = before_launch,
    .after = after_launch,
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
