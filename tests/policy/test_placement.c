/* test_placement.c — the tier model, rules and the `size` policy: HBM filled to its limit
 * minus the reserve, spill to CXL then DDR, tier order, rules, the whole-allocation mode
 * of the pinned-host fallback, and the memory-info views. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "policy/place.h"
#include "policy/rules.h"
#include "policy/tier.h"
#include "policy/units.h"

#define CHUNK (2 * TM_MIB)

/* HBM 1 GiB (reserve 64 MiB), CXL 512 MiB on node 1, DDR 256 MiB on node 0. */
static tm_tiers make_tiers(void)
{
    tm_tiers t;
    memset(&t, 0, sizeof t);
    t.tier[TM_TIER_HBM] = (tm_tier_state){ .present = true, .node = -1, .limit = TM_GIB };
    t.tier[TM_TIER_CXL] = (tm_tier_state){ .present = true, .node = 1, .limit = 512 * TM_MIB };
    t.tier[TM_TIER_DDR] = (tm_tier_state){ .present = true, .node = 0, .limit = 256 * TM_MIB };
    t.hbm_reserve = 64 * TM_MIB;
    return t;
}

static tm_policy make_policy(void)
{
    tm_policy p;
    memset(&p, 0, sizeof p);
    p.kind = TM_POLICY_SIZE;
    p.order = tm_default_tier_order;
    p.min_tiered = 2 * TM_MIB;
    p.chunk_size = CHUNK;
    p.lower_tiers_share_range = true;
    return p;
}

/* Adds (sign +1) or removes (-1) a plan's chunks from the tiers' usage, as the interposer does. */
static void account(tm_tiers *t, const tm_plan *plan, int sign)
{
    for (int tier = 0; tier < TM_TIER_COUNT; tier++)
        t->tier[tier].used += (uint64_t)sign * plan->per_tier[tier] * plan->chunk_size;
}

static tm_plan place_ok(const tm_policy *p, tm_tiers *t, uint64_t size)
{
    tm_plan plan;
    tm_alloc_desc a = { .size = size };
    assert_true(tm_policy_place(p, t, &a, &plan));
    account(t, &plan, +1);
    return plan;
}

/* ---------------------------------------------------------------- tier model */

static void test_tier_names_and_order(void **state)
{
    (void)state;
    tm_tier_id id;
    assert_true(tm_tier_from_name("CXL", 3, &id));
    assert_int_equal(id, TM_TIER_CXL);
    assert_false(tm_tier_from_name("cx", 2, &id));
    assert_string_equal(tm_tier_name(TM_TIER_DDR), "ddr");

    tm_tier_order o;
    assert_true(tm_tier_order_parse("ddr,hbm", &o));
    assert_int_equal(o.count, 2);
    assert_int_equal(o.tier[0], TM_TIER_DDR);
    assert_false(tm_tier_order_has(&o, TM_TIER_CXL));
    char buf[32];
    assert_string_equal(tm_tier_order_format(&o, buf, sizeof buf), "ddr,hbm");
    assert_false(tm_tier_order_parse("", &o));
    assert_false(tm_tier_order_parse("hbm,cxl,ddr,hbm", &o));
    assert_false(tm_tier_order_parse("hbm ,cxl", &o));
}

static void test_room(void **state)
{
    (void)state;
    tm_tiers t = make_tiers();
    assert_int_equal(tm_tier_room(&t, TM_TIER_HBM), TM_GIB - 64 * TM_MIB);
    t.tier[TM_TIER_HBM].used = 1000 * TM_MIB;
    assert_int_equal(tm_tier_room(&t, TM_TIER_HBM), 0); /* inside the reserve */
    t.tier[TM_TIER_HBM].used = 2 * TM_GIB;               /* over the limit: still no room */
    assert_int_equal(tm_tier_room(&t, TM_TIER_HBM), 0);
    t.tier[TM_TIER_HBM].used = 500 * TM_MIB;
    assert_int_equal(tm_tier_room(&t, TM_TIER_HBM), 460 * TM_MIB);
    t.tier[TM_TIER_CXL].present = false;
    assert_int_equal(tm_tier_room(&t, TM_TIER_CXL), 0);
    /* the default reserve: 1/64 of the limit in whole chunks */
    assert_int_equal(tm_default_hbm_reserve(16 * TM_GIB, CHUNK), 256 * TM_MIB);
    assert_int_equal(tm_default_hbm_reserve(100 * TM_MIB, CHUNK), 2 * TM_MIB);
}

static void test_meminfo_views(void **state)
{
    (void)state;
    tm_tiers t = make_tiers();
    t.tier[TM_TIER_HBM].used = 300 * TM_MIB;
    t.tier[TM_TIER_CXL].used = 100 * TM_MIB;
    uint64_t free, total;
    /* the device has 16 GiB, 15 GiB free; the limit is 1 GiB */
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_PHYSICAL, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(total, TM_GIB);
    assert_int_equal(free, TM_GIB - 300 * TM_MIB - 64 * TM_MIB); /* the reserve is not for chunks */
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_VIRTUAL, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(total, TM_GIB + 512 * TM_MIB + 256 * TM_MIB);
    assert_int_equal(free, (TM_GIB - 300 * TM_MIB) + 412 * TM_MIB + 256 * TM_MIB);
    /* the driver has less free than the limit leaves: its answer wins */
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_PHYSICAL, 100 * TM_MIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, 100 * TM_MIB - 64 * TM_MIB);
    /* every total comes from the limits alone: usage never moves it */
    for (tm_meminfo_view view = TM_MEMINFO_PHYSICAL; view <= TM_MEMINFO_AVAILABLE; view++) {
        tm_meminfo(&t, &tm_default_tier_order, view, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
        assert_int_equal(total, tm_meminfo_total(&t, &tm_default_tier_order, view, 16 * TM_GIB));
        tm_tiers idle = make_tiers();
        assert_int_equal(total, tm_meminfo_total(&idle, &tm_default_tier_order, view, 16 * TM_GIB));
    }
    /* a tier left out of the order is not part of the virtual view */
    tm_tier_order hbm_ddr;
    assert_true(tm_tier_order_parse("hbm,ddr", &hbm_ddr));
    tm_meminfo(&t, &hbm_ddr, TM_MEMINFO_VIRTUAL, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(total, TM_GIB + 256 * TM_MIB);
    /* available: the HBM size, and free counts chunks that can move down */
    t.hbm_chunked = 200 * TM_MIB;
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(total, TM_GIB);
    assert_int_equal(free, TM_GIB - 100 * TM_MIB);
    /* HBM full of chunks: free is what the lower tiers can take of them, capped at the total */
    t.tier[TM_TIER_HBM].used = TM_GIB;
    t.hbm_chunked = TM_GIB;
    tm_meminfo(&t, &hbm_ddr, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, 256 * TM_MIB);
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, 412 * TM_MIB + 256 * TM_MIB);
    t.tier[TM_TIER_CXL].limit = 4 * TM_GIB; /* more room below than HBM holds: the total */
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, TM_GIB);
    /* no lower tier: nothing can move down */
    tm_tier_order hbm_only;
    assert_true(tm_tier_order_parse("hbm", &hbm_only));
    t.tier[TM_TIER_CXL].limit = 512 * TM_MIB;
    tm_meminfo(&t, &hbm_only, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, 0);
    /* HBM full of what cannot move (no chunks): a new allocation spills, so free reads the
     * lower tiers' room up to 1/8 of the total, never 0 while they have room */
    t.hbm_chunked = 0;
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, TM_GIB / TM_MEMINFO_SPILL_SHARE);
    t.tier[TM_TIER_CXL].used = t.tier[TM_TIER_CXL].limit;
    t.tier[TM_TIER_DDR].used = t.tier[TM_TIER_DDR].limit - 10 * TM_MIB; /* less room than the share */
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, 10 * TM_MIB);
    t.tier[TM_TIER_DDR].used = t.tier[TM_TIER_DDR].limit; /* no room anywhere: nothing is free */
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_AVAILABLE, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, 0);
    /* physical keeps reading what HBM has */
    t.tier[TM_TIER_DDR].used = 0;
    tm_meminfo(&t, &tm_default_tier_order, TM_MEMINFO_PHYSICAL, 15 * TM_GIB, 16 * TM_GIB, &free, &total);
    assert_int_equal(free, 0);
}

/* ---------------------------------------------------------------- rules */

static void test_rules(void **state)
{
    (void)state;
    tm_rules r;
    assert_true(tm_rules_parse("size>=1G=ddr,size<4M=cxl,size>=64M=hbm", &r));
    assert_int_equal(r.count, 3);
    tm_alloc_desc big = { .size = 2 * TM_GIB }, small = { .size = TM_MIB }, mid = { .size = 100 * TM_MIB },
                  other = { .size = 10 * TM_MIB };
    assert_int_equal(tm_rules_match(&r, &big)->tier, TM_TIER_DDR); /* first match wins */
    assert_int_equal(tm_rules_match(&r, &small)->tier, TM_TIER_CXL);
    assert_int_equal(tm_rules_match(&r, &mid)->tier, TM_TIER_HBM);
    assert_null(tm_rules_match(&r, &other));
    tm_alloc_desc edge = { .size = TM_GIB };
    assert_int_equal(tm_rules_match(&r, &edge)->tier, TM_TIER_DDR); /* >= is inclusive */
    edge.size = 4 * TM_MIB;
    assert_null(tm_rules_match(&r, &edge));                          /* < is strict */

    char many[2048] = "";
    for (int i = 0; i < TM_RULES_MAX + 1; i++)
        strcat(many, i ? ",size>=1M=hbm" : "size>=1M=hbm");
    assert_false(tm_rules_parse(many, &r));
    assert_false(tm_rules_parse("size>=1M=hbm,", &r));
    assert_false(tm_rules_parse("=hbm", &r));
    assert_false(tm_rules_parse("size>=-1M=hbm", &r));
}

/* ---------------------------------------------------------------- placement */

static void test_small_stays_whole(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    tm_alloc_desc a = { .size = TM_MIB };
    assert_false(tm_policy_wants_chunks(&p, &a));
    a.size = 2 * TM_MIB;
    assert_true(tm_policy_wants_chunks(&p, &a));
    /* a rule may send a small allocation to a lower tier: then it is chunked */
    assert_true(tm_rules_parse("size<1M=cxl", &p.rules));
    a.size = 4096;
    assert_true(tm_policy_wants_chunks(&p, &a));
    assert_true(tm_rules_parse("size<1M=hbm", &p.rules));
    assert_false(tm_policy_wants_chunks(&p, &a));
    assert_false(tm_policy_wants_plain(&p, &a));
    /* `plain` keeps even a large allocation out of chunks (legacy IPC with any process) */
    assert_true(tm_rules_parse("size>=64M=plain,size>=1M=cxl", &p.rules));
    a.size = 64 * TM_MIB;
    assert_true(tm_policy_wants_plain(&p, &a));
    assert_false(tm_policy_wants_chunks(&p, &a));
    a.size = 2 * TM_MIB;
    assert_false(tm_policy_wants_plain(&p, &a));
    assert_true(tm_policy_wants_chunks(&p, &a));
}

static void test_fill_hbm_then_spill(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    tm_tiers t = make_tiers();
    /* 900 MiB fits HBM (960 MiB room) */
    tm_plan a = place_ok(&p, &t, 900 * TM_MIB);
    assert_int_equal(a.chunks, 450);
    assert_int_equal(a.run_count, 1);
    assert_int_equal(a.per_tier[TM_TIER_HBM], 450);
    /* the next 200 MiB: 60 MiB left above the reserve, the rest spills to CXL */
    tm_plan b = place_ok(&p, &t, 200 * TM_MIB);
    assert_int_equal(b.per_tier[TM_TIER_HBM], 30);
    assert_int_equal(b.per_tier[TM_TIER_CXL], 70);
    assert_int_equal(b.run_count, 2);
    assert_int_equal(b.run[0].tier, TM_TIER_HBM); /* the HBM part is the head */
    assert_int_equal(tm_plan_chunk_tier(&b, 29), TM_TIER_HBM);
    assert_int_equal(tm_plan_chunk_tier(&b, 30), TM_TIER_CXL);
    assert_int_equal(tm_plan_chunk_tier(&b, 100), TM_TIER_COUNT);
    /* 600 MiB: CXL has 372 MiB left, DDR takes the rest */
    tm_plan c = place_ok(&p, &t, 600 * TM_MIB);
    assert_int_equal(c.per_tier[TM_TIER_HBM], 0);
    assert_int_equal(c.per_tier[TM_TIER_CXL], 186);
    assert_int_equal(c.per_tier[TM_TIER_DDR], 114);
    /* nothing can hold 100 MiB more: DDR has 28 MiB */
    tm_plan d;
    tm_alloc_desc big = { .size = 100 * TM_MIB };
    assert_false(tm_policy_place(&p, &t, &big, &d));
    /* the reserve is still free for small allocations */
    assert_int_equal(t.tier[TM_TIER_HBM].used, TM_GIB - 64 * TM_MIB);
    /* freeing gives the room back */
    account(&t, &a, -1);
    tm_plan e = place_ok(&p, &t, 100 * TM_MIB);
    assert_int_equal(e.per_tier[TM_TIER_HBM], 50);
}

static void test_size_rounds_up_to_chunks(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    tm_tiers t = make_tiers();
    tm_plan a = place_ok(&p, &t, 2 * TM_MIB + 1);
    assert_int_equal(a.chunks, 2);
    assert_int_equal(t.tier[TM_TIER_HBM].used, 4 * TM_MIB);
}

static void test_tier_order(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    tm_tiers t = make_tiers();
    assert_true(tm_tier_order_parse("ddr,cxl", &p.order)); /* HBM gets no tiered chunks */
    tm_plan a = place_ok(&p, &t, 300 * TM_MIB);
    assert_int_equal(a.per_tier[TM_TIER_HBM], 0);
    assert_int_equal(a.per_tier[TM_TIER_DDR], 128);
    assert_int_equal(a.per_tier[TM_TIER_CXL], 22);
    assert_int_equal(a.run[0].tier, TM_TIER_DDR);
}

static void test_absent_tier_skipped(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    tm_tiers t = make_tiers();
    t.tier[TM_TIER_CXL].present = false;
    tm_plan a = place_ok(&p, &t, 1100 * TM_MIB);
    assert_int_equal(a.per_tier[TM_TIER_HBM], 480);
    assert_int_equal(a.per_tier[TM_TIER_CXL], 0);
    assert_int_equal(a.per_tier[TM_TIER_DDR], 70);
}

static void test_rule_puts_its_tier_first(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    tm_tiers t = make_tiers();
    assert_true(tm_rules_parse("size>=100M=cxl", &p.rules));
    tm_plan a = place_ok(&p, &t, 600 * TM_MIB); /* CXL holds 512, the rest follows the order */
    assert_int_equal(a.per_tier[TM_TIER_CXL], 256);
    assert_int_equal(a.per_tier[TM_TIER_HBM], 44);
    assert_int_equal(a.run[0].tier, TM_TIER_CXL);
    assert_int_equal(a.run[1].tier, TM_TIER_HBM);
    tm_plan b = place_ok(&p, &t, 50 * TM_MIB); /* no rule matches: HBM first */
    assert_int_equal(b.per_tier[TM_TIER_HBM], 25);
}

static void test_whole_mode_for_pinned_host_fallback(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    p.lower_tiers_share_range = false;
    tm_tiers t = make_tiers();
    tm_plan a = place_ok(&p, &t, 900 * TM_MIB); /* fits HBM whole */
    assert_int_equal(a.per_tier[TM_TIER_HBM], 450);
    /* 200 MiB no longer fits HBM whole: all of it goes to the host tiers */
    tm_plan b = place_ok(&p, &t, 200 * TM_MIB);
    assert_int_equal(b.per_tier[TM_TIER_HBM], 0);
    assert_int_equal(b.per_tier[TM_TIER_CXL], 100);
    /* host tiers may still share: CXL then DDR */
    tm_plan c = place_ok(&p, &t, 400 * TM_MIB);
    assert_int_equal(c.per_tier[TM_TIER_CXL], 156);
    assert_int_equal(c.per_tier[TM_TIER_DDR], 44);
    /* a small piece still fits HBM whole */
    tm_plan d = place_ok(&p, &t, 40 * TM_MIB);
    assert_int_equal(d.per_tier[TM_TIER_HBM], 20);
    /* host group first when a rule names a host tier */
    assert_true(tm_rules_parse("size>=1M=ddr", &p.rules));
    tm_plan e = place_ok(&p, &t, 10 * TM_MIB);
    assert_int_equal(e.per_tier[TM_TIER_DDR], 5);
    assert_int_equal(e.run_count, 1);
}

static void test_whole_placement_for_handles(void **state)
{
    (void)state;
    tm_policy p = make_policy();
    tm_tiers t = make_tiers();
    tm_tier_id tier;
    tm_alloc_desc a = { .size = 900 * TM_MIB };
    assert_true(tm_policy_place_whole(&p, &t, &a, true, &tier));
    assert_int_equal(tier, TM_TIER_HBM);
    t.tier[TM_TIER_HBM].used = 900 * TM_MIB;
    a.size = 100 * TM_MIB; /* 60 MiB left in HBM: the whole handle goes to CXL */
    assert_true(tm_policy_place_whole(&p, &t, &a, true, &tier));
    assert_int_equal(tier, TM_TIER_CXL);
    assert_false(tm_policy_place_whole(&p, &t, &a, false, &tier)); /* HBM only */
    a.size = 600 * TM_MIB; /* no single tier holds it */
    assert_false(tm_policy_place_whole(&p, &t, &a, true, &tier));
    a.size = 300 * TM_MIB;
    assert_true(tm_rules_parse("size>=200M=ddr", &p.rules));
    assert_true(tm_policy_place_whole(&p, &t, &a, true, &tier));
    assert_int_equal(tier, TM_TIER_CXL); /* DDR (256 MiB) is too small: next in order */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tier_names_and_order),
        cmocka_unit_test(test_room),
        cmocka_unit_test(test_meminfo_views),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_small_stays_whole),
        cmocka_unit_test(test_fill_hbm_then_spill),
        cmocka_unit_test(test_size_rounds_up_to_chunks),
        cmocka_unit_test(test_tier_order),
        cmocka_unit_test(test_absent_tier_skipped),
        cmocka_unit_test(test_rule_puts_its_tier_first),
        cmocka_unit_test(test_whole_mode_for_pinned_host_fallback),
        cmocka_unit_test(test_whole_placement_for_handles),
    };
    return cmocka_run_group_tests_name("policy placement", tests, NULL, NULL);
}
