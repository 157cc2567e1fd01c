/* kv_cache.h — the paged KV cache: a pool of fixed blocks shared by all sequences, a
 * block table per sequence, per-layer K and V scales for fp8.
 *
 * Layout per kernels/kv_layout.h; one device allocation per layer for K and one for V.
 * The pool is sized like the engines users run: a fraction of the memory the device
 * reports free once the weights are in (or an explicit block count).
 */
#ifndef TM_ENGINE_KV_CACHE_H
#define TM_ENGINE_KV_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/driver.h"
#include "kernels/kv_layout.h"

typedef struct kv_cache {
    struct tm_kv_layout layout;
    CUdeviceptr *k_pools;           /* [n_layers] each [n_blocks][n_kv_heads][block_size][head_dim] */
    CUdeviceptr *v_pools;           /* [n_layers] */
    struct tm_kv_scales *scales;    /* [n_layers] */
    int32_t *free_blocks;           /* [n_blocks] stack of free block ids */
    int64_t n_free;
    int64_t bytes;                  /* device bytes of all pools */
    int32_t n_allocs;               /* device allocations (two per layer) */
    size_t free_before;             /* cuMemGetInfo free when the pool was sized */
    double utilization;             /* fraction of free_before used (0 with --kv-blocks) */
    bool capped;                    /* the pool is what the run can use, less than free memory allows */
    struct kv_prefix *prefix;       /* the prefix cache (engine/kv_prefix.h), NULL when off */
} kv_cache;

typedef struct kv_sequence {
    int32_t *block_table;           /* [max_blocks] block ids */
    int32_t n_blocks;
    int32_t max_blocks;
    int32_t len;                    /* positions stored */
} kv_sequence;

typedef struct kv_options {
    int32_t dtype;                  /* enum tm_kv_dtype */
    int32_t block_size;
    int64_t n_blocks;               /* > 0: exactly this many; else sized from free memory */
    double utilization;             /* fraction of free device memory for the pool */
    int64_t reserve_bytes;          /* left free for buffers allocated after the pool */
    int64_t max_blocks;             /* > 0: a pool sized from free memory takes at most this many */
} kv_options;

const char *kv_dtype_name(int32_t dtype);
int kv_dtype_parse(const char *s, int32_t *dtype);

/* Sizes and allocates the pool. */
int kv_cache_init(kv_cache *kv, const tm_driver *drv, int32_t n_layers, int32_t n_kv_heads, int32_t head_dim,
                  const kv_options *opt, char *err, size_t errlen);
void kv_cache_free(kv_cache *kv, const tm_driver *drv);

int kv_sequence_init(kv_sequence *s, int32_t max_positions, int32_t block_size);
void kv_sequence_free(kv_sequence *s);
/* Makes room for positions [0, new_len): takes blocks from the pool as needed (with the
 * prefix cache on, an idle cached block is evicted when none is free). */
int kv_sequence_grow(kv_cache *kv, kv_sequence *s, int32_t new_len, int seq_id, char *err, size_t errlen);
/* Returns the sequence's blocks to the pool (a cached block stays cached, idle). */
void kv_sequence_release(kv_cache *kv, kv_sequence *s);

#endif /* TM_ENGINE_KV_CACHE_H */
