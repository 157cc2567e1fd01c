/* test_heat.c — the heat model on synthetic access traces: decay by half-lives, reads and
 * writes apart, spreading over chunks, classes by rank, ranking stability under noise,
 * and a burst that must not make a long-cold chunk hot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "policy/heat.h"
#include "policy/units.h"

#define CHUNK (2 * TM_MIB)
#define PER_HALFLIFE TM_HEAT_TICKS_PER_HALFLIFE

static void assert_near(double value, double expect, double tolerance)
{
    if (value < expect - tolerance || value > expect + tolerance)
        fail_msg("%.6f is not within %.6f of %.6f", value, tolerance, expect);
}

/* ---------------------------------------------------------------- decay */

static void test_decay_halves_per_halflife(void **state)
{
    (void)state;
    assert_near(tm_heat_decay(0), 1.0, 1e-12);
    assert_near(tm_heat_decay(PER_HALFLIFE), 0.5, 1e-12);
    assert_near(tm_heat_decay(3 * PER_HALFLIFE), 0.125, 1e-12);
    assert_near(tm_heat_decay(5), tm_heat_decay(2) * tm_heat_decay(3), 1e-12);
    assert_near(tm_heat_decay(1023), 0.0, 1e-30);
    assert_true(tm_heat_decay(UINT64_MAX) == 0.0);

    tm_heat_clock clock;
    tm_heat_clock_init(&clock, 800000000ull); /* 0.8 s: 100 ms intervals */
    assert_int_equal(clock.tick_ns, 100000000ull);
    assert_int_equal(tm_heat_tick(&clock, 1250000000ull), 12);
    tm_heat_clock_init(&clock, 3);
    assert_int_equal(clock.tick_ns, 1); /* never a zero-length interval */
}

static void test_touched_every_interval_converges_to_one(void **state)
{
    (void)state;
    tm_heat_chunk whole = { 0 }, half = { 0 }, twice = { 0 };
    for (uint64_t t = 0; t < 40 * PER_HALFLIFE; t++) {
        tm_heat_touch(&whole, t, CHUNK, CHUNK, false);
        tm_heat_touch(&half, t, CHUNK, CHUNK / 2, false);
        tm_heat_touch(&twice, t, CHUNK, CHUNK, false);
        tm_heat_touch(&twice, t, CHUNK, CHUNK, false);
    }
    uint64_t now = 40 * PER_HALFLIFE;
    assert_near(tm_heat_value(&whole, now, CHUNK), 1.0, 1e-3);
    assert_near(tm_heat_value(&half, now, CHUNK), 0.5, 1e-3);
    /* touching the whole chunk twice in an interval scores as once */
    assert_near(tm_heat_value(&twice, now, CHUNK), tm_heat_value(&whole, now, CHUNK), 1e-9);
}

static void test_idle_chunk_halves_each_halflife(void **state)
{
    (void)state;
    tm_heat_chunk c = { 0 };
    for (uint64_t t = 0; t < 40 * PER_HALFLIFE; t++)
        tm_heat_touch(&c, t, CHUNK, CHUNK, t % 2);
    uint64_t last = 40 * PER_HALFLIFE - 1;
    double at_end = tm_heat_value(&c, last + 1, CHUNK);
    double reads = tm_heat_reads(&c, last + 1), writes = tm_heat_writes(&c, last + 1);
    assert_true(reads > 0 && writes > 0);
    assert_near(tm_heat_value(&c, last + 1 + PER_HALFLIFE, CHUNK), at_end / 2, 1e-9);
    assert_near(tm_heat_value(&c, last + 1 + 2 * PER_HALFLIFE, CHUNK), at_end / 4, 1e-9);
    assert_near(tm_heat_reads(&c, last + 1 + PER_HALFLIFE), reads / 2, 1e-6 * reads);
    assert_near(tm_heat_writes(&c, last + 1 + 2 * PER_HALFLIFE), writes / 4, 1e-6 * writes);
    /* asking never changes the chunk */
    assert_near(tm_heat_value(&c, last + 1, CHUNK), at_end, 0);
}

static void test_reads_and_writes_apart(void **state)
{
    (void)state;
    tm_heat_chunk weights = { 0 }, kv = { 0 };
    for (uint64_t t = 0; t < 4; t++) {
        tm_heat_touch(&weights, t, CHUNK, 1000, false);
        tm_heat_touch(&kv, t, CHUNK, 300, false);
        tm_heat_touch(&kv, t, CHUNK, 700, true);
    }
    assert_true(tm_heat_writes(&weights, 3) == 0.0);
    assert_true(tm_heat_reads(&weights, 3) > 0.0);
    assert_near(tm_heat_writes(&kv, 3) / tm_heat_reads(&kv, 3), 700.0 / 300.0, 1e-9);
    assert_near(tm_heat_value(&weights, 3, CHUNK), tm_heat_value(&kv, 3, CHUNK), 1e-12);
}

static void test_late_update_counts_in_current_interval(void **state)
{
    (void)state;
    tm_heat_chunk c = { 0 };
    tm_heat_touch(&c, 10, CHUNK, CHUNK, false);
    double before = tm_heat_value(&c, 10, CHUNK);
    tm_heat_touch(&c, 7, CHUNK, 1000, true); /* a sample from another thread, a moment late */
    assert_int_equal(c.tick, 10);
    assert_near(tm_heat_value(&c, 10, CHUNK), before, 1e-12); /* already saturated */
    assert_near(c.writes, 1000, 1e-9);
}

/* ---------------------------------------------------------------- spreading */

static void test_credit_range_spreads_by_overlap(void **state)
{
    (void)state;
    tm_heat_chunk c[4];
    memset(c, 0, sizeof c);
    /* from the middle of chunk 1 to the end: half a chunk, then two whole ones */
    tm_heat_credit_range(c, 4, CHUNK, 4 * CHUNK, CHUNK + CHUNK / 2, 5 * CHUNK / 2, 5000, false, 1);
    assert_near(c[0].reads, 0, 0);
    assert_near(c[1].reads, 1000, 1e-6);
    assert_near(c[2].reads, 2000, 1e-6);
    assert_near(c[3].reads, 2000, 1e-6);
    /* a range running past the last chunk: the part beyond is dropped */
    memset(c, 0, sizeof c);
    tm_heat_credit_range(c, 4, CHUNK, 4 * CHUNK, 3 * CHUNK, 4 * CHUNK, 4000, false, 1);
    assert_near(c[3].reads, 1000, 1e-6);
    assert_near(c[2].reads, 0, 0);
    /* past the end: nothing */
    tm_heat_credit_range(c, 4, CHUNK, 4 * CHUNK, 4 * CHUNK, CHUNK, 5000, true, 1);
    tm_heat_credit_range(c, 4, CHUNK, 4 * CHUNK, 0, 0, 5000, true, 1);
    for (int i = 0; i < 4; i++)
        assert_true(c[i].writes == 0.0);
    /* wrapping length */
    tm_heat_credit_range(c, 4, CHUNK, 4 * CHUNK, CHUNK, UINT64_MAX, 3000, true, 1);
    assert_true(c[0].writes == 0.0 && c[1].writes > 0 && c[3].writes > 0);
}

/* ---------------------------------------------------------------- classes */

static void test_classes_by_rank(void **state)
{
    (void)state;
    /* absolute values do not matter, only order */
    double small[6] = { 0.001, 0.006, 0.002, 0.005, 0.003, 0.004 };
    double large[6] = { 10, 60, 20, 50, 30, 40 };
    tm_heat_class a[6], b[6];
    assert_true(tm_heat_classify(small, 6, a));
    assert_true(tm_heat_classify(large, 6, b));
    assert_memory_equal(a, b, sizeof a);
    assert_int_equal(a[1], TM_HEAT_HOT);
    assert_int_equal(a[3], TM_HEAT_HOT);
    assert_int_equal(a[5], TM_HEAT_WARM);
    assert_int_equal(a[4], TM_HEAT_WARM);
    assert_int_equal(a[2], TM_HEAT_COLD);
    assert_int_equal(a[0], TM_HEAT_COLD);
    assert_string_equal(tm_heat_class_name(a[1]), "hot");
    assert_string_equal(tm_heat_class_name(a[5]), "warm");
    assert_string_equal(tm_heat_class_name(a[0]), "cold");
}

static void test_classes_group_values_within_ten_percent(void **state)
{
    (void)state;
    /* 9 weights read every step, a little noise between them; a table read a row at a time */
    double heat[10] = { 0.99, 0.97, 0.95, 0.98, 0.96, 0.99, 0.94, 0.97, 0.98, 0.002 };
    tm_heat_class c[10];
    assert_true(tm_heat_classify(heat, 10, c));
    for (int i = 0; i < 9; i++)
        assert_int_equal(c[i], TM_HEAT_HOT);
    assert_int_equal(c[9], TM_HEAT_COLD);
    /* a group is measured from its first value: 1.0, 0.85, 0.7 do not chain into one */
    double spread[6] = { 1.0, 0.85, 0.7, 0.55, 0.4, 0.25 };
    assert_true(tm_heat_classify(spread, 6, c));
    assert_int_equal(c[0], TM_HEAT_HOT);
    assert_int_equal(c[5], TM_HEAT_COLD);
}

static void test_classes_ties_and_zero(void **state)
{
    (void)state;
    double equal[5] = { 0.3, 0.3, 0.3, 0.3, 0.3 };
    tm_heat_class c[5];
    assert_true(tm_heat_classify(equal, 5, c));
    for (int i = 0; i < 5; i++)
        assert_int_equal(c[i], TM_HEAT_HOT); /* dense weights are all equally hot */
    double zero[3] = { 0, 0, 0.1 };
    assert_true(tm_heat_classify(zero, 3, c));
    assert_int_equal(c[0], TM_HEAT_COLD);
    assert_int_equal(c[1], TM_HEAT_COLD);
    assert_int_equal(c[2], TM_HEAT_HOT);
    assert_true(tm_heat_classify(NULL, 0, c));
}

/* ---------------------------------------------------------------- synthetic traces */

/* 12 chunks, chunk i touched over a share (i + 1) / 13 of its bytes in each interval, give
 * or take a random 30 %: heat must rank the extremes right every time, and classes must
 * hold from one half-life to the next. */
static void test_ranking_stable_under_noise(void **state)
{
    (void)state;
    enum { N = 12 };
    tm_heat_chunk c[N];
    memset(c, 0, sizeof c);
    srand(7);
    int agree_checks = 0, misplaced = 0;
    tm_heat_class previous[N];
    bool have_previous = false;
    for (uint64_t t = 0; t < 60 * PER_HALFLIFE; t++) {
        for (int i = 0; i < N; i++)
            tm_heat_touch(&c[i], t, CHUNK, CHUNK * (i + 1) / 13.0 * (0.7 + 0.6 * rand() / RAND_MAX), false);
        if (t >= 20 * PER_HALFLIFE && t % PER_HALFLIFE == 0) {
            double heat[N];
            tm_heat_class cls[N];
            for (int i = 0; i < N; i++)
                heat[i] = tm_heat_value(&c[i], t, CHUNK);
            assert_true(tm_heat_classify(heat, N, cls));
            /* the coldest three and the hottest three are never misclassed */
            for (int i = 0; i < 3; i++)
                assert_int_equal(cls[i], TM_HEAT_COLD);
            for (int i = N - 3; i < N; i++)
                assert_int_equal(cls[i], TM_HEAT_HOT);
            if (have_previous)
                for (int i = 0; i < N; i++) {
                    agree_checks++;
                    misplaced += cls[i] != previous[i];
                }
            memcpy(previous, cls, sizeof cls);
            have_previous = true;
        }
    }
    /* from one half-life to the next, at most one chunk in ten changes class */
    assert_true(agree_checks > 0);
    if (misplaced * 10 > agree_checks)
        fail_msg("%d of %d class checks changed between half-lives", misplaced, agree_checks);
}

/* Ten chunks read whole in every interval, one touched by a few bytes now and then for a
 * long time; then that one sees a burst of a hundred whole-chunk reads in one interval. */
static void test_burst_does_not_make_cold_chunk_hot(void **state)
{
    (void)state;
    enum { N = 11, COLD = 10 };
    tm_heat_chunk c[N];
    memset(c, 0, sizeof c);
    uint64_t t = 0;
    for (; t < 30 * PER_HALFLIFE; t++) {
        for (int i = 0; i < COLD; i++)
            tm_heat_touch(&c[i], t, CHUNK, (double)CHUNK * (0.5 + 0.05 * i), false);
        if (t % 16 == 0)
            tm_heat_touch(&c[COLD], t, CHUNK, 4096, false);
    }
    for (int k = 0; k < 100; k++)
        tm_heat_touch(&c[COLD], t, CHUNK, CHUNK, false);
    for (int i = 0; i < COLD; i++)
        tm_heat_touch(&c[i], t, CHUNK, (double)CHUNK * (0.5 + 0.05 * i), false);

    for (uint64_t after = t; after <= t + 2; after++) {
        double heat[N];
        tm_heat_class cls[N];
        for (int i = 0; i < N; i++)
            heat[i] = tm_heat_value(&c[i], after, CHUNK);
        assert_true(tm_heat_classify(heat, N, cls));
        assert_int_equal(cls[COLD], TM_HEAT_COLD);
        for (int i = 0; i < COLD; i++)
            assert_true(heat[COLD] < heat[i]);
    }
    /* but bytes are bytes: the burst shows in the decayed read count */
    assert_true(tm_heat_reads(&c[COLD], t) > tm_heat_reads(&c[0], t));
}

/* A chunk that stops being touched falls below one that goes on, within a half-life. */
static void test_stopped_chunk_cools_below_running_one(void **state)
{
    (void)state;
    tm_heat_chunk ended = { 0 }, running = { 0 };
    uint64_t t = 0;
    for (; t < 10 * PER_HALFLIFE; t++) {
        tm_heat_touch(&ended, t, CHUNK, CHUNK / 4, true);
        tm_heat_touch(&running, t, CHUNK, CHUNK / 8, true);
    }
    assert_true(tm_heat_value(&ended, t, CHUNK) > tm_heat_value(&running, t, CHUNK));
    for (uint64_t stop = t; t < stop + PER_HALFLIFE; t++)
        tm_heat_touch(&running, t, CHUNK, CHUNK / 8, true);
    assert_true(tm_heat_value(&ended, t, CHUNK) < tm_heat_value(&running, t, CHUNK));
}

/* The tail chunk of an allocation is measured against the bytes it holds. */
static void test_tail_chunk_measured_by_its_bytes(void **state)
{
    (void)state;
    tm_heat_chunk c[2];
    memset(c, 0, sizeof c);
    uint64_t extent = CHUNK + CHUNK / 8; /* the second chunk holds 256 KiB */
    assert_int_equal(tm_heat_chunk_bytes(extent, CHUNK, 0), CHUNK);
    assert_int_equal(tm_heat_chunk_bytes(extent, CHUNK, 1), CHUNK / 8);
    for (uint64_t t = 0; t < 40 * PER_HALFLIFE; t++)
        tm_heat_credit_range(c, 2, CHUNK, extent, 0, extent, (double)extent, false, t);
    uint64_t now = 40 * PER_HALFLIFE;
    assert_near(tm_heat_value(&c[0], now, tm_heat_chunk_bytes(extent, CHUNK, 0)), 1.0, 1e-3);
    assert_near(tm_heat_value(&c[1], now, tm_heat_chunk_bytes(extent, CHUNK, 1)), 1.0, 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decay_halves_per_halflife),
        cmocka_unit_test(test_touched_every_interval_converges_to_one),
        cmocka_unit_test(test_idle_chunk_halves_each_halflife),
        cmocka_unit_test(test_reads_and_writes_apart),
        cmocka_unit_test(test_late_update_counts_in_current_interval),
        cmocka_unit_test(test_credit_range_spreads_by_overlap),
        cmocka_unit_test(test_classes_by_rank),
        cmocka_unit_test(test_classes_ties_and_zero),
        cmocka_unit_test(test_classes_group_values_within_ten_percent),
        cmocka_unit_test(test_ranking_stable_under_noise),
        cmocka_unit_test(test_burst_does_not_make_cold_chunk_hot),
        cmocka_unit_test(test_stopped_chunk_cools_below_running_one),
        cmocka_unit_test(test_tail_chunk_measured_by_its_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
