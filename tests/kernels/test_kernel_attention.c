/* test_kernel_attention.c — the paged attention twins (decode and prefill, every KV
 * dtype) against a plain double-precision reference, with grouped-query attention,
 * sequences over many blocks and tiles, shuffled block tables and odd block sizes.
 *
 * The cache is filled by the kv_append twin (tested exactly in test_kernel_twins); the
 * reference reads the same pages back (value * scale) and computes
 * softmax(q . k * attn_scale) . v in double, so the only difference is float rounding.
 * Tolerance per output, with u = 2^-24, S = max_j sum_d |q_d k_jd| * attn_scale and
 * V = max |v| over the positions attended:
 *     2 * (2 gamma_{head_dim + 2} S + gamma_{n_pos + 8 tiles + 8}) * V
 * — each score is off by at most gamma_{head_dim+2} S, which moves every probability by
 * that much relatively (twice: numerator and denominator); the running sum, the
 * per-tile rescaling and the weighted sum of V add gamma_{n_pos + ...} relatively; the
 * output is a convex combination of V rows, so relative errors become absolute ones
 * times V. The factor 2 covers expf's last-bit error.
 * Also: prefill at each position equals decode at that position bit for bit; a
 * sequence of length 0 gives zeros; the thread count does not change the bits.
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

struct kv_case {
    int32_t dtype;
    const char *name;
    simcuda_kernel_fn *append, *decode, *prefill;
    float k_scale, v_scale;
};

static const struct kv_case KV[] = {
    {TM_KV_F32, "f32", tm_kv_append_f32, tm_attn_decode_f32, tm_attn_prefill_f32, 1, 1},
    {TM_KV_F16, "f16", tm_kv_append_f16, tm_attn_decode_f16, tm_attn_prefill_f16, 1, 1},
    {TM_KV_FP8_E4M3, "fp8_e4m3", tm_kv_append_fp8_e4m3, tm_attn_decode_fp8_e4m3,
     tm_attn_prefill_fp8_e4m3, 4.0f / 448, 3.0f / 448},
    {TM_KV_FP8_E5M2, "fp8_e5m2", tm_kv_append_fp8_e5m2, tm_attn_decode_fp8_e5m2,
     tm_attn_prefill_fp8_e5m2, 1, 1},
};

/* A cache of n_seqs sequences, each with its own shuffled blocks, filled with random K/V. */
struct cache {
    const struct kv_case *kv;
    int32_t n_heads, n_kv_heads, head_dim, block_size, n_seqs, max_blocks;
    int32_t *lens;         /* [n_seqs] */
    int32_t *tables;       /* [n_seqs][max_blocks] */
    void *k_pool, *v_pool; /* [n_blocks][n_kv_heads][block_size][head_dim] */
};

static struct cache make_cache(const struct kv_case *kv, int32_t n_heads, int32_t n_kv_heads,
                               int32_t head_dim, int32_t block_size, const int32_t *lens,
                               int32_t n_seqs, uint64_t seed) {
    struct cache c = {kv, n_heads, n_kv_heads, head_dim, block_size, n_seqs, 1, NULL, NULL,
                      NULL, NULL};
    for (int32_t s = 0; s < n_seqs; s++)
        if (tm_kv_blocks_for(lens[s], block_size) > c.max_blocks)
            c.max_blocks = (int32_t)tm_kv_blocks_for(lens[s], block_size);
    int64_t n_blocks = (int64_t)n_seqs * c.max_blocks;
    struct tm_kv_layout l = {1, n_kv_heads, head_dim, block_size, n_blocks, kv->dtype};
    c.lens = malloc(sizeof(int32_t) * n_seqs);
    c.tables = malloc(sizeof(int32_t) * n_blocks);
    c.k_pool = malloc((size_t)tm_kv_pool_bytes(&l));
    c.v_pool = malloc((size_t)tm_kv_pool_bytes(&l));
    assert_true(c.lens && c.tables && c.k_pool && c.v_pool);
    /* NaN in every unwritten byte: reading past a sequence's length would show. */
    memset(c.k_pool, 0xff, (size_t)tm_kv_pool_bytes(&l));
    memset(c.v_pool, 0xff, (size_t)tm_kv_pool_bytes(&l));
    memcpy(c.lens, lens, sizeof(int32_t) * n_seqs);
    for (int64_t i = 0; i < n_blocks; i++) c.tables[i] = (int32_t)i;
    for (int64_t i = n_blocks - 1; i > 0; i--) {
        int64_t j = (int64_t)(rng_next(&seed) % (uint64_t)(i + 1));
        int32_t t = c.tables[i];
        c.tables[i] = c.tables[j], c.tables[j] = t;
    }
    int32_t width = n_kv_heads * head_dim;
    for (int32_t s = 0; s < n_seqs; s++) {
        if (lens[s] <= 0) continue;
        float *k = malloc(sizeof(float) * lens[s] * width), *v = malloc(sizeof(float) * lens[s] * width);
        int32_t *slots = malloc(sizeof(int32_t) * lens[s]);
        assert_true(k && v && slots);
        fill_normal(k, (int64_t)lens[s] * width, 1.0f, &seed);
        fill_normal(v, (int64_t)lens[s] * width, 1.0f, &seed);
        for (int32_t p = 0; p < lens[s]; p++)
            slots[p] = tm_kv_slot(c.tables + (int64_t)s * c.max_blocks, p, block_size);
        struct tm_args_kv_append a = {c.k_pool, c.v_pool, k, v, slots, lens[s], n_kv_heads,
                                      head_dim, block_size, width, width, kv->k_scale,
                                      kv->v_scale};
        TWIN_LAUNCH(kv->append, kv_append, kv_append, a);
        free(k), free(v), free(slots);
    }
    return c;
}

static void free_cache(struct cache *c) { free(c->lens), free(c->tables), free(c->k_pool), free(c->v_pool); }

/* K or V of sequence s, position p, KV head g, dimension d, as the kernels read it. */
static double cache_value(const struct cache *c, const void *pool, float scale, int32_t s,
                          int32_t p, int32_t g, int32_t d) {
    const int32_t *table = c->tables + (int64_t)s * c->max_blocks;
    int64_t idx = tm_kv_index(table[p / c->block_size], g, p % c->block_size, c->n_kv_heads,
                              c->block_size, c->head_dim);
    return (double)tm_kv_load(c->kv->dtype, pool, idx + d) * scale;
}

/* Checks out [n_heads][head_dim], the attention of q [n_heads][head_dim] over positions
 * [0, n_pos) of sequence s. */
static void check_one(const struct cache *c, int32_t s, int32_t n_pos, const float *q,
                      const float *out, float attn_scale, const char *what) {
    int32_t group = c->n_heads / c->n_kv_heads, hd = c->head_dim;
    double *p = malloc(sizeof(double) * (n_pos > 0 ? n_pos : 1));
    assert_non_null(p);
    for (int32_t h = 0; h < c->n_heads; h++) {
        int32_t g = h / group;
        const float *qh = q + (int64_t)h * hd;
        if (n_pos <= 0) {
            for (int32_t d = 0; d < hd; d++) assert_true(out[(int64_t)h * hd + d] == 0.0f);
            continue;
        }
        double m = -INFINITY, sum = 0, S = 0, V = 0;
        for (int32_t j = 0; j < n_pos; j++) {
            double dot = 0, mag = 0;
            for (int32_t d = 0; d < hd; d++) {
                double k = cache_value(c, c->k_pool, c->kv->k_scale, s, j, g, d);
                dot += qh[d] * k;
                mag += fabs(qh[d] * k);
                V = fmax(V, fabs(cache_value(c, c->v_pool, c->kv->v_scale, s, j, g, d)));
            }
            p[j] = dot * attn_scale;
            S = fmax(S, mag * attn_scale);
            m = fmax(m, p[j]);
        }
        for (int32_t j = 0; j < n_pos; j++) sum += (p[j] = exp(p[j] - m));
        int32_t tiles = (n_pos + TM_ATTN_TILE - 1) / TM_ATTN_TILE;
        double tol = 2 * (2 * gamma_n(hd + 2) * S + gamma_n(n_pos + 8 * tiles + 8)) * V;
        for (int32_t d = 0; d < hd; d++) {
            double want = 0;
            for (int32_t j = 0; j < n_pos; j++)
                want += p[j] / sum * cache_value(c, c->v_pool, c->kv->v_scale, s, j, g, d);
            double got = out[(int64_t)h * hd + d];
            if (!(fabs(got - want) <= tol))
                fail_msg("%s %s: seq %d len %d head %d dim %d: %.9g want %.9g (tolerance %.3g)",
                         c->kv->name, what, s, n_pos, h, d, got, want, tol);
        }
    }
    free(p);
}

static float *decode(const struct cache *c, const float *q, float attn_scale) {
    int32_t width = c->n_heads * c->head_dim;
    float *out = malloc(sizeof(float) * (size_t)c->n_seqs * width);
    assert_non_null(out);
    struct tm_args_attn_decode a = {out, q, c->k_pool, c->v_pool, c->tables, c->lens,
                                    c->n_seqs, c->max_blocks, c->n_heads, c->n_kv_heads,
                                    c->head_dim, c->block_size, width, attn_scale,
                                    c->kv->k_scale, c->kv->v_scale};
    assert_null(tm_check_attn_decode(&a));
    TWIN_LAUNCH(c->kv->decode, attn_decode, attn_decode, a);
    return out;
}

static void check_decode(int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                         int32_t block_size, const int32_t *lens, int32_t n_seqs) {
    for (size_t k = 0; k < sizeof KV / sizeof KV[0]; k++) {
        uint64_t seed = 31 * k + (uint64_t)head_dim + (uint64_t)n_seqs;
        struct cache c = make_cache(&KV[k], n_heads, n_kv_heads, head_dim, block_size, lens,
                                    n_seqs, seed);
        int32_t width = n_heads * head_dim;
        float *q = malloc(sizeof(float) * (size_t)n_seqs * width);
        assert_non_null(q);
        fill_normal(q, (int64_t)n_seqs * width, 1.0f, &seed);
        float attn_scale = 1.0f / sqrtf((float)head_dim);
        float *out = decode(&c, q, attn_scale);
        for (int32_t s = 0; s < n_seqs; s++)
            check_one(&c, s, lens[s], q + (int64_t)s * width, out + (int64_t)s * width,
                      attn_scale, "decode");
        free(q), free(out);
        free_cache(&c);
    }
}

static void test_decode_gqa_many_blocks(void **state) {
    (void)state;
    /* 8 query heads over 2 KV heads; lengths around block (16) and tile (128) edges. */
    const int32_t lens[] = {1, 15, 16, 17, 127, 128, 129, 300, 0};
    check_decode(8, 2, 64, 16, lens, 9);
}

static void test_decode_head_shapes(void **state) {
    (void)state;
    const int32_t lens[] = {40, 7, 261};
    check_decode(8, 4, 8, 16, lens, 3);   /* stories260K: head_dim 8 */
    check_decode(4, 4, 128, 5, lens, 3);  /* no GQA; an odd block size */
    check_decode(6, 1, 256, 32, lens, 3); /* one KV head (MQA); the largest head_dim */
}

/* Prefill of tokens [start, len) of one sequence: checked against the reference, and
 * against decode run at each of those positions (the same bits). */
static void check_prefill(const struct kv_case *kv, int32_t n_heads, int32_t n_kv_heads,
                          int32_t head_dim, int32_t block_size, int32_t len, int32_t start) {
    uint64_t seed = 500 + (uint64_t)len + (uint64_t)start;
    struct cache c = make_cache(kv, n_heads, n_kv_heads, head_dim, block_size, &len, 1, seed);
    int32_t n_tokens = len - start, width = n_heads * head_dim, q_stride = width + 16;
    float *q = malloc(sizeof(float) * (size_t)n_tokens * q_stride);
    float *out = malloc(sizeof(float) * (size_t)n_tokens * width);
    assert_true(q && out);
    fill_normal(q, (int64_t)n_tokens * q_stride, 1.0f, &seed);
    float attn_scale = 1.0f / sqrtf((float)head_dim);
    struct tm_args_attn_prefill a = {out, q, c.k_pool, c.v_pool, c.tables, n_tokens, start,
                                     n_heads, n_kv_heads, head_dim, block_size, q_stride,
                                     attn_scale, kv->k_scale, kv->v_scale};
    assert_null(tm_check_attn_prefill(&a));
    TWIN_LAUNCH(kv->prefill, attn_prefill, attn_prefill, a);
    for (int32_t t = 0; t < n_tokens; t++)
        check_one(&c, 0, start + t + 1, q + (int64_t)t * q_stride, out + (int64_t)t * width,
                  attn_scale, "prefill");

    /* Decode with one "sequence" per prompt token, all on the same block table. */
    int32_t *lens = malloc(sizeof(int32_t) * n_tokens);
    int32_t *tables = malloc(sizeof(int32_t) * (size_t)n_tokens * c.max_blocks);
    float *dout = malloc(sizeof(float) * (size_t)n_tokens * width);
    assert_true(lens && tables && dout);
    for (int32_t t = 0; t < n_tokens; t++) {
        lens[t] = start + t + 1;
        memcpy(tables + (int64_t)t * c.max_blocks, c.tables, sizeof(int32_t) * c.max_blocks);
    }
    struct tm_args_attn_decode d = {dout, q, c.k_pool, c.v_pool, tables, lens, n_tokens,
                                    c.max_blocks, n_heads, n_kv_heads, head_dim, block_size,
                                    q_stride, attn_scale, kv->k_scale, kv->v_scale};
    TWIN_LAUNCH(kv->decode, attn_decode, attn_decode, d);
    assert_memory_equal(out, dout, sizeof(float) * (size_t)n_tokens * width);
    free(q), free(out), free(lens), free(tables), free(dout);
    free_cache(&c);
}

static void test_prefill_matches_reference_and_decode(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof KV / sizeof KV[0]; k++) {
        check_prefill(&KV[k], 8, 2, 32, 16, 200, 0);  /* a whole prompt over two tiles */
        check_prefill(&KV[k], 8, 4, 8, 16, 45, 37);   /* a continuation after 37 tokens */
        check_prefill(&KV[k], 4, 4, 64, 7, 20, 19);   /* a single token: decode's shape */
    }
}

static void test_scales_apply_to_fp8_only(void **state) {
    (void)state;
    const int32_t lens[] = {50, 200};
    for (size_t k = 0; k < 2; k++) { /* f32 and f16: pages hold plain values */
        uint64_t seed = 77;
        struct cache c = make_cache(&KV[k], 8, 2, 32, 16, lens, 2, seed);
        float q[2 * 8 * 32], with[2 * 8 * 32], without[2 * 8 * 32];
        fill_normal(q, 2 * 8 * 32, 1.0f, &seed);
        for (int pass = 0; pass < 2; pass++) {
            struct tm_args_attn_decode a = {pass ? with : without, q, c.k_pool, c.v_pool,
                                            c.tables, c.lens, 2, c.max_blocks, 8, 2, 32, 16,
                                            8 * 32, 0.2f, pass ? 3.0f : 1.0f, pass ? 0.5f : 1.0f};
            TWIN_LAUNCH(KV[k].decode, attn_decode, attn_decode, a);
        }
        assert_memory_equal(with, without, sizeof with);
        free_cache(&c);
    }
}

static void test_thread_count_does_not_change_bits(void **state) {
    (void)state;
    const int32_t lens[] = {900, 1, 333, 64};
    for (size_t k = 0; k < sizeof KV / sizeof KV[0]; k++) {
        uint64_t seed = 4242;
        struct cache c = make_cache(&KV[k], 8, 2, 64, 16, lens, 4, seed);
        float q[4 * 8 * 64];
        fill_normal(q, 4 * 8 * 64, 1.0f, &seed);
        twin_set_threads(1);
        float *one = decode(&c, q, 0.125f);
        twin_set_threads(2);
        float *two = decode(&c, q, 0.125f);
        twin_set_threads(0);
        assert_memory_equal(one, two, sizeof q);
        free(one), free(two);
        free_cache(&c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_gqa_many_blocks),
        cmocka_unit_test(test_decode_head_shapes),
        cmocka_unit_test(test_prefill_matches_reference_and_decode),
        cmocka_unit_test(test_scales_apply_to_fp8_only),
        cmocka_unit_test(test_thread_count_does_not_change_bits),
    };
    return cmocka_run_group_tests_name("kernel twins: paged attention", tests, NULL, NULL);
}
