/* test_gguf.c — the GGUF reader on real files and on hostile ones: every malformed
 * image gets a clear error naming what was wrong, and nothing reads out of bounds (run
 * under ASan with `make test SAN=1`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/weights.h"
#include "tests/engine/gguf_builder.h"

#include "tests/lib/test_models.h"

/* Parses an image that must fail; the message must contain `expect`. */
static void expect_error(const img *b, const char *expect)
{
    gguf_file f;
    char err[GGUF_ERROR_MAX] = "";
    int rc = gguf_parse(b->data, b->len, &f, err);
    gguf_close(&f);
    if (rc == 0 || !strstr(err, expect)) print_error("rc %d, message '%s', expected '%s'\n", rc, err, expect);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, expect));
}

/* ----------------------------------------------------------------------------
 * Real files */

static void test_stories(void **state)
{
    (void)state;
    gguf_file f;
    char err[GGUF_ERROR_MAX], path[4200];
    TM_TEST_MODEL(path, "stories260K.gguf");
    assert_int_equal(gguf_open(path, &f, err), 0);
    assert_int_equal(f.n_tensors, 3 + 9 * 5);
    assert_int_equal(f.alignment, 32);
    const gguf_tensor *t = gguf_find_tensor(&f, "blk.3.ffn_down.weight");
    assert_non_null(t);
    assert_int_equal(t->dims[0], 172);
    assert_int_equal(t->dims[1], 64);
    assert_int_equal(t->n_bytes, 172 * 64 * 4);
    assert_true((const uint8_t *)t->data + t->n_bytes <= f.base + f.size);
    uint64_t v = 0;
    assert_int_equal(gguf_get_uint(&f, "llama.attention.head_count_kv", &v, err), 1);
    assert_int_equal(v, 4);
    llama_config cfg;
    assert_int_equal(llama_config_load(&cfg, &f, err), 0);
    assert_int_equal(cfg.n_layers, 5);
    assert_int_equal(cfg.head_dim, 8);
    assert_int_equal(cfg.vocab, 512);
    assert_true(cfg.rope_base == 10000.0f); /* no freq_base key: the format's default */
    assert_int_equal(weights_check(&f, &cfg, err, sizeof err), 0);
    gguf_close(&f);
}

static void test_vocab_file(void **state)
{
    (void)state;
    gguf_file f;
    char err[GGUF_ERROR_MAX], path[4200];
    TM_TEST_MODEL(path, "ggml-vocab-llama-spm.gguf");
    assert_int_equal(gguf_open(path, &f, err), 0);
    assert_int_equal(f.n_tensors, 0);
    const gguf_value *tokens;
    assert_int_equal(gguf_get_array(&f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &tokens, err), 1);
    assert_int_equal(tokens->arr.count, 32000);
    const gguf_value *wrong;
    assert_int_equal(gguf_get_array(&f, "tokenizer.ggml.tokens", GGUF_TYPE_INT32, &wrong, err), -1);
    assert_non_null(strstr(err, "expected array of int32"));
    gguf_close(&f);
}

static void test_missing_file(void **state)
{
    (void)state;
    gguf_file f;
    char err[GGUF_ERROR_MAX];
    assert_int_equal(gguf_open("/nonexistent/model.gguf", &f, err), -1);
    assert_non_null(strstr(err, "cannot open '/nonexistent/model.gguf'"));
}

/* ----------------------------------------------------------------------------
 * Metadata of every type */

static void test_all_value_types(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 0, 15);
    img_str(&b, "u8"); img_u32(&b, GGUF_TYPE_UINT8); img_u8(&b, 200);
    img_str(&b, "i8"); img_u32(&b, GGUF_TYPE_INT8); img_u8(&b, 0xFE);
    img_str(&b, "u16"); img_u32(&b, GGUF_TYPE_UINT16); img_u8(&b, 0x34); img_u8(&b, 0x12);
    img_str(&b, "i16"); img_u32(&b, GGUF_TYPE_INT16); img_u8(&b, 0xFF); img_u8(&b, 0xFF);
    img_kv_u32(&b, "u32", 70000);
    img_str(&b, "i32"); img_u32(&b, GGUF_TYPE_INT32); img_u32(&b, 12345);
    img_str(&b, "f32"); img_u32(&b, GGUF_TYPE_FLOAT32); img_f32(&b, 0.5f);
    img_str(&b, "bool"); img_u32(&b, GGUF_TYPE_BOOL); img_u8(&b, 1);
    img_kv_str(&b, "str", "hello");
    img_kv_u64(&b, "u64", 1ull << 40);
    img_str(&b, "i64"); img_u32(&b, GGUF_TYPE_INT64); img_u64(&b, (uint64_t)-5);
    img_str(&b, "f64"); img_u32(&b, GGUF_TYPE_FLOAT64); double d = 2.25; img_put(&b, &d, 8);
    img_str(&b, "arr_i16"); img_u32(&b, GGUF_TYPE_ARRAY); img_u32(&b, GGUF_TYPE_INT16); img_u64(&b, 3);
    for (int16_t x = -1; x <= 1; x++) img_put(&b, &x, 2);
    img_str(&b, "arr_str"); img_u32(&b, GGUF_TYPE_ARRAY); img_u32(&b, GGUF_TYPE_STRING); img_u64(&b, 2);
    img_str(&b, "ab"); img_str(&b, "");
    img_str(&b, "arr_f64"); img_u32(&b, GGUF_TYPE_ARRAY); img_u32(&b, GGUF_TYPE_FLOAT64); img_u64(&b, 1);
    img_put(&b, &d, 8);

    gguf_file f;
    char err[GGUF_ERROR_MAX];
    assert_int_equal(gguf_parse(b.data, b.len, &f, err), 0);
    uint64_t u = 0;
    double fl = 0;
    bool bo = false;
    gguf_str s;
    assert_int_equal(gguf_get_uint(&f, "u8", &u, err), 1); assert_int_equal(u, 200);
    assert_int_equal(gguf_get_uint(&f, "u16", &u, err), 1); assert_int_equal(u, 0x1234);
    assert_int_equal(gguf_get_uint(&f, "u32", &u, err), 1); assert_int_equal(u, 70000);
    assert_int_equal(gguf_get_uint(&f, "i32", &u, err), 1); assert_int_equal(u, 12345);
    assert_int_equal(gguf_get_uint(&f, "u64", &u, err), 1); assert_int_equal(u, 1ull << 40);
    assert_int_equal(gguf_get_uint(&f, "i8", &u, err), -1); assert_non_null(strstr(err, "i8 is negative"));
    assert_int_equal(gguf_get_uint(&f, "i64", &u, err), -1);
    assert_int_equal(gguf_get_uint(&f, "f32", &u, err), -1); assert_non_null(strstr(err, "expected an integer"));
    assert_int_equal(gguf_get_uint(&f, "absent", &u, err), 0);
    assert_int_equal(gguf_get_float(&f, "f32", &fl, err), 1); assert_true(fl == 0.5);
    assert_int_equal(gguf_get_float(&f, "f64", &fl, err), 1); assert_true(fl == 2.25);
    assert_int_equal(gguf_get_bool(&f, "bool", &bo, err), 1); assert_true(bo);
    assert_int_equal(gguf_get_str(&f, "str", &s, err), 1); assert_true(gguf_str_eq(s, "hello"));
    assert_int_equal(gguf_find_kv(&f, "i16")->value.i, -1);
    const gguf_value *a;
    assert_int_equal(gguf_get_array(&f, "arr_i16", GGUF_TYPE_INT16, &a, err), 1);
    assert_int_equal(gguf_array_int(a, 0), -1);
    assert_int_equal(gguf_array_int(a, 2), 1);
    assert_int_equal(gguf_get_array(&f, "arr_str", GGUF_TYPE_STRING, &a, err), 1);
    gguf_str strs[2];
    gguf_array_strings(a, strs);
    assert_true(gguf_str_eq(strs[0], "ab") && strs[1].len == 0);
    assert_int_equal(gguf_get_array(&f, "arr_f64", GGUF_TYPE_FLOAT64, &a, err), 1);
    assert_true(gguf_array_float(a, 0) == 2.25);
    gguf_close(&f);
    free(b.data);
}

/* ----------------------------------------------------------------------------
 * A small valid image with two tensors, and damaged versions of it */

static img valid_image(void)
{
    img b = {0};
    img_header(&b, 2, 1);
    img_kv_str(&b, "general.architecture", "llama");
    img_tensor2(&b, "a", 4, 2, GGML_TYPE_F32, 0);   /* 32 bytes */
    img_tensor2(&b, "b", 32, 1, GGML_TYPE_Q8_0, 32); /* 34 bytes */
    img_pad(&b, 32);
    img_zeros(&b, 32 + 34);
    return b;
}

static void test_valid_image(void **state)
{
    (void)state;
    img b = valid_image();
    gguf_file f;
    char err[GGUF_ERROR_MAX];
    assert_int_equal(gguf_parse(b.data, b.len, &f, err), 0);
    assert_int_equal(gguf_find_tensor(&f, "b")->n_bytes, 34);
    gguf_close(&f);
    free(b.data);
}

static void test_every_truncation(void **state)
{
    (void)state;
    img b = valid_image();
    for (size_t len = 0; len < b.len; len++) {
        img cut = {0};
        img_put(&cut, b.data, len);
        gguf_file f;
        char err[GGUF_ERROR_MAX] = "";
        int rc = gguf_parse(cut.data, cut.len, &f, err);
        gguf_close(&f);
        if (rc != -1) print_error("prefix of %zu bytes parsed\n", len);
        assert_int_equal(rc, -1);
        assert_true(strstr(err, "truncated") || strstr(err, "empty") || strstr(err, "past the end") ||
                    strstr(err, "cannot fit") || strstr(err, "exceeds"));
        free(cut.data);
    }
    free(b.data);
}

static void test_huge_counts(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 0, UINT64_MAX);
    expect_error(&b, "metadata count 18446744073709551615 cannot fit");
    b.len = 0;
    img_header(&b, 1ull << 60, 0);
    expect_error(&b, "tensor count 1152921504606846976 cannot fit");
    b.len = 0;
    img_header(&b, 0, 1);
    img_str(&b, "k"); img_u32(&b, GGUF_TYPE_ARRAY); img_u32(&b, GGUF_TYPE_UINT64); img_u64(&b, 1ull << 61);
    expect_error(&b, "array count 2305843009213693952 of uint64 cannot fit");
    b.len = 0;
    img_header(&b, 0, 1);
    img_str(&b, "k"); img_u32(&b, GGUF_TYPE_ARRAY); img_u32(&b, GGUF_TYPE_STRING); img_u64(&b, UINT64_MAX / 2);
    expect_error(&b, "cannot fit");
    b.len = 0;
    img_header(&b, 0, 1);
    img_str(&b, "k"); img_u32(&b, GGUF_TYPE_STRING); img_u64(&b, UINT64_MAX);
    expect_error(&b, "string length 18446744073709551615 exceeds");
    free(b.data);
}

static void test_offset_out_of_range(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 1, 0);
    img_tensor2(&b, "blk.0.attn_q.weight", 8, 8, GGML_TYPE_F32, 0);
    img_pad(&b, 32);
    img_zeros(&b, 100); /* 256 needed */
    expect_error(&b, "tensor 'blk.0.attn_q.weight': data [0, +256) runs past the end");
    free(b.data);
}

static void test_overlapping_and_gaps(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 2, 0);
    img_tensor2(&b, "first", 8, 1, GGML_TYPE_F32, 0);
    img_tensor2(&b, "second", 8, 1, GGML_TYPE_F32, 0); /* overlaps "first" */
    img_pad(&b, 32);
    img_zeros(&b, 64);
    expect_error(&b, "tensor 'second': data offset 0 should be 32");
    b.len = 0;
    img_header(&b, 2, 0);
    img_tensor2(&b, "first", 8, 1, GGML_TYPE_F32, 0);
    img_tensor2(&b, "second", 8, 1, GGML_TYPE_F32, 64); /* leaves a gap */
    img_pad(&b, 32);
    img_zeros(&b, 96);
    expect_error(&b, "tensor 'second': data offset 64 should be 32");
    free(b.data);
}

static void test_alignment(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 0, 1);
    img_kv_u32(&b, "general.alignment", 24);
    expect_error(&b, "general.alignment 24 is not a power of two");
    b.len = 0;
    img_header(&b, 0, 1);
    img_kv_u32(&b, "general.alignment", 0);
    expect_error(&b, "general.alignment 0 is not a power of two");
    b.len = 0;
    img_header(&b, 0, 1);
    img_kv_u64(&b, "general.alignment", 32);
    expect_error(&b, "general.alignment has type uint64");
    b.len = 0;
    img_header(&b, 2, 0);
    img_tensor2(&b, "blk.3.attn_q.weight", 1, 1, GGML_TYPE_F32, 0);
    img_tensor2(&b, "blk.3.attn_k.weight", 1, 1, GGML_TYPE_F32, 4);
    img_pad(&b, 32);
    img_zeros(&b, 64);
    expect_error(&b, "tensor 'blk.3.attn_k.weight': data offset 4 not aligned to 32");
    free(b.data);
}

static void test_unknown_types(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 0, 1);
    img_str(&b, "k"); img_u32(&b, 13); img_u32(&b, 0);
    expect_error(&b, "metadata 'k': unknown value type 13");
    b.len = 0;
    img_header(&b, 0, 1);
    img_str(&b, "k"); img_u32(&b, GGUF_TYPE_ARRAY); img_u32(&b, GGUF_TYPE_ARRAY); img_u64(&b, 0);
    expect_error(&b, "array of arrays");
    b.len = 0;
    img_header(&b, 1, 0);
    img_tensor2(&b, "w", 4, 4, 99, 0);
    expect_error(&b, "tensor 'w': unknown tensor type 99");
    b.len = 0;
    img_header(&b, 1, 0);
    img_tensor2(&b, "w", 4, 4, 31, 0); /* a removed type id */
    expect_error(&b, "tensor 'w': unknown tensor type 31");
    b.len = 0;
    img_header(&b, 0, 1);
    img_str(&b, "flag"); img_u32(&b, GGUF_TYPE_BOOL); img_u8(&b, 7);
    expect_error(&b, "bool value 7");
    free(b.data);
}

static void test_names_and_dims(void **state)
{
    (void)state;
    img b = {0};
    char long_name[80];
    memset(long_name, 'x', 64);
    long_name[64] = 0;
    img_header(&b, 1, 0);
    img_tensor2(&b, long_name, 1, 1, GGML_TYPE_F32, 0);
    expect_error(&b, "name of 64 bytes is too long (limit 63)");
    b.len = 0;
    img_header(&b, 1, 0);
    img_str(&b, "t"); img_u32(&b, 5);
    for (int i = 0; i < 5; i++) img_u64(&b, 1);
    img_u32(&b, 0); img_u64(&b, 0);
    expect_error(&b, "tensor 't': 5 dimensions (must be 1 to 4)");
    b.len = 0;
    img_header(&b, 1, 0);
    img_tensor2(&b, "t", 0, 1, GGML_TYPE_F32, 0);
    expect_error(&b, "tensor 't': dimension 0 is 0");
    b.len = 0;
    img_header(&b, 1, 0);
    img_tensor2(&b, "t", 1ull << 40, 1ull << 40, GGML_TYPE_F32, 0);
    expect_error(&b, "tensor 't': byte size overflows");
    b.len = 0;
    img_header(&b, 1, 0);
    img_tensor2(&b, "t", 33, 1, GGML_TYPE_Q8_0, 0);
    expect_error(&b, "first dimension 33 is not a multiple of the Q8_0 block size 32");
    b.len = 0;
    img_header(&b, 2, 0);
    img_tensor2(&b, "same", 8, 1, GGML_TYPE_F32, 0);
    img_tensor2(&b, "same", 8, 1, GGML_TYPE_F32, 32);
    img_pad(&b, 32);
    img_zeros(&b, 64);
    expect_error(&b, "duplicate tensor name 'same'");
    b.len = 0;
    img_header(&b, 0, 2);
    img_kv_u32(&b, "k", 1);
    img_kv_u32(&b, "k", 2);
    expect_error(&b, "duplicate metadata key 'k'");
    free(b.data);
}

static void test_header(void **state)
{
    (void)state;
    img b = {0};
    img_u32(&b, 0x4C4C5546); img_u32(&b, 3); img_u64(&b, 0); img_u64(&b, 0);
    expect_error(&b, "not a GGUF file");
    b.len = 0;
    img_u32(&b, 0x46554747u); img_u32(&b, 2); img_u64(&b, 0); img_u64(&b, 0);
    expect_error(&b, "GGUF version 2 is not supported");
    b.len = 0;
    img_u32(&b, 0x46554747u); img_u32(&b, 0x03000000); img_u64(&b, 0); img_u64(&b, 0);
    expect_error(&b, "big-endian");
    b.len = 0;
    expect_error(&b, "empty");
    free(b.data);
}

/* ----------------------------------------------------------------------------
 * Model-level checks: unsupported weight types by name, count key types */

static void llama_keys(img *b, int u64_counts)
{
    img_kv_str(b, "general.architecture", "llama");
    if (u64_counts) {
        img_kv_u64(b, "llama.block_count", 1);
        img_kv_u64(b, "llama.embedding_length", 256);
    } else {
        img_kv_u32(b, "llama.block_count", 1);
        img_kv_u32(b, "llama.embedding_length", 256);
    }
    img_kv_u32(b, "llama.feed_forward_length", 256);
    img_kv_u32(b, "llama.attention.head_count", 4);
}

static void test_unsupported_weight_type(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 1, 6);
    llama_keys(&b, 0);
    img_kv_u32(&b, "llama.attention.head_count_kv", 2);
    img_tensor2(&b, "token_embd.weight", 256, 4, GGML_TYPE_IQ4_XS, 0);
    img_pad(&b, 32);
    img_zeros(&b, 4 * 136);
    gguf_file f;
    char err[GGUF_ERROR_MAX];
    assert_int_equal(gguf_parse(b.data, b.len, &f, err), 0);
    llama_config cfg;
    assert_int_equal(llama_config_load(&cfg, &f, err), 0);
    assert_int_equal(cfg.n_kv_heads, 2);
    assert_int_equal(weights_check(&f, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "tensor 'token_embd.weight' has type IQ4_XS; tiermem-llm supports F32, F16, BF16, Q8_0, Q4_0"));
    gguf_close(&f);
    free(b.data);
}

static void test_config_keys(void **state)
{
    (void)state;
    img b = {0};
    img_header(&b, 1, 5);
    llama_keys(&b, 1); /* u64 counts */
    img_tensor2(&b, "token_embd.weight", 256, 3, GGML_TYPE_F32, 0);
    img_pad(&b, 32);
    img_zeros(&b, 256 * 3 * 4);
    gguf_file f;
    char err[GGUF_ERROR_MAX];
    assert_int_equal(gguf_parse(b.data, b.len, &f, err), 0);
    llama_config cfg;
    assert_int_equal(llama_config_load(&cfg, &f, err), 0);
    assert_int_equal(cfg.dim, 256);
    assert_int_equal(cfg.n_kv_heads, 4);    /* defaults to head_count */
    assert_int_equal(cfg.rot_dim, 64);      /* defaults to the head size */
    assert_int_equal(cfg.vocab, 3);
    assert_true(cfg.rms_eps == 1e-5f);
    assert_int_equal(weights_check(&f, &cfg, err, sizeof err), -1);
    assert_non_null(strstr(err, "tensor 'output_norm.weight' is missing"));
    gguf_close(&f);

    b.len = 0;
    img_header(&b, 0, 1);
    img_kv_str(&b, "general.architecture", "mamba");
    assert_int_equal(gguf_parse(b.data, b.len, &f, err), 0);
    assert_int_equal(llama_config_load(&cfg, &f, err), -1);
    assert_non_null(strstr(err, "architecture 'mamba' is not supported"));
    gguf_close(&f);
    free(b.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories),
        cmocka_unit_test(test_vocab_file),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_all_value_types),
        cmocka_unit_test(test_valid_image),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_huge_counts),
        cmocka_unit_test(test_offset_out_of_range),
        cmocka_unit_test(test_overlapping_and_gaps),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_unknown_types),
        cmocka_unit_test(test_names_and_dims),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_unsupported_weight_type),
        cmocka_unit_test(test_config_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
