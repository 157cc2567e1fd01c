/* kv_cache.c — sizing the paged KV pool and handing out its blocks. */
#include "engine/error.h"
#include "engine/kv_cache.h"
#include "engine/kv_prefix.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dtype_names[] = {
    [TM_KV_F32] = "f32", [TM_KV_F16] = "f16", [TM_KV_FP8_E4M3] = "fp8_e4m3", [TM_KV_FP8_E5M2] = "fp8_e5m2"};

const char *kv_dtype_name(int32_t dtype)
{
    return dtype >= TM_KV_F32 && dtype <= TM_KV_FP8_E5M2 ? dtype_names[dtype] : "?";
}

int kv_dtype_parse(const char *s, int32_t *dtype)
{
    for (int32_t d = TM_KV_F32; d <= TM_KV_FP8_E5M2; d++)
        if (!strcmp(s, dtype_names[d])) { *dtype = d; return 0; }
    return -1;
}

/* ----------------------------------------------------------------------------
 * The pool */

int kv_cache_init(kv_cache *kv, const tm_driver *drv, int32_t n_layers, int32_t n_kv_heads, int32_t head_dim,
                  const kv_options *opt, char *err, size_t errlen)
{
    memset(kv, 0, sizeof *kv);
    kv->layout = (struct tm_kv_layout){n_layers, n_kv_heads, head_dim, opt->block_size, 0, opt->dtype};
    int64_t block_bytes = tm_kv_block_bytes(&kv->layout); /* one layer's K (or V) */
    int64_t all_layers_block = 2 * (int64_t)n_layers * block_bytes;
    size_t free_now = 0, total = 0;
    CUresult rc = drv->cuMemGetInfo(&free_now, &total);
    if (rc != CUDA_SUCCESS) return tm_fail(err, errlen, "cuMemGetInfo failed: %s", tm_cu_name(drv, rc));
    kv->free_before = free_now;
    int64_t n_blocks = opt->n_blocks;
    if (n_blocks <= 0) {
        double usable = opt->utilization * (double)free_now - (double)opt->reserve_bytes;
        n_blocks = usable > 0 ? (int64_t)(usable / (double)all_layers_block) : 0;
        kv->utilization = opt->utilization;
        if (n_blocks < 1)
            return tm_fail(err, errlen, "out of device memory for the KV cache: one block of %d tokens needs %.2f MiB, "
                        "%.0f%% of the %.1f MiB free is %.1f MiB (device has %.1f MiB total)", opt->block_size,
                        TM_MIB(all_layers_block), opt->utilization * 100, TM_MIB(free_now),
                        TM_MIB(opt->utilization * (double)free_now), TM_MIB(total));
        if (opt->max_blocks > 0 && n_blocks > opt->max_blocks) {
            n_blocks = opt->max_blocks;
            kv->capped = true;
        }
    }
    /* slots are int32 (block * block_size + offset) */
    int64_t max_blocks = INT32_MAX / opt->block_size;
    if (n_blocks > max_blocks) n_blocks = max_blocks;
    kv->layout.n_blocks = n_blocks;
    kv->k_pools = calloc((size_t)n_layers, sizeof *kv->k_pools);
    kv->v_pools = calloc((size_t)n_layers, sizeof *kv->v_pools);
    kv->scales = calloc((size_t)n_layers, sizeof *kv->scales);
    kv->free_blocks = malloc((size_t)n_blocks * sizeof *kv->free_blocks);
    if (!kv->k_pools || !kv->v_pools || !kv->scales || !kv->free_blocks) {
        kv_cache_free(kv, drv);
        return tm_fail(err, errlen, "out of host memory for a KV pool of %" PRId64 " blocks", n_blocks);
    }
    int64_t pool_bytes = tm_kv_pool_bytes(&kv->layout);
    for (int32_t l = 0; l < n_layers; l++) {
        kv->scales[l] = (struct tm_kv_scales){1.0f, 1.0f};
        for (int which = 0; which < 2; which++) {
            CUdeviceptr *p = which ? &kv->v_pools[l] : &kv->k_pools[l];
            rc = drv->cuMemAlloc(p, (size_t)pool_bytes);
            if (rc != CUDA_SUCCESS) {
                int64_t need = tm_kv_total_bytes(&kv->layout);
                tm_fail(err, errlen, "out of device memory while allocating the KV cache: need %.1f MiB (%" PRId64
                     " blocks of %d tokens), device has %.1f MiB total, %.1f MiB were free (cuMemAlloc: %s at "
                     "layer %d %s, after %.1f MiB)", TM_MIB(need), n_blocks, opt->block_size, TM_MIB(total),
                     TM_MIB(free_now), tm_cu_name(drv, rc), l, which ? "V" : "K", TM_MIB(kv->bytes));
                *p = 0;
                kv_cache_free(kv, drv);
                return -1;
            }
            kv->bytes += pool_bytes;
            kv->n_allocs++;
        }
    }
    /* hand out low block ids first */
    for (int64_t i = 0; i < n_blocks; i++) kv->free_blocks[i] = (int32_t)(n_blocks - 1 - i);
    kv->n_free = n_blocks;
    return 0;
}

void kv_cache_free(kv_cache *kv, const tm_driver *drv)
{
    kv_prefix_disable(kv);
    for (int32_t l = 0; kv->k_pools && l < kv->layout.n_layers; l++) {
        if (kv->k_pools[l]) drv->cuMemFree(kv->k_pools[l]);
        if (kv->v_pools[l]) drv->cuMemFree(kv->v_pools[l]);
    }
    free(kv->k_pools);
    free(kv->v_pools);
    free(kv->scales);
    free(kv->free_blocks);
    memset(kv, 0, sizeof *kv);
}

/* ----------------------------------------------------------------------------
 * Sequences */

int kv_sequence_init(kv_sequence *s, int32_t max_positions, int32_t block_size)
{
    memset(s, 0, sizeof *s);
    s->max_blocks = (int32_t)tm_kv_blocks_for(max_positions, block_size);
    if (s->max_blocks < 1) s->max_blocks = 1;
    s->block_table = calloc((size_t)s->max_blocks, sizeof *s->block_table);
    return s->block_table ? 0 : -1;
}

void kv_sequence_free(kv_sequence *s)
{
    free(s->block_table);
    memset(s, 0, sizeof *s);
}

int kv_sequence_grow(kv_cache *kv, kv_sequence *s, int32_t new_len, int seq_id, char *err, size_t errlen)
{
    int64_t need = tm_kv_blocks_for(new_len, kv->layout.block_size);
    if (need > s->max_blocks)
        return tm_fail(err, errlen, "sequence %d: position %d is past the context of %d tokens", seq_id, new_len - 1,
                    s->max_blocks * kv->layout.block_size);
    while (s->n_blocks < need) {
        if (kv->n_free == 0 && kv_prefix_evict(kv) != 0)
            return tm_fail(err, errlen, "KV cache full: sequence %d needs a block for position %d, and all %" PRId64
                        " blocks of %d tokens are in use (raise --kv-blocks or --gpu-memory-utilization, or "
                        "shorten -n/--ctx)", seq_id, s->n_blocks * kv->layout.block_size, kv->layout.n_blocks,
                        kv->layout.block_size);
        s->block_table[s->n_blocks++] = kv->free_blocks[--kv->n_free];
        kv_prefix_hold_new(kv, s->block_table[s->n_blocks - 1]);
    }
    s->len = new_len;
    return 0;
}

void kv_sequence_release(kv_cache *kv, kv_sequence *s)
{
    while (s->n_blocks > 0) {
        int32_t b = s->block_table[--s->n_blocks];
        if (!kv_prefix_drop(kv, b)) kv->free_blocks[kv->n_free++] = b;
    }
    s->len = 0;
}
