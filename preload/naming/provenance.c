/* provenance.c — labelling chunks from the copies that fill them (see provenance.h). */
#include "preload/naming/provenance.h"

#include "preload/mem/alloc.h"
#include "preload/move/deferred_move.h"
#include "preload/tiers/device.h"
#include "preload/driver/driver.h"
#include "preload/filetier/file_tier.h"
#include "preload/base/log.h"
#include "preload/base/settings.h"
#include "preload/region/stats.h"
#include "preload/mem/stream_free.h"

typedef struct copy_job {
    CUdeviceptr dst;
    const uint8_t *src;             /* the host bytes */
    uint64_t bytes;                 /* of the copy that came from the file range */
    tm_model_file *file;
    uint64_t offset;                /* file offset of the copy's first byte */
    bool synchronous;
    CUstream stream;                /* of an asynchronous copy */
    bool ptsz;
    int capturing;                  /* -1 until asked: is `stream` capturing? */
    tm_device *device;
} copy_job;

/* The labels array, made on first use; concurrent copies into one allocation race to
 * install it and the loser frees its own. */
static const tm_tensor **labels_of(tm_alloc *a)
{
    const tm_tensor **labels = __atomic_load_n(&a->label, __ATOMIC_ACQUIRE);
    if (labels)
        return labels;
    const tm_tensor **fresh = calloc((size_t)a->backing->plan.chunks, sizeof *fresh);
    if (!fresh)
        return NULL;
    if (__atomic_compare_exchange_n(&a->label, &labels, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return fresh;
    free(fresh);
    return labels;
}

/* The first labelled tensor and the number of tensors (runs of one label in address
 * order: tensors are laid out one after another), for the stats record. */
static void publish_names(const tm_alloc *a, const tm_tensor **labels)
{
    const tm_tensor *first = NULL, *previous = NULL;
    uint32_t tensors = 0;
    for (uint64_t i = 0; i < a->backing->plan.chunks; i++) {
        const tm_tensor *t = __atomic_load_n(&labels[i], __ATOMIC_RELAXED);
        if (!t || t == previous)
            continue;
        if (!first)
            first = t;
        previous = t;
        tensors++;
    }
    if (first)
        tm_stats_record_update(a->stats_slot, NULL, first->name, tensors);
}

/* The tier a name rule gives `t`, or TM_TIER_COUNT when no name rule decides. */
static tm_tier_id rule_tier(const tm_device *device, const tm_alloc *a, const tm_tensor *t)
{
    tm_alloc_desc desc = { .size = a->range.size, .name = t->name };
    const tm_rule *rule = tm_rules_match(&device->policy.rules, &desc);
    return rule && rule->kind == TM_MATCH_NAME ? rule->tier : TM_TIER_COUNT;
}

/* Chunk `index` of `a` belongs in `tier` by a name rule: moved now when its bytes are dead
 * (`whole`: the copy overwrites every live byte of it, ordered after all prior work), or
 * queued for migration, which keeps them and must not stall the copy's path. */
static bool move_chunk(tm_device *device, tm_alloc *a, uint64_t index, tm_tier_id tier, bool whole)
{
    if (whole)
        return tm_alloc_replace_chunks(device, a, index, 1, tier) == 1;
    uint64_t chunk = a->backing->plan.chunk_size;
    return !a->backing->pinned_host && !__atomic_load_n(&a->ipc_pinned, __ATOMIC_RELAXED) &&
           tm_deferred_move(a->backing->base + index * chunk, chunk, tier);
}

static void label_allocation(tm_alloc *a, void *arg)
{
    copy_job *job = arg;
    if (!a->backing)
        return;                        /* small or managed: no chunks to name */
    const tm_tensor **labels = labels_of(a);
    if (!labels)
        return;
    uint64_t chunk = a->backing->plan.chunk_size, base = a->range.base;
    uint64_t end = job->dst + job->bytes, live_end = base + a->range.size;
    uint64_t first = (job->dst - base) / chunk, last = (end - 1 - base) / chunk;
    if (last >= a->backing->plan.chunks)
        last = a->backing->plan.chunks - 1;
    bool changed = false, synchronised = false;
    for (uint64_t i = first; i <= last; i++) {
        uint64_t chunk_start = base + i * chunk;
        uint64_t from = chunk_start > job->dst ? chunk_start : job->dst;
        const tm_tensor *t = tm_tensor_table_find(&job->file->table, job->offset + (from - job->dst));
        if (!t)
            continue;
        if (__atomic_load_n(&labels[i], __ATOMIC_RELAXED) != t) {
            /* a label holds its file's table; one of another file it replaces keeps its
             * hold (a reader may have that name in hand), so that table is never freed */
            tm_model_file_hold_tensor(t);
            const tm_tensor *old = __atomic_exchange_n(&labels[i], t, __ATOMIC_RELAXED);
            if (old == t || (old && old->file_index == t->file_index))
                tm_model_file_release_tensor(old);
            changed = changed || old != t;
        }
        /* the copy writes every live byte of the chunk: what it held is dead */
        uint64_t chunk_live_end = chunk_start + chunk < live_end ? chunk_start + chunk : live_end;
        bool covered = from == chunk_start && end >= chunk_live_end;
        tm_file_tier_filled(a, i, job->file, job->offset + (from - job->dst), covered, job->src + (from - job->dst));
        tm_device *device = a->device ? a->device : job->device; /* the allocation's own */
        tm_tier_id tier = rule_tier(device, a, t);
        if (tier == TM_TIER_COUNT || tier == tm_backing_chunk_tier(a->backing, i))
            continue;
        bool whole = covered;
        if (whole && !job->synchronous) { /* once the context synchronised, only capture keeps it unordered */
            if (job->capturing < 0)
                job->capturing = tm_stream_capturing(job->stream, job->ptsz);
            whole = !job->capturing;
        }
        if (whole && !synchronised) {
            synchronised = tm_real.cuCtxSynchronize() == CUDA_SUCCESS;
            whole = synchronised;
        }
        if (!move_chunk(device, a, i, tier, whole))
            tm_log_once(TM_LOG_INFO, "tensor %s: a name rule sends it to %s, but a chunk of it cannot move "
                        "(no room, or too many moves waiting); it stays where it is", t->name, tm_tier_name(tier));
    }
    if (changed)
        publish_names(a, labels);
}

void tm_provenance_copy_slow(CUdeviceptr dst, const void *src, size_t bytes, bool synchronous, CUstream stream,
                             bool ptsz)
{
    copy_job job = { .dst = dst, .src = src, .synchronous = synchronous, .stream = stream, .ptsz = ptsz,
                     .capturing = -1 };
    size_t valid;
    if (bytes == 0 || !tm_host_range_find(src, &job.file, &job.offset, &valid))
        return;
    if (!tm_model_file_pin(job.file))
        return;                        /* its table was freed meanwhile */
    job.bytes = bytes < valid ? bytes : valid;
    tm_model_file_uploaded(job.file, job.offset, job.bytes);
    if (tm_tiering_on() && (job.device = tm_device_ready()))
        tm_alloc_find(dst, label_allocation, &job);
    tm_model_file_unpin(job.file);
}

/* ---------------------------------------------------------------- the watcher */

static void labels_released(tm_alloc *a, tm_release_kind how)
{
    /* (a child forgets its parent's allocations: their holds stay, as the child's locks may not) */
    for (uint64_t i = 0; how == TM_RELEASE_FREED && a->label && a->backing && i < a->backing->plan.chunks; i++)
        if (a->label[i])
            tm_model_file_release_tensor(a->label[i]);
    free(a->label);
    a->label = NULL;
}

const tm_alloc_watcher tm_provenance_alloc_watcher = {
    .name = "provenance",
    .released = labels_released,
};
