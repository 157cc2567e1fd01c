/* test_kernel_matmul.c — the matvec and matmul twins of every weight type against a
 * plain double-precision reference over the exact f32 values of the weights.
 *
 * Tolerance per output: gamma_{n_in + 2} * sum_i |w_i x_i| (Higham's bound for a float
 * dot product summed in any order; +2 for the per-block scale product of Q8_0). The
 * reference uses the f32 value each weight decodes to (quants.h, rounded as ggml rounds
 * it), so nothing else enters. A wrong element,
 * a skipped block or a misplaced row is larger than this bound by orders of magnitude.
 * Also checked: columns of a wider output row (out_stride) are left alone; matvec and
 * matmul give the same bits; results do not depend on the thread count, nor on the
 * other tokens of a batch (a sequence decodes the same alone or batched).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "tests/kernels/reference.h"
#include "tests/kernels/twin_launch.h"

struct wtype_case {
    int32_t wtype;
    const char *name;
    simcuda_kernel_fn *matvec, *matmul;
};

static const struct wtype_case CASES[] = {
    {TM_WTYPE_F32, "f32", tm_matvec_f32, tm_matmul_f32},
    {TM_WTYPE_F16, "f16", tm_matvec_f16, tm_matmul_f16},
    {TM_WTYPE_BF16, "bf16", tm_matvec_bf16, tm_matmul_bf16},
    {TM_WTYPE_Q8_0, "q8_0", tm_matvec_q8_0, tm_matmul_q8_0},
    {TM_WTYPE_Q4_0, "q4_0", tm_matvec_q4_0, tm_matmul_q4_0},
    {TM_WTYPE_Q4_1, "q4_1", tm_matvec_q4_1, tm_matmul_q4_1},
    {TM_WTYPE_Q5_0, "q5_0", tm_matvec_q5_0, tm_matmul_q5_0},
    {TM_WTYPE_Q5_1, "q5_1", tm_matvec_q5_1, tm_matmul_q5_1},
    {TM_WTYPE_Q2_K, "q2_k", tm_matvec_q2_k, tm_matmul_q2_k},
    {TM_WTYPE_Q3_K, "q3_k", tm_matvec_q3_k, tm_matmul_q3_k},
    {TM_WTYPE_Q4_K, "q4_k", tm_matvec_q4_k, tm_matmul_q4_k},
    {TM_WTYPE_Q5_K, "q5_k", tm_matvec_q5_k, tm_matmul_q5_k},
    {TM_WTYPE_Q6_K, "q6_k", tm_matvec_q6_k, tm_matmul_q6_k},
};

#define SENTINEL -12345.0f

struct problem {
    int32_t n_tokens, n_in, n_out, out_stride;
    void *w;      /* [n_out][row bytes] */
    float *dense; /* [n_out][n_in] exact values of w */
    float *x;     /* [n_tokens][n_in] */
};

static struct problem make_problem(int32_t wtype, int32_t n_tokens, int32_t n_in,
                                   int32_t n_out, int32_t out_stride, uint64_t seed) {
    struct problem p = {n_tokens, n_in, n_out, out_stride, NULL, NULL, NULL};
    p.w = malloc((size_t)tm_wtype_row_bytes(wtype, n_in) * n_out);
    p.dense = malloc(sizeof(float) * (size_t)n_in * n_out);
    p.x = malloc(sizeof(float) * (size_t)n_in * n_tokens);
    assert_true(p.w && p.dense && p.x);
    make_weights(wtype, p.w, p.dense, n_out, n_in, &seed);
    fill_normal(p.x, (int64_t)n_tokens * n_in, 1.0f, &seed);
    return p;
}

static void free_problem(struct problem *p) { free(p->w), free(p->dense), free(p->x); }

static float *run(simcuda_kernel_fn *kernel, int is_matvec, const struct problem *p) {
    size_t n = (size_t)p->n_tokens * p->out_stride;
    float *out = malloc(sizeof(float) * (n ? n : 1));
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) out[i] = SENTINEL;
    struct tm_args_matmul a = {out, p->x, p->w, p->n_tokens, p->n_in, p->n_out, p->out_stride};
    if (is_matvec) TWIN_LAUNCH(kernel, matmul, matvec, a);
    else TWIN_LAUNCH(kernel, matmul, matmul, a);
    return out;
}

static void check_against_reference(const char *what, const struct problem *p, const float *out) {
    for (int32_t t = 0; t < p->n_tokens; t++) {
        const float *xt = p->x + (int64_t)t * p->n_in;
        for (int32_t o = 0; o < p->out_stride; o++) {
            float got = out[(int64_t)t * p->out_stride + o];
            if (o >= p->n_out) {
                if (got != SENTINEL) fail_msg("%s: column %d beyond n_out was written", what, o);
                continue;
            }
            const float *wr = p->dense + (int64_t)o * p->n_in;
            double want = 0, mag = 0;
            for (int32_t i = 0; i < p->n_in; i++) {
                want += (double)wr[i] * xt[i];
                mag += fabs((double)wr[i] * xt[i]);
            }
            double tol = gamma_n(p->n_in + 2) * mag;
            if (!(fabs(got - want) <= tol))
                fail_msg("%s: token %d row %d: %.9g want %.9g (tolerance %.3g)", what, t, o,
                         got, want, tol);
        }
    }
}

/* Every type whose block divides n_in (the k-quants need multiples of 256). */
static void check_shape(int32_t n_tokens, int32_t n_in, int32_t n_out, int32_t out_stride) {
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const struct wtype_case *k = &CASES[c];
        if (tm_wtype_row_bytes(k->wtype, n_in) == 0) continue;
        struct problem p = make_problem(k->wtype, n_tokens, n_in, n_out, out_stride,
                                        (uint64_t)(1000 * c + n_in + n_out + n_tokens));
        char what[128];
        snprintf(what, sizeof what, "%s %d x [%d x %d]", k->name, n_tokens, n_out, n_in);
        float *mv = run(k->matvec, 1, &p), *mm = run(k->matmul, 0, &p);
        check_against_reference(what, &p, mv);
        assert_memory_equal(mv, mm, sizeof(float) * (size_t)n_tokens * out_stride);
        free(mv), free(mm);
        free_problem(&p);
    }
}

static void test_decode_shapes(void **state) {
    (void)state;
    check_shape(1, 64, 48, 48);    /* stories260K's attention */
    check_shape(1, 256, 130, 130); /* a row count that is no multiple of anything */
    check_shape(4, 96, 300, 320);  /* batched decode into a wider (fused QKV) row */
    check_shape(4, 768, 300, 320); /* the same with k-quant rows (3 blocks of 256) */
}

static void test_prefill_shapes(void **state) {
    (void)state;
    check_shape(17, 160, 200, 200);
    check_shape(70, 512, 96, 100);
}

static void test_large_rows(void **state) {
    (void)state;
    /* Tiles of rows across threads; rows longer than a tile's byte budget. */
    check_shape(2, 4096, 1000, 1000);
    check_shape(1, 64 * 1024, 3, 3);
}

static void test_thread_count_does_not_change_bits(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        struct problem p = make_problem(CASES[c].wtype, 9, 1024, 700, 700, 77 + c);
        twin_set_threads(1);
        float *one = run(CASES[c].matmul, 0, &p);
        twin_set_threads(2);
        float *two = run(CASES[c].matmul, 0, &p);
        twin_set_threads(0);
        assert_memory_equal(one, two, sizeof(float) * 9 * 700);
        free(one), free(two);
        free_problem(&p);
    }
}

static void test_batch_does_not_change_bits(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        struct problem batch = make_problem(CASES[c].wtype, 6, 1024, 300, 300, 99 + c);
        float *all = run(CASES[c].matvec, 1, &batch);
        for (int32_t t = 0; t < 6; t++) {
            struct problem one = batch;
            one.n_tokens = 1;
            one.x = batch.x + (int64_t)t * batch.n_in;
            float *alone = run(CASES[c].matvec, 1, &one);
            assert_memory_equal(alone, all + (int64_t)t * 300, sizeof(float) * 300);
            free(alone);
        }
        free(all);
        free_problem(&batch);
    }
}

static void test_zero_tokens(void **state) {
    (void)state;
    struct problem p = make_problem(TM_WTYPE_F32, 0, 64, 8, 8, 5);
    float *out = run(tm_matvec_f32, 1, &p); /* nothing to do, nothing touched */
    free(out);
    free_problem(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_shapes),
        cmocka_unit_test(test_prefill_shapes),
        cmocka_unit_test(test_large_rows),
        cmocka_unit_test(test_thread_count_does_not_change_bits),
        cmocka_unit_test(test_batch_does_not_change_bits),
        cmocka_unit_test(test_zero_tokens),
    };
    return cmocka_run_group_tests_name("kernel twins: matvec and matmul", tests, NULL, NULL);
}
