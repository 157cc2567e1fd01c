/* rebalance.h — the `heat` policy's decisions: which chunks move between tiers, so that
 * HBM holds the most heat per byte. Pure functions over a snapshot (no CUDA, no clock).
 *
 * A pass gets every chunk of every chunked allocation with its tier, heat and the passes
 * since it last moved, the room each tier has, and a budget in chunks. It returns moves:
 * - nothing at all when no chunk sits below HBM (everything fits: no migration);
 * - promotions of the hottest lower-tier chunks into free HBM room;
 * - then swaps: the hottest lower-tier chunk in for the coldest HBM chunk, only while the
 *   one coming in is clearly hotter (heat above TM_REBALANCE_MARGIN times the one going
 *   out, plus TM_REBALANCE_MIN_GAIN), and neither moved in the last `cooldown` passes
 *   (hysteresis: no ping-pong between two chunks of near-equal heat);
 * - demoted chunks go to the first tier after HBM in the tier order with room; with none,
 *   no swap happens, and a tier the order leaves out never takes one. Only chunks of tiers
 *   after HBM in the order (or left out of it) are promoted: with `cxl,hbm`, CXL fills
 *   first and stays filled; without HBM in the order nothing is promoted. Carry out the demotions (moves to a lower tier) before the
 *   promotions: they make the HBM room the promotions take.
 * A chunk a rule (TIERMEM_RULES) keeps in a tier (`pin`) never leaves it, and no swap
 * moves it; one placed elsewhere because its tier was full goes back, before any other
 * move, once that tier has room. Every move stays within the room of its tier.
 * Chunks holding model-file data (`loaded`) rank as if TM_REBALANCE_MARGIN times hotter:
 * a launch credits every buffer it is handed alike, and of a weight matrix and the output
 * buffer one launch reads and writes, the weights are what every step reads whole; a
 * difference within the margin is one no swap acts on anyway. While spilled model-file
 * data streams through the HBM ring (`streamed_cost` below 1), a byte of it below HBM costs
 * the link that share of what a byte read in place costs, so its heat counts for that much
 * in ranking and in every swap: HBM goes first to what cannot stream (KV cache, buffers
 * the program writes). While the ring watches launches (`weights_stay`), a weight read
 * whole each step (`streams`) displaces only weights read a row at a time: it crosses the
 * link once a step whichever weight stays, so a swap with another only spends the link
 * (their heat per byte differs by how kernels read them, or is not measured yet, not by
 * use), and the ring put what cannot stream in HBM for it. Each ranks with the hottest
 * chunk of the pass: nothing is read more per byte than a weight read whole every step, so
 * only memory as hot as that (KV cache every step reads whole) displaces it. Chunks of equal rank keep
 * address order, so an allocation that is uniformly hot or cold moves whole; moves come out merged into runs of adjacent chunks of one allocation
 * going to one tier, each marked `whole` when it covers its allocation. */
#ifndef TM_POLICY_REBALANCE_H
#define TM_POLICY_REBALANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/tier.h"

#define TM_REBALANCE_MARGIN 1.25
#define TM_REBALANCE_MIN_GAIN 0.02
#define TM_REBALANCE_NEVER UINT32_MAX /* `idle` of a chunk that never moved */
/* The copy engines' rate over the link against the SMs' in-place reads: about 35 GB/s
 * read in place where the copy engines move 50 on PCIe 5 (DESIGN, "Performance model"). */
#define TM_REBALANCE_STREAMED_COST 0.7

typedef struct tm_rebalance_alloc {
    uint64_t chunks;            /* its chunk count */
    const uint8_t *tier;        /* [chunks] tm_tier_id of each chunk now; TM_TIER_COUNT or above: in
                                 * no tier (dropped by the file tier), never moved */
    const double *heat;         /* [chunks] heat of each chunk (policy/heat.h) */
    const uint32_t *idle;       /* [chunks] passes since the chunk last moved, or NULL: never */
    const uint8_t *pin;         /* [chunks] tm_tier_id a rule keeps each chunk in, TM_TIER_COUNT for
                                 * none; or NULL: no rule applies to the allocation */
    bool loaded;                /* holds data copied from a model file (weights) */
    bool streams;               /* a weight read whole each step, whichever tier holds it (with
                                 * weights_stay) */
} tm_rebalance_alloc;

typedef struct tm_rebalance_input {
    const tm_rebalance_alloc *alloc; /* [alloc_count] */
    size_t alloc_count;
    uint64_t room[TM_TIER_COUNT];    /* free chunks each tier may still take (0: absent or full) */
    uint64_t budget;                 /* chunk moves allowed in this pass */
    uint32_t cooldown;               /* passes a moved chunk stays put */
    const tm_tier_order *order;      /* tiers that take chunks (TIERMEM_TIER_ORDER); NULL: the
                                      * default, hbm,cxl,ddr */
    double streamed_cost;            /* link time of a `loaded` chunk's byte below HBM against
                                      * one read in place: TM_REBALANCE_STREAMED_COST while the
                                      * ring streams them; 0 or 1: nothing streams */
    bool weights_stay;               /* no `streams` weight displaces another (the stream ring
                                      * watches launches) */
} tm_rebalance_input;

typedef struct tm_rebalance_move {
    size_t alloc;               /* index into input.alloc */
    uint64_t first;             /* first chunk */
    uint64_t count;
    tm_tier_id to;
    bool whole;                 /* the run is the whole allocation */
} tm_rebalance_move;

/* Plans one pass. Returns the number of moves written to out (at most `capacity`; moves
 * that do not fit are left for the next pass), or -1 when memory ran out. */
int tm_rebalance_plan(const tm_rebalance_input *input, tm_rebalance_move *out, size_t capacity);

/* Chunk moves allowed for a pass of `interval_ns` at `rate` bytes/s (at least one when the
 * rate is not zero, so a slow budget still makes progress). */
uint64_t tm_rebalance_budget(uint64_t rate, uint64_t interval_ns, uint64_t chunk_size);

/* Chunk moves earned `elapsed_ns` after the last pass at `rate` bytes/s: whole chunks only
 * (0: wait, the time keeps counting), and at most TM_REBALANCE_MAX_SAVED_NS worth of
 * them (or one chunk when the rate is slower than that), so an idle spell does not turn
 * into a burst. Passes that come often then move little each, and the rate holds. */
#define TM_REBALANCE_MAX_SAVED_NS 1000000000ull
uint64_t tm_rebalance_earned(uint64_t rate, uint64_t elapsed_ns, uint64_t chunk_size);

/* The time a pass earns moves for (tm_rebalance_earned), from the clock at the last pass
 * and now: the time between them (0 if the clock went back), or, for the pass that applies
 * a warm-start profile before the first launch, TM_REBALANCE_MAX_SAVED_NS: no kernel has
 * shared the link yet, and a simulated clock does not count the time spent loading. */
uint64_t tm_rebalance_elapsed(uint64_t last_ns, uint64_t now_ns, bool before_first_launch);

#endif /* TM_POLICY_REBALANCE_H */
