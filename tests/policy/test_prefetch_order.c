/* test_prefetch_order.c — learning the cyclic order of chunk references: nothing is
 * predicted before a cycle is complete; then the next keys in order, wrapping around;
 * repeats count once; a jump resynchronises; a new key starts learning over; long orders
 * grow past the first capacity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy/prefetch_order.h"

static void note_all(tm_prefetch_order *o, const uint64_t *keys, int n)
{
    for (int i = 0; i < n; i++)
        tm_prefetch_order_note(o, keys[i]);
}

static void test_nothing_before_a_cycle(void **state)
{
    (void)state;
    tm_prefetch_order o;
    assert_true(tm_prefetch_order_init(&o));
    uint64_t out[4];
    assert_int_equal(tm_prefetch_order_next(&o, out, 4), 0);
    const uint64_t step[] = { 0x1000, 0x2000, 0x3000, 0x4000 };
    note_all(&o, step, 4);
    assert_int_equal(tm_prefetch_order_next(&o, out, 4), 0);
    assert_false(o.cyclic);
    tm_prefetch_order_free(&o);
}

static void test_predicts_the_next_keys_in_order(void **state)
{
    (void)state;
    tm_prefetch_order o;
    assert_true(tm_prefetch_order_init(&o));
    const uint64_t step[] = { 0x1000, 0x2000, 0x3000, 0x4000, 0x5000 };
    note_all(&o, step, 5);
    tm_prefetch_order_note(&o, 0x1000); /* the second step begins */
    assert_true(o.cyclic);
    uint64_t out[3];
    assert_int_equal(tm_prefetch_order_next(&o, out, 3), 3);
    assert_int_equal(out[0], 0x2000);
    assert_int_equal(out[1], 0x3000);
    assert_int_equal(out[2], 0x4000);
    /* near the end of a step the prediction wraps to the start of the next */
    note_all(&o, step + 1, 3); /* 0x2000 0x3000 0x4000 */
    assert_int_equal(tm_prefetch_order_next(&o, out, 3), 3);
    assert_int_equal(out[0], 0x5000);
    assert_int_equal(out[1], 0x1000);
    assert_int_equal(out[2], 0x2000);
    assert_int_equal(o.hits, 3);
    assert_int_equal(o.misses, 0);
    tm_prefetch_order_free(&o);
}

static void test_never_more_than_the_cycle(void **state)
{
    (void)state;
    tm_prefetch_order o;
    assert_true(tm_prefetch_order_init(&o));
    const uint64_t step[] = { 0x1000, 0x2000, 0x3000, 0x1000 };
    note_all(&o, step, 4);
    uint64_t out[8];
    /* the other two keys, not the current one again */
    assert_int_equal(tm_prefetch_order_next(&o, out, 8), 2);
    assert_int_equal(out[0], 0x2000);
    assert_int_equal(out[1], 0x3000);
    tm_prefetch_order_free(&o);
}

static void test_repeats_count_once(void **state)
{
    (void)state;
    tm_prefetch_order o;
    assert_true(tm_prefetch_order_init(&o));
    /* a key read by several launches in a row (a matrix split over kernels) */
    const uint64_t step[] = { 0x1000, 0x1000, 0x2000, 0x2000, 0x2000, 0x3000, 0x1000, 0x1000 };
    note_all(&o, step, 8);
    assert_true(o.cyclic);
    assert_int_equal(o.len, 3);
    uint64_t out[1];
    assert_int_equal(tm_prefetch_order_next(&o, out, 1), 1);
    assert_int_equal(out[0], 0x2000);
    tm_prefetch_order_free(&o);
}

static void test_a_jump_resynchronises(void **state)
{
    (void)state;
    tm_prefetch_order o;
    assert_true(tm_prefetch_order_init(&o));
    const uint64_t step[] = { 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x1000 };
    note_all(&o, step, 6);
    tm_prefetch_order_note(&o, 0x4000); /* 0x2000 and 0x3000 moved to HBM: no longer referenced */
    assert_int_equal(o.misses, 1);
    uint64_t out[2];
    assert_int_equal(tm_prefetch_order_next(&o, out, 2), 2);
    assert_int_equal(out[0], 0x5000);
    assert_int_equal(out[1], 0x1000);
    assert_int_equal(o.restarts, 0);
    tm_prefetch_order_free(&o);
}

static void test_a_new_key_starts_over(void **state)
{
    (void)state;
    tm_prefetch_order o;
    assert_true(tm_prefetch_order_init(&o));
    const uint64_t step[] = { 0x1000, 0x2000, 0x3000, 0x1000 };
    note_all(&o, step, 4);
    tm_prefetch_order_note(&o, 0x9000); /* a chunk demoted since: the order changed */
    assert_false(o.cyclic);
    assert_int_equal(o.restarts, 1);
    uint64_t out[2];
    assert_int_equal(tm_prefetch_order_next(&o, out, 2), 0);
    const uint64_t next[] = { 0x2000, 0x3000, 0x9000 };
    note_all(&o, next, 3);
    assert_true(o.cyclic);
    assert_int_equal(tm_prefetch_order_next(&o, out, 2), 2);
    assert_int_equal(out[0], 0x2000);
    assert_int_equal(out[1], 0x3000);
    tm_prefetch_order_free(&o);
}

static void test_long_orders_grow(void **state)
{
    (void)state;
    tm_prefetch_order o;
    assert_true(tm_prefetch_order_init(&o));
    enum { KEYS = 5000 };
    for (int round = 0; round < 2; round++)
        for (uint64_t k = 1; k <= KEYS; k++)
            tm_prefetch_order_note(&o, k << 21);
    assert_true(o.cyclic);
    assert_int_equal(o.len, KEYS);
    assert_int_equal(o.hits, KEYS - 1);
    uint64_t out[2];
    assert_int_equal(tm_prefetch_order_next(&o, out, 2), 2);
    assert_int_equal(out[0], (uint64_t)1 << 21);
    assert_int_equal(out[1], (uint64_t)2 << 21);
    tm_prefetch_order_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_before_a_cycle),
        cmocka_unit_test(test_predicts_the_next_keys_in_order),
        cmocka_unit_test(test_never_more_than_the_cycle),
        cmocka_unit_test(test_repeats_count_once),
        cmocka_unit_test(test_a_jump_resynchronises),
        cmocka_unit_test(test_a_new_key_starts_over),
        cmocka_unit_test(test_long_orders_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
