/* test_stream_plan.c — the stream ring's size and whether streaming pays: the largest
 * spilled weight and a chunk, at least two chunks, at most a quarter of HBM; weights larger
 * than that are read in place; TIERMEM_STREAM_RING sets the size; `auto` declines where
 * the ring's HBM would cost the link more than copying saves, `on` streams anyway. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy/rebalance.h"
#include "policy/stream_plan.h"

#define MiB ((uint64_t)1 << 20)

static tm_stream_plan make(const uint64_t *spilled, size_t count, uint64_t hbm, uint64_t asked, bool forced)
{
    tm_stream_plan_input in = { .spilled = spilled, .count = count, .asked = asked, .forced = forced,
                                .chunk = 2 * MiB, .hbm_limit = hbm, .streamed_cost = TM_REBALANCE_STREAMED_COST };
    return tm_stream_plan_make(&in);
}

/* 1.75 times a 512 MiB device: 400 MiB of 1, 4 and 14 MiB matrices below HBM */
static void test_the_ring_follows_the_largest_weight(void **state)
{
    (void)state;
    uint64_t spilled[64];
    size_t n = 0;
    for (int layer = 0; layer < 7; layer++) {
        spilled[n++] = 14 * MiB, spilled[n++] = 14 * MiB, spilled[n++] = 14 * MiB;
        spilled[n++] = 4 * MiB, spilled[n++] = 4 * MiB, spilled[n++] = MiB, spilled[n++] = MiB;
    }
    tm_stream_plan p = make(spilled, n, 512 * MiB, 0, false);
    assert_int_equal(p.ring, 16 * MiB); /* 14 MiB and a chunk */
    assert_int_equal(p.streamable, 7 * 52 * MiB);
    assert_int_equal(p.in_place, 0);
    assert_true(p.gain > 1.2 && p.gain < 1.43);
    assert_null(p.why_not);
}

static void test_auto_declines_where_the_ring_costs_more(void **state)
{
    (void)state;
    /* 16 MiB below HBM against a 16 MiB ring: (16 + 16) x 1.1 > 16 / 0.7 */
    const uint64_t few[] = { 14 * MiB, 2 * MiB };
    tm_stream_plan p = make(few, 2, 512 * MiB, 0, false);
    assert_int_equal(p.ring, 0);
    assert_non_null(p.why_not);
    /* `on` streams anyway */
    p = make(few, 2, 512 * MiB, 0, true);
    assert_int_equal(p.ring, 16 * MiB);
    /* nothing below HBM: nothing to stream, even forced */
    p = make(few, 0, 512 * MiB, 0, true);
    assert_int_equal(p.ring, 0);
    assert_non_null(p.why_not);
}

static void test_weights_larger_than_a_quarter_of_hbm_stay_in_place(void **state)
{
    (void)state;
    uint64_t spilled[31] = { 40 * MiB };
    for (int i = 1; i < 31; i++)
        spilled[i] = 3 * MiB;
    tm_stream_plan p = make(spilled, 31, 64 * MiB, 0, false);
    assert_int_equal(p.ring, 16 * MiB); /* a quarter of HBM, not 42 MiB */
    assert_int_equal(p.in_place, 40 * MiB);
    assert_int_equal(p.streamable, 90 * MiB);
    /* a quarter of HBM in whole chunks, none below two */
    assert_int_equal(tm_stream_plan_most(64 * MiB, 2 * MiB), 16 * MiB);
    assert_int_equal(tm_stream_plan_most(70 * MiB, 2 * MiB), 16 * MiB);
    assert_int_equal(tm_stream_plan_most(15 * MiB, 2 * MiB), 0);
    /* a device too small for two chunks in a quarter of it */
    p = make(spilled, 31, 12 * MiB, 0, true);
    assert_int_equal(p.ring, 0);
}

static void test_tiermem_stream_ring_sets_the_size(void **state)
{
    (void)state;
    uint64_t spilled[40];
    for (int i = 0; i < 40; i++)
        spilled[i] = 3 * MiB;
    tm_stream_plan p = make(spilled, 40, 1024 * MiB, 9 * MiB, false);
    assert_int_equal(p.ring, 10 * MiB); /* whole chunks */
    p = make(spilled, 40, 1024 * MiB, 1, false);
    assert_int_equal(p.ring, 4 * MiB); /* two chunks at least */
    /* a ring asked smaller than the weights: they are read in place */
    const uint64_t big[] = { 8 * MiB, 8 * MiB };
    p = make(big, 2, 1024 * MiB, 4 * MiB, true);
    assert_int_equal(p.ring, 0);
    assert_int_equal(p.in_place, 16 * MiB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_ring_follows_the_largest_weight),
        cmocka_unit_test(test_auto_declines_where_the_ring_costs_more),
        cmocka_unit_test(test_weights_larger_than_a_quarter_of_hbm_stay_in_place),
        cmocka_unit_test(test_tiermem_stream_ring_sets_the_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
