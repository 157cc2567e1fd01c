/* test_rebalance.c — the heat policy's pass on synthetic heat, tier sizes and budgets:
 * no move when everything is in HBM, promotions into free room, swaps only when clearly
 * hotter, the worth of weights that stream, hysteresis, budgets, whole-allocation against
 * chunk moves, rules that keep chunks in a tier, and the tier order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "policy/rebalance.h"
#include "policy/units.h"

#define MAX_CHUNKS 64

typedef struct fake_alloc {
    uint8_t tier[MAX_CHUNKS];
    double heat[MAX_CHUNKS];
    uint32_t idle[MAX_CHUNKS];
} fake_alloc;

/* An allocation of `chunks` chunks all in `tier`, all of heat `heat`, never moved. */
static tm_rebalance_alloc make_alloc(fake_alloc *f, uint64_t chunks, tm_tier_id tier, double heat)
{
    for (uint64_t i = 0; i < chunks; i++) {
        f->tier[i] = (uint8_t)tier;
        f->heat[i] = heat;
        f->idle[i] = TM_REBALANCE_NEVER;
    }
    return (tm_rebalance_alloc){ .chunks = chunks, .tier = f->tier, .heat = f->heat, .idle = f->idle };
}

static tm_rebalance_input make_input(const tm_rebalance_alloc *allocs, size_t count, uint64_t hbm_room,
                                     uint64_t ddr_room, uint64_t budget)
{
    return (tm_rebalance_input){
        .alloc = allocs, .alloc_count = count,
        .room = { [TM_TIER_HBM] = hbm_room, [TM_TIER_CXL] = 0, [TM_TIER_DDR] = ddr_room },
        .budget = budget, .cooldown = 4,
    };
}

static void test_everything_in_hbm_moves_nothing(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 8, TM_TIER_HBM, 0.9), make_alloc(&f[1], 8, TM_TIER_HBM, 0.0) };
    tm_rebalance_input in = make_input(a, 2, 100, 100, 1000);
    tm_rebalance_move out[16];
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
}

static void test_free_room_takes_the_hottest(void **state)
{
    (void)state;
    fake_alloc f[1];
    tm_rebalance_alloc a[1] = { make_alloc(&f[0], 6, TM_TIER_DDR, 0.0) };
    f[0].heat[1] = 0.3;
    f[0].heat[4] = 0.9;
    f[0].heat[5] = 0.8;
    tm_rebalance_input in = make_input(a, 1, 2, 10, 100); /* room for two in HBM */
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].first, 4); /* chunks 4 and 5, one run */
    assert_int_equal(out[0].count, 2);
    assert_int_equal(out[0].to, TM_TIER_HBM);
    assert_false(out[0].whole);

    in.room[TM_TIER_HBM] = 10; /* room for all: chunks without heat still stay */
    n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].first, 1);
    assert_int_equal(out[0].count, 1);
    assert_int_equal(out[1].first, 4);
}

/* A cold allocation that loaded first holds HBM; a hot one spilled: both move whole. */
static void test_uniform_allocations_swap_whole(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 4, TM_TIER_HBM, 0.05), make_alloc(&f[1], 4, TM_TIER_DDR, 0.9) };
    tm_rebalance_input in = make_input(a, 2, 0, 10, 100);
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].alloc, 0);
    assert_int_equal(out[0].to, TM_TIER_DDR);
    assert_true(out[0].whole);
    assert_int_equal(out[0].count, 4);
    assert_int_equal(out[1].alloc, 1);
    assert_int_equal(out[1].to, TM_TIER_HBM);
    assert_true(out[1].whole);
}

/* The large-vocabulary case: token_embd (one row per token: cold) took HBM first, layer
 * weights (read whole every step: hot) spilled. The embedding goes down, layers up, as
 * far as the lower tier has room for what comes down. */
static void test_embedding_down_layers_up(void **state)
{
    (void)state;
    fake_alloc f[3];
    tm_rebalance_alloc a[3] = {
        make_alloc(&f[0], 10, TM_TIER_HBM, 0.02), /* token_embd */
        make_alloc(&f[1], 6, TM_TIER_HBM, 1.0),   /* layer 0 */
        make_alloc(&f[2], 6, TM_TIER_DDR, 1.0),   /* layer 1 */
    };
    tm_rebalance_input in = make_input(a, 3, 0, 4, 100);
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].alloc, 0);
    assert_int_equal(out[0].to, TM_TIER_DDR);
    assert_int_equal(out[0].count, 6); /* room 4, and each chunk that comes up frees one */
    assert_int_equal(out[1].alloc, 2);
    assert_int_equal(out[1].to, TM_TIER_HBM);
    assert_true(out[1].whole);
}

/* One launch credits a weight matrix and the buffer it writes alike: of heat equal within
 * the margin, the chunks holding model-file data come up first, whatever their address
 * order. */
static void test_equal_heat_weights_first(void **state)
{
    (void)state;
    fake_alloc f[3];
    tm_rebalance_alloc a[3] = {
        make_alloc(&f[0], 4, TM_TIER_DDR, 1.0),  /* logits */
        make_alloc(&f[1], 8, TM_TIER_DDR, 1.0),  /* output.weight */
        make_alloc(&f[2], 5, TM_TIER_HBM, 0.01), /* token_embd */
    };
    a[1].loaded = a[2].loaded = true;
    tm_rebalance_input in = make_input(a, 3, 0, 100, 100);
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].alloc, 1);
    assert_int_equal(out[0].first, 0);
    assert_int_equal(out[0].count, 5);
    assert_int_equal(out[0].to, TM_TIER_HBM);
    assert_int_equal(out[1].alloc, 2);
    assert_true(out[1].whole);
    assert_int_equal(out[1].to, TM_TIER_DDR);

    /* within the margin the weights still come first; beyond it, the hotter buffer */
    for (int i = 0; i < 4; i++)
        f[0].heat[i] = 1.2;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2);
    assert_int_equal(out[0].alloc, 1);
    for (int i = 0; i < 4; i++)
        f[0].heat[i] = 1.3;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 3);
    assert_int_equal(out[0].alloc, 0);
    assert_true(out[0].whole);
    assert_int_equal(out[1].alloc, 1);
    assert_int_equal(out[1].count, 1);
}

/* While the ring streams spilled weights, a byte of them below HBM costs the link less than
 * a byte of KV cache read in place: KV as hot as the weights in HBM takes their place, and
 * KV somewhat colder does not. Nothing streaming, equal heat moves nothing. */
static void test_streamed_weights_give_way(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = {
        make_alloc(&f[0], 4, TM_TIER_DDR, 1.0), /* a KV pool, read every step */
        make_alloc(&f[1], 4, TM_TIER_HBM, 1.0), /* weights, read every step */
    };
    a[1].loaded = true;
    tm_rebalance_input in = make_input(a, 2, 0, 100, 100);
    tm_rebalance_move out[16];
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    in.streamed_cost = 1.0;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);

    in.streamed_cost = TM_REBALANCE_STREAMED_COST;
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].alloc, 0);
    assert_true(out[0].whole);
    assert_int_equal(out[0].to, TM_TIER_HBM);
    assert_int_equal(out[1].alloc, 1);
    assert_true(out[1].whole);
    assert_int_equal(out[1].to, TM_TIER_DDR);

    /* the swap needs the margin over the weights' streamed worth (0.7 x 1.25 + 0.02) */
    for (int i = 0; i < 4; i++)
        f[0].heat[i] = 0.88;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    for (int i = 0; i < 4; i++)
        f[0].heat[i] = 0.9;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2);

    /* weights below HBM rank by their streamed worth too: KV comes up first */
    for (int i = 0; i < 4; i++) {
        f[1].tier[i] = TM_TIER_DDR;
        f[0].heat[i] = 0.9;
    }
    in.room[TM_TIER_HBM] = 4;
    n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].alloc, 0);
    assert_true(out[0].whole);
    in.streamed_cost = 0;
    n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].alloc, 1);
}

/* Exactly two moves, in allocation order: `first` to `to_first`, `second` to `to_second`. */
static void assert_two_moves(const tm_rebalance_move *out, int n, size_t first, tm_tier_id to_first, size_t second,
                             tm_tier_id to_second)
{
    assert_int_equal(n, 2);
    assert_int_equal(out[0].alloc, first);
    assert_int_equal(out[0].to, to_first);
    assert_int_equal(out[1].alloc, second);
    assert_int_equal(out[1].to, to_second);
}

/* While weights stream, a streaming weight never displaces another, however their heat per
 * byte differs (how kernels read a matrix sets it, not how often): each crosses the link
 * once a step whichever stays. It still displaces what does not stream (a gathered
 * embedding), and KV cache as hot as the hottest chunk still displaces streaming weights. */
static void test_streaming_weights_never_swap(void **state)
{
    (void)state;
    fake_alloc f[3];
    tm_rebalance_alloc a[3] = {
        make_alloc(&f[0], 4, TM_TIER_DDR, 1.5),  /* w_q: matrix read whole, below HBM */
        make_alloc(&f[1], 4, TM_TIER_HBM, 0.14), /* w_2: matrix read whole, in HBM */
        make_alloc(&f[2], 4, TM_TIER_HBM, 0.01), /* token_embd: gathered, in HBM */
    };
    a[0].loaded = a[1].loaded = a[2].loaded = true;
    a[0].streams = a[1].streams = true;
    tm_rebalance_input in = make_input(a, 3, 0, 100, 100);
    in.streamed_cost = TM_REBALANCE_STREAMED_COST;
    in.weights_stay = true;
    tm_rebalance_move out[16];
    /* the embedding goes down, w_q comes up; w_2 stays (moves come in allocation order) */
    assert_two_moves(out, tm_rebalance_plan(&in, out, 16), 0, TM_TIER_HBM, 2, TM_TIER_DDR);
    assert_true(out[0].whole && out[1].whole);

    /* the embedding below HBM already: nothing moves */
    for (int i = 0; i < 4; i++)
        f[2].tier[i] = TM_TIER_DDR;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);

    /* nothing streaming (the ring declined): heat decides again */
    in.streamed_cost = 1.0;
    in.weights_stay = false;
    assert_two_moves(out, tm_rebalance_plan(&in, out, 16), 0, TM_TIER_HBM, 1, TM_TIER_DDR);

    /* a streaming weight ranks with the hottest chunk (1.5 here, whatever its own heat): KV
     * cache colder than that stays below, KV read as much as the hottest displaces it */
    in.streamed_cost = TM_REBALANCE_STREAMED_COST;
    in.weights_stay = true;
    a[2].loaded = false;
    for (int i = 0; i < 4; i++)
        f[2].heat[i] = 1.0;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    for (int i = 0; i < 4; i++)
        f[2].heat[i] = 1.5;
    assert_two_moves(out, tm_rebalance_plan(&in, out, 16), 1, TM_TIER_DDR, 2, TM_TIER_HBM);
}

static void test_near_equal_heat_does_not_move(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 4, TM_TIER_HBM, 0.50), make_alloc(&f[1], 4, TM_TIER_DDR, 0.55) };
    tm_rebalance_input in = make_input(a, 2, 0, 10, 100);
    tm_rebalance_move out[16];
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    f[1].heat[0] = 0.9; /* clearly hotter: one swap */
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].count + out[1].count, 2);
}

static void test_recently_moved_chunks_stay(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 2, TM_TIER_HBM, 0.0), make_alloc(&f[1], 2, TM_TIER_DDR, 1.0) };
    tm_rebalance_input in = make_input(a, 2, 0, 10, 100);
    for (int i = 0; i < 2; i++)
        f[1].idle[i] = 1; /* came down one pass ago */
    tm_rebalance_move out[16];
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    for (int i = 0; i < 2; i++)
        f[1].idle[i] = 4; /* the cooldown is over */
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2);
}

static void test_budget_limits_a_pass(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 8, TM_TIER_HBM, 0.0), make_alloc(&f[1], 8, TM_TIER_DDR, 1.0) };
    tm_rebalance_input in = make_input(a, 2, 0, 20, 3);
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    uint64_t moved = 0;
    for (int i = 0; i < n; i++)
        moved += out[i].count;
    assert_int_equal(moved, 2); /* one swap: a second would need 4 */
    in.budget = 0;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    in.budget = 100;
    assert_int_equal(tm_rebalance_plan(&in, out, 1), 1); /* capacity: the rest waits */
}

static void test_no_room_below_no_swap(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 2, TM_TIER_HBM, 0.0), make_alloc(&f[1], 2, TM_TIER_DDR, 1.0) };
    tm_rebalance_input in = make_input(a, 2, 0, 0, 100);
    tm_rebalance_move out[16];
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
}

/* A chunk the file tier dropped is in no tier: the hottest of all, it still never moves. */
static void test_dropped_chunks_never_move(void **state)
{
    (void)state;
    fake_alloc f[1];
    tm_rebalance_alloc a[1] = { make_alloc(&f[0], 4, TM_TIER_DDR, 0.1) };
    f[0].tier[2] = 0xff;
    f[0].heat[2] = 0.9;
    tm_rebalance_input in = make_input(a, 1, 10, 10, 100);
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2); /* chunks 0-1 and 3, around the dropped one */
    assert_int_equal(out[0].first, 0);
    assert_int_equal(out[0].count, 2);
    assert_int_equal(out[1].first, 3);
    assert_int_equal(out[1].count, 1);
    for (int i = 0; i < 4; i++)
        f[0].tier[i] = 0xff;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0); /* none in a tier: nothing to move */
}

/* A hot allocation below, a cold one in HBM that a rule keeps there: no swap. */
static void test_rule_keeps_hbm_chunks(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 4, TM_TIER_HBM, 0.0), make_alloc(&f[1], 4, TM_TIER_DDR, 0.9) };
    tm_rebalance_input in = make_input(a, 2, 0, 10, 100);
    tm_rebalance_move out[16];
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2); /* without the rule: a swap */
    uint8_t pin[4];
    memset(pin, TM_TIER_HBM, sizeof pin);
    a[0].pin = pin;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    pin[3] = TM_TIER_COUNT; /* a name rule kept three of the chunks: the fourth swaps */
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].alloc, 0);
    assert_int_equal(out[0].first, 3);
    assert_int_equal(out[0].count, 1);
    assert_int_equal(out[0].to, TM_TIER_DDR);
    assert_int_equal(out[1].alloc, 1);
    assert_int_equal(out[1].count, 1);
    assert_int_equal(out[1].to, TM_TIER_HBM);
}

/* The hottest chunk below, kept in DDR by a rule, is never promoted into free HBM room. */
static void test_rule_keeps_lower_chunks(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 2, TM_TIER_DDR, 0.9), make_alloc(&f[1], 2, TM_TIER_DDR, 0.5) };
    uint8_t pin[2] = { TM_TIER_DDR, TM_TIER_DDR };
    a[0].pin = pin;
    tm_rebalance_input in = make_input(a, 2, 10, 10, 100);
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].alloc, 1);
    assert_true(out[0].whole);
    assert_int_equal(out[0].to, TM_TIER_HBM);
}

/* Chunks a rule sends to CXL that landed in DDR (CXL was full) go back, cold or not, as far
 * as CXL's room and the budget allow, and before any promotion. */
static void test_rule_chunks_go_home_within_room(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 4, TM_TIER_DDR, 0.0), make_alloc(&f[1], 4, TM_TIER_DDR, 0.9) };
    uint8_t pin[4] = { TM_TIER_CXL, TM_TIER_CXL, TM_TIER_CXL, TM_TIER_CXL };
    a[0].pin = pin;
    tm_rebalance_input in = make_input(a, 2, 10, 10, 3);
    in.room[TM_TIER_CXL] = 2;
    tm_rebalance_move out[16];
    int n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].alloc, 0);
    assert_int_equal(out[0].first, 0);
    assert_int_equal(out[0].count, 2);
    assert_int_equal(out[0].to, TM_TIER_CXL);
    assert_int_equal(out[1].alloc, 1);
    assert_int_equal(out[1].count, 1); /* the budget's third move */
    assert_int_equal(out[1].to, TM_TIER_HBM);

    in.room[TM_TIER_CXL] = 0; /* no room at home: they stay where they are */
    n = tm_rebalance_plan(&in, out, 16);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].alloc, 1);
    assert_int_equal(out[0].count, 3);
}

/* Demotions follow the tier order: only its tiers, the first with room. */
static void test_demotion_follows_the_order(void **state)
{
    (void)state;
    fake_alloc f[2];
    tm_rebalance_alloc a[2] = { make_alloc(&f[0], 1, TM_TIER_HBM, 0.0), make_alloc(&f[1], 1, TM_TIER_DDR, 0.9) };
    tm_rebalance_input in = make_input(a, 2, 0, 10, 100);
    in.room[TM_TIER_CXL] = 10;
    tm_rebalance_move out[16];
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2);
    assert_int_equal(out[0].to, TM_TIER_CXL); /* the default order: CXL first */

    tm_tier_order order;
    assert_true(tm_tier_order_parse("hbm,ddr,cxl", &order));
    in.order = &order;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2);
    assert_int_equal(out[0].alloc, 0);
    assert_int_equal(out[0].to, TM_TIER_DDR);

    assert_true(tm_tier_order_parse("hbm,cxl", &order)); /* DDR holds the hot chunk, takes none */
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2);
    assert_int_equal(out[0].to, TM_TIER_CXL);
    in.room[TM_TIER_CXL] = 0;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);

    assert_true(tm_tier_order_parse("cxl,ddr", &order)); /* no HBM in the order: nothing goes up */
    in.room[TM_TIER_HBM] = 10;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);

    /* CXL before HBM: its chunks stay, DDR's (after HBM) go up, and demotions skip CXL */
    assert_true(tm_tier_order_parse("cxl,hbm,ddr", &order));
    f[1].tier[0] = TM_TIER_CXL;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 0);
    f[1].tier[0] = TM_TIER_DDR;
    in.room[TM_TIER_HBM] = 0;
    in.room[TM_TIER_CXL] = 10;
    assert_int_equal(tm_rebalance_plan(&in, out, 16), 2);
    assert_int_equal(out[0].alloc, 0);
    assert_int_equal(out[0].to, TM_TIER_DDR);
}

static void test_budget_from_rate(void **state)
{
    (void)state;
    uint64_t chunk = 2 * TM_MIB;
    assert_int_equal(tm_rebalance_budget(0, 100000000, chunk), 0);
    assert_int_equal(tm_rebalance_budget(1, 100000000, chunk), 1); /* always some progress */
    assert_int_equal(tm_rebalance_budget(4 * TM_GIB, 100000000, chunk), 204); /* 409.6 MiB per 100 ms */
    assert_true(tm_rebalance_budget(UINT64_MAX, UINT64_MAX, chunk) > 0);   /* no overflow to 0 */
}

/* The time a pass earns for: since the last pass, never negative; before the first
 * launch (a warm-start profile), the most a pass may save, whatever the clocks say. */
static void test_elapsed(void **state)
{
    (void)state;
    assert_true(tm_rebalance_elapsed(1000, 251000, false) == 250000);
    assert_true(tm_rebalance_elapsed(5000, 4000, false) == 0);
    assert_true(tm_rebalance_elapsed(1000, 1000, true) == TM_REBALANCE_MAX_SAVED_NS);
    assert_true(tm_rebalance_elapsed(5000, 4000, true) == TM_REBALANCE_MAX_SAVED_NS);
}

/* Moves earned by the time since the last pass: whole chunks only, saved up to a cap. */
static void test_budget_earned_over_time(void **state)
{
    (void)state;
    uint64_t chunk = 2 * TM_MIB;
    assert_int_equal(tm_rebalance_earned(0, 1000000000, chunk), 0);
    assert_int_equal(tm_rebalance_earned(4 * TM_GIB, 0, chunk), 0);
    assert_int_equal(tm_rebalance_earned(4 * TM_GIB, 400000, chunk), 0);  /* 1.6 MiB: wait */
    assert_int_equal(tm_rebalance_earned(4 * TM_GIB, 500000, chunk), 1);  /* 2.1 MiB */
    assert_int_equal(tm_rebalance_earned(4 * TM_GIB, 100000000, chunk), 204);
    /* an idle hour earns one second's worth, not a burst */
    assert_int_equal(tm_rebalance_earned(4 * TM_GIB, 3600000000000ull, chunk), 2048);
    /* a rate under a chunk per second still earns one, once enough time has passed */
    assert_int_equal(tm_rebalance_earned(TM_MIB, 1000000000, chunk), 0);
    assert_int_equal(tm_rebalance_earned(TM_MIB, 3000000000ull, chunk), 1);
    assert_int_equal(tm_rebalance_earned(UINT64_MAX, UINT64_MAX, chunk), UINT64_MAX / chunk); /* no overflow */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_everything_in_hbm_moves_nothing),
        cmocka_unit_test(test_free_room_takes_the_hottest),
        cmocka_unit_test(test_uniform_allocations_swap_whole),
        cmocka_unit_test(test_embedding_down_layers_up),
        cmocka_unit_test(test_equal_heat_weights_first),
        cmocka_unit_test(test_streamed_weights_give_way),
        cmocka_unit_test(test_streaming_weights_never_swap),
        cmocka_unit_test(test_near_equal_heat_does_not_move),
        cmocka_unit_test(test_recently_moved_chunks_stay),
        cmocka_unit_test(test_budget_limits_a_pass),
        cmocka_unit_test(test_no_room_below_no_swap),
        cmocka_unit_test(test_dropped_chunks_never_move),
        cmocka_unit_test(test_rule_keeps_hbm_chunks),
        cmocka_unit_test(test_rule_keeps_lower_chunks),
        cmocka_unit_test(test_rule_chunks_go_home_within_room),
        cmocka_unit_test(test_demotion_follows_the_order),
        cmocka_unit_test(test_budget_from_rate),
        cmocka_unit_test(test_elapsed),
        cmocka_unit_test(test_budget_earned_over_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
