/* test_kernel_quants.c — the block-quantised weight types (kernels/quants.h) and their
 * quantisers (kernels/quantize.h).
 *
 * Three kinds of check, all exact:
 * - hand-built blocks: bytes written out here, values worked out by hand from ggml's
 *   block layout, compared with the decoder bit for bit;
 * - random bytes: the element decoder (what the CUDA kernels call per element) against
 *   a block walk written in ggml's loop order (scale index, shifts and masks advancing
 *   as in dequantize_row_*), every value of thousands of random blocks;
 * - quantise then decode: bytes ggml's reference quantiser gives for the legacy types,
 *   and an error bound per type for random rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "tests/kernels/reference.h"

static void put_f16(uint8_t *p, float v) { tm_quant_put_f16(p, v); }

/* ---------------------------------------------------------------------------------- */
/* Hand-built blocks                                                                   */
/* ---------------------------------------------------------------------------------- */

static void test_layout_sizes(void **state) {
    (void)state;
    static const struct { int32_t t, qk, bytes; } want[] = {
        {TM_WTYPE_Q4_0, 32, 18}, {TM_WTYPE_Q4_1, 32, 20}, {TM_WTYPE_Q5_0, 32, 22},
        {TM_WTYPE_Q5_1, 32, 24}, {TM_WTYPE_Q8_0, 32, 34}, {TM_WTYPE_Q2_K, 256, 84},
        {TM_WTYPE_Q3_K, 256, 110}, {TM_WTYPE_Q4_K, 256, 144}, {TM_WTYPE_Q5_K, 256, 176},
        {TM_WTYPE_Q6_K, 256, 210},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(tm_wtype_block(want[i].t), want[i].qk);
        assert_int_equal(tm_wtype_block_bytes(want[i].t), want[i].bytes);
        assert_int_equal(tm_wtype_row_bytes(want[i].t, 2 * want[i].qk), 2 * want[i].bytes);
        assert_int_equal(tm_wtype_row_bytes(want[i].t, want[i].qk + 16), 0);
    }
    assert_int_equal(tm_wtype_block(9 /* Q8_1: not a weight type here */), 0);
}

static void test_q4_0_q4_1_hand(void **state) {
    (void)state;
    uint8_t b[20] = {0};
    put_f16(b, 0.5f);       /* d */
    b[2 + 3] = 0xA1;        /* value 3: nibble 1; value 19: nibble 10 */
    assert_true(tm_quant_q4_0(b, 3) == (1 - 8) * 0.5f);   /* -3.5 */
    assert_true(tm_quant_q4_0(b, 19) == (10 - 8) * 0.5f); /* 1 */
    assert_true(tm_quant_q4_0(b, 0) == -4.0f);
    put_f16(b, 0.25f);      /* Q4_1: d, then m */
    put_f16(b + 2, -1.0f);
    b[4 + 15] = 0xF7;       /* value 15: 7; value 31: 15 */
    assert_true(tm_quant_q4_1(b, 15) == 7 * 0.25f - 1.0f); /* 0.75 */
    assert_true(tm_quant_q4_1(b, 31) == 15 * 0.25f - 1.0f); /* 2.75 */
    assert_true(tm_quant_q4_1(b, 0) == -1.0f);
}

static void test_q5_hand(void **state) {
    (void)state;
    uint8_t b[24] = {0};
    put_f16(b, 2.0f);
    /* qh is a little-endian u32: bit 5 (value 5) in byte 0, bit 20 (value 20) in byte 2. */
    b[2] = 1 << 5;
    b[4] = 1 << 4;
    b[6 + 5] = 0x03;        /* value 5: low nibble 3, fifth bit 1 -> 19 */
    b[6 + 4] = 0x90;        /* value 20: high nibble 9, fifth bit 1 -> 25 */
    assert_true(tm_quant_q5_0(b, 5) == (19 - 16) * 2.0f);
    assert_true(tm_quant_q5_0(b, 20) == (25 - 16) * 2.0f);
    assert_true(tm_quant_q5_0(b, 4) == (0 - 16) * 2.0f);
    memset(b, 0, sizeof b);
    put_f16(b, 0.5f);
    put_f16(b + 2, 3.0f);
    b[4 + 3] = 0x80;        /* bit 31: value 31 */
    b[8 + 15] = 0xE0;       /* value 31: nibble 14 -> 30 */
    assert_true(tm_quant_q5_1(b, 31) == 30 * 0.5f + 3.0f);
    assert_true(tm_quant_q5_1(b, 0) == 3.0f);
}

static void test_q2_k_hand(void **state) {
    (void)state;
    uint8_t b[84] = {0};
    put_f16(b + 80, 0.5f);  /* d */
    put_f16(b + 82, 0.25f); /* dmin */
    b[9] = 0x3A;            /* sub-block 9 (values 144..159): scale 10, min 3 */
    /* Value 150: half 1, plane (150 - 128) / 32 = 0, l = 22: bits 0-1 of qs[32 + 22]. */
    b[16 + 32 + 22] = 0x02;
    assert_true(tm_quant_q2_k(b, 150) == 0.5f * 10 * 2 - 0.25f * 3); /* 9.25 */
    /* Value 246: half 1, plane 3, l = 22: bits 6-7 of the same byte; sub-block 15. */
    b[16 + 32 + 22] |= 0xC0;
    b[15] = 0x21;
    assert_true(tm_quant_q2_k(b, 246) == 0.5f * 1 * 3 - 0.25f * 2); /* 1 */
}

static void test_q3_k_hand(void **state) {
    (void)state;
    uint8_t b[110] = {0};
    put_f16(b + 108, 0.125f);
    /* Sub-block 13 (values 208..223): low bits in the high nibble of scales[5], high
     * bits at bits 6-7 of scales[8 + 1]. Stored 0b10_0111 = 39: scale 39 - 32 = 7. */
    b[96 + 5] = 0x70;
    b[96 + 9] = 0x80;
    /* Value 210: half 1, plane 2 (shift 4), l = 18; hmask bit 4 + 2 = 6 of hmask[18]. */
    b[32 + 32 + 18] = 0x30; /* low bits 3 */
    b[18] = 1 << 6;         /* set: no -4 */
    assert_true(tm_quant_q3_k(b, 210) == 0.125f * 7 * 3);
    b[18] = 0;              /* clear: 3 - 4 = -1 */
    assert_true(tm_quant_q3_k(b, 210) == 0.125f * 7 * -1);
    /* Sub-block 0 with every scale bit zero: scale -32; value 0 decodes -4 * -32 * d. */
    assert_true(tm_quant_q3_k(b, 0) == 0.125f * -32 * -4);
}

static void test_q4_k_q5_k_hand(void **state) {
    (void)state;
    uint8_t b[176] = {0};
    put_f16(b, 0.5f);       /* d */
    put_f16(b + 2, 2.0f);   /* dmin */
    /* Sub-block 1: scale in scales[1] & 63, min in scales[5] & 63. */
    b[4 + 1] = 40;
    b[4 + 5] = 3;
    /* Sub-block 6: scale = (scales[10] & 15) | (scales[2] >> 6) << 4,
     *              min = (scales[10] >> 4) | (scales[6] >> 6) << 4. */
    b[4 + 10] = 0x25;       /* scale low 5, min low 2 */
    b[4 + 2] = 0x80;        /* scale high 2 -> 37 */
    b[4 + 6] = 0x40;        /* min high 1 -> 18 */
    /* Q4_K value 40: chunk 0, high nibble (sub-block 1), byte qs[8]. */
    b[16 + 8] = 0x90;
    assert_true(tm_quant_q4_k(b, 40) == 0.5f * 40 * 9 - 2.0f * 3); /* 174 */
    /* Q4_K value 200: chunk 3, low nibble (sub-block 6), byte qs[96 + 8]. */
    b[16 + 96 + 8] = 0x0B;
    assert_true(tm_quant_q4_k(b, 200) == 0.5f * 37 * 11 - 2.0f * 18);
    /* Q5_K: qs at 48, qh at 16; value 200's fifth bit is bit 6 of qh[8]. */
    b[48 + 96 + 8] = 0x0B;
    b[16 + 8] = 1 << 6;
    assert_true(tm_quant_q5_k(b, 200) == 0.5f * 37 * (11 + 16) - 2.0f * 18);
}

static void test_q6_k_hand(void **state) {
    (void)state;
    uint8_t b[210] = {0};
    put_f16(b + 208, 0.25f);
    /* Value 170: half 1, part 1, l = 10: low nibble of ql[64 + 32 + 10], bits 2-3 of
     * qh[32 + 10], scale sc[8 + 0 + 2]. q = (5 | 2 << 4) - 32 = 5. */
    b[64 + 32 + 10] = 0x05;
    b[128 + 32 + 10] = 2 << 2;
    b[192 + 10] = (uint8_t)(int8_t)-3;
    assert_true(tm_quant_q6_k(b, 170) == 0.25f * -3 * 5);
    /* Value 250: half 1, part 3, l = 26, high nibble of ql[64 + 32 + 26], bits 6-7 of
     * qh[32 + 26], sc[8 + 1 + 6]. q = (15 | 3 << 4) - 32 = 31. */
    b[64 + 32 + 26] = 0xF0;
    b[128 + 32 + 26] = 3 << 6;
    b[192 + 15] = 100;
    assert_true(tm_quant_q6_k(b, 250) == 0.25f * 100 * 31);
}

/* ---------------------------------------------------------------------------------- */
/* The element decoder against ggml's block walks                                      */
/* ---------------------------------------------------------------------------------- */

static float f16_at(const uint8_t *p) { return tm_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

static void walk_q2_k(const uint8_t *b, float *y) {
    float d = f16_at(b + 80), min = f16_at(b + 82);
    const uint8_t *q = b + 16;
    int is = 0;
    for (int n = 0; n < 256; n += 128) {
        for (int shift = 0; shift < 8; shift += 2)
            for (int half = 0; half < 2; half++) {
                uint8_t sc = b[is++];
                float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                for (int l = 0; l < 16; l++) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
            }
        q += 32;
    }
}

static void walk_q3_k(const uint8_t *b, float *y) {
    float d = f16_at(b + 108);
    /* ggml unpacks the 12 scale bytes as four u32 words with masks. */
    uint32_t aux[4];
    memcpy(aux, b + 96, 12);
    uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
    aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
    aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
    aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
    int8_t scales[16];
    memcpy(scales, aux, 16);
    const uint8_t *q = b + 32, *hm = b;
    uint8_t m = 1;
    int is = 0;
    for (int n = 0; n < 256; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; half++) {
                float dl = d * (scales[is++] - 32);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * (((q[l + 16 * half] >> shift) & 3) - ((hm[l + 16 * half] & m) ? 0 : 4));
            }
            m <<= 1;
        }
        q += 32;
    }
}

static void walk_q4_k(const uint8_t *b, float *y, int five) {
    float d = f16_at(b), min = f16_at(b + 2);
    const uint8_t *ql = b + (five ? 48 : 16), *qh = b + 16;
    int is = 0;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 256; j += 64) {
        uint8_t sc, m;
        tm_quant_scale_min_k4(is, b + 4, &sc, &m);
        float d1 = d * sc, m1 = min * m;
        tm_quant_scale_min_k4(is + 1, b + 4, &sc, &m);
        float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; l++) *y++ = d1 * ((ql[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; l++) *y++ = d2 * ((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - m2;
        ql += 32, is += 2, u1 <<= 2, u2 <<= 2;
    }
}

static void walk_q6_k(const uint8_t *b, float *y) {
    float d = f16_at(b + 208);
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    for (int n = 0; n < 256; n += 128) {
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = (int8_t)((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
            int q2 = (int8_t)((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
            int q3 = (int8_t)((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            int q4 = (int8_t)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * sc[is] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
        y += 128, ql += 64, qh += 32, sc += 8;
    }
}

static void walk_legacy(int32_t t, const uint8_t *b, float *y) {
    int has_m = t == TM_WTYPE_Q4_1 || t == TM_WTYPE_Q5_1, five = t == TM_WTYPE_Q5_0 || t == TM_WTYPE_Q5_1;
    float d = f16_at(b), m = has_m ? f16_at(b + 2) : 0.0f;
    const uint8_t *p = b + (has_m ? 4 : 2);
    uint32_t qh = 0;
    if (five) memcpy(&qh, p, 4), p += 4;
    int offset = has_m ? 0 : (five ? 16 : 8);
    for (int j = 0; j < 16; j++) {
        int x0 = (p[j] & 0xF) | (five ? (int)((qh >> j) << 4 & 0x10) : 0);
        int x1 = (p[j] >> 4) | (five ? (int)((qh >> (j + 12)) & 0x10) : 0);
        y[j] = has_m ? (float)x0 * d + m : (float)(x0 - offset) * d;
        y[j + 16] = has_m ? (float)x1 * d + m : (float)(x1 - offset) * d;
    }
}

static float decode_elem(int32_t t, const uint8_t *b, int j) {
    switch (t) {
    case TM_WTYPE_Q4_0: return tm_quant_q4_0(b, j);
    case TM_WTYPE_Q4_1: return tm_quant_q4_1(b, j);
    case TM_WTYPE_Q5_0: return tm_quant_q5_0(b, j);
    case TM_WTYPE_Q5_1: return tm_quant_q5_1(b, j);
    case TM_WTYPE_Q2_K: return tm_quant_q2_k(b, j);
    case TM_WTYPE_Q3_K: return tm_quant_q3_k(b, j);
    case TM_WTYPE_Q4_K: return tm_quant_q4_k(b, j);
    case TM_WTYPE_Q5_K: return tm_quant_q5_k(b, j);
    default: return tm_quant_q6_k(b, j);
    }
}

static const int32_t QUANT_TYPES[] = {TM_WTYPE_Q4_0, TM_WTYPE_Q4_1, TM_WTYPE_Q5_0,
                                      TM_WTYPE_Q5_1, TM_WTYPE_Q2_K, TM_WTYPE_Q3_K,
                                      TM_WTYPE_Q4_K, TM_WTYPE_Q5_K, TM_WTYPE_Q6_K};
#define N_QUANT_TYPES (int)(sizeof QUANT_TYPES / sizeof QUANT_TYPES[0])

static void test_element_decoder_matches_block_walk(void **state) {
    (void)state;
    uint64_t s = 4242;
    uint8_t b[210];
    float want[256], row[256];
    for (int k = 0; k < N_QUANT_TYPES; k++) {
        int32_t t = QUANT_TYPES[k];
        int32_t qk = tm_wtype_block(t), bytes = tm_wtype_block_bytes(t);
        for (int round = 0; round < 2000; round++) {
            for (int i = 0; i < bytes; i++) b[i] = (uint8_t)rng_next(&s);
            /* Keep the f16 scales finite and moderate (random bits give inf and NaN). */
            for (int i = 0; i < bytes; i++)
                if ((qk == 32 && i < 4 && i % 2) || (qk == 256 && ((t == TM_WTYPE_Q4_K || t == TM_WTYPE_Q5_K)
                        ? i < 4 && i % 2 : i >= bytes - (t == TM_WTYPE_Q2_K ? 4 : 2) && i % 2)))
                    b[i] &= 0x3b;
            switch (t) {
            case TM_WTYPE_Q2_K: walk_q2_k(b, want); break;
            case TM_WTYPE_Q3_K: walk_q3_k(b, want); break;
            case TM_WTYPE_Q4_K: walk_q4_k(b, want, 0); break;
            case TM_WTYPE_Q5_K: walk_q4_k(b, want, 1); break;
            case TM_WTYPE_Q6_K: walk_q6_k(b, want); break;
            default: walk_legacy(t, b, want); break;
            }
            assert_int_equal(tm_dequantize_row(t, row, b, qk), 0);
            for (int j = 0; j < qk; j++) {
                float e = decode_elem(t, b, j);
                if (memcmp(&e, &want[j], 4) || memcmp(&row[j], &want[j], 4))
                    fail_msg("type %d round %d value %d: element %.9g, row %.9g, block walk %.9g",
                             t, round, j, e, row[j], want[j]);
            }
        }
    }
}

/* ---------------------------------------------------------------------------------- */
/* Quantisers                                                                          */
/* ---------------------------------------------------------------------------------- */

static void test_q4_0_reference_bytes(void **state) {
    (void)state;
    /* max |x| is x[7] = -8 (negative): d = -8 / -8 = 1, q = trunc(x + 8.5) capped at 15. */
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j % 16) - 7.5f;
    x[7] = -8.0f;
    uint8_t b[18];
    tm_quantize_block_q4_0(b, x);
    assert_int_equal(b[0], 0x00);
    assert_int_equal(b[1], 0x3c); /* f16 1.0 */
    for (int j = 0; j < 16; j++) {
        int q0 = (int)(x[j] + 8.5f), q1 = (int)(x[16 + j] + 8.5f);
        q0 = q0 > 15 ? 15 : q0, q1 = q1 > 15 ? 15 : q1;
        assert_int_equal(b[2 + j], q0 | q1 << 4);
    }
    assert_true(tm_quant_q4_0(b, 7) == -8.0f);
}

static void test_q5_1_reference_bytes(void **state) {
    (void)state;
    /* min 0, max 31: d = 1, m = 0, q = trunc(x + 0.5). */
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(31 - j);
    uint8_t b[24];
    tm_quantize_block_q5_1(b, x);
    for (int j = 0; j < 32; j++) assert_true(tm_quant_q5_1(b, j) == x[j]);
    assert_int_equal(b[4] | b[5] << 8 | b[6] << 16 | (uint32_t)b[7] << 24, 0x0000ffffu);
}

/* Quantise random rows, decode, and bound the error per value by the block's spread:
 * a fraction of (max - min) over the block that each type's step size allows. */
static void test_round_trip_error(void **state) {
    (void)state;
    static const struct { int32_t t; double rel; } bound[] = {
        {TM_WTYPE_Q4_0, 1.05 / 8}, {TM_WTYPE_Q4_1, 0.6 / 15}, {TM_WTYPE_Q5_0, 1.05 / 16},
        {TM_WTYPE_Q5_1, 0.6 / 31}, {TM_WTYPE_Q2_K, 0.25},     {TM_WTYPE_Q3_K, 0.15},
        {TM_WTYPE_Q4_K, 0.05},     {TM_WTYPE_Q5_K, 0.025},    {TM_WTYPE_Q6_K, 0.02},
    };
    enum { N = 256 * 16 };
    static float x[N], y[N];
    static uint8_t q[N / 256 * 210];
    uint64_t s = 99;
    for (size_t k = 0; k < sizeof bound / sizeof bound[0]; k++) {
        int32_t t = bound[k].t, qk = tm_wtype_block(t);
        double worst = 0;
        for (int round = 0; round < 8; round++) {
            fill_normal(x, N, (float)ldexp(1.0, 3 * round - 12), &s);
            if (round == 7) memset(x, 0, sizeof x); /* zeros decode to zeros */
            assert_int_equal(tm_quantize_row(t, q, x, N), 0);
            assert_int_equal(tm_dequantize_row(t, y, q, N), 0);
            for (int b = 0; b < N / qk; b++) {
                float lo, hi;
                tm_quant_min_max(x + b * qk, qk, &lo, &hi);
                double spread = (double)fmaxf(hi, 0.0f) - fminf(lo, 0.0f);
                for (int j = 0; j < qk; j++) {
                    double e = fabs((double)y[b * qk + j] - x[b * qk + j]);
                    if (spread == 0 ? e != 0 : e > bound[k].rel * spread)
                        fail_msg("type %d round %d block %d value %d: %g -> %g (spread %g)", t,
                                 round, b, j, x[b * qk + j], y[b * qk + j], spread);
                    if (spread > 0 && e / spread > worst) worst = e / spread;
                }
            }
        }
        print_message("type %d: largest error %.4f of the block's spread\n", t, worst);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_sizes),
        cmocka_unit_test(test_q4_0_q4_1_hand),
        cmocka_unit_test(test_q5_hand),
        cmocka_unit_test(test_q2_k_hand),
        cmocka_unit_test(test_q3_k_hand),
        cmocka_unit_test(test_q4_k_q5_k_hand),
        cmocka_unit_test(test_q6_k_hand),
        cmocka_unit_test(test_element_decoder_matches_block_walk),
        cmocka_unit_test(test_q4_0_reference_bytes),
        cmocka_unit_test(test_q5_1_reference_bytes),
        cmocka_unit_test(test_round_trip_error),
    };
    return cmocka_run_group_tests_name("kernel quantised weight types", tests, NULL, NULL);
}
