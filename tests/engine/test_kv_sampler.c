/* test_kv_sampler.c — block bookkeeping of the paged KV cache (tables, reuse, a full
 * pool, context limits, the prefix cache's sharing and LRU eviction) and the sampler (greedy ties and NaN, top-k, top-p, seeds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_cache.h"
#include "engine/kv_prefix.h"
#include "engine/sampler.h"

/* A pool of n blocks without device memory: only the block bookkeeping. */
static kv_cache host_pool(int64_t n, int32_t block_size)
{
    kv_cache kv = {0};
    kv.layout.block_size = block_size;
    kv.layout.n_blocks = n;
    kv.free_blocks = malloc((size_t)n * sizeof *kv.free_blocks);
    for (int64_t i = 0; i < n; i++) kv.free_blocks[i] = (int32_t)(n - 1 - i);
    kv.n_free = n;
    return kv;
}

static void test_block_tables(void **state)
{
    (void)state;
    kv_cache kv = host_pool(8, 4);
    kv_sequence a, b;
    char err[256];
    assert_int_equal(kv_sequence_init(&a, 20, 4), 0);
    assert_int_equal(kv_sequence_init(&b, 20, 4), 0);
    assert_int_equal(a.max_blocks, 5);
    assert_int_equal(kv_sequence_grow(&kv, &a, 5, 0, err, sizeof err), 0); /* 2 blocks */
    assert_int_equal(kv_sequence_grow(&kv, &b, 4, 1, err, sizeof err), 0); /* 1 block */
    assert_int_equal(kv_sequence_grow(&kv, &a, 8, 0, err, sizeof err), 0); /* still 2 */
    assert_int_equal(a.n_blocks, 2);
    assert_int_equal(b.n_blocks, 1);
    assert_int_equal(kv.n_free, 5);
    /* no block is shared */
    assert_int_not_equal(a.block_table[0], a.block_table[1]);
    assert_int_not_equal(a.block_table[0], b.block_table[0]);
    assert_int_not_equal(a.block_table[1], b.block_table[0]);
    /* position 6 of a lives in its second block at offset 2 */
    assert_int_equal(tm_kv_slot(a.block_table, 6, 4), a.block_table[1] * 4 + 2);
    /* a released sequence's blocks serve the next */
    kv_sequence_release(&kv, &a);
    assert_int_equal(kv.n_free, 7);
    assert_int_equal(kv_sequence_grow(&kv, &b, 20, 1, err, sizeof err), 0);
    assert_int_equal(b.n_blocks, 5);
    /* past the context */
    assert_int_equal(kv_sequence_grow(&kv, &b, 21, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "past the context of 20 tokens"));
    kv_sequence_free(&a);
    kv_sequence_free(&b);
    free(kv.free_blocks);
}

static void test_pool_full(void **state)
{
    (void)state;
    kv_cache kv = host_pool(3, 16);
    kv_sequence s;
    char err[256];
    assert_int_equal(kv_sequence_init(&s, 1000, 16), 0);
    assert_int_equal(kv_sequence_grow(&kv, &s, 48, 2, err, sizeof err), 0);
    assert_int_equal(kv_sequence_grow(&kv, &s, 49, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "KV cache full: sequence 2 needs a block for position 48, and all 3 blocks of 16 tokens are in use"));
    assert_int_equal(s.n_blocks, 3); /* nothing half-done */
    kv_sequence_release(&kv, &s);
    assert_int_equal(kv.n_free, 3);
    kv_sequence_free(&s);
    free(kv.free_blocks);
}

/* Two requests sharing 2 full blocks of prefix: the second gets them from the cache, never
 * the partial block nor the last token; finished requests' blocks stay until evicted,
 * least recently used first. */
static void test_prefix_cache(void **state)
{
    (void)state;
    char err[256];
    kv_cache kv = host_pool(6, 4);
    assert_int_equal(kv_prefix_enable(&kv), 0);
    int32_t a_ids[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, b_ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 42};
    kv_sequence a, b, c;
    assert_int_equal(kv_sequence_init(&a, 64, 4), 0);
    assert_int_equal(kv_sequence_init(&b, 64, 4), 0);
    assert_int_equal(kv_sequence_init(&c, 64, 4), 0);
    assert_int_equal(kv_prefix_match(&kv, &a, a_ids, 10), 0); /* empty cache */
    assert_int_equal(kv_sequence_grow(&kv, &a, 10, 0, err, sizeof err), 0); /* 3 blocks */
    kv_prefix_publish(&kv, &a, a_ids, 10);
    kv_prefix_stats st;
    kv_prefix_get_stats(&kv, &st);
    assert_int_equal(st.cached, 2); /* the partial third block is not named */
    assert_int_equal(kv_prefix_match(&kv, &b, b_ids, 9), 8);
    assert_int_equal(b.len, 8);
    assert_int_equal(b.block_table[0], a.block_table[0]);
    assert_int_equal(b.block_table[1], a.block_table[1]);
    assert_int_equal(kv_sequence_grow(&kv, &b, 9, 1, err, sizeof err), 0);
    assert_int_not_equal(b.block_table[2], a.block_table[2]);
    /* the same 8 tokens alone: one block, the second must compute token 8's logits */
    assert_int_equal(kv_prefix_match(&kv, &c, b_ids, 8), 4);
    kv_sequence_release(&kv, &c);
    kv_sequence_release(&kv, &a);
    kv_prefix_get_stats(&kv, &st);
    assert_int_equal(st.idle, 0); /* b still holds both cached blocks */
    kv_sequence_release(&kv, &b);
    kv_prefix_get_stats(&kv, &st);
    assert_int_equal(st.idle, 2);
    assert_int_equal(kv_prefix_available(&kv), 6);
    /* a pool-wide sequence evicts both, and later lookups miss */
    assert_int_equal(kv_sequence_grow(&kv, &c, 24, 2, err, sizeof err), 0);
    kv_prefix_get_stats(&kv, &st);
    assert_int_equal(st.cached, 0);
    assert_int_equal(st.evictions, 2);
    assert_int_equal(kv_sequence_grow(&kv, &c, 25, 2, err, sizeof err), -1);
    kv_sequence_release(&kv, &c);
    assert_int_equal(kv_prefix_match(&kv, &a, a_ids, 10), 0);
    kv_prefix_get_stats(&kv, &st);
    assert_int_equal(st.hit_tokens, 12);
    assert_int_equal(st.query_tokens, 37);
    kv_sequence_free(&a);
    kv_sequence_free(&b);
    kv_sequence_free(&c);
    kv_prefix_disable(&kv);
    free(kv.free_blocks);
}

static void test_dtype_names(void **state)
{
    (void)state;
    int32_t d;
    assert_int_equal(kv_dtype_parse("fp8_e5m2", &d), 0);
    assert_int_equal(d, TM_KV_FP8_E5M2);
    assert_string_equal(kv_dtype_name(TM_KV_FP8_E4M3), "fp8_e4m3");
    assert_int_equal(kv_dtype_parse("fp8", &d), -1);
}

static void test_greedy(void **state)
{
    (void)state;
    float logits[5] = {1.0f, NAN, 3.0f, 3.0f, -INFINITY};
    assert_int_equal(sampler_argmax(logits, 5), 2); /* lowest id on ties, NaN never */
    sampler s;
    assert_int_equal(sampler_init(&s, 5, 0.0f, 40, 0.95f, 1), 0);
    assert_int_equal(sampler_pick(&s, logits), 2);
    sampler_free(&s);
}

static void test_sampling(void **state)
{
    (void)state;
    enum { V = 64 };
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = (float)(i % 7) * 0.5f;
    sampler a, b, k1, p0;
    assert_int_equal(sampler_init(&a, V, 1.0f, 0, 1.0f, 42), 0);
    assert_int_equal(sampler_init(&b, V, 1.0f, 0, 1.0f, 42), 0);
    assert_int_equal(sampler_init(&k1, V, 1.0f, 1, 1.0f, 7), 0);
    assert_int_equal(sampler_init(&p0, V, 1.0f, 0, 0.0001f, 7), 0);
    int distinct[V] = {0}, n_distinct = 0;
    for (int i = 0; i < 200; i++) {
        int32_t x = sampler_pick(&a, logits);
        assert_int_equal(x, sampler_pick(&b, logits)); /* same seed, same draws */
        assert_true(x >= 0 && x < V);
        if (!distinct[x]++) n_distinct++;
        assert_int_equal(sampler_pick(&k1, logits), sampler_argmax(logits, V)); /* top-k 1 is greedy */
        assert_int_equal(sampler_pick(&p0, logits), sampler_argmax(logits, V)); /* tiny top-p too */
    }
    assert_true(n_distinct > 5); /* temperature 1 over a flat-ish distribution varies */
    sampler_free(&a);
    sampler_free(&b);
    sampler_free(&k1);
    sampler_free(&p0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_tables),
        cmocka_unit_test(test_pool_full),
        cmocka_unit_test(test_prefix_cache),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_sampling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
