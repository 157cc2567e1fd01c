/* kv_layout.h — the paged KV cache layout shared by the engine and the kernels.
 *
 * The cache is a pool of fixed blocks of block_size tokens (16 by default). A block id
 * means the same block in every layer; a sequence owns a list of block ids, its block
 * table (int32_t [max_blocks_per_seq]; position p lives in block table[p / block_size]
 * at offset p % block_size).
 *
 * Each layer has a K pool and a V pool, each laid out
 *     [n_blocks][n_kv_heads][block_size][head_dim]   elements of the KV dtype
 * so one head's block_size x head_dim page is contiguous: attention for one (sequence,
 * KV head) streams whole pages. The pools may be separate allocations or one: with one
 * allocation the K pool of layer l starts at tm_kv_pool_offset(l, TM_KV_K) and V at
 * tm_kv_pool_offset(l, TM_KV_V).
 *
 * Element types: f32, f16 (IEEE binary16), fp8 e4m3, fp8 e5m2 (fp8.h). fp8 pages
 * hold sat(x / scale) and read back q * scale, with one K scale and one V scale per
 * layer (struct tm_kv_scales); e5m2 may use scale 1. f32 and f16 ignore scales.
 *
 * NOTE: offsets are int64_t. n_blocks * block bytes passes 2^31 at modest sizes
 * (8 KV heads x 128 dims x 16 tokens x 2 bytes = 32 KiB a block, 65536 blocks).
 * NOTE: kernels read only positions below a sequence's length, so stale bytes in a
 * reused block (even NaN patterns) never reach a softmax; pages need no zeroing.
 */
#ifndef TM_KV_LAYOUT_H
#define TM_KV_LAYOUT_H

#include <stdint.h>
#include "kernels/kernels.h"

enum tm_kv_which { TM_KV_K = 0, TM_KV_V = 1 };

struct tm_kv_layout {
    int32_t n_layers;
    int32_t n_kv_heads;
    int32_t head_dim;
    int32_t block_size;  /* tokens per block */
    int64_t n_blocks;    /* blocks in the pool (each layer has all of them) */
    int32_t dtype;       /* enum tm_kv_dtype */
};

struct tm_kv_scales {
    float k; /* K page value = sat(k / scale); loaded as q * scale */
    float v;
};

static inline TM_HD int64_t tm_kv_elem_bytes(int32_t dtype) {
    switch (dtype) {
    case TM_KV_F32: return 4;
    case TM_KV_F16: return 2;
    case TM_KV_FP8_E4M3: return 1;
    case TM_KV_FP8_E5M2: return 1;
    default: return 0;
    }
}

/* Element index (not bytes) of token `offset` of KV head `head` in block `block`. */
static inline TM_HD int64_t tm_kv_index(int64_t block, int32_t head, int32_t offset,
                                        int32_t n_kv_heads, int32_t block_size,
                                        int32_t head_dim) {
    return ((block * n_kv_heads + head) * (int64_t)block_size + offset) * head_dim;
}

/* Bytes of one block of one layer's K (or V). */
static inline int64_t tm_kv_block_bytes(const struct tm_kv_layout *l) {
    return (int64_t)l->n_kv_heads * l->block_size * l->head_dim * tm_kv_elem_bytes(l->dtype);
}

/* Bytes of one layer's K pool (V is the same size). */
static inline int64_t tm_kv_pool_bytes(const struct tm_kv_layout *l) {
    return l->n_blocks * tm_kv_block_bytes(l);
}

/* Bytes of the whole cache: K and V of every layer. */
static inline int64_t tm_kv_total_bytes(const struct tm_kv_layout *l) {
    return 2 * (int64_t)l->n_layers * tm_kv_pool_bytes(l);
}

/* Byte offset of layer's K or V pool when the whole cache is one allocation. */
static inline int64_t tm_kv_pool_offset(const struct tm_kv_layout *l, int32_t layer,
                                        enum tm_kv_which which) {
    return (2 * (int64_t)layer + which) * tm_kv_pool_bytes(l);
}

/* Blocks a sequence of n_tokens needs. */
static inline int64_t tm_kv_blocks_for(int64_t n_tokens, int32_t block_size) {
    return (n_tokens + block_size - 1) / block_size;
}

/* The slot (kv_append's slots[]) of position pos of a sequence with this block table. */
static inline int32_t tm_kv_slot(const int32_t *block_table /* [>= pos / block_size + 1] */,
                                 int32_t pos, int32_t block_size) {
    return block_table[pos / block_size] * block_size + pos % block_size;
}

#endif /* TM_KV_LAYOUT_H */
