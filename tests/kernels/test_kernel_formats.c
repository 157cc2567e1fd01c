/* test_kernel_formats.c — the number formats the kernels store: fp8 e4m3 and e5m2
 * (kernels/fp8.h), f16 and bf16 (kernels/f16.h), GGUF Q8_0 blocks (kernels/q8_0.h).
 *
 * fp8 is checked against a reference built from the format's definition alone: each
 * code's value from sign/exponent/mantissa with ldexp, and encoding as "the nearest
 * code, ties to the even code, saturating at the largest finite value", found by
 * searching all codes. Inputs: every code's value, every midpoint between neighbouring
 * codes (exact ties) and its float neighbours, specials, and a quarter million floats spread
 * over all exponents. f16 is checked against GCC's _Float16 conversions. Everything
 * here is exact: no tolerance.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "tests/kernels/reference.h"

/* ---------------------------------------------------------------------------------- */
/* fp8 reference from the definition                                                   */
/* ---------------------------------------------------------------------------------- */

struct fp8_format {
    const char *name;
    int man_bits, bias;
    double max;
    uint8_t (*encode)(float);
    float (*decode)(uint8_t);
};

static float e4m3_dec(uint8_t q) { return tm_fp8_e4m3_to_f32(q); }
static float e5m2_dec(uint8_t q) { return tm_fp8_e5m2_to_f32(q); }
static uint8_t e4m3_enc(float x) { return tm_fp8_e4m3_from_f32(x); }
static uint8_t e5m2_enc(float x) { return tm_fp8_e5m2_from_f32(x); }

static const struct fp8_format E4M3 = {"e4m3", 3, 7, 448.0, e4m3_enc, e4m3_dec};
static const struct fp8_format E5M2 = {"e5m2", 2, 15, 57344.0, e5m2_enc, e5m2_dec};

/* Value of a code by the definition; NAN for NaN codes, INFINITY for e5m2 infinity. */
static double ref_value(const struct fp8_format *f, uint8_t code) {
    int exp_bits = 7 - f->man_bits;
    int e = (code & 0x7f) >> f->man_bits, m = code & ((1 << f->man_bits) - 1);
    double sign = code & 0x80 ? -1.0 : 1.0;
    if (f->man_bits == 3 && (code & 0x7f) == 0x7f) return NAN;
    if (f->man_bits == 2 && e == (1 << exp_bits) - 1) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * ldexp(m, 1 - f->bias - f->man_bits);
    return sign * ldexp(1.0 + ldexp(m, -f->man_bits), e - f->bias);
}

/* Nearest finite code to x, ties to the even code, saturating; NaN gives NaN. */
static uint8_t ref_encode(const struct fp8_format *f, float x) {
    uint8_t sign = signbit(x) ? 0x80 : 0;
    if (isnan(x)) return sign | 0x7f;
    double a = fabs((double)x);
    int best = 0;
    double best_err = INFINITY;
    for (int c = 0; c < 0x80; c++) {
        double v = ref_value(f, (uint8_t)c);
        if (!isfinite(v)) continue;
        double err = fabs(v - a);
        if (err < best_err || (err == best_err && (c & 1) == 0)) {
            best = c;
            best_err = err;
        }
    }
    if (a >= f->max) best = f->man_bits == 3 ? 0x7e : 0x7b;
    return sign | (uint8_t)best;
}

static int same_value(float a, double b) {
    if (isnan(b)) return isnan(a);
    return (double)a == b && !!signbit(a) == !!signbit(b);
}

static void check_decode_all_codes(const struct fp8_format *f) {
    for (int c = 0; c < 256; c++) {
        float got = f->decode((uint8_t)c);
        double want = ref_value(f, (uint8_t)c);
        if (!same_value(got, want)) fail_msg("%s decode 0x%02x: got %a want %a", f->name, c, got, want);
    }
}

static void check_encode(const struct fp8_format *f, float x) {
    uint8_t got = f->encode(x), want = ref_encode(f, x);
    if (isnan(x)) {
        if (!isnan(f->decode(got)) || (got & 0x80) != (want & 0x80))
            fail_msg("%s encode %a: got 0x%02x, want a NaN of that sign", f->name, x, got);
    } else if (got != want) {
        fail_msg("%s encode %a (%.9g): got 0x%02x want 0x%02x", f->name, x, x, got, want);
    }
}

static void check_encode_everywhere(const struct fp8_format *f) {
    /* Every code's value, the midpoints to the next code (ties), and float neighbours. */
    for (int c = 0; c < 0x7f; c++) {
        double v = ref_value(f, (uint8_t)c), next = ref_value(f, (uint8_t)(c + 1));
        if (!isfinite(v)) continue;
        for (int sign = 0; sign < 2; sign++) {
            double s = sign ? -1.0 : 1.0;
            check_encode(f, (float)(s * v));
            if (isfinite(next)) {
                float mid = (float)(s * (v + next) / 2);
                check_encode(f, mid);
                check_encode(f, nextafterf(mid, 0.0f));
                check_encode(f, nextafterf(mid, s * INFINITY));
            }
        }
    }
    /* A quarter million floats over every exponent, both signs. */
    uint64_t s = 42;
    for (int i = 0; i < 1 << 18; i++) check_encode(f, tm_bits_f32((uint32_t)rng_next(&s)));
}

static void test_fp8_e4m3_decode(void **state) {
    (void)state;
    check_decode_all_codes(&E4M3);
    assert_true(tm_fp8_e4m3_to_f32(0x7e) == 448.0f);
    assert_true(tm_fp8_e4m3_to_f32(0x01) == 0x1p-9f); /* smallest subnormal */
    assert_true(tm_fp8_e4m3_to_f32(0x08) == 0x1p-6f); /* smallest normal */
    assert_true(isnan(tm_fp8_e4m3_to_f32(0x7f)) && isnan(tm_fp8_e4m3_to_f32(0xff)));
    assert_true(tm_fp8_e4m3_to_f32(0x80) == 0.0f && signbit(tm_fp8_e4m3_to_f32(0x80)));
}

static void test_fp8_e5m2_decode(void **state) {
    (void)state;
    check_decode_all_codes(&E5M2);
    assert_true(tm_fp8_e5m2_to_f32(0x7b) == 57344.0f);
    assert_true(tm_fp8_e5m2_to_f32(0x01) == 0x1p-16f);
    assert_true(isinf(tm_fp8_e5m2_to_f32(0x7c)) && tm_fp8_e5m2_to_f32(0xfc) < 0);
    assert_true(isnan(tm_fp8_e5m2_to_f32(0x7d)) && isnan(tm_fp8_e5m2_to_f32(0xff)));
}

static void test_fp8_e4m3_encode(void **state) {
    (void)state;
    check_encode_everywhere(&E4M3);
    /* Saturation at 448, infinity included. */
    assert_int_equal(tm_fp8_e4m3_from_f32(448.0f), 0x7e);
    assert_int_equal(tm_fp8_e4m3_from_f32(464.0f), 0x7e); /* the tie above 448 */
    assert_int_equal(tm_fp8_e4m3_from_f32(1e30f), 0x7e);
    assert_int_equal(tm_fp8_e4m3_from_f32(INFINITY), 0x7e);
    assert_int_equal(tm_fp8_e4m3_from_f32(-INFINITY), 0xfe);
    /* NaN, both signs. */
    assert_int_equal(tm_fp8_e4m3_from_f32(NAN) & 0x7f, 0x7f);
    assert_int_equal(tm_fp8_e4m3_from_f32(-NAN), 0xff);
    /* Signed zero, and underflow to zero of either sign. */
    assert_int_equal(tm_fp8_e4m3_from_f32(0.0f), 0x00);
    assert_int_equal(tm_fp8_e4m3_from_f32(-0.0f), 0x80);
    assert_int_equal(tm_fp8_e4m3_from_f32(0x1p-11f), 0x00);  /* below half the smallest */
    assert_int_equal(tm_fp8_e4m3_from_f32(-0x1p-10f), 0x80); /* exact tie to -0 (even) */
    /* Subnormals: 3 * 2^-9 exactly, and 1.5 * 2^-9 ties to the even 2 * 2^-9. */
    assert_int_equal(tm_fp8_e4m3_from_f32(3 * 0x1p-9f), 0x03);
    assert_int_equal(tm_fp8_e4m3_from_f32(1.5f * 0x1p-9f), 0x02);
    /* Rounding out of the subnormal range into the smallest normal. */
    assert_int_equal(tm_fp8_e4m3_from_f32(7.5f * 0x1p-9f), 0x08);
}

static void test_fp8_e5m2_encode(void **state) {
    (void)state;
    check_encode_everywhere(&E5M2);
    assert_int_equal(tm_fp8_e5m2_from_f32(57344.0f), 0x7b);
    assert_int_equal(tm_fp8_e5m2_from_f32(61440.0f), 0x7b); /* the tie above the max */
    assert_int_equal(tm_fp8_e5m2_from_f32(1e9f), 0x7b);
    assert_int_equal(tm_fp8_e5m2_from_f32(INFINITY), 0x7b);
    assert_int_equal(tm_fp8_e5m2_from_f32(-INFINITY), 0xfb);
    assert_true(isnan(tm_fp8_e5m2_to_f32(tm_fp8_e5m2_from_f32(NAN))));
    assert_int_equal(tm_fp8_e5m2_from_f32(-0.0f), 0x80);
    assert_int_equal(tm_fp8_e5m2_from_f32(0x1p-16f), 0x01);
    assert_int_equal(tm_fp8_e5m2_from_f32(-0x1p-18f), 0x80);
    /* e5m2 is the top byte of an f16, rounded: values exact in e5m2 agree with f16. */
    for (int c = 0; c < 0x7c; c++)
        assert_int_equal(tm_f32_to_f16(tm_fp8_e5m2_to_f32((uint8_t)c)), c << 8);
}

static void test_fp8_round_trip(void **state) {
    (void)state;
    for (int c = 0; c < 256; c++) {
        float v4 = tm_fp8_e4m3_to_f32((uint8_t)c), v5 = tm_fp8_e5m2_to_f32((uint8_t)c);
        if (!isnan(v4)) assert_int_equal(tm_fp8_e4m3_from_f32(v4), c);
        if (isfinite(v5)) assert_int_equal(tm_fp8_e5m2_from_f32(v5), c);
    }
    /* Relative error of a normal value is at most half a mantissa step: 2^-4 (e4m3),
     * 2^-3 (e5m2). */
    uint64_t s = 7;
    for (int i = 0; i < 100000; i++) {
        float x = (float)ldexp(1.0 + rng_uniform(&s), (int)(rng_next(&s) % 12) - 5);
        assert_true(fabsf(tm_fp8_e4m3_to_f32(tm_fp8_e4m3_from_f32(x)) - x) <= x * 0x1p-4f);
        assert_true(fabsf(tm_fp8_e5m2_to_f32(tm_fp8_e5m2_from_f32(x)) - x) <= x * 0x1p-3f);
    }
}

/* ---------------------------------------------------------------------------------- */
/* f16 and bf16                                                                        */
/* ---------------------------------------------------------------------------------- */

static uint16_t f16_bits_of(_Float16 h) {
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}

static void test_f16_decode_all(void **state) {
    (void)state;
    for (uint32_t b = 0; b < 65536; b++) {
        _Float16 h;
        uint16_t u = (uint16_t)b;
        memcpy(&h, &u, 2);
        float want = (float)h, got = tm_f16_to_f32(u);
        if (isnan(want)) assert_true(isnan(got));
        else if (!(got == want && !!signbit(got) == !!signbit(want)))
            fail_msg("f16 decode 0x%04x: got %a want %a", b, got, want);
    }
}

static void check_f16_encode(float x) {
    uint16_t got = tm_f32_to_f16(x), want = f16_bits_of((_Float16)x);
    if (isnan(x)) assert_true((got & 0x7c00) == 0x7c00 && (got & 0x3ff));
    else if (got != want) fail_msg("f16 encode %a: got 0x%04x want 0x%04x", x, got, want);
}

static void test_f16_encode(void **state) {
    (void)state;
    /* Every f16 value, every midpoint between neighbours and the floats beside it. */
    for (uint32_t b = 0; b < 0x7c00; b++) {
        for (int sign = 0; sign < 2; sign++) {
            uint16_t u = (uint16_t)(b | (sign ? 0x8000u : 0));
            float v = tm_f16_to_f32(u), next = tm_f16_to_f32((uint16_t)(u + 1));
            check_f16_encode(v);
            if (b + 1 < 0x7c00) {
                float mid = (v + next) / 2;
                check_f16_encode(mid);
                check_f16_encode(nextafterf(mid, 0.0f));
                check_f16_encode(nextafterf(mid, sign ? -INFINITY : INFINITY));
            }
        }
    }
    uint64_t s = 11;
    for (int i = 0; i < 1 << 20; i++) check_f16_encode(tm_bits_f32((uint32_t)rng_next(&s)));
    assert_int_equal(tm_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(tm_f32_to_f16(65520.0f), 0x7c00); /* tie above the max: to infinity */
    assert_int_equal(tm_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(tm_f32_to_f16(0x1p-24f), 0x0001);
}

/* Reference: the nearer of the two bf16 values around x, ties to the even one. */
static uint16_t ref_bf16(float x) {
    uint32_t b = tm_f32_bits(x);
    uint32_t lo = b & 0xffff0000u, hi = lo + 0x10000u;
    double dlo = fabs((double)tm_bits_f32(lo) - x), dhi = fabs((double)tm_bits_f32(hi) - x);
    if ((hi & 0x7f800000u) == 0x7f800000u && (lo & 0x7f800000u) != 0x7f800000u)
        dhi = fabs(ldexp(1.0, 128) * (x < 0 ? -1 : 1) - x); /* rounding up overflows */
    if (dlo < dhi || (dlo == dhi && !((lo >> 16) & 1))) return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16);
}

static void test_bf16(void **state) {
    (void)state;
    for (uint32_t b = 0; b < 65536; b++)
        assert_true(tm_f32_bits(tm_bf16_to_f32((uint16_t)b)) == b << 16);
    uint64_t s = 13;
    for (int i = 0; i < 1 << 20; i++) {
        float x = tm_bits_f32((uint32_t)rng_next(&s));
        if (isnan(x)) {
            assert_true(isnan(tm_bf16_to_f32(tm_f32_to_bf16(x))));
            continue;
        }
        uint16_t got = tm_f32_to_bf16(x), want = ref_bf16(x);
        if (got != want) fail_msg("bf16 encode %a: got 0x%04x want 0x%04x", x, got, want);
    }
    assert_int_equal(tm_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie to even (down) */
    assert_int_equal(tm_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie to even (up) */
}

/* ---------------------------------------------------------------------------------- */
/* Q8_0                                                                                */
/* ---------------------------------------------------------------------------------- */

static void test_q8_0_layout(void **state) {
    (void)state;
    assert_int_equal(sizeof(struct tm_q8_0_block), TM_Q8_0_BLOCK_BYTES);
    assert_int_equal(offsetof(struct tm_q8_0_block, q), 2);
    assert_int_equal(tm_wtype_row_bytes(TM_WTYPE_Q8_0, 64), 68);
    assert_int_equal(tm_wtype_row_bytes(TM_WTYPE_Q8_0, 48), 0); /* not a multiple of 32 */
    /* A block with max |x| = 127 has d = 1 (f16 0x3c00, little-endian first), q = x. */
    float x[32];
    uint8_t blk[34];
    for (int j = 0; j < 32; j++) x[j] = (float)(j * 8 - 127 + (j == 0 ? 0 : 1));
    x[31] = 127.0f;
    tm_q8_0_quantize_row(blk, x, 32);
    assert_int_equal(blk[0], 0x00);
    assert_int_equal(blk[1], 0x3c);
    for (int j = 0; j < 32; j++) assert_int_equal((int8_t)blk[2 + j], (int)x[j]);
    /* All zeros: d = 0, q = 0, decodes to zeros. */
    memset(x, 0, sizeof x);
    tm_q8_0_quantize_row(blk, x, 32);
    for (int j = 0; j < 34; j++) assert_int_equal(blk[j], 0);
}

static void test_q8_0_round_trip(void **state) {
    (void)state;
    enum { N = 32 * 64 };
    float x[N], y[N];
    uint8_t q[N / 32 * 34];
    uint64_t s = 17;
    for (int round = 0; round < 20; round++) {
        float sigma = (float)ldexp(1.0, round - 10); /* scales from 2^-10 to 2^9 */
        fill_normal(x, N, sigma, &s);
        tm_q8_0_quantize_row(q, x, N);
        tm_q8_0_dequantize_row(y, q, N);
        for (int b = 0; b < N / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            float d = amax / 127, dh = tm_q8_0_scale(q + b * 34);
            /* Half a step, plus 127 steps' worth of the scale's f16 rounding. */
            float bound = dh / 2 + 127 * fabsf(dh - d) + amax * 1e-6f;
            for (int j = 0; j < 32; j++)
                if (fabsf(y[b * 32 + j] - x[b * 32 + j]) > bound)
                    fail_msg("q8_0 block %d value %d: %g -> %g (bound %g)", b, j,
                             x[b * 32 + j], y[b * 32 + j], bound);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_e4m3_decode),
        cmocka_unit_test(test_fp8_e5m2_decode),
        cmocka_unit_test(test_fp8_e4m3_encode),
        cmocka_unit_test(test_fp8_e5m2_encode),
        cmocka_unit_test(test_fp8_round_trip),
        cmocka_unit_test(test_f16_decode_all),
        cmocka_unit_test(test_f16_encode),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_q8_0_layout),
        cmocka_unit_test(test_q8_0_round_trip),
    };
    return cmocka_run_group_tests_name("kernel number formats", tests, NULL, NULL);
}
