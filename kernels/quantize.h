/* quantize.h — f32 rows to the block-quantised types of quants.h, on the host (the
 * model generator and the tests).
 *
 * Q4_0, Q4_1, Q5_0 and Q5_1 follow ggml's quantize_row_*_ref step for step (same scale,
 * same truncating rounding), so a row gives ggml's bytes. The k-quants keep ggml's
 * packing and its last stage (6- or 4-bit sub-block scales relative to an f16 block
 * scale, quants rounded to nearest against the stored scales), but pick each
 * sub-block's scale and min from its range instead of ggml's iterative search: the
 * files decode exactly as ggml decodes them; their error is a little larger.
 */
#ifndef TM_QUANTIZE_H
#define TM_QUANTIZE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/q8_0.h"
#include "kernels/quants.h"

static inline void tm_quant_put_f16(uint8_t *p, float v) {
    uint16_t h = tm_f32_to_f16(v);
    p[0] = (uint8_t)(h & 0xff);
    p[1] = (uint8_t)(h >> 8);
}

/* A block scale as f16, rounded away from zero: sub-block scales computed against it
 * then never need more than their range (tiny blocks have subnormal f16 scales). */
static inline void tm_quant_put_f16_up(uint8_t *p, float v) {
    uint16_t h = tm_f32_to_f16(v);
    if (fabsf(tm_f16_to_f32(h)) < fabsf(v) && (h & 0x7c00u) != 0x7c00u) h++;
    p[0] = (uint8_t)(h & 0xff);
    p[1] = (uint8_t)(h >> 8);
}

static inline int tm_quant_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---------------------------------------------------------------------------------- */
/* Legacy types, 32 values a block                                                     */
/* ---------------------------------------------------------------------------------- */

/* The signed value of largest magnitude (the first one on ties), as ggml picks it. */
static inline float tm_quant_signed_max(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    return max;
}

static inline void tm_quant_min_max(const float *x, int n, float *min, float *max) {
    *min = INFINITY, *max = -INFINITY;
    for (int j = 0; j < n; j++) *min = fminf(*min, x[j]), *max = fmaxf(*max, x[j]);
}

/* Q4_0 and Q5_0: d = max / -2^(bits-1), q = min(2^bits - 1, trunc(x / d + 2^(bits-1) + 0.5)). */
static inline void tm_quantize_block_q4_0(uint8_t *b /* [18] */, const float *x /* [32] */) {
    float d = tm_quant_signed_max(x, 32) / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    tm_quant_put_f16(b, d);
    for (int j = 0; j < 16; j++) {
        int q0 = tm_quant_clamp((int8_t)(x[j] * id + 8.5f), -128, 15);
        int q1 = tm_quant_clamp((int8_t)(x[16 + j] * id + 8.5f), -128, 15);
        b[2 + j] = (uint8_t)(q0 | q1 << 4);
    }
}
static inline void tm_quantize_block_q4_1(uint8_t *b /* [20] */, const float *x /* [32] */) {
    float min, max;
    tm_quant_min_max(x, 32, &min, &max);
    float d = (max - min) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    tm_quant_put_f16(b, d);
    tm_quant_put_f16(b + 2, min);
    for (int j = 0; j < 16; j++) {
        int q0 = tm_quant_clamp((int8_t)((x[j] - min) * id + 0.5f), -128, 15);
        int q1 = tm_quant_clamp((int8_t)((x[16 + j] - min) * id + 0.5f), -128, 15);
        b[4 + j] = (uint8_t)(q0 | q1 << 4);
    }
}
/* Five-bit quants: low nibbles as Q4, fifth bits into the u32 qh (bit j for value j). */
static inline void tm_quant_pack5(uint8_t *qh /* [4] */, uint8_t *qs /* [16] */,
                                  const int *q /* [32] */) {
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0xF) | (q[16 + j] & 0xF) << 4);
        h |= (uint32_t)((q[j] & 0x10) >> 4) << j;
        h |= (uint32_t)((q[16 + j] & 0x10) >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}
static inline void tm_quantize_block_q5_0(uint8_t *b /* [22] */, const float *x /* [32] */) {
    float d = tm_quant_signed_max(x, 32) / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[32];
    for (int j = 0; j < 32; j++) q[j] = tm_quant_clamp((int8_t)(x[j] * id + 16.5f), -128, 31);
    tm_quant_put_f16(b, d);
    tm_quant_pack5(b + 2, b + 6, q);
}
static inline void tm_quantize_block_q5_1(uint8_t *b /* [24] */, const float *x /* [32] */) {
    float min, max;
    tm_quant_min_max(x, 32, &min, &max);
    float d = (max - min) / 31.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[32];
    for (int j = 0; j < 32; j++) q[j] = (int8_t)((x[j] - min) * id + 0.5f);
    tm_quant_put_f16(b, d);
    tm_quant_put_f16(b + 2, min);
    tm_quant_pack5(b + 4, b + 8, q);
}

/* ---------------------------------------------------------------------------------- */
/* k-quants, 256 values a block                                                        */
/* ---------------------------------------------------------------------------------- */

/* Sub-block scales s[n] (>= 0) as integers of nmax steps of a block scale:
 * returns the block scale (max s / nmax) and fills l[n]. */
static inline float tm_quant_scales_unsigned(const float *s, int n, int nmax, int *l) {
    float max = 0.0f;
    for (int j = 0; j < n; j++) max = fmaxf(max, s[j]);
    float inv = max > 0.0f ? (float)nmax / max : 0.0f;
    for (int j = 0; j < n; j++) l[j] = tm_quant_clamp((int)lrintf(inv * s[j]), 0, nmax);
    return max / (float)nmax;
}

/* Affine sub-blocks (Q2_K, Q4_K, Q5_K): x ~ d * sc * q - dmin * m, q in [0, qmax].
 * sub: values per sub-block; sbits: bits of sc and m. Fills q[256], sc[], m[], and the
 * stored f16 d and dmin (at d_out, dmin_out). */
static inline void tm_quant_affine_k(const float *x /* [256] */, int sub, int qmax, int sbits,
                                     int *q, int *sc, int *m, uint8_t *d_out, uint8_t *dmin_out) {
    int n_sub = TM_QK_K / sub;
    float scale[16], min[16];
    for (int s = 0; s < n_sub; s++) {
        float lo, hi;
        tm_quant_min_max(x + s * sub, sub, &lo, &hi);
        lo = fminf(lo, 0.0f); /* the min is stored unsigned, subtracted */
        scale[s] = (hi - lo) / (float)qmax;
        min[s] = -lo;
    }
    int smax = (1 << sbits) - 1;
    tm_quant_put_f16_up(d_out, tm_quant_scales_unsigned(scale, n_sub, smax, sc));
    tm_quant_put_f16_up(dmin_out, tm_quant_scales_unsigned(min, n_sub, smax, m));
    float d = tm_quant_f16_at(d_out), dmin = tm_quant_f16_at(dmin_out);
    /* Sub-block scales against the stored (f16-rounded) block scales. */
    for (int s = 0; s < n_sub; s++) {
        if (d > 0.0f) sc[s] = tm_quant_clamp((int)lrintf(scale[s] / d), 0, smax);
        if (dmin > 0.0f) m[s] = tm_quant_clamp((int)lrintf(min[s] / dmin), 0, smax);
    }
    for (int s = 0; s < n_sub; s++) {
        float dl = d * (float)sc[s], ml = dmin * (float)m[s];
        for (int j = 0; j < sub; j++) {
            int v = dl > 0.0f ? (int)lrintf((x[s * sub + j] + ml) / dl) : 0;
            q[s * sub + j] = tm_quant_clamp(v, 0, qmax);
        }
    }
}

/* Symmetric sub-blocks of 16 (Q3_K, Q6_K): x ~ d * sc * q, q in [-qhalf, qhalf - 1],
 * sc signed in [-shalf, shalf - 1]. Fills q[256] and sc[16]; returns the f16 d. */
static inline void tm_quant_symmetric_k(const float *x /* [256] */, int qhalf, int shalf,
                                        int *q, int *sc, uint8_t *d_out) {
    float scale[16], amax = 0.0f, max = 0.0f;
    for (int s = 0; s < 16; s++) {
        scale[s] = tm_quant_signed_max(x + s * 16, 16) / (float)-qhalf;
        if (fabsf(scale[s]) > amax) amax = fabsf(scale[s]), max = scale[s];
    }
    float iscale = max != 0.0f ? (float)-shalf / max : 0.0f;
    tm_quant_put_f16_up(d_out, iscale != 0.0f ? 1.0f / iscale : 0.0f);
    float d = tm_quant_f16_at(d_out);
    /* Sub-block scales against the stored (f16-rounded) block scale. */
    for (int s = 0; s < 16; s++)
        sc[s] = d != 0.0f ? tm_quant_clamp((int)lrintf(scale[s] / d), -shalf, shalf - 1) : 0;
    for (int s = 0; s < 16; s++) {
        float dl = d * (float)sc[s];
        for (int j = 0; j < 16; j++) {
            int v = dl != 0.0f ? (int)lrintf(x[s * 16 + j] / dl) : 0;
            q[s * 16 + j] = tm_quant_clamp(v, -qhalf, qhalf - 1);
        }
    }
}

/* Two-bit planes as Q2_K and Q3_K store them: value 128 h + 32 p + l in bits 2p of
 * qs[32 h + l]. */
static inline void tm_quant_pack2(uint8_t *qs /* [64] */, const int *q /* [256] */) {
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const int *v = q + 128 * h + l;
            qs[32 * h + l] = (uint8_t)((v[0] & 3) | (v[32] & 3) << 2 | (v[64] & 3) << 4 |
                                       (v[96] & 3) << 6);
        }
}

static inline void tm_quantize_block_q2_k(uint8_t *b /* [84] */, const float *x /* [256] */) {
    int q[256], sc[16], m[16];
    tm_quant_affine_k(x, 16, 3, 4, q, sc, m, b + 80, b + 82);
    for (int s = 0; s < 16; s++) b[s] = (uint8_t)(sc[s] | m[s] << 4);
    tm_quant_pack2(b + 16, q);
}

static inline void tm_quantize_block_q3_k(uint8_t *b /* [110] */, const float *x /* [256] */) {
    int q[256], sc[16];
    tm_quant_symmetric_k(x, 4, 32, q, sc, b + 108);
    memset(b, 0, 32);      /* hmask */
    memset(b + 96, 0, 12); /* scales */
    for (int j = 0; j < 256; j++) {
        q[j] += 4; /* 0..7: the high bit goes to hmask */
        if (q[j] > 3) b[j % 32] |= (uint8_t)(1 << (j / 32)), q[j] -= 4;
    }
    tm_quant_pack2(b + 32, q);
    for (int s = 0; s < 16; s++) {
        int l = sc[s] + 32;
        if (s < 8) b[96 + s] = (uint8_t)(l & 0xF);
        else b[96 + s - 8] |= (uint8_t)((l & 0xF) << 4);
        b[96 + 8 + s % 4] |= (uint8_t)((l >> 4) << (2 * (s / 4)));
    }
}

/* Q4_K/Q5_K's 12 bytes of 6-bit scales and mins (the inverse of get_scale_min_k4). */
static inline void tm_quant_pack_scales_k4(uint8_t *p /* [12] */, const int *sc, const int *m) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            p[j] = (uint8_t)sc[j];
            p[j + 4] = (uint8_t)m[j];
        } else {
            p[j + 4] = (uint8_t)((sc[j] & 0xF) | (m[j] & 0xF) << 4);
            p[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
            p[j] |= (uint8_t)((m[j] >> 4) << 6);
        }
    }
}

static inline void tm_quantize_block_q4_k(uint8_t *b /* [144] */, const float *x /* [256] */) {
    int q[256], sc[8], m[8];
    tm_quant_affine_k(x, 32, 15, 6, q, sc, m, b, b + 2);
    tm_quant_pack_scales_k4(b + 4, sc, m);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            b[16 + 32 * c + l] = (uint8_t)(q[64 * c + l] | q[64 * c + 32 + l] << 4);
}

static inline void tm_quantize_block_q5_k(uint8_t *b /* [176] */, const float *x /* [256] */) {
    int q[256], sc[8], m[8];
    tm_quant_affine_k(x, 32, 31, 6, q, sc, m, b, b + 2);
    tm_quant_pack_scales_k4(b + 4, sc, m);
    memset(b + 16, 0, 32); /* qh: bit j / 32 of byte j % 32 */
    for (int j = 0; j < 256; j++)
        if (q[j] > 15) b[16 + j % 32] |= (uint8_t)(1 << (j / 32));
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            b[48 + 32 * c + l] = (uint8_t)((q[64 * c + l] & 0xF) | (q[64 * c + 32 + l] & 0xF) << 4);
}

static inline void tm_quantize_block_q6_k(uint8_t *b /* [210] */, const float *x /* [256] */) {
    int q[256], sc[16];
    tm_quant_symmetric_k(x, 32, 128, q, sc, b + 208);
    for (int s = 0; s < 16; s++) b[192 + s] = (uint8_t)(int8_t)sc[s];
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            int v[4];
            for (int p = 0; p < 4; p++) v[p] = q[128 * h + 32 * p + l] + 32; /* 0..63 */
            b[64 * h + l] = (uint8_t)((v[0] & 0xF) | (v[2] & 0xF) << 4);
            b[64 * h + 32 + l] = (uint8_t)((v[1] & 0xF) | (v[3] & 0xF) << 4);
            b[128 + 32 * h + l] = (uint8_t)(v[0] >> 4 | (v[1] >> 4) << 2 | (v[2] >> 4) << 4 |
                                            (v[3] >> 4) << 6);
        }
}

/* ---------------------------------------------------------------------------------- */
/* Rows of any type                                                                    */
/* ---------------------------------------------------------------------------------- */

/* x[n] -> out (tm_wtype_row_bytes(wtype, n) bytes), for every weight type the kernels
 * read. Returns -1 for an unknown type or n not a multiple of the type's block. */
static inline int tm_quantize_row(int32_t wtype, uint8_t *out, const float *x /* [n] */,
                                  int64_t n) {
    int32_t qk = tm_wtype_block(wtype), bytes = tm_wtype_block_bytes(wtype);
    if (qk == 0 || n % qk) return -1;
    for (int64_t b = 0; b < n / qk; b++) {
        uint8_t *o = out + b * bytes;
        const float *xb = x + b * qk;
        switch (wtype) {
        case TM_WTYPE_F32: memcpy(o, xb, 4); break;
        case TM_WTYPE_F16: {
            uint16_t h = tm_f32_to_f16(xb[0]);
            memcpy(o, &h, 2);
            break;
        }
        case TM_WTYPE_BF16: {
            uint16_t h = tm_f32_to_bf16(xb[0]);
            memcpy(o, &h, 2);
            break;
        }
        case TM_WTYPE_Q8_0: tm_q8_0_quantize_row(o, xb, 32); break;
        case TM_WTYPE_Q4_0: tm_quantize_block_q4_0(o, xb); break;
        case TM_WTYPE_Q4_1: tm_quantize_block_q4_1(o, xb); break;
        case TM_WTYPE_Q5_0: tm_quantize_block_q5_0(o, xb); break;
        case TM_WTYPE_Q5_1: tm_quantize_block_q5_1(o, xb); break;
        case TM_WTYPE_Q2_K: tm_quantize_block_q2_k(o, xb); break;
        case TM_WTYPE_Q3_K: tm_quantize_block_q3_k(o, xb); break;
        case TM_WTYPE_Q4_K: tm_quantize_block_q4_k(o, xb); break;
        case TM_WTYPE_Q5_K: tm_quantize_block_q5_k(o, xb); break;
        case TM_WTYPE_Q6_K: tm_quantize_block_q6_k(o, xb); break;
        default: return -1;
        }
    }
    return 0;
}

#endif /* TM_QUANTIZE_H */
