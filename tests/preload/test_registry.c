/* test_registry.c — the sharded allocation registry: lookups by any inner address, range
 * edges, overlap refusal, exact-base removal, records spanning every shard, bulk take,
 * and many threads inserting, finding and removing at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>

#include "preload/mem/registry.h"

#define MIB ((uint64_t)1 << 20)

typedef struct record {
    tm_range range;
    int tag;
} record;

static void read_tag(tm_range *range, void *arg)
{
    *(int *)arg = ((const record *)range)->tag;
}

static int tag_at(uint64_t address)
{
    int tag = -1;
    tm_registry_find(address, read_tag, &tag);
    return tag;
}

static void test_find_inside_and_edges(void **state)
{
    (void)state;
    record a = { { 0x10000000, 4096 }, 1 }, b = { { 0x10001000, 100 }, 2 };
    assert_true(tm_registry_insert(&a.range));
    assert_true(tm_registry_insert(&b.range));
    assert_int_equal(tm_registry_count(), 2);
    assert_int_equal(tag_at(0x10000000), 1);
    assert_int_equal(tag_at(0x10000fff), 1);
    assert_int_equal(tag_at(0x10001000), 2);
    assert_int_equal(tag_at(0x10001063), 2);
    assert_int_equal(tag_at(0x10001064), -1); /* one past the end */
    assert_int_equal(tag_at(0x0fffffff), -1);
    /* removal is by the exact base only */
    assert_null(tm_registry_remove(0x10000010));
    assert_ptr_equal(tm_registry_remove(0x10000000), &a.range);
    assert_null(tm_registry_remove(0x10000000));
    assert_int_equal(tag_at(0x10000010), -1);
    assert_ptr_equal(tm_registry_remove(0x10001000), &b.range);
    assert_int_equal(tm_registry_count(), 0);
}

static void test_overlap_refused(void **state)
{
    (void)state;
    record a = { { 0x20000000, 8 * MIB }, 1 };
    record inside = { { 0x20100000, 4096 }, 2 }, straddle = { { 0x1ff00000, 2 * MIB }, 3 },
           empty = { { 0x30000000, 0 }, 4 }, wrap = { { UINT64_MAX - 10, 100 }, 5 };
    assert_true(tm_registry_insert(&a.range));
    assert_false(tm_registry_insert(&inside.range));
    assert_false(tm_registry_insert(&straddle.range));
    assert_false(tm_registry_insert(&empty.range));
    assert_false(tm_registry_insert(&wrap.range));
    assert_int_equal(tm_registry_count(), 1);
    /* a refused record left nothing behind in any shard */
    assert_int_equal(tag_at(0x1ff00000), -1);
    assert_int_equal(tag_at(0x20100000), 1);
    assert_ptr_equal(tm_registry_remove(0x20000000), &a.range);
}

static void test_record_in_every_shard(void **state)
{
    (void)state;
    /* 1 GiB: more granules than shards */
    record big = { { 0x40000000, 1024 * MIB }, 7 }, next = { { 0x80000000, 4096 }, 8 };
    assert_true(tm_registry_insert(&big.range));
    assert_true(tm_registry_insert(&next.range));
    for (uint64_t at = 0x40000000; at < 0x80000000; at += 3 * MIB + 17)
        assert_int_equal(tag_at(at), 7);
    assert_int_equal(tag_at(0x7fffffff), 7);
    assert_int_equal(tag_at(0x80000000), 8);
    assert_ptr_equal(tm_registry_remove(0x40000000), &big.range);
    for (uint64_t at = 0x40000000; at < 0x80000000; at += 5 * MIB)
        assert_int_equal(tag_at(at), -1);
    assert_ptr_equal(tm_registry_remove(0x80000000), &next.range);
}

static bool even_tag(const tm_range *range, void *arg)
{
    (void)arg;
    return ((const record *)range)->tag % 2 == 0;
}

static void test_take(void **state)
{
    (void)state;
    record r[10];
    for (int i = 0; i < 10; i++) {
        r[i] = (record){ { 0x100000000ull + (uint64_t)i * 3 * MIB, 3 * MIB }, i };
        assert_true(tm_registry_insert(&r[i].range));
    }
    size_t count;
    tm_range **taken = tm_registry_take(even_tag, NULL, &count);
    assert_int_equal(count, 5);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(((record *)taken[i])->tag % 2, 0);
    free(taken);
    assert_int_equal(tm_registry_count(), 5);
    assert_int_equal(tag_at(0x100000000ull), -1);
    assert_int_equal(tag_at(0x100000000ull + 3 * MIB), 1);
    tm_registry_forget_all();
    assert_int_equal(tm_registry_count(), 0);
    assert_int_equal(tag_at(0x100000000ull + 3 * MIB), -1);
}

/* ---------------------------------------------------------------- threads */

enum { THREADS = 8, PER_THREAD = 2000 };

typedef struct worker {
    int index;
    int errors;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    record *mine = calloc(PER_THREAD, sizeof *mine);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < PER_THREAD; i++) {
            /* interleaved ranges: neighbours belong to other threads */
            uint64_t base = 0x200000000000ull + ((uint64_t)i * THREADS + (uint64_t)w->index) * 3 * MIB;
            mine[i] = (record){ { base, (i % 3 + 1) * MIB }, w->index * PER_THREAD + i };
            if (!tm_registry_insert(&mine[i].range))
                w->errors++;
        }
        for (int i = 0; i < PER_THREAD; i++) {
            if (tag_at(mine[i].range.base + mine[i].range.size - 1) != mine[i].tag)
                w->errors++;
            if (tag_at(mine[i].range.base + mine[i].range.size) != -1 &&
                tag_at(mine[i].range.base + mine[i].range.size) == mine[i].tag)
                w->errors++;
        }
        for (int i = 0; i < PER_THREAD; i++)
            if (tm_registry_remove(mine[i].range.base) != &mine[i].range)
                w->errors++;
    }
    free(mine);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t tid[THREADS];
    worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker){ .index = i };
        pthread_create(&tid[i], NULL, work, &workers[i]);
    }
    int errors = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
        errors += workers[i].errors;
    }
    assert_int_equal(errors, 0);
    assert_int_equal(tm_registry_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_inside_and_edges),
        cmocka_unit_test(test_overlap_refused),
        cmocka_unit_test(test_record_in_every_shard),
        cmocka_unit_test(test_take),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests_name("allocation registry", tests, NULL, NULL);
}
