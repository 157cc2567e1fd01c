/* matmul.c — twins of tm_matvec_<wtype> and tm_matmul_<wtype>:
 *     out[t][o] = sum_i w[o][i] * x[t][i]
 *
 * Layout: w is [n_out][n_in] in the weight type as GGUF stores it (Q8_0 rows are
 * n_in / 32 blocks of 34 bytes), x is [n_tokens][n_in] f32, out is [n_tokens][out_stride].
 *
 * Parallelisation: the output rows are cut into tiles of about TILE_BYTES of weights;
 * threads take tiles (static schedule). Within a tile every token is multiplied by every
 * row, so a tile is read from memory once and its rows stay in L2 across the tokens
 * (decode batches and prefill alike). Each dot product runs in one thread in a fixed
 * order, so results do not depend on the thread count, and matvec and matmul, which
 * are the same code here, give identical bits.
 *
 * Speed: decode reads every weight once per step, so the dots must run at memory speed.
 * They are plain loops the compiler vectorises (omp simd reductions); the decoders in
 * f16.h are branch-free for that reason. The hot function is also built for x86-64-v3
 * (AVX2, FMA, F16C) and picked at load time where the CPU has it.
 */
#include <stdint.h>

#include "kernels/f16.h"
#include "kernels/q8_0.h"
#include "kernels/twin.h"

/* ---------------------------------------------------------------------------------- */
/* Dot products, one per weight type                                                   */
/* ---------------------------------------------------------------------------------- */

static inline float dot_f32(const float *w /* [n] */, const float *x /* [n] */, int32_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int32_t i = 0; i < n; i++) s += w[i] * x[i];
    return s;
}

static inline float dot_f16(const uint16_t *w /* [n] */, const float *x /* [n] */, int32_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int32_t i = 0; i < n; i++) s += tm_f16_to_f32(w[i]) * x[i];
    return s;
}

static inline float dot_bf16(const uint16_t *w /* [n] */, const float *x /* [n] */, int32_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int32_t i = 0; i < n; i++) s += tm_bf16_to_f32(w[i]) * x[i];
    return s;
}

/* Per block: d * sum_j q[j] x[j], the blocks summed in order. */
static inline float dot_q8_0(const uint8_t *w /* [n / 32][34] */, const float *x /* [n] */,
                             int32_t n) {
    float s = 0.0f;
    for (int32_t b = 0; b < n / TM_Q8_0_BLOCK; b++) {
        const uint8_t *blk = w + (int64_t)b * TM_Q8_0_BLOCK_BYTES;
        const int8_t *q = (const int8_t *)(blk + 2);
        const float *xb = x + (int64_t)b * TM_Q8_0_BLOCK;
        float sb = 0.0f;
#pragma omp simd reduction(+ : sb)
        for (int j = 0; j < TM_Q8_0_BLOCK; j++) sb += (float)q[j] * xb[j];
        s += tm_q8_0_scale(blk) * sb;
    }
    return s;
}

/* ---------------------------------------------------------------------------------- */
/* One tile of rows against every token                                                */
/* ---------------------------------------------------------------------------------- */

#define TILE_BYTES (128 * 1024) /* weights per tile: well inside a 512 KiB-1 MiB L2 */

#define DEFINE_TILE(wname, elem_t)                                  \
    __attribute__((target_clones("arch=x86-64-v3", "default")))                        \
    static void tile_##wname(float *out /* [n_tokens][out_stride] */,                   \
                             const float *x /* [n_tokens][n_in] */,                     \
                             const uint8_t *w /* [n_out][row_bytes] */, int64_t row_bytes, \
                             int32_t n_tokens, int32_t n_in, int32_t out_stride,        \
                             int32_t row_begin, int32_t row_end) {                      \
        for (int32_t t = 0; t < n_tokens; t++) {                                        \
            const float *xt = x + (int64_t)t * n_in;                                    \
            float *ot = out + (int64_t)t * out_stride;                                  \
            for (int32_t o = row_begin; o < row_end; o++)                               \
                ot[o] = dot_##wname((const elem_t *)(w + o * row_bytes), xt, n_in);     \
        }                                                                               \
    }

DEFINE_TILE(f32, float)
DEFINE_TILE(f16, uint16_t)
DEFINE_TILE(bf16, uint16_t)
DEFINE_TILE(q8_0, uint8_t)

typedef void tile_fn(float *, const float *, const uint8_t *, int64_t, int32_t, int32_t,
                     int32_t, int32_t, int32_t);

/* Enough work to be worth waking the other threads (decode of a tiny model is not). */
#define PARALLEL_MIN_MACS (64 * 1024)

static void matmul_any(tile_fn *tile, int32_t wtype, float *out /* [n_tokens][out_stride] */,
                       const float *x /* [n_tokens][n_in] */,
                       const void *w /* [n_out][n_in] of wtype */, int32_t n_tokens,
                       int32_t n_in, int32_t n_out, int32_t out_stride) {
    int64_t row_bytes = tm_wtype_row_bytes(wtype, n_in);
    int32_t rows_per_tile = (int32_t)(TILE_BYTES / row_bytes);
    if (rows_per_tile < 1) rows_per_tile = 1;
    int32_t n_tiles = (n_out + rows_per_tile - 1) / rows_per_tile;
    int threads = tm_twin_threads();
    /* More tiles than threads, so that a slow thread does not hold up the rest. */
    if (n_tiles < 4 * threads && n_out >= 4 * threads) {
        rows_per_tile = (n_out + 4 * threads - 1) / (4 * threads);
        n_tiles = (n_out + rows_per_tile - 1) / rows_per_tile;
    }
    int64_t macs = (int64_t)n_tokens * n_in * n_out;
#pragma omp parallel for schedule(static) num_threads(threads) if (macs >= PARALLEL_MIN_MACS)
    for (int32_t i = 0; i < n_tiles; i++) {
        int32_t begin = i * rows_per_tile;
        int32_t end = begin + rows_per_tile < n_out ? begin + rows_per_tile : n_out;
        tile(out, x, (const uint8_t *)w, row_bytes, n_tokens, n_in, out_stride, begin, end);
    }
}

#define DEFINE_MATMUL(wname, WTYPE)                                                     \
    static void matmul_##wname(TM_DECLARE_PARAMS(matmul)) {                             \
        matmul_any(tile_##wname, WTYPE, out, x, w, n_tokens, n_in, n_out, out_stride);  \
    }                                                                                   \
    TM_TWIN(tm_matvec_##wname, matmul, matvec, matmul_##wname,                         \
            tm_check_matmul(&args, WTYPE))                                              \
    TM_TWIN(tm_matmul_##wname, matmul, matmul, matmul_##wname,                         \
            tm_check_matmul(&args, WTYPE))

DEFINE_MATMUL(f32, TM_WTYPE_F32)
DEFINE_MATMUL(f16, TM_WTYPE_F16)
DEFINE_MATMUL(bf16, TM_WTYPE_BF16)
DEFINE_MATMUL(q8_0, TM_WTYPE_Q8_0)
