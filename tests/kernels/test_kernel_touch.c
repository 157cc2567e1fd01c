/* test_kernel_touch.c — what the C twins declare to simcuda (host-kernel ABI 2): the byte
 * ranges they read and write, which simcuda charges per memory location. Each twin is
 * called with a launch whose callbacks record the declarations, and the ranges are
 * compared with what the kernel must touch: an embedding gather only the rows of its
 * tokens, decode attention only the KV pages its block tables reach, a matvec its
 * weights once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "kernels/kv_layout.h"
#include "tests/kernels/twin_launch.h"

#define MAX_RANGES 4096

struct range {
    uintptr_t start;
    uint64_t bytes;
    int is_write;
};

static struct range ranges[MAX_RANGES];
static int n_ranges;
static double declared_flops;

static void record_touch(const simcuda_launch *l, const void *start, uint64_t bytes, int is_write) {
    (void)l;
    assert_true(n_ranges < MAX_RANGES);
    ranges[n_ranges++] = (struct range){(uintptr_t)start, bytes, is_write};
}

static void record_flops(const simcuda_launch *l, double flops) {
    (void)l;
    declared_flops += flops;
}

/* Like TWIN_LAUNCH, with the recording callbacks in the launch. */
#define RECORDED_LAUNCH(kernel, family, geom, args)                                     \
    do {                                                                                \
        void *params_[TM_NPARAMS_##family];                                             \
        tm_params_##family(&(args), params_);                                           \
        simcuda_launch launch_ = twin_launch_of(tm_geom_##geom(&(args)), params_);      \
        launch_.touch = record_touch;                                                   \
        launch_.flops = record_flops;                                                   \
        n_ranges = 0;                                                                   \
        declared_flops = 0;                                                             \
        (kernel)(&launch_);                                                             \
    } while (0)

/* Bytes read (is_write 0) or written inside [base, base + size). */
static uint64_t bytes_in(const void *base, size_t size, int is_write) {
    uintptr_t lo = (uintptr_t)base, hi = lo + size;
    uint64_t sum = 0;
    for (int i = 0; i < n_ranges; i++)
        if (ranges[i].is_write == is_write && ranges[i].start >= lo && ranges[i].start + ranges[i].bytes <= hi)
            sum += ranges[i].bytes;
    return sum;
}

/* Whether a read range starts at p with exactly `bytes`. */
static int read_at(const void *p, uint64_t bytes) {
    for (int i = 0; i < n_ranges; i++)
        if (!ranges[i].is_write && ranges[i].start == (uintptr_t)p && ranges[i].bytes == bytes) return 1;
    return 0;
}

/* An embedding gather declares the rows of its tokens and nothing else of the table (an
 * id out of range reads no row); it writes its output. Block-quantised rows too. */
static void check_embed_rows(int32_t wtype, simcuda_kernel_fn *kernel, int32_t dim) {
    const int32_t vocab = 1000;
    int64_t row = tm_wtype_row_bytes(wtype, dim);
    uint8_t *table = calloc((size_t)vocab, (size_t)row);
    int32_t ids[4] = {5, 999, 5, -1};
    float *out = calloc(4, (size_t)dim * sizeof(float));
    size_t out_bytes = 4 * (size_t)dim * sizeof(float);
    assert_non_null(table);
    assert_non_null(out);
    struct tm_args_embed a = {out, table, ids, 4, dim, vocab};
    RECORDED_LAUNCH(kernel, embed, embed, a);
    assert_int_equal(bytes_in(table, (size_t)vocab * row, 0), 3 * row);
    assert_true(read_at(table + 5 * row, row));
    assert_true(read_at(table + 999 * row, row));
    assert_int_equal(bytes_in(ids, sizeof ids, 0), sizeof ids);
    assert_int_equal(bytes_in(out, out_bytes, 1), out_bytes);
    assert_int_equal(bytes_in(table, (size_t)vocab * row, 1), 0);
    free(table);
    free(out);
}

static void test_embed_reads_only_token_rows(void **state) {
    (void)state;
    check_embed_rows(TM_WTYPE_F16, tm_embed_f16, 64);
    check_embed_rows(TM_WTYPE_Q4_0, tm_embed_q4_0, 64);
    check_embed_rows(TM_WTYPE_Q4_K, tm_embed_q4_k, 512);
    check_embed_rows(TM_WTYPE_Q6_K, tm_embed_q6_k, 256);
}

/* The expert matvec declares only the experts its tokens chose, each once, however many
 * slots chose it: heat sees the skew. */
static void test_moe_matvec_reads_only_chosen_experts(void **state) {
    (void)state;
    const int32_t n_expert = 8, n_in = 64, n_out = 16;
    int64_t expert_bytes = (int64_t)n_out * n_in * 4;
    float *w = calloc((size_t)n_expert, (size_t)expert_bytes), x[3 * 64] = {0}, out[3 * 2 * 16];
    int32_t ids[6] = {5, 2, 5, 7, 2, 5};
    assert_non_null(w);
    struct tm_args_moe_matvec a = {out, x, w, ids, 3, 2, n_expert, n_in, n_out, 0};
    RECORDED_LAUNCH(tm_moe_matvec_f32, moe_matvec, moe_matvec, a);
    assert_int_equal(bytes_in(w, (size_t)(n_expert * expert_bytes), 0), 3 * expert_bytes);
    for (int e = 0; e < n_expert; e++)
        assert_int_equal(read_at((uint8_t *)w + e * expert_bytes, (uint64_t)expert_bytes), e == 2 || e == 5 || e == 7);
    assert_int_equal(bytes_in(out, sizeof out, 1), sizeof out);
    free(w);
}

/* Decode attention reads the K and V pages of the blocks in each sequence's table up to
 * its length (the last block only below the length), never other blocks of the pool. */
static void test_attn_decode_reads_only_its_blocks(void **state) {
    (void)state;
    const int32_t n_kv_heads = 2, n_heads = 4, head_dim = 16, block_size = 4, n_blocks = 16, max_blocks = 4;
    struct tm_kv_layout L = {1, n_kv_heads, head_dim, block_size, n_blocks, TM_KV_F16};
    int64_t pool_bytes = tm_kv_pool_bytes(&L), page = (int64_t)block_size * head_dim * 2;
    uint8_t *k_pool = calloc(1, (size_t)pool_bytes), *v_pool = calloc(1, (size_t)pool_bytes);
    assert_non_null(k_pool);
    assert_non_null(v_pool);
    int32_t tables[2][4] = {{9, 3, 0, 0}, {12, 0, 0, 0}};
    int32_t lens[2] = {6, 4}; /* sequence 0: block 9 whole, 2 positions of block 3 */
    float q[2 * 4 * 16] = {0}, out[2 * 4 * 16];
    struct tm_args_attn_decode a = {out, q, k_pool, v_pool, &tables[0][0], lens, 2, max_blocks, n_heads,
                                    n_kv_heads, head_dim, block_size, n_heads * head_dim, 0.25f, 1.0f, 1.0f};
    assert_null(tm_check_attn_decode(&a));
    RECORDED_LAUNCH(tm_attn_decode_f16, attn_decode, attn_decode, a);
    int64_t block = tm_kv_block_bytes(&L);
    int64_t want = block /* 9 */ + n_kv_heads * (2 * head_dim * 2) /* 3, partial */ + block /* 12 */;
    assert_int_equal(bytes_in(k_pool, (size_t)pool_bytes, 0), want);
    assert_int_equal(bytes_in(v_pool, (size_t)pool_bytes, 0), want);
    assert_true(read_at(k_pool + 9 * block, block));
    assert_true(read_at(v_pool + 12 * block, block));
    assert_true(read_at(k_pool + 3 * block + page, 2 * head_dim * 2)); /* head 1 of block 3 */
    assert_int_equal(bytes_in(k_pool, (size_t)block, 0), 0); /* block 0 is in no table's reach */
    assert_true(declared_flops > 0);
    free(k_pool);
    free(v_pool);
}

/* A matvec (decode, up to TM_MATVEC_MAX_TOKENS tokens) reads its weights once; a matmul
 * of 65 tokens makes two passes of its 64-token tiles. */
static void test_matmul_weight_passes(void **state) {
    (void)state;
    const int32_t n_in = 32, n_out = 8;
    float w[8 * 32] = {0}, x[65 * 32] = {0}, out[65 * 8];
    struct tm_args_matmul a = {out, x, w, 2, n_in, n_out, n_out};
    RECORDED_LAUNCH(tm_matvec_f32, matmul, matvec, a);
    assert_int_equal(bytes_in(w, sizeof w, 0), sizeof w);
    assert_true(declared_flops == 2.0 * 2 * n_in * n_out);
    a.n_tokens = 65;
    RECORDED_LAUNCH(tm_matmul_f32, matmul, matmul, a);
    assert_int_equal(bytes_in(w, sizeof w, 0), 2 * sizeof w);
    assert_int_equal(bytes_in(out, sizeof out, 1), sizeof out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embed_reads_only_token_rows),
        cmocka_unit_test(test_moe_matvec_reads_only_chosen_experts),
        cmocka_unit_test(test_attn_decode_reads_only_its_blocks),
        cmocka_unit_test(test_matmul_weight_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
