/* matmul.c — twins of tm_matvec_<wtype> and tm_matmul_<wtype>:
 *     out[t][o] = sum_i w[o][i] * x[t][i]
 *
 * Layout: w is [n_out][n_in] in the weight type as GGUF stores it (Q8_0 rows are
 * n_in / 32 blocks of 34 bytes), x is [n_tokens][n_in] f32, out is [n_tokens][out_stride].
 *
 * Parallelisation: the output rows are cut into tiles of about TILE_BYTES of weights;
 * threads take tiles (static schedule). Within a tile every token is multiplied by every
 * row, so a tile is read from memory once and its rows stay in L2 across the tokens
 * (decode batches and prefill alike); with several tokens a row is converted to f32
 * once and reused. Each dot product runs in one thread in a fixed order, so results do
 * not depend on the thread count nor on the other tokens of the batch, and matvec and
 * matmul, which are the same code here, give identical bits.
 *
 * Speed: decode reads every weight once per step, so the dots must run at memory speed.
 * They are plain loops the compiler vectorises (partial sums in lanes); the decoders in
 * f16.h are branch-free for that reason. The hot function is also built for x86-64-v3
 * (AVX2, FMA, F16C) and picked at load time where the CPU has it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/f16.h"
#include "kernels/q8_0.h"
#include "kernels/quants.h"
#include "kernels/twin.h"

/* ---------------------------------------------------------------------------------- */
/* Dot products, one per weight type                                                   */
/* ---------------------------------------------------------------------------------- */

/* A float sum has one add in flight per accumulator; LANES partial sums (lane = i % LANES)
 * give the vectoriser four 8-wide accumulators, enough to hide the add latency. The
 * lanes are then folded in halves (a tree the vectoriser also handles), then the tail
 * is added: a fixed order, whatever the CPU. */
#define LANES 32
#define DOT(load)                                                                       \
    float acc[LANES] = {0.0f};                                                          \
    int32_t i = 0;                                                                      \
    for (; i + LANES <= n; i += LANES)                                                  \
        for (int k = 0; k < LANES; k++) acc[k] += load(i + k) * x[i + k];               \
    for (int half = LANES / 2; half > 0; half /= 2)                                     \
        for (int k = 0; k < half; k++) acc[k] += acc[k + half];                         \
    float s = acc[0];                                                                   \
    for (; i < n; i++) s += load(i) * x[i];                                             \
    return s;

static inline float dot_f32(const float *w /* [n] */, const float *x /* [n] */, int32_t n) {
#define LOAD_F32(i) w[i]
    DOT(LOAD_F32)
}

static inline float dot_f16(const uint16_t *w /* [n] */, const float *x /* [n] */, int32_t n) {
#define LOAD_F16(i) tm_f16_to_f32(w[i])
    DOT(LOAD_F16)
}

static inline float dot_bf16(const uint16_t *w /* [n] */, const float *x /* [n] */, int32_t n) {
#define LOAD_BF16(i) tm_bf16_to_f32(w[i])
    DOT(LOAD_BF16)
}

/* Two dot products with one row, so each weight loaded feeds two multiply-adds. Each
 * token's sum has exactly dot_f32's lanes, folds and order: the same bits as one at a
 * time (a sequence's result does not depend on its batch). */
static inline void dot2_f32(const float *w /* [n] */, const float *x0 /* [n] */,
                            const float *x1 /* [n] */, int32_t n, float *out0, float *out1) {
    float a0[LANES] = {0.0f}, a1[LANES] = {0.0f};
    int32_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) {
            a0[k] += w[i + k] * x0[i + k];
            a1[k] += w[i + k] * x1[i + k];
        }
    for (int half = LANES / 2; half > 0; half /= 2)
        for (int k = 0; k < half; k++) {
            a0[k] += a0[k + half];
            a1[k] += a1[k + half];
        }
    float s0 = a0[0], s1 = a1[0];
    for (; i < n; i++) {
        s0 += w[i] * x0[i];
        s1 += w[i] * x1[i];
    }
    *out0 = s0;
    *out1 = s1;
}

/* Lane k sums element k of every block, (d * q[k]) * x[k] (the value the weight stands
 * for, times x, as the CUDA kernel computes it); the 32 lanes are then folded in halves. */
static inline float dot_q8_0(const uint8_t *w /* [n / 32][34] */, const float *x /* [n] */,
                             int32_t n) {
    float acc[TM_Q8_0_BLOCK] = {0.0f};
    for (int32_t b = 0; b < n / TM_Q8_0_BLOCK; b++) {
        const uint8_t *blk = w + (int64_t)b * TM_Q8_0_BLOCK_BYTES;
        const int8_t *q = (const int8_t *)(blk + 2);
        const float *xb = x + (int64_t)b * TM_Q8_0_BLOCK;
        float d = tm_q8_0_scale(blk);
        for (int k = 0; k < TM_Q8_0_BLOCK; k++) acc[k] += (d * (float)q[k]) * xb[k];
    }
    for (int half = TM_Q8_0_BLOCK / 2; half > 0; half /= 2)
        for (int k = 0; k < half; k++) acc[k] += acc[k + half];
    return acc[0];
}


/* Block-quantised types: each block is decoded (quants.h: the same bits as the CUDA
 * kernels' per-element decoder) and dotted in dot_f32's lanes, lane k summing element k
 * of every 32 values: the same bits as dot_f32 over the decoded row, which the
 * several-token path computes. */
#define DEFINE_DOT_QUANT(wname, WTYPE)                                                  \
    static inline float dot_##wname(const uint8_t *w /* [n / QK][B] */,                 \
                                    const float *x /* [n] */, int32_t n) {              \
        enum { QK = 256 };                                                              \
        const int32_t qk = tm_wtype_block(WTYPE), bytes = tm_wtype_block_bytes(WTYPE);  \
        float acc[LANES] = {0.0f}, blk[QK];                                             \
        for (int32_t b = 0; b < n / qk; b++) {                                          \
            tm_quant_block_##wname(w + (int64_t)b * bytes, blk);                        \
            const float *xb = x + (int64_t)b * qk;                                      \
            for (int32_t c = 0; c < qk; c += LANES)                                     \
                for (int k = 0; k < LANES; k++) acc[k] += blk[c + k] * xb[c + k];       \
        }                                                                               \
        for (int half = LANES / 2; half > 0; half /= 2)                                 \
            for (int k = 0; k < half; k++) acc[k] += acc[k + half];                     \
        return acc[0];                                                                  \
    }                                                                                   \
    static inline void convert_##wname(float *row, const uint8_t *w, int32_t n) {       \
        tm_dequantize_row_##wname(row, w, n);                                           \
    }
TM_QUANT_TYPES(DEFINE_DOT_QUANT)

/* ---------------------------------------------------------------------------------- */
/* One tile of rows against every token                                                */
/* ---------------------------------------------------------------------------------- */

#define TILE_BYTES (128 * 1024) /* weights per tile: well inside a 512 KiB-1 MiB L2 */
#define X_CHUNK_FLOATS (64 * 1024) /* activations per pass over a tile: 256 KiB, in L2 */

static inline void convert_f16(float *row, const uint8_t *w, int32_t n) {
    const uint16_t *h = (const uint16_t *)w;
    for (int32_t i = 0; i < n; i++) row[i] = tm_f16_to_f32(h[i]);
}
static inline void convert_bf16(float *row, const uint8_t *w, int32_t n) {
    const uint16_t *h = (const uint16_t *)w;
    for (int32_t i = 0; i < n; i++) row[i] = tm_bf16_to_f32(h[i]);
}
static inline void convert_q8_0(float *row, const uint8_t *w, int32_t n) {
    tm_q8_0_dequantize_row(row, w, n);
}
static inline void convert_f32(float *row, const uint8_t *w, int32_t n) { /* unused */
    memcpy(row, w, (size_t)n * sizeof(float));
}

/* One token: each row's dot straight from the weights. Several tokens: each row is
 * converted to f32 once per pass (f32 rows are used in place) and dotted with the pass's
 * tokens two at a time. Both give the same bits: conversion is exact and dot_f32/dot2_f32
 * add in the lanes and order of every dot_<type> (for Q8_0, lane k is element k of each
 * 32-value block in both). Without row_buf (no memory) the one-token path serves all. */
#define DEFINE_TILE(wname, elem_t, IS_F32)                                              \
    __attribute__((target_clones("arch=x86-64-v3", "default")))                        \
    static void tile_##wname(float *out /* [n_tokens][out_stride] */,                   \
                             const float *x /* [n_tokens][n_in] */,                     \
                             const uint8_t *w /* [n_out][row_bytes] */, int64_t row_bytes, \
                             int32_t n_tokens, int32_t n_in, int32_t out_stride,        \
                             int32_t row_begin, int32_t row_end,                        \
                             float *row_buf /* [n_in] or NULL */) {                     \
        if (n_tokens == 1 || (!IS_F32 && !row_buf)) {                                   \
            for (int32_t t = 0; t < n_tokens; t++) {                                    \
                const float *xt = x + (int64_t)t * n_in;                                \
                float *ot = out + (int64_t)t * out_stride;                              \
                for (int32_t o = row_begin; o < row_end; o++)                           \
                    ot[o] = dot_##wname((const elem_t *)(w + o * row_bytes), xt, n_in); \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        int32_t chunk = X_CHUNK_FLOATS / n_in > 1 ? X_CHUNK_FLOATS / n_in : 2;          \
        for (int32_t t0 = 0; t0 < n_tokens; t0 += chunk) {                              \
            int32_t t1 = t0 + chunk < n_tokens ? t0 + chunk : n_tokens;                 \
            for (int32_t o = row_begin; o < row_end; o++) {                             \
                const float *row = (const float *)(w + o * row_bytes);                  \
                if (!IS_F32) {                                                          \
                    convert_##wname(row_buf, w + o * row_bytes, n_in);                  \
                    row = row_buf;                                                      \
                }                                                                       \
                int32_t t = t0;                                                         \
                for (; t + 1 < t1; t += 2)                                              \
                    dot2_f32(row, x + (int64_t)t * n_in, x + (int64_t)(t + 1) * n_in, n_in, \
                             &out[(int64_t)t * out_stride + o],                         \
                             &out[(int64_t)(t + 1) * out_stride + o]);                  \
                if (t < t1) out[(int64_t)t * out_stride + o] = dot_f32(row, x + (int64_t)t * n_in, n_in); \
            }                                                                           \
        }                                                                               \
    }

DEFINE_TILE(f32, float, 1)
DEFINE_TILE(f16, uint16_t, 0)
DEFINE_TILE(bf16, uint16_t, 0)
DEFINE_TILE(q8_0, uint8_t, 0)
#define DEFINE_TILE_QUANT(wname, WTYPE) DEFINE_TILE(wname, uint8_t, 0)
TM_QUANT_TYPES(DEFINE_TILE_QUANT)

typedef void tile_fn(float *, const float *, const uint8_t *, int64_t, int32_t, int32_t,
                     int32_t, int32_t, int32_t, float *);

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
    int convert_rows = wtype != TM_WTYPE_F32 && n_tokens > 1;
#pragma omp parallel num_threads(threads) if (macs >= PARALLEL_MIN_MACS)
    {
        /* Without the buffer (no memory) the direct path gives the same bits. */
        float *row_buf = convert_rows ? malloc((size_t)n_in * sizeof(float)) : NULL;
#pragma omp for schedule(static)
        for (int32_t i = 0; i < n_tiles; i++) {
            int32_t begin = i * rows_per_tile;
            int32_t end = begin + rows_per_tile < n_out ? begin + rows_per_tile : n_out;
            tile(out, x, (const uint8_t *)w, row_bytes, n_tokens, n_in, out_stride, begin,
                 end, row_buf);
        }
        free(row_buf);
    }
}

#define DEFINE_MATMUL(wname, WTYPE)                                                     \
    static void matmul_##wname(TM_DECLARE_PARAMS(matmul)) {                             \
        matmul_any(tile_##wname, WTYPE, out, x, w, n_tokens, n_in, n_out, out_stride);  \
    }                                                                                   \
    TM_TWIN(tm_matvec_##wname, matmul, matvec, matmul_##wname,                         \
            tm_check_matmul(&args, WTYPE),                                              \
            tm_touch_matmul(launch, &args, WTYPE, TM_MATVEC_MAX_TOKENS))                \
    TM_TWIN(tm_matmul_##wname, matmul, matmul, matmul_##wname,                         \
            tm_check_matmul(&args, WTYPE),                                              \
            tm_touch_matmul(launch, &args, WTYPE, TM_MATMUL_TILE))

DEFINE_MATMUL(f32, TM_WTYPE_F32)
DEFINE_MATMUL(f16, TM_WTYPE_F16)
DEFINE_MATMUL(bf16, TM_WTYPE_BF16)
DEFINE_MATMUL(q8_0, TM_WTYPE_Q8_0)
TM_QUANT_TYPES(DEFINE_MATMUL)

/* ---------------------------------------------------------------------------------- */
/* Mixture of experts: y[t][k] = W[ids[t][k]] · x (moe.h)                              */
/* ---------------------------------------------------------------------------------- */

/* Each (slot, row) dot is dot_<wtype>, the matvec's own: a slot's result has the bits of
 * a matvec of its expert's matrix. An id out of range gives zeros, as on the device. */
#define DEFINE_MOE_MATVEC(wname, WTYPE)                                                 \
    static void moe_matvec_##wname(TM_DECLARE_PARAMS(moe_matvec)) {                     \
        int64_t row_bytes = tm_wtype_row_bytes(WTYPE, n_in), slots = (int64_t)n_tokens * top_k; \
        int64_t work = slots * n_out, macs = work * n_in;                               \
        _Pragma("omp parallel for schedule(static) num_threads(tm_twin_threads()) if (macs >= PARALLEL_MIN_MACS)") \
        for (int64_t i = 0; i < work; i++) {                                            \
            int64_t s = i / n_out, o = i % n_out;                                       \
            int32_t e = ids[s];                                                         \
            const float *xr = x + (x_per_slot ? s : s / top_k) * n_in;                  \
            if (e < 0 || e >= n_expert) {                                               \
                out[i] = 0.0f;                                                          \
                continue;                                                               \
            }                                                                           \
            out[i] = dot_##wname((const void *)((const uint8_t *)w + ((int64_t)e * n_out + o) * row_bytes), \
                                 xr, n_in);                                             \
        }                                                                               \
    }                                                                                   \
    TM_TWIN(tm_moe_matvec_##wname, moe_matvec, moe_matvec, moe_matvec_##wname,          \
            tm_check_moe_matvec(&args, WTYPE), tm_touch_moe_matvec(launch, &args, WTYPE))
DEFINE_MOE_MATVEC(f32, TM_WTYPE_F32)
DEFINE_MOE_MATVEC(f16, TM_WTYPE_F16)
DEFINE_MOE_MATVEC(bf16, TM_WTYPE_BF16)
DEFINE_MOE_MATVEC(q8_0, TM_WTYPE_Q8_0)
TM_QUANT_TYPES(DEFINE_MOE_MATVEC)
