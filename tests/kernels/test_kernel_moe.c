/* test_kernel_moe.c — the mixture-of-experts twins against plain references: routing on
 * hand-made logits (the chosen experts, ties, NaN, the softmax of the chosen), the expert
 * matvec of several weight types against a double-precision dot over the chosen expert's
 * exact values (the matvec bound), per-token and per-slot inputs, and the combine
 * (summed in slot order: exact against the same order in float).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "tests/kernels/reference.h"
#include "tests/kernels/twin_launch.h"

static void test_route(void **state) {
    (void)state;
    /* token 0: clear order; token 1: a tie between experts 1 and 3, a NaN at 0 */
    float logits[2][5] = {{0.5f, 3.0f, -1.0f, 2.0f, 1.0f}, {NAN, 4.0f, 0.0f, 4.0f, -2.0f}};
    int32_t ids[2][3];
    float w[2][3];
    struct tm_args_moe_route a = {&ids[0][0], &w[0][0], &logits[0][0], 2, 5, 3};
    assert_null(tm_check_moe_route(&a));
    TWIN_LAUNCH(tm_moe_route, moe_route, moe_route, a);
    int32_t want0[3] = {1, 3, 4}, want1[3] = {1, 3, 2};
    assert_memory_equal(ids[0], want0, sizeof want0);
    assert_memory_equal(ids[1], want1, sizeof want1);
    double z = exp(0.0) + exp(-1.0) + exp(-2.0);
    for (int k = 0; k < 3; k++) assert_true(fabs(w[0][k] - exp(-(double)k) / z) < 1e-6);
    double z1 = 2 + exp(-4.0);
    assert_true(fabs(w[1][0] - 1 / z1) < 1e-6 && fabs(w[1][1] - 1 / z1) < 1e-6);
    assert_true(fabs(w[1][0] + w[1][1] + w[1][2] - 1.0) < 1e-6);
    /* bad counts are refused by name */
    a.top_k = 6;
    assert_non_null(tm_check_moe_route(&a));
    a.top_k = 2, a.n_expert = 300;
    assert_non_null(tm_check_moe_route(&a));
}

static void check_matvec(int32_t wtype, simcuda_kernel_fn *kernel, int per_slot) {
    const int32_t n = 5, top_k = 2, n_expert = 6, n_in = 512, n_out = 40;
    uint64_t s = 500 + (uint64_t)wtype;
    int64_t row_bytes = tm_wtype_row_bytes(wtype, n_in);
    void *w = malloc((size_t)(row_bytes * n_out * n_expert));
    float *dense = malloc(sizeof(float) * (size_t)n_in * n_out * n_expert);
    make_weights(wtype, w, dense, (int64_t)n_out * n_expert, n_in, &s);
    int64_t x_rows = per_slot ? n * top_k : n;
    float *x = malloc(sizeof(float) * (size_t)(x_rows * n_in)), *out = malloc(sizeof(float) * n * top_k * n_out);
    fill_normal(x, x_rows * n_in, 1.0f, &s);
    int32_t ids[10] = {0, 5, 5, 2, 3, 3, 1, 0, 4, 2}; /* token 2 picks expert 3 twice */
    struct tm_args_moe_matvec a = {out, x, w, ids, n, top_k, n_expert, n_in, n_out, per_slot};
    assert_null(tm_check_moe_matvec(&a, wtype));
    TWIN_LAUNCH(*kernel, moe_matvec, moe_matvec, a);
    for (int64_t sl = 0; sl < n * top_k; sl++)
        for (int32_t o = 0; o < n_out; o++) {
            const float *wr = dense + ((int64_t)ids[sl] * n_out + o) * n_in;
            const float *xr = x + (per_slot ? sl : sl / top_k) * n_in;
            double want = 0, mag = 0;
            for (int32_t i = 0; i < n_in; i++) want += (double)wr[i] * xr[i], mag += fabs((double)wr[i] * xr[i]);
            double got = out[sl * n_out + o];
            if (!(fabs(got - want) <= gamma_n(n_in + 2) * mag))
                fail_msg("type %d slot %lld row %d: %.9g want %.9g", wtype, (long long)sl, o, got, want);
        }
    free(w), free(dense), free(x), free(out);
}

static void test_matvec(void **state) {
    (void)state;
    for (int per_slot = 0; per_slot < 2; per_slot++) {
        check_matvec(TM_WTYPE_F32, tm_moe_matvec_f32, per_slot);
        check_matvec(TM_WTYPE_F16, tm_moe_matvec_f16, per_slot);
        check_matvec(TM_WTYPE_Q8_0, tm_moe_matvec_q8_0, per_slot);
        check_matvec(TM_WTYPE_Q4_K, tm_moe_matvec_q4_k, per_slot);
        check_matvec(TM_WTYPE_Q6_K, tm_moe_matvec_q6_k, per_slot);
        check_matvec(TM_WTYPE_Q5_0, tm_moe_matvec_q5_0, per_slot);
    }
}

static void test_combine(void **state) {
    (void)state;
    const int32_t n = 3, top_k = 2, n_out = 7;
    float y[3 * 2 * 7], w[3 * 2] = {0.75f, 0.25f, 0.5f, 0.5f, 1.0f, 0.0f}, out[3 * 7];
    uint64_t s = 9;
    fill_normal(y, 3 * 2 * 7, 1.0f, &s);
    struct tm_args_moe_combine a = {out, y, w, n, top_k, n_out};
    assert_null(tm_check_moe_combine(&a));
    TWIN_LAUNCH(tm_moe_combine, moe_combine, moe_combine, a);
    for (int t = 0; t < n; t++)
        for (int o = 0; o < n_out; o++) {
            float want = 0.0f;
            want = want + w[t * 2] * y[(t * 2) * 7 + o];
            want = want + w[t * 2 + 1] * y[(t * 2 + 1) * 7 + o];
            assert_true(out[t * 7 + o] == want);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_matvec),
        cmocka_unit_test(test_combine),
    };
    return cmocka_run_group_tests_name("kernel twins: mixture of experts", tests, NULL, NULL);
}
