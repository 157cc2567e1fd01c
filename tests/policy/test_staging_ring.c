/* test_staging_ring.c — extents of the stream ring: placed at a sweeping head, starting
 * over at 0 when the end is near; an extent still unread or held by a launch is never
 * overwritten (unless forced, and then never a held one); the evicted entries are named so
 * their readers can be waited for; alignment, lookups, drops, and the entry table's limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "policy/staging_ring.h"

#define MiB ((uint64_t)1 << 20)

static tm_staging_ring *new_ring(uint64_t capacity)
{
    tm_staging_ring *r = malloc(sizeof *r);
    assert_non_null(r);
    tm_staging_init(r, capacity, TM_STAGING_ALIGN);
    return r;
}

static int place(tm_staging_ring *r, uint64_t key, uint64_t bytes, bool force, uint32_t *evicted, uint32_t *n)
{
    return tm_staging_place(r, key, bytes, force, evicted, n);
}

static void test_extents_follow_the_head(void **state)
{
    (void)state;
    tm_staging_ring *r = new_ring(16 * MiB);
    uint32_t ev[TM_STAGING_MAX], n;
    int a = place(r, 0x1000000, 4 * MiB, false, ev, &n);
    int b = place(r, 0x2000000, 3 * MiB + 1, false, ev, &n); /* rounded up to 64 KiB */
    assert_true(a >= 0 && b >= 0 && a != b);
    assert_int_equal(n, 0);
    assert_int_equal(r->entry[a].offset, 0);
    assert_int_equal(r->entry[b].offset, 4 * MiB);
    assert_int_equal(r->entry[b].bytes, 3 * MiB + TM_STAGING_ALIGN);
    assert_int_equal(tm_staging_find(r, 0x2000000), b);
    assert_int_equal(tm_staging_find(r, 0x3000000), -1);
    /* staged already, longer than the ring, or nothing at all: refused */
    assert_int_equal(place(r, 0x1000000, MiB, false, ev, &n), -1);
    assert_int_equal(place(r, 0x3000000, 17 * MiB, true, ev, &n), -1);
    assert_int_equal(place(r, 0x3000000, 0, true, ev, &n), -1);
    free(r);
}

static void test_unread_extents_are_never_overwritten(void **state)
{
    (void)state;
    tm_staging_ring *r = new_ring(16 * MiB);
    uint32_t ev[TM_STAGING_MAX], n;
    int a = place(r, 0x1000000, 14 * MiB, false, ev, &n);
    assert_true(a >= 0);
    /* the next 14 MiB fit only at 0, over `a`, which no launch has read yet */
    assert_int_equal(place(r, 0x2000000, 14 * MiB, false, ev, &n), -1);
    /* a launch reads it: held while the launch is prepared, even a forced placement waits */
    r->entry[a].held = true;
    r->entry[a].read = true;
    assert_int_equal(place(r, 0x2000000, 14 * MiB, true, ev, &n), -1);
    r->entry[a].held = false;
    int b = place(r, 0x2000000, 14 * MiB, false, ev, &n);
    assert_true(b >= 0);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0], (uint32_t)a);
    assert_int_equal(r->entry[b].offset, 0);
    assert_int_equal(tm_staging_find(r, 0x1000000), -1);
    free(r);
}

static void test_forced_placement_evicts_unread(void **state)
{
    (void)state;
    tm_staging_ring *r = new_ring(8 * MiB);
    uint32_t ev[TM_STAGING_MAX], n;
    int a = place(r, 0x1000000, 4 * MiB, false, ev, &n);
    int b = place(r, 0x2000000, 4 * MiB, false, ev, &n);
    assert_true(a >= 0 && b >= 0);
    /* a misprediction filled the ring: a launch that needs another weight now takes its room */
    assert_int_equal(place(r, 0x3000000, 6 * MiB, false, ev, &n), -1);
    int c = place(r, 0x3000000, 6 * MiB, true, ev, &n);
    assert_true(c >= 0);
    assert_int_equal(n, 2);
    assert_int_equal(tm_staging_find(r, 0x1000000), -1);
    assert_int_equal(tm_staging_find(r, 0x2000000), -1);
    assert_int_equal(r->head, 6 * MiB);
    free(r);
}

/* The sweep goes on past read extents and evicts only what it overlaps. */
static void test_the_sweep_evicts_only_what_it_overlaps(void **state)
{
    (void)state;
    tm_staging_ring *r = new_ring(16 * MiB);
    uint32_t ev[TM_STAGING_MAX], n;
    uint64_t key = 0x1000000;
    int e[4];
    for (int i = 0; i < 4; i++) {
        e[i] = place(r, key + (uint64_t)i * 0x1000000, 4 * MiB, false, ev, &n);
        assert_true(e[i] >= 0);
        r->entry[e[i]].read = true;
    }
    assert_int_equal(r->head, 0); /* the span is full: the head wrapped */
    int f = place(r, 0x9000000, 5 * MiB, false, ev, &n);
    assert_true(f >= 0);
    assert_int_equal(n, 2); /* [0, 5 MiB) overlaps the first two */
    assert_int_equal(r->entry[f].offset, 0);
    assert_true(tm_staging_find(r, key + 2 * 0x1000000) >= 0);
    assert_true(tm_staging_find(r, key + 3 * 0x1000000) >= 0);
    free(r);
}

static void test_drop_and_the_entry_limit(void **state)
{
    (void)state;
    tm_staging_ring *r = new_ring(2 * TM_STAGING_MAX * TM_STAGING_ALIGN);
    uint32_t ev[TM_STAGING_MAX], n;
    for (uint64_t i = 0; i < TM_STAGING_MAX; i++)
        assert_true(place(r, 0x100000000 + i * 0x10000, 1, false, ev, &n) >= 0);
    /* room in the span, but no free entry */
    assert_int_equal(place(r, 0x900000000, 1, false, ev, &n), -1);
    int last = tm_staging_find(r, 0x100000000 + (TM_STAGING_MAX - 1) * 0x10000);
    tm_staging_drop(r, last);
    assert_int_equal(tm_staging_find(r, 0x100000000 + (TM_STAGING_MAX - 1) * 0x10000), -1);
    assert_int_equal(r->used, TM_STAGING_MAX - 1);
    assert_int_equal(place(r, 0x900000000, 1, false, ev, &n), last);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extents_follow_the_head),
        cmocka_unit_test(test_unread_extents_are_never_overwritten),
        cmocka_unit_test(test_forced_placement_evicts_unread),
        cmocka_unit_test(test_the_sweep_evicts_only_what_it_overlaps),
        cmocka_unit_test(test_drop_and_the_entry_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
