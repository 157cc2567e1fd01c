/* test_kernel_twins.c — the C twins of the small kernels against plain scalar
 * references, each called through its exported symbol with a simcuda_launch built the
 * way simcuda builds one: embed, rmsnorm, rope, silu_mul, add, absmax, softmax,
 * argmax, kv_append; and the twins' refusal of a wrong launch geometry or bad arguments.
 *
 * Tolerances (u = 2^-24, the f32 unit roundoff):
 * - embed, add, absmax, argmax, kv_append: exact. They only copy, convert with the
 *   tested converters, add once, or compare.
 * - rmsnorm: (dim + 8) u relative: a float sum of dim squares (Higham's gamma_dim) and
 *   a handful of rounded operations after it.
 * - rope: 8 u (|x0| + |x1|): two products and a sum per output, plus the rounding of
 *   cos and sin to float; the angle itself is computed in double on both sides.
 * - silu_mul: 8 u relative: expf (within 1-2 ulp), a division, two products.
 * - softmax: (n + 8) u relative: the sum of n exponentials, the exponentials, a division.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "kernels/kv_elem.h"
#include "kernels/kv_layout.h"
#include "tests/kernels/reference.h"
#include "tests/kernels/twin_launch.h"

#define U 0x1p-24

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    return p;
}

/* ---------------------------------------------------------------------------------- */
/* embed                                                                               */
/* ---------------------------------------------------------------------------------- */

static void check_embed(int32_t wtype, simcuda_kernel_fn *kernel, int32_t n_tokens) {
    const int32_t vocab = 50, dim = tm_wtype_block(wtype) == 256 ? 512 : 96; /* whole blocks */
    uint64_t s = 100 + (uint64_t)wtype;
    void *table = xmalloc((size_t)tm_wtype_row_bytes(wtype, dim) * vocab);
    float *dense = xmalloc(sizeof(float) * vocab * dim);
    make_weights(wtype, table, dense, vocab, dim, &s);
    int32_t *ids = xmalloc(sizeof(int32_t) * n_tokens);
    for (int32_t t = 0; t < n_tokens; t++) ids[t] = (int32_t)(rng_next(&s) % (vocab + 2)) - 1;
    float *out = xmalloc(sizeof(float) * n_tokens * dim);
    struct tm_args_embed a = {out, table, ids, n_tokens, dim, vocab};
    assert_null(tm_check_embed(&a, wtype));
    TWIN_LAUNCH(*kernel, embed, embed, a);
    for (int32_t t = 0; t < n_tokens; t++)
        for (int32_t i = 0; i < dim; i++) {
            float want = ids[t] < 0 || ids[t] >= vocab ? 0.0f : dense[ids[t] * dim + i];
            if (out[t * dim + i] != want)
                fail_msg("embed type %d token %d (id %d) [%d]: %g want %g", wtype, t, ids[t],
                         i, out[t * dim + i], want);
        }
    free(table), free(dense), free(ids), free(out);
}

static void test_embed(void **state) {
    (void)state;
    for (int32_t n = 1; n <= 100; n += 99) { /* 100 takes the threaded path */
        check_embed(TM_WTYPE_F32, tm_embed_f32, n);
        check_embed(TM_WTYPE_F16, tm_embed_f16, n);
        check_embed(TM_WTYPE_BF16, tm_embed_bf16, n);
        check_embed(TM_WTYPE_Q8_0, tm_embed_q8_0, n);
        check_embed(TM_WTYPE_Q4_0, tm_embed_q4_0, n);
        check_embed(TM_WTYPE_Q4_1, tm_embed_q4_1, n);
        check_embed(TM_WTYPE_Q5_0, tm_embed_q5_0, n);
        check_embed(TM_WTYPE_Q5_1, tm_embed_q5_1, n);
        check_embed(TM_WTYPE_Q2_K, tm_embed_q2_k, n);
        check_embed(TM_WTYPE_Q3_K, tm_embed_q3_k, n);
        check_embed(TM_WTYPE_Q4_K, tm_embed_q4_k, n);
        check_embed(TM_WTYPE_Q5_K, tm_embed_q5_k, n);
        check_embed(TM_WTYPE_Q6_K, tm_embed_q6_k, n);
    }
}

/* ---------------------------------------------------------------------------------- */
/* rmsnorm                                                                             */
/* ---------------------------------------------------------------------------------- */

static void check_rmsnorm(int32_t n_rows, int32_t dim, int in_place, float sigma) {
    uint64_t s = 200 + (uint64_t)dim;
    float *x = xmalloc(sizeof(float) * n_rows * dim), *w = xmalloc(sizeof(float) * dim);
    float *out = in_place ? x : xmalloc(sizeof(float) * n_rows * dim);
    fill_normal(x, (int64_t)n_rows * dim, sigma, &s);
    fill_normal(w, dim, 1.0f, &s);
    double *want = xmalloc(sizeof(double) * n_rows * dim);
    const float eps = 1e-5f;
    for (int32_t r = 0; r < n_rows; r++) {
        double ss = 0;
        for (int32_t i = 0; i < dim; i++) ss += (double)x[r * dim + i] * x[r * dim + i];
        double inv = 1.0 / sqrt(ss / dim + eps);
        for (int32_t i = 0; i < dim; i++) want[r * dim + i] = x[r * dim + i] * inv * w[i];
    }
    struct tm_args_rmsnorm a = {out, x, w, n_rows, dim, eps};
    TWIN_LAUNCH(tm_rmsnorm, rmsnorm, rmsnorm, a);
    for (int64_t i = 0; i < (int64_t)n_rows * dim; i++)
        if (fabs(out[i] - want[i]) > (dim + 8) * U * fabs(want[i]) + 1e-30)
            fail_msg("rmsnorm [%lld]: %.9g want %.9g", (long long)i, out[i], want[i]);
    free(x), free(w), free(want);
    if (!in_place) free(out);
}

static void test_rmsnorm(void **state) {
    (void)state;
    check_rmsnorm(1, 64, 0, 3.0f);
    check_rmsnorm(3, 1000, 0, 3.0f);
    check_rmsnorm(300, 512, 0, 3.0f); /* threaded */
    check_rmsnorm(5, 96, 1, 3.0f);    /* out aliases x */
    check_rmsnorm(4, 64, 0, 0.003f);  /* mean square near eps: eps matters */
}

/* ---------------------------------------------------------------------------------- */
/* rope                                                                                */
/* ---------------------------------------------------------------------------------- */

/* neox: pairs (i, i + rot_dim / 2); with_factors: a frequency factor per pair. */
static void check_rope(int32_t n_tokens, int32_t n_heads, int32_t head_dim, int32_t rot_dim,
                       int32_t row_stride, float base, int32_t neox, int with_factors) {
    uint64_t s = 300 + (uint64_t)rot_dim;
    int64_t n = (int64_t)n_tokens * row_stride;
    float *x = xmalloc(sizeof(float) * n), *x0 = xmalloc(sizeof(float) * n);
    int32_t *pos = xmalloc(sizeof(int32_t) * n_tokens);
    fill_normal(x0, n, 2.0f, &s);
    memcpy(x, x0, sizeof(float) * n);
    for (int32_t t = 0; t < n_tokens; t++) pos[t] = t == 0 ? 0 : (int32_t)(rng_next(&s) % 4096);
    float factors[TM_ATTN_MAX_HEAD_DIM / 2];
    for (int32_t i = 0; i < rot_dim / 2; i++) factors[i] = 1.0f + (float)(i % 5) * 2.0f;
    struct tm_args_rope a = {x, pos, n_tokens, n_heads, head_dim, rot_dim, row_stride, base,
                             with_factors ? factors : NULL, neox};
    assert_null(tm_check_rope(&a));
    TWIN_LAUNCH(tm_rope, rope, rope, a);
    for (int32_t t = 0; t < n_tokens; t++)
        for (int32_t c = 0; c < row_stride; c++) {
            int64_t k = (int64_t)t * row_stride + c;
            int32_t h = c / head_dim, d = c % head_dim;
            if (h >= n_heads || d >= rot_dim) { /* outside the rotation: untouched */
                assert_true(tm_f32_bits(x[k]) == tm_f32_bits(x0[k]));
                continue;
            }
            int32_t half = rot_dim / 2, i = neox ? d % half : d / 2, second = neox ? d >= half : d & 1;
            double angle = (double)pos[t] * pow(base, -2.0 * i / rot_dim);
            if (with_factors) angle /= factors[i];
            int64_t k0 = neox ? k - d + i : k - (d & 1), k1 = neox ? k0 + half : k0 + 1;
            double a0 = x0[k0], a1 = x0[k1];
            double want = second ? a0 * sin(angle) + a1 * cos(angle)
                                 : a0 * cos(angle) - a1 * sin(angle);
            if (fabs(x[k] - want) > 8 * U * (fabs(a0) + fabs(a1)))
                fail_msg("rope token %d pos %d head %d dim %d: %.9g want %.9g", t, pos[t], h,
                         d, x[k], want);
        }
    free(x), free(x0), free(pos);
}

static void test_rope(void **state) {
    (void)state;
    check_rope(5, 4, 16, 16, 64, 10000.0f, 0, 0);
    check_rope(40, 8, 8, 8, 64, 10000.0f, 0, 0);      /* threaded; stories260K's heads */
    check_rope(7, 4, 32, 16, 4 * 32 + 40, 500000.0f, 0, 0); /* partial rotation, wide rows */
    check_rope(6, 4, 32, 32, 4 * 32, 1000000.0f, 1, 0);     /* NEOX pairs (Qwen) */
    check_rope(6, 2, 64, 48, 2 * 64 + 8, 500000.0f, 1, 1);  /* NEOX, partial, factors */
    check_rope(40, 4, 16, 16, 64, 500000.0f, 0, 1);         /* Llama 3.1 frequency factors */
}

/* ---------------------------------------------------------------------------------- */
/* elementwise                                                                         */
/* ---------------------------------------------------------------------------------- */

static void check_silu_mul(int64_t n) {
    uint64_t s = 400;
    float *g = xmalloc(sizeof(float) * n), *up = xmalloc(sizeof(float) * n);
    float *out = xmalloc(sizeof(float) * n);
    fill_normal(g, n, 4.0f, &s);
    fill_normal(up, n, 1.0f, &s);
    g[0] = 0.0f, g[1 % n] = -100.0f, g[2 % n] = 100.0f, g[3 % n] = -30.0f;
    struct tm_args_silu_mul a = {out, g, up, n};
    TWIN_LAUNCH(tm_silu_mul, silu_mul, elementwise, a);
    for (int64_t i = 0; i < n; i++) {
        double want = g[i] / (1.0 + exp(-(double)g[i])) * up[i];
        if (fabs(out[i] - want) > 8 * U * fabs(want) + 1e-37)
            fail_msg("silu_mul [%lld] g=%g: %.9g want %.9g", (long long)i, g[i], out[i], want);
    }
    free(g), free(up), free(out);
}

static void test_silu_mul(void **state) {
    (void)state;
    check_silu_mul(1000);
    check_silu_mul(200003); /* threaded, odd length */
}

static void test_add(void **state) {
    (void)state;
    uint64_t s = 500;
    for (int64_t n = 17; n <= 300000; n *= 137) {
        float *a = xmalloc(sizeof(float) * n), *b = xmalloc(sizeof(float) * n);
        float *sum = xmalloc(sizeof(float) * n);
        fill_normal(a, n, 1.0f, &s);
        fill_normal(b, n, 1.0f, &s);
        for (int64_t i = 0; i < n; i++) sum[i] = a[i] + b[i];
        struct tm_args_add args = {a, a, b, n}; /* residual: out aliases a */
        TWIN_LAUNCH(tm_add, add, elementwise, args);
        assert_memory_equal(a, sum, sizeof(float) * n);
        free(a), free(b), free(sum);
    }
}

static void test_absmax(void **state) {
    (void)state;
    uint64_t s = 600;
    enum { N = 100000 };
    float *x = xmalloc(sizeof(float) * N);
    fill_normal(x, N, 1.0f, &s);
    x[777] = -12.5f;
    x[5] = NAN; /* ignored */
    float out = 0.0f;
    struct tm_args_absmax a = {&out, x, N};
    TWIN_LAUNCH(tm_absmax, absmax, absmax, a);
    assert_true(out == 12.5f);
    out = 20.0f; /* a running max from earlier calls is kept */
    TWIN_LAUNCH(tm_absmax, absmax, absmax, a);
    assert_true(out == 20.0f);
    free(x);
}

/* ---------------------------------------------------------------------------------- */
/* softmax, argmax                                                                     */
/* ---------------------------------------------------------------------------------- */

static void check_softmax(int32_t n_rows, int32_t n_cols, float sigma, float offset) {
    uint64_t s = 700 + (uint64_t)n_cols;
    int64_t n = (int64_t)n_rows * n_cols;
    float *x = xmalloc(sizeof(float) * n), *x0 = xmalloc(sizeof(float) * n);
    fill_normal(x0, n, sigma, &s);
    for (int64_t i = 0; i < n; i++) x0[i] += offset;
    memcpy(x, x0, sizeof(float) * n);
    struct tm_args_softmax a = {x, n_rows, n_cols};
    TWIN_LAUNCH(tm_softmax, softmax, row, a);
    for (int32_t r = 0; r < n_rows; r++) {
        const float *xr = x0 + (int64_t)r * n_cols;
        double m = -INFINITY, sum = 0, got_sum = 0;
        for (int32_t i = 0; i < n_cols; i++) m = fmax(m, xr[i]);
        for (int32_t i = 0; i < n_cols; i++) sum += exp(xr[i] - m);
        for (int32_t i = 0; i < n_cols; i++) {
            double want = exp(xr[i] - m) / sum, got = x[(int64_t)r * n_cols + i];
            got_sum += got;
            if (fabs(got - want) > (n_cols + 8) * U * want + 1e-45)
                fail_msg("softmax row %d [%d]: %.9g want %.9g", r, i, got, want);
        }
        assert_true(fabs(got_sum - 1.0) < 1e-4);
    }
    free(x), free(x0);
}

static void test_softmax(void **state) {
    (void)state;
    check_softmax(1, 32000, 3.0f, 0.0f);
    check_softmax(7, 512, 5.0f, 1000.0f); /* large logits: the max is subtracted first */
}

static void test_argmax(void **state) {
    (void)state;
    enum { ROWS = 6, COLS = 1000 };
    float *x = xmalloc(sizeof(float) * ROWS * COLS);
    uint64_t s = 800;
    fill_normal(x, ROWS * COLS, 1.0f, &s);
    x[0 * COLS + 321] = 9.0f;                           /* a clear winner */
    x[1 * COLS + 10] = 9.0f, x[1 * COLS + 900] = 9.0f;  /* a tie: lowest index */
    x[2 * COLS + 0] = NAN, x[2 * COLS + 5] = 9.0f;      /* NaN is never chosen */
    x[2 * COLS + 6] = NAN;
    for (int i = 0; i < COLS; i++) x[3 * COLS + i] = NAN; /* all NaN: 0 */
    for (int i = 0; i < COLS; i++) x[4 * COLS + i] = -INFINITY;
    x[4 * COLS + 999] = -1e30f;
    for (int i = 0; i < COLS; i++) x[5 * COLS + i] = 1.0f; /* all equal: 0 */
    int32_t out[ROWS];
    struct tm_args_argmax a = {out, x, ROWS, COLS};
    TWIN_LAUNCH(tm_argmax, argmax, row, a);
    int32_t want[ROWS] = {321, 10, 5, 0, 999, 0};
    for (int r = 0; r < ROWS; r++) assert_int_equal(out[r], want[r]);
    free(x);
}

/* ---------------------------------------------------------------------------------- */
/* kv_append                                                                           */
/* ---------------------------------------------------------------------------------- */

static void check_kv_append(int32_t dtype, simcuda_kernel_fn *kernel, int32_t n_tokens) {
    const int32_t n_kv_heads = 3, head_dim = 40, block_size = 7, n_blocks = 40;
    const int32_t stride = n_kv_heads * head_dim + 24; /* k and v inside a wider row */
    const float k_scale = 0.02f, v_scale = 0.5f;       /* k saturates e4m3 at |k| > 8.96 */
    struct tm_kv_layout l = {1, n_kv_heads, head_dim, block_size, n_blocks, dtype};
    int64_t pool_bytes = tm_kv_pool_bytes(&l);
    uint8_t *kp = xmalloc((size_t)pool_bytes), *vp = xmalloc((size_t)pool_bytes);
    memset(kp, 0xa5, (size_t)pool_bytes);
    memset(vp, 0xa5, (size_t)pool_bytes);
    uint64_t s = 900 + (uint64_t)dtype;
    float *k = xmalloc(sizeof(float) * n_tokens * stride), *v = xmalloc(sizeof(float) * n_tokens * stride);
    fill_normal(k, (int64_t)n_tokens * stride, 4.0f, &s);
    fill_normal(v, (int64_t)n_tokens * stride, 1.0f, &s);
    k[0] = INFINITY, k[1] = NAN, k[2] = -0.0f, v[3] = 1e-30f;
    /* Distinct slots in a shuffled order; every fifth token is padding (-1). */
    int32_t *slots = xmalloc(sizeof(int32_t) * n_tokens);
    int32_t n_slots = n_blocks * block_size;
    int32_t *perm = xmalloc(sizeof(int32_t) * n_slots);
    for (int32_t i = 0; i < n_slots; i++) perm[i] = i;
    for (int32_t i = n_slots - 1; i > 0; i--) {
        int32_t j = (int32_t)(rng_next(&s) % (uint64_t)(i + 1)), tmp = perm[i];
        perm[i] = perm[j], perm[j] = tmp;
    }
    for (int32_t t = 0; t < n_tokens; t++) slots[t] = t % 5 == 4 ? -1 : perm[t];
    struct tm_args_kv_append a = {kp, vp, k, v, slots, n_tokens, n_kv_heads, head_dim,
                                  block_size, stride, stride, k_scale, v_scale};
    assert_null(tm_check_kv_append(&a));
    TWIN_LAUNCH(*kernel, kv_append, kv_append, a);

    /* Expected pools: written by the reference encoders, the rest untouched. */
    int64_t esz = tm_kv_elem_bytes(dtype);
    uint8_t *want_k = xmalloc((size_t)pool_bytes), *want_v = xmalloc((size_t)pool_bytes);
    memset(want_k, 0xa5, (size_t)pool_bytes);
    memset(want_v, 0xa5, (size_t)pool_bytes);
    for (int32_t t = 0; t < n_tokens; t++) {
        if (slots[t] < 0) continue;
        for (int32_t h = 0; h < n_kv_heads; h++)
            for (int32_t d = 0; d < head_dim; d++) {
                int64_t idx = tm_kv_index(slots[t] / block_size, h, slots[t] % block_size,
                                          n_kv_heads, block_size, head_dim);
                float kx = k[(int64_t)t * stride + h * head_dim + d];
                float vx = v[(int64_t)t * stride + h * head_dim + d];
                uint8_t *wk = want_k + (idx + d) * esz, *wv = want_v + (idx + d) * esz;
                switch (dtype) {
                case TM_KV_F32: memcpy(wk, &kx, 4), memcpy(wv, &vx, 4); break;
                case TM_KV_F16: {
                    uint16_t hk = tm_f32_to_f16(kx), hv = tm_f32_to_f16(vx);
                    memcpy(wk, &hk, 2), memcpy(wv, &hv, 2);
                    break;
                }
                case TM_KV_FP8_E4M3:
                    *wk = tm_fp8_e4m3_from_f32(kx / k_scale), *wv = tm_fp8_e4m3_from_f32(vx / v_scale);
                    break;
                case TM_KV_FP8_E5M2:
                    *wk = tm_fp8_e5m2_from_f32(kx / k_scale), *wv = tm_fp8_e5m2_from_f32(vx / v_scale);
                    break;
                }
            }
    }
    assert_memory_equal(kp, want_k, (size_t)pool_bytes);
    assert_memory_equal(vp, want_v, (size_t)pool_bytes);
    if (dtype == TM_KV_FP8_E4M3) { /* the infinity saturated, the NaN stayed NaN */
        int64_t idx0 = tm_kv_index(slots[0] / block_size, 0, slots[0] % block_size, n_kv_heads,
                                   block_size, head_dim);
        assert_int_equal(kp[idx0], 0x7e);
        assert_true(isnan(tm_fp8_e4m3_to_f32(kp[idx0 + 1])));
        assert_int_equal(kp[idx0 + 2], 0x80);
    }
    free(kp), free(vp), free(k), free(v), free(slots), free(perm), free(want_k), free(want_v);
}

static void test_kv_append(void **state) {
    (void)state;
    for (int32_t n = 9; n <= 200; n += 191) { /* 200 tokens take the threaded path */
        check_kv_append(TM_KV_F32, tm_kv_append_f32, n);
        check_kv_append(TM_KV_F16, tm_kv_append_f16, n);
        check_kv_append(TM_KV_FP8_E4M3, tm_kv_append_fp8_e4m3, n);
        check_kv_append(TM_KV_FP8_E5M2, tm_kv_append_fp8_e5m2, n);
    }
}

/* ---------------------------------------------------------------------------------- */
/* refused launches and argument checks                                                */
/* ---------------------------------------------------------------------------------- */

static void test_wrong_geometry_is_refused(void **state) {
    (void)state;
    float x[64], w[64], out[2] = {-7.0f, -7.0f};
    for (int i = 0; i < 64; i++) x[i] = w[i] = 1.0f;
    struct tm_args_matmul a = {out, x, w, 1, 64, 1, 1};
    void *params[TM_NPARAMS_matmul];
    tm_params_matmul(&a, params);
    struct tm_geom g = tm_geom_matvec(&a);
    g.block[0] = 128; /* a CUDA matvec launched so would skip rows */
    simcuda_launch l = twin_launch_of(g, params);
    tm_matvec_f32(&l);
    assert_true(out[0] == -7.0f); /* refused: nothing written */
    TWIN_LAUNCH(tm_matvec_f32, matmul, matvec, a);
    assert_true(out[0] == 64.0f);
    assert_true(out[1] == -7.0f);
}

static void test_bad_arguments_are_refused(void **state) {
    (void)state;
    uint8_t w[48 * 2] = {0};
    float x[48] = {0}, out[1] = {-7.0f};
    struct tm_args_matmul a = {out, x, w, 1, 48, 1, 1}; /* Q8_0 needs n_in % 32 == 0 */
    assert_non_null(tm_check_matmul(&a, TM_WTYPE_Q8_0));
    assert_null(tm_check_matmul(&a, TM_WTYPE_F16));
    TWIN_LAUNCH(tm_matvec_q8_0, matmul, matvec, a);
    assert_true(out[0] == -7.0f);

    struct tm_args_rope r = {x, (const int32_t *)w, 1, 2, 8, 9, 16, 10000.0f, NULL, 0}; /* odd rot_dim */
    assert_non_null(tm_check_rope(&r));
    r.rot_dim = 8;
    assert_null(tm_check_rope(&r));
    r.row_stride = 15;
    assert_non_null(tm_check_rope(&r));
    r.row_stride = 16, r.neox = 2; /* a flag: 0 or 1 */
    assert_non_null(tm_check_rope(&r));

    int32_t bt[1] = {0}, len[1] = {1};
    struct tm_args_attn_decode d = {x, x, w, w, bt, len, 1, 1, 6, 4, 8, 16, 48, 0.35f, 1, 1};
    assert_non_null(tm_check_attn_decode(&d)); /* 6 heads over 4 KV heads */
    d.n_kv_heads = 3;
    assert_null(tm_check_attn_decode(&d));
    d.head_dim = 512; /* above TM_ATTN_MAX_HEAD_DIM */
    d.q_stride = 6 * 512;
    assert_non_null(tm_check_attn_decode(&d));
    d.head_dim = 8, d.k_scale = 0.0f;
    assert_non_null(tm_check_attn_decode(&d));

    struct tm_args_kv_append k = {w, w, x, x, bt, 1, 2, 8, 16, 15, 16, 1, 1}; /* short stride */
    assert_non_null(tm_check_kv_append(&k));
    struct tm_args_embed e = {x, w, bt, 1, 8, 0}; /* empty vocabulary */
    assert_non_null(tm_check_embed(&e, TM_WTYPE_F32));
}

static void test_table(void **state) {
    (void)state;
    /* Names are unique and the per-type lookups land on the right entries. */
    for (int i = 0; i < TM_KERNEL_COUNT; i++)
        for (int j = i + 1; j < TM_KERNEL_COUNT; j++)
            assert_string_not_equal(tm_kernel_names[i], tm_kernel_names[j]);
    assert_string_equal(tm_kernel_names[tm_kernel_for_wtype(TM_K_tm_matvec_f32, TM_WTYPE_Q8_0)],
                        "tm_matvec_q8_0");
    assert_string_equal(tm_kernel_names[tm_kernel_for_wtype(TM_K_tm_embed_f32, TM_WTYPE_BF16)],
                        "tm_embed_bf16");
    assert_string_equal(tm_kernel_names[tm_kernel_for_kv(TM_K_tm_attn_prefill_f32, TM_KV_FP8_E5M2)],
                        "tm_attn_prefill_fp8_e5m2");
    static const struct { int32_t t; const char *name; } types[] = {
        {TM_WTYPE_F32, "f32"},   {TM_WTYPE_F16, "f16"},   {TM_WTYPE_BF16, "bf16"},
        {TM_WTYPE_Q8_0, "q8_0"}, {TM_WTYPE_Q4_0, "q4_0"}, {TM_WTYPE_Q4_1, "q4_1"},
        {TM_WTYPE_Q5_0, "q5_0"}, {TM_WTYPE_Q5_1, "q5_1"}, {TM_WTYPE_Q2_K, "q2_k"},
        {TM_WTYPE_Q3_K, "q3_k"}, {TM_WTYPE_Q4_K, "q4_k"}, {TM_WTYPE_Q5_K, "q5_k"},
        {TM_WTYPE_Q6_K, "q6_k"},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char want[32];
        snprintf(want, sizeof want, "tm_matmul_%s", types[i].name);
        assert_string_equal(tm_kernel_names[tm_kernel_for_wtype(TM_K_tm_matmul_f32, types[i].t)], want);
        snprintf(want, sizeof want, "tm_embed_%s", types[i].name);
        assert_string_equal(tm_kernel_names[tm_kernel_for_wtype(TM_K_tm_embed_f32, types[i].t)], want);
    }
    assert_int_equal(tm_kernel_for_wtype(TM_K_tm_matmul_f32, 9), -1); /* Q8_1: none */
    assert_int_equal(TM_NPARAMS_attn_decode, 16);
    /* A packed launch points at the struct's own fields, in order. */
    struct tm_args_rope r = {0};
    void *p[TM_NPARAMS_rope];
    tm_params_rope(&r, p);
    assert_ptr_equal(p[0], &r.x);
    assert_ptr_equal(p[TM_NPARAMS_rope - 1], &r.neox);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embed),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_silu_mul),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_absmax),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_argmax),
        cmocka_unit_test(test_kv_append),
        cmocka_unit_test(test_wrong_geometry_is_refused),
        cmocka_unit_test(test_bad_arguments_are_refused),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests_name("kernel twins", tests, NULL, NULL);
}
