/* attention.c — twins of tm_attn_decode_<dtype> and tm_attn_prefill_<dtype>: attention
 * of query tokens over a paged K/V cache, with grouped-query attention.
 *
 * Layout: q and out hold heads [n_heads][head_dim] per row; pools are
 * [n_blocks][n_kv_heads][block_size][head_dim] of the KV dtype (kv_layout.h); position
 * p of a sequence is at block table[p / block_size], offset p % block_size.
 *
 * One unit of work is (query, KV head): the `group` = n_heads / n_kv_heads query heads
 * that share a KV head are done together, so each K and V row is read and converted
 * to f32 once for the whole group. Positions go in tiles of TM_ATTN_TILE with an
 * online softmax (running max and sum per head; the accumulator is rescaled when the
 * max grows), so memory does not grow with the context.
 * Decode runs one query per sequence, prefill one query per prompt token; both call
 * attend_group(), so prefill at position p gives decode's result at p bit for bit.
 * Parallelisation: (query, KV head) pairs, dynamically scheduled since lengths differ;
 * each thread has its own scratch. Results do not depend on the thread count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kv_elem.h"
#include "kernels/kv_layout.h"
#include "kernels/twin.h"

#define TILE TM_ATTN_TILE

/* Floats of scratch attend_group needs. */
static int64_t scratch_floats(int32_t group, int32_t head_dim) {
    return (int64_t)group * (TILE + head_dim + 2) + head_dim;
}

/* Converts one head_dim row of the pool at element idx to f32. */
static inline __attribute__((always_inline)) void
load_row(int dtype, float *row /* [head_dim] */, const void *pool, int64_t idx, int32_t head_dim) {
#pragma omp simd
    for (int32_t d = 0; d < head_dim; d++) row[d] = tm_kv_load(dtype, pool, idx + d);
}

/* q . row over head_dim: 16 partial sums folded in halves, then the tail (a fixed
 * order; two 8-wide accumulators keep the adds flowing, where one sum would wait on
 * each add). */
static inline __attribute__((always_inline)) float
dot_head(const float *q /* [n] */, const float *row /* [n] */, int32_t n) {
    float acc[16] = {0.0f};
    int32_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++) acc[k] += q[i + k] * row[i + k];
    for (int half = 8; half > 0; half /= 2)
        for (int k = 0; k < half; k++) acc[k] += acc[k + half];
    float s = acc[0];
    for (; i < n; i++) s += q[i] * row[i];
    return s;
}

/* out[h] = attention of q[h] over positions [0, n_pos) of KV head kv_head, for the
 * group of query heads h < group that share it. */
static inline __attribute__((always_inline)) void
attend_group(int dtype, float *out /* [group][head_dim] */, const float *q /* [group][head_dim] */,
             const void *k_pool, const void *v_pool,
             const int32_t *block_table /* [blocks covering n_pos] */, int32_t n_pos,
             int32_t kv_head, int32_t n_kv_heads, int32_t head_dim, int32_t block_size,
             int32_t group, float score_scale /* attn_scale * k_scale */, float v_scale,
             float *scratch /* [scratch_floats(group, head_dim)] */) {
    if (n_pos <= 0) {
        memset(out, 0, (size_t)group * head_dim * sizeof(float));
        return;
    }
    float *scores = scratch;                      /* [group][TILE] */
    float *acc = scores + (int64_t)group * TILE;  /* [group][head_dim] */
    float *run_max = acc + (int64_t)group * head_dim; /* [group] */
    float *run_sum = run_max + group;             /* [group] */
    float *row = run_sum + group;                 /* [head_dim] */
    for (int32_t h = 0; h < group; h++) {
        run_max[h] = -INFINITY;
        run_sum[h] = 0.0f;
    }
    memset(acc, 0, (size_t)group * head_dim * sizeof(float));

    for (int32_t t0 = 0; t0 < n_pos; t0 += TILE) {
        int32_t n = n_pos - t0 < TILE ? n_pos - t0 : TILE;
        /* Scores of this tile. */
        for (int32_t j = 0; j < n; j++) {
            int32_t p = t0 + j;
            int64_t idx = tm_kv_index(block_table[p / block_size], kv_head, p % block_size,
                                      n_kv_heads, block_size, head_dim);
            load_row(dtype, row, k_pool, idx, head_dim);
            for (int32_t h = 0; h < group; h++)
                scores[h * TILE + j] = dot_head(q + (int64_t)h * head_dim, row, head_dim) * score_scale;
        }
        /* Online softmax: fold the tile into the running max and sum. */
        for (int32_t h = 0; h < group; h++) {
            float *sh = scores + h * TILE;
            float tile_max = -INFINITY;
            for (int32_t j = 0; j < n; j++) tile_max = fmaxf(tile_max, sh[j]);
            float new_max = fmaxf(run_max[h], tile_max);
            float correction = expf(run_max[h] - new_max);
            float sum = 0.0f;
            for (int32_t j = 0; j < n; j++) {
                sh[j] = expf(sh[j] - new_max);
                sum += sh[j];
            }
            run_sum[h] = run_sum[h] * correction + sum;
            run_max[h] = new_max;
            float *ah = acc + (int64_t)h * head_dim;
#pragma omp simd
            for (int32_t d = 0; d < head_dim; d++) ah[d] *= correction;
        }
        /* Weighted values of this tile. */
        for (int32_t j = 0; j < n; j++) {
            int32_t p = t0 + j;
            int64_t idx = tm_kv_index(block_table[p / block_size], kv_head, p % block_size,
                                      n_kv_heads, block_size, head_dim);
            load_row(dtype, row, v_pool, idx, head_dim);
            for (int32_t h = 0; h < group; h++) {
                float w = scores[h * TILE + j];
                float *ah = acc + (int64_t)h * head_dim;
#pragma omp simd
                for (int32_t d = 0; d < head_dim; d++) ah[d] += w * row[d];
            }
        }
    }
    for (int32_t h = 0; h < group; h++) {
        float f = v_scale / run_sum[h];
        for (int32_t d = 0; d < head_dim; d++)
            out[(int64_t)h * head_dim + d] = acc[(int64_t)h * head_dim + d] * f;
    }
}

/* One compiled copy per dtype, called by decode and prefill alike: the same machine
 * code, hence the same bits. Built for x86-64-v3 too (picked at load time). */
#define DEFINE_ATTEND(kvname, DTYPE)                                                    \
    __attribute__((noinline, target_clones("arch=x86-64-v3", "default"))) static void  \
    attend_##kvname(float *out, const float *q, const void *k_pool, const void *v_pool, \
                    const int32_t *block_table, int32_t n_pos, int32_t kv_head,         \
                    int32_t n_kv_heads, int32_t head_dim, int32_t block_size,           \
                    int32_t group, float score_scale, float v_scale, float *scratch) {  \
        attend_group(DTYPE, out, q, k_pool, v_pool, block_table, n_pos, kv_head,        \
                     n_kv_heads, head_dim, block_size, group, score_scale, v_scale,     \
                     scratch);                                                          \
    }
DEFINE_ATTEND(f32, TM_KV_F32)
DEFINE_ATTEND(f16, TM_KV_F16)
DEFINE_ATTEND(fp8_e4m3, TM_KV_FP8_E4M3)
DEFINE_ATTEND(fp8_e5m2, TM_KV_FP8_E5M2)

typedef void attend_fn(float *out, const float *q, const void *k_pool, const void *v_pool,
                       const int32_t *block_table, int32_t n_pos, int32_t kv_head,
                       int32_t n_kv_heads, int32_t head_dim, int32_t block_size,
                       int32_t group, float score_scale, float v_scale, float *scratch);

/* Below this many (position x head_dim x heads) multiply-adds, one thread is faster. */
#define PARALLEL_MIN_WORK (256 * 1024)

static void report_no_memory(const char *name, int64_t floats) {
    fprintf(stderr, "tiermem-kernels: %s: cannot allocate %lld bytes of scratch; "
            "output left unwritten\n", name, (long long)floats * 4);
}

static void attn_decode_any(attend_fn *attend, const char *name, TM_DECLARE_PARAMS(attn_decode)) {
    int32_t group = n_heads / n_kv_heads;
    int64_t work = 0;
    for (int32_t s = 0; s < n_seqs; s++) work += seq_lens[s] > 0 ? seq_lens[s] : 0;
    work *= (int64_t)n_heads * head_dim;
    int64_t n_tasks = (int64_t)n_seqs * n_kv_heads;
    int failed = 0;
#pragma omp parallel num_threads(tm_twin_threads()) if (work >= PARALLEL_MIN_WORK)
    {
        float *scratch = malloc((size_t)scratch_floats(group, head_dim) * sizeof(float));
        if (!scratch) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t task = 0; task < n_tasks; task++) {
            if (!scratch) continue;
            int32_t s = (int32_t)(task / n_kv_heads), g = (int32_t)(task % n_kv_heads);
            int64_t first = (int64_t)g * group * head_dim;
            attend(out + (int64_t)s * n_heads * head_dim + first,
                         q + (int64_t)s * q_stride + first, k_pool, v_pool,
                         block_tables + (int64_t)s * max_blocks_per_seq, seq_lens[s], g,
                         n_kv_heads, head_dim, block_size, group, attn_scale * k_scale,
                         v_scale, scratch);
        }
        free(scratch);
    }
    if (failed) report_no_memory(name, scratch_floats(group, head_dim));
}

static void attn_prefill_any(attend_fn *attend, const char *name, TM_DECLARE_PARAMS(attn_prefill)) {
    int32_t group = n_heads / n_kv_heads;
    int64_t work = ((int64_t)start_pos + n_tokens) * n_tokens * n_heads * head_dim;
    int64_t n_tasks = (int64_t)n_tokens * n_kv_heads;
    int failed = 0;
#pragma omp parallel num_threads(tm_twin_threads()) if (work >= PARALLEL_MIN_WORK)
    {
        float *scratch = malloc((size_t)scratch_floats(group, head_dim) * sizeof(float));
        if (!scratch) {
#pragma omp atomic write
            failed = 1;
        }
        /* Later tokens attend to more positions: hand out the longest first. */
#pragma omp for schedule(dynamic, 1)
        for (int64_t task = 0; task < n_tasks; task++) {
            if (!scratch) continue;
            int32_t t = n_tokens - 1 - (int32_t)(task / n_kv_heads);
            int32_t g = (int32_t)(task % n_kv_heads);
            int64_t first = (int64_t)g * group * head_dim;
            attend(out + (int64_t)t * n_heads * head_dim + first,
                         q + (int64_t)t * q_stride + first, k_pool, v_pool, block_table,
                         start_pos + t + 1, g, n_kv_heads, head_dim, block_size, group,
                         attn_scale * k_scale, v_scale, scratch);
        }
        free(scratch);
    }
    if (failed) report_no_memory(name, scratch_floats(group, head_dim));
}

#define DEFINE_ATTENTION(kvname, DTYPE)                                                 \
    static void attn_decode_##kvname(TM_DECLARE_PARAMS(attn_decode)) {                 \
        attn_decode_any(attend_##kvname, "tm_attn_decode_" #kvname, out, q, k_pool, v_pool, \
                        block_tables, seq_lens, n_seqs, max_blocks_per_seq, n_heads,    \
                        n_kv_heads, head_dim, block_size, q_stride, attn_scale,         \
                        tm_kv_scale(DTYPE, k_scale), tm_kv_scale(DTYPE, v_scale));      \
    }                                                                                   \
    static void attn_prefill_##kvname(TM_DECLARE_PARAMS(attn_prefill)) {               \
        attn_prefill_any(attend_##kvname, "tm_attn_prefill_" #kvname, out, q, k_pool,   \
                         v_pool, block_table, n_tokens, start_pos, n_heads, n_kv_heads, \
                         head_dim, block_size, q_stride, attn_scale,                    \
                         tm_kv_scale(DTYPE, k_scale), tm_kv_scale(DTYPE, v_scale));     \
    }                                                                                   \
    TM_TWIN(tm_attn_decode_##kvname, attn_decode, attn_decode, attn_decode_##kvname,   \
            tm_check_attn_decode(&args), tm_touch_attn_decode(launch, &args, DTYPE))   \
    TM_TWIN(tm_attn_prefill_##kvname, attn_prefill, attn_prefill,                      \
            attn_prefill_##kvname, tm_check_attn_prefill(&args),                       \
            tm_touch_attn_prefill(launch, &args, DTYPE))

DEFINE_ATTENTION(f32, TM_KV_F32)
DEFINE_ATTENTION(f16, TM_KV_F16)
DEFINE_ATTENTION(fp8_e4m3, TM_KV_FP8_E4M3)
DEFINE_ATTENTION(fp8_e5m2, TM_KV_FP8_E5M2)
