/* test_tensor_table.c — which tensors a copied file range finishes: a tensor counts once
 * the range holds its last byte, whether one copy carried it whole or pieces did; gaps
 * between tensors, ranges past the end, empty tensors and an empty table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "preload/model/tensor_table.h"

/* Three tensors at [100, 200), [200, 260), [300, 400), an empty one at 400, and the
 * file's end at 500. */
static tm_tensor tensors[] = {
    { .name = "a", .offset = 100, .size = 100 },
    { .name = "b", .offset = 200, .size = 60 },
    { .name = "c", .offset = 300, .size = 100 },
    { .name = "empty", .offset = 400, .size = 0 },
};
static const tm_tensor_table table = { .format = TM_FORMAT_GGUF, .count = 4, .tensor = tensors };

static uint64_t ending(uint64_t offset, uint64_t bytes, uint64_t *first)
{
    return tm_tensor_table_ending_in(&table, offset, bytes, first);
}

static void test_whole_copies_finish_their_tensor(void **state)
{
    (void)state;
    uint64_t first;
    assert_int_equal(ending(100, 100, &first), 1);
    assert_int_equal(first, 0);
    assert_int_equal(ending(200, 60, &first), 1);
    assert_int_equal(first, 1);
    assert_int_equal(ending(300, 99, &first), 0);   /* all of c but its last byte */
    assert_int_equal(ending(300, 100, &first), 2);  /* c, and the empty one at its end */
    assert_int_equal(first, 2);
}

static void test_pieces_finish_at_the_last_byte(void **state)
{
    (void)state;
    uint64_t first;
    assert_int_equal(ending(100, 50, &first), 0);   /* the first half of a */
    assert_int_equal(ending(150, 49, &first), 0);   /* all but its last byte */
    assert_int_equal(ending(199, 1, &first), 1);    /* its last byte */
    assert_int_equal(first, 0);
}

static void test_one_copy_finishing_several(void **state)
{
    (void)state;
    uint64_t first;
    assert_int_equal(ending(150, 250, &first), 4);  /* a's end, b, c and the empty one at 400 */
    assert_int_equal(first, 0);
    assert_int_equal(ending(0, 1000, &first), 4);
    assert_int_equal(first, 0);
    assert_int_equal(ending(150, 180, &first), 2);  /* to 330: a and b, not c */
    assert_int_equal(first, 0);
}

static void test_gaps_and_past_the_end(void **state)
{
    (void)state;
    uint64_t first;
    assert_int_equal(ending(260, 40, &first), 0);   /* the gap between b and c */
    assert_int_equal(first, 2);
    assert_int_equal(ending(0, 100, &first), 0);    /* before a */
    assert_int_equal(ending(400, 100, &first), 0);  /* after c, the empty one starting at the range's start */
    assert_int_equal(first, 4);
    assert_int_equal(ending(0, 0, &first), 0);
}

static void test_empty_table(void **state)
{
    (void)state;
    const tm_tensor_table none = { 0 };
    uint64_t first = 7;
    assert_int_equal(tm_tensor_table_ending_in(&none, 0, 1000, &first), 0);
    assert_int_equal(first, 0);
}

static void test_overlaps(void **state)
{
    (void)state;
    assert_true(tm_tensor_table_overlaps(&table, 0, 101));     /* a's first byte */
    assert_false(tm_tensor_table_overlaps(&table, 0, 100));    /* the header before a */
    assert_true(tm_tensor_table_overlaps(&table, 150, 1));     /* inside a */
    assert_false(tm_tensor_table_overlaps(&table, 260, 40));   /* the gap between b and c */
    assert_true(tm_tensor_table_overlaps(&table, 299, 2));
    assert_false(tm_tensor_table_overlaps(&table, 401, 99));   /* after c */
}

/* ---------------------------------------------------------------- safetensors headers */

/* Parses header `json` of a file with 64 data bytes after it. */
static tm_parse_result parse_st(const char *json, tm_tensor_table *t, const char **why)
{
    static uint8_t buf[4096];
    uint64_t n = strlen(json);
    memcpy(buf, &n, sizeof n);
    memcpy(buf + 8, json, (size_t)n);
    memset(buf + 8 + n, 0, 64);
    size_t need = 0;
    *why = "";
    memset(t, 0, sizeof *t);
    return tm_parse_safetensors(buf, (size_t)n + 72, n + 72, t, &need, why);
}

static void test_safetensors_reads_what_it_needs(void **state)
{
    (void)state;
    tm_tensor_table t;
    const char *why;
    /* metadata and unknown keys of any shape are skipped; escapes decode; padding is allowed */
    assert_int_equal(parse_st("{\"__metadata__\":{\"a\":[1,{\"b\":null},true,-2.5e3,\"x\\\"y\"]},"
                              "\"w\\u00e9\\n\":{\"extra\":[[]],\"data_offsets\":[8,40],\"shape\":[2,4],"
                              "\"dtype\":\"F32\"},\"b\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[0,8]}}   ",
                              &t, &why), TM_PARSE_OK);
    assert_int_equal(t.count, 2);
    assert_string_equal(t.tensor[0].name, "b");
    assert_string_equal(t.tensor[0].dtype, "BF16");
    assert_int_equal(t.tensor[0].n_dims, 0);
    assert_string_equal(t.tensor[1].name, "w\xc3\xa9?");   /* a control character is no name byte */
    assert_int_equal(t.tensor[1].n_dims, 2);
    assert_int_equal(t.tensor[1].shape[1], 4);
    assert_int_equal(t.tensor[1].size, 32);
    assert_int_equal(t.tensor[1].offset - t.tensor[0].offset, 8);
    tm_tensor_table_free(&t);
}

static void test_safetensors_refuses_what_is_not_json(void **state)
{
    (void)state;
    tm_tensor_table t;
    const char *why;
    static const char *bad[] = {
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x",     /* bytes after it */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}",      /* trailing comma */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}",     /* a fraction */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}",       /* end before begin */
        "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}",                          /* no dtype */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999]}}",
        "{\"a\":{\"dtype\":\"F\\u0032\",\"shape\":[1],\"data_offsets\":[0,400]}}", /* past the end */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}",
        "{\"a\":{\"dtype\":\"F32\\ud800\",\"shape\":[1],\"data_offsets\":[0,4]}}", /* a lone surrogate */
        "{\"a\":{\"dtype\":\"F\x01\",\"shape\":[1],\"data_offsets\":[0,4]}}",       /* a raw control byte */
        "{\"__metadata__\":{\"x\":tru}}",
        "{\"a\":7}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse_st(bad[i], &t, &why), TM_PARSE_BAD);
        assert_non_null(why);
        assert_true(why[0] != '\0');
    }
    /* nesting in a skipped value is bounded (64), not followed to the end */
    char deep[400] = "{\"__metadata__\":";
    for (int i = 0; i < 65; i++) strcat(deep, "[");
    for (int i = 0; i < 65; i++) strcat(deep, "]");
    strcat(deep, "}");
    assert_int_equal(parse_st(deep, &t, &why), TM_PARSE_BAD);
    deep[strlen("{\"__metadata__\":")] = ' ';    /* 64 deep: fine */
    deep[strlen(deep) - 2] = ' ';
    assert_int_equal(parse_st(deep, &t, &why), TM_PARSE_OK);
    assert_int_equal(t.count, 0);
    tm_tensor_table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_copies_finish_their_tensor),
        cmocka_unit_test(test_pieces_finish_at_the_last_byte),
        cmocka_unit_test(test_one_copy_finishing_several),
        cmocka_unit_test(test_gaps_and_past_the_end),
        cmocka_unit_test(test_empty_table),
        cmocka_unit_test(test_overlaps),
        cmocka_unit_test(test_safetensors_reads_what_it_needs),
        cmocka_unit_test(test_safetensors_refuses_what_is_not_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
