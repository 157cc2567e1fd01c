/* quants.h — the GGML block-quantised weight types, decoded identically in C and CUDA.
 *
 * Each type stores a row as consecutive blocks of QK values (32 for the legacy types,
 * 256 for the k-quants); a row's length must be a multiple of QK. Layouts are those of
 * ggml's block_<type> structs, packed, little-endian (f16 fields as IEEE binary16):
 *
 *   Q4_0  18 B: d f16, qs[16]            v = (nibble - 8) * d
 *   Q4_1  20 B: d f16, m f16, qs[16]     v = nibble * d + m
 *   Q5_0  22 B: d f16, qh[4], qs[16]     v = (nibble | bit << 4) - 16) * d
 *   Q5_1  24 B: d f16, m f16, qh[4], qs  v = (nibble | bit << 4) * d + m
 *     (legacy: value j < 16 is the low nibble of qs[j], value j + 16 the high nibble;
 *      the fifth bit of value j is bit j of the little-endian u32 qh)
 *   Q2_K  84 B: scales[16], qs[64], d f16, dmin f16
 *     16 sub-blocks of 16; scales[s] = scale (low nibble) | min (high nibble);
 *     v = d * sc * q - dmin * m, q two bits
 *   Q3_K 110 B: hmask[32], qs[64], scales[12], d f16
 *     16 sub-blocks of 16 with 6-bit signed scales (stored + 32) packed in 12 bytes;
 *     q two low bits from qs, minus 4 unless the hmask bit is set; v = d * (sc - 32) * q
 *   Q4_K 144 B: d f16, dmin f16, scales[12], qs[128]
 *     8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes (get_scale_min);
 *     v = d * sc * q - dmin * m, q a nibble
 *   Q5_K 176 B: d f16, dmin f16, scales[12], qh[32], qs[128]   as Q4_K, q five bits
 *   Q6_K 210 B: ql[128], qh[64], scales[16] int8, d f16
 *     16 sub-blocks of 16; q six bits minus 32; v = d * sc * q
 *
 * Within a 256-value k-quant block the quants are interleaved as ggml's
 * dequantize_row_* walk them; tm_quant_value below computes element j directly, with
 * the same float operations in the same order as ggml's reference dequantisation, so
 * the value is bit-exact with it. No fused multiply-add: CUDA gets the explicitly
 * rounded intrinsics (nvcc would otherwise contract d * q - m).
 *
 * This header is included by C (twins, engine, tests, generator) and by nvcc.
 */
#ifndef TM_QUANTS_H
#define TM_QUANTS_H

#include <stdint.h>

#include "kernels/f16.h"
#include "kernels/kernels.h"

#define TM_QK_LEGACY 32 /* values per Q4_0 .. Q5_1 block */
#define TM_QK_K 256     /* values per k-quant block */

#ifdef __CUDA_ARCH__
#define TM_QMUL(a, b) __fmul_rn((a), (b))
#define TM_QSUB(a, b) __fsub_rn((a), (b))
#define TM_QADD(a, b) __fadd_rn((a), (b))
#else
#define TM_QMUL(a, b) ((a) * (b))
#define TM_QSUB(a, b) ((a) - (b))
#define TM_QADD(a, b) ((a) + (b))
#endif

TM_FP8_FN float tm_quant_f16_at(const uint8_t *p) {
    return tm_f16_to_f32((uint16_t)(p[0] | (uint16_t)p[1] << 8));
}

/* 6-bit scale and min of sub-block j (0..7) from Q4_K/Q5_K's 12 packed bytes
 * (ggml's get_scale_min_k4). */
TM_FP8_FN void tm_quant_scale_min_k4(int j, const uint8_t *q /* [12] */, uint8_t *sc,
                                     uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q3_K's 6-bit scale of sub-block s (0..15), still offset by 32: low four bits from
 * byte s % 8 (low nibble for s < 8), high two bits from byte 8 + s % 4. */
TM_FP8_FN int tm_quant_scale_q3_k(int s, const uint8_t *scales /* [12] */) {
    int lo = (scales[s % 8] >> (4 * (s / 8))) & 0xF;
    int hi = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
    return (int)(int8_t)(uint8_t)(lo | hi << 4);
}

/* Value j (0 <= j < 32) of a legacy block. */
TM_FP8_FN float tm_quant_q4_0(const uint8_t *b /* [18] */, int j) {
    int q = j < 16 ? (b[2 + j] & 0xF) : (b[2 + j - 16] >> 4);
    return TM_QMUL((float)(q - 8), tm_quant_f16_at(b));
}
TM_FP8_FN float tm_quant_q4_1(const uint8_t *b /* [20] */, int j) {
    int q = j < 16 ? (b[4 + j] & 0xF) : (b[4 + j - 16] >> 4);
    return TM_QADD(TM_QMUL((float)q, tm_quant_f16_at(b)), tm_quant_f16_at(b + 2));
}
TM_FP8_FN int tm_quant_q5_bits(const uint8_t *qh /* [4] */, const uint8_t *qs /* [16] */, int j) {
    uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
                 (uint32_t)qh[3] << 24;
    int lo = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
    return lo | (int)((h >> j) & 1) << 4;
}
TM_FP8_FN float tm_quant_q5_0(const uint8_t *b /* [22] */, int j) {
    return TM_QMUL((float)(tm_quant_q5_bits(b + 2, b + 6, j) - 16), tm_quant_f16_at(b));
}
TM_FP8_FN float tm_quant_q5_1(const uint8_t *b /* [24] */, int j) {
    return TM_QADD(TM_QMUL((float)tm_quant_q5_bits(b + 4, b + 8, j), tm_quant_f16_at(b)),
                   tm_quant_f16_at(b + 2));
}

/* Value j (0 <= j < 256) of a k-quant block. */
TM_FP8_FN float tm_quant_q2_k(const uint8_t *b /* [84] */, int j) {
    int half = j / 128, r = j % 128, shift = 2 * (r / 32), l = r % 32;
    uint8_t sc = b[j / 16];
    int q = (b[16 + half * 32 + l] >> shift) & 3;
    float dl = TM_QMUL(tm_quant_f16_at(b + 80), (float)(sc & 0xF));
    float ml = TM_QMUL(tm_quant_f16_at(b + 82), (float)(sc >> 4));
    return TM_QSUB(TM_QMUL(dl, (float)q), ml);
}
TM_FP8_FN float tm_quant_q3_k(const uint8_t *b /* [110] */, int j) {
    int half = j / 128, r = j % 128, shift = 2 * (r / 32), l = r % 32;
    int low = (b[32 + half * 32 + l] >> shift) & 3;
    int high = (b[l] >> (half * 4 + r / 32)) & 1; /* hmask bit: set means no -4 */
    float dl = TM_QMUL(tm_quant_f16_at(b + 108), (float)(tm_quant_scale_q3_k(j / 16, b + 96) - 32));
    return TM_QMUL(dl, (float)(low - (high ? 0 : 4)));
}
TM_FP8_FN float tm_quant_q4_k(const uint8_t *b /* [144] */, int j) {
    uint8_t sc, m;
    tm_quant_scale_min_k4(j / 32, b + 4, &sc, &m);
    uint8_t byte = b[16 + (j / 64) * 32 + j % 32];
    int q = (j / 32) % 2 ? byte >> 4 : byte & 0xF;
    float d1 = TM_QMUL(tm_quant_f16_at(b), (float)sc);
    float m1 = TM_QMUL(tm_quant_f16_at(b + 2), (float)m);
    return TM_QSUB(TM_QMUL(d1, (float)q), m1);
}
TM_FP8_FN float tm_quant_q5_k(const uint8_t *b /* [176] */, int j) {
    uint8_t sc, m;
    tm_quant_scale_min_k4(j / 32, b + 4, &sc, &m);
    uint8_t byte = b[48 + (j / 64) * 32 + j % 32];
    int q = ((j / 32) % 2 ? byte >> 4 : byte & 0xF) + ((b[16 + j % 32] >> (j / 32)) & 1 ? 16 : 0);
    float d1 = TM_QMUL(tm_quant_f16_at(b), (float)sc);
    float m1 = TM_QMUL(tm_quant_f16_at(b + 2), (float)m);
    return TM_QSUB(TM_QMUL(d1, (float)q), m1);
}
TM_FP8_FN float tm_quant_q6_k(const uint8_t *b /* [210] */, int j) {
    int n = j / 128, part = (j % 128) / 32, l = j % 32;
    uint8_t lo = b[n * 64 + (part & 1) * 32 + l];
    int q = ((part >= 2 ? lo >> 4 : lo & 0xF) | ((b[128 + n * 32 + l] >> (2 * part)) & 3) << 4) - 32;
    int8_t sc = (int8_t)b[192 + n * 8 + l / 16 + 2 * part];
    return TM_QMUL(TM_QMUL(tm_quant_f16_at(b + 208), (float)sc), (float)q);
}

#ifndef __CUDACC__
/* Whole blocks on the host, for the twins' speed: the same float operations as the
 * element decoders above (so the same bits), with each sub-block's scale and min
 * computed once. */
static inline void tm_quant_block_q4_0(const uint8_t *b, float *y /* [32] */) {
    float d = tm_quant_f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = TM_QMUL((float)((b[2 + j] & 0xF) - 8), d);
        y[j + 16] = TM_QMUL((float)((b[2 + j] >> 4) - 8), d);
    }
}
static inline void tm_quant_block_q4_1(const uint8_t *b, float *y /* [32] */) {
    float d = tm_quant_f16_at(b), m = tm_quant_f16_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = TM_QADD(TM_QMUL((float)(b[4 + j] & 0xF), d), m);
        y[j + 16] = TM_QADD(TM_QMUL((float)(b[4 + j] >> 4), d), m);
    }
}
/* Q5: the 32 five-bit values of a block, qh read once. */
static inline void tm_quant_q5_unpack(const uint8_t *qh, const uint8_t *qs, int *q /* [32] */) {
    uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0xF) | (int)((h >> j) & 1) << 4;
        q[j + 16] = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
    }
}
static inline void tm_quant_block_q5_0(const uint8_t *b, float *y /* [32] */) {
    float d = tm_quant_f16_at(b);
    int q[32];
    tm_quant_q5_unpack(b + 2, b + 6, q);
    for (int j = 0; j < 32; j++) y[j] = TM_QMUL((float)(q[j] - 16), d);
}
static inline void tm_quant_block_q5_1(const uint8_t *b, float *y /* [32] */) {
    float d = tm_quant_f16_at(b), m = tm_quant_f16_at(b + 2);
    int q[32];
    tm_quant_q5_unpack(b + 4, b + 8, q);
    for (int j = 0; j < 32; j++) y[j] = TM_QADD(TM_QMUL((float)q[j], d), m);
}
static inline void tm_quant_block_q2_k(const uint8_t *b, float *y /* [256] */) {
    float d = tm_quant_f16_at(b + 80), dmin = tm_quant_f16_at(b + 82);
    for (int s = 0; s < 16; s++) {
        int j0 = 16 * s, shift = 2 * ((j0 % 128) / 32);
        const uint8_t *q = b + 16 + (j0 / 128) * 32 + j0 % 32;
        float dl = TM_QMUL(d, (float)(b[s] & 0xF)), ml = TM_QMUL(dmin, (float)(b[s] >> 4));
        for (int l = 0; l < 16; l++) y[j0 + l] = TM_QSUB(TM_QMUL(dl, (float)((q[l] >> shift) & 3)), ml);
    }
}
static inline void tm_quant_block_q3_k(const uint8_t *b, float *y /* [256] */) {
    float d = tm_quant_f16_at(b + 108);
    for (int s = 0; s < 16; s++) {
        int j0 = 16 * s, shift = 2 * ((j0 % 128) / 32), hbit = j0 / 32;
        const uint8_t *q = b + 32 + (j0 / 128) * 32 + j0 % 32, *hm = b + j0 % 32;
        float dl = TM_QMUL(d, (float)(tm_quant_scale_q3_k(s, b + 96) - 32));
        for (int l = 0; l < 16; l++) /* branch-free, so the loop vectorises */
            y[j0 + l] = TM_QMUL(dl, (float)(((q[l] >> shift) & 3) - 4 + 4 * ((hm[l] >> hbit) & 1)));
    }
}
static inline void tm_quant_block_q45_k(const uint8_t *b, float *y /* [256] */, int five) {
    float d = tm_quant_f16_at(b), dmin = tm_quant_f16_at(b + 2);
    const uint8_t *qh = b + 16, *qs = b + (five ? 48 : 16);
    for (int s = 0; s < 8; s++) {
        uint8_t sc, m;
        tm_quant_scale_min_k4(s, b + 4, &sc, &m);
        float d1 = TM_QMUL(d, (float)sc), m1 = TM_QMUL(dmin, (float)m);
        const uint8_t *q = qs + (s / 2) * 32;
        int nib = 4 * (s % 2), high = five ? 16 : 0;
        for (int l = 0; l < 32; l++) { /* branch-free, so the loop vectorises */
            int v = ((q[l] >> nib) & 0xF) + (((qh[l] >> s) & 1) * high);
            y[32 * s + l] = TM_QSUB(TM_QMUL(d1, (float)v), m1);
        }
    }
}
static inline void tm_quant_block_q4_k(const uint8_t *b, float *y) { tm_quant_block_q45_k(b, y, 0); }
static inline void tm_quant_block_q5_k(const uint8_t *b, float *y) { tm_quant_block_q45_k(b, y, 1); }
static inline void tm_quant_block_q6_k(const uint8_t *b, float *y /* [256] */) {
    float d = tm_quant_f16_at(b + 208);
    for (int s = 0; s < 16; s++) {
        int j0 = 16 * s, n = j0 / 128, part = (j0 % 128) / 32, l0 = j0 % 32;
        const uint8_t *ql = b + n * 64 + (part & 1) * 32 + l0, *qh = b + 128 + n * 32 + l0;
        float dl = TM_QMUL(d, (float)(int8_t)b[192 + n * 8 + l0 / 16 + 2 * part]);
        int nib = part >= 2 ? 4 : 0, hs = 2 * part;
        for (int l = 0; l < 16; l++) { /* branch-free, so the loop vectorises */
            int q = (((ql[l] >> nib) & 0xF) | ((qh[l] >> hs) & 3) << 4) - 32;
            y[j0 + l] = TM_QMUL(dl, (float)q);
        }
    }
}

/* Whole rows: row[n / QK blocks] -> out[n], n a multiple of QK. */
#define TM_QUANT_ROW(wname, WTYPE)                                                      \
    static inline void tm_dequantize_row_##wname(float *out /* [n] */,                  \
                                                 const uint8_t *row /* [n / QK][B] */,  \
                                                 int64_t n) {                           \
        const int32_t qk = tm_wtype_block(WTYPE), bytes = tm_wtype_block_bytes(WTYPE);  \
        for (int64_t b = 0; b < n / qk; b++) tm_quant_block_##wname(row + b * bytes, out + b * qk); \
    }
TM_QUANT_TYPES(TM_QUANT_ROW)
#undef TM_QUANT_ROW

/* Any block-quantised type by id; 0, or -1 for a type this header does not decode. */
static inline int tm_dequantize_row(int32_t wtype, float *out /* [n] */,
                                    const uint8_t *row, int64_t n) {
    switch (wtype) {
#define TM_QUANT_CASE(wname, WTYPE) case WTYPE: tm_dequantize_row_##wname(out, row, n); return 0;
        TM_QUANT_TYPES(TM_QUANT_CASE)
#undef TM_QUANT_CASE
    default: return -1;
    }
}
#endif

#endif /* TM_QUANTS_H */
