/* test_tensor_table.c — which tensors a copied file range finishes: a tensor counts once
 * the range holds its last byte, whether one copy carried it whole or pieces did; gaps
 * between tensors, ranges past the end, empty tensors and an empty table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_copies_finish_their_tensor),
        cmocka_unit_test(test_pieces_finish_at_the_last_byte),
        cmocka_unit_test(test_one_copy_finishing_several),
        cmocka_unit_test(test_gaps_and_past_the_end),
        cmocka_unit_test(test_empty_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
