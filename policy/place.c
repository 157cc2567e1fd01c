/* place.c — the `size` placement policy (see place.h). */
#include "policy/place.h"

#include <string.h>

#include "policy/units.h"

bool tm_policy_wants_chunks(const tm_policy *policy, const tm_alloc_desc *alloc)
{
    const tm_rule *rule = tm_rules_match(&policy->rules, alloc);
    if (rule && rule->plain)
        return false;
    if (alloc->size >= policy->min_tiered)
        return true;
    return rule && rule->tier != TM_TIER_HBM;
}

bool tm_policy_wants_plain(const tm_policy *policy, const tm_alloc_desc *alloc)
{
    const tm_rule *rule = tm_rules_match(&policy->rules, alloc);
    return rule && rule->plain;
}

/* ---------------------------------------------------------------- routing */

/* Weights of at most 1/STREAM_MIN_SHARE of a chunk stay in HBM while they fit: the fixed
 * costs of streaming one (a copy's start, three remap calls, a ring slot held through its
 * reader) are about what its bytes take on the link. */
#define STREAM_MIN_SHARE 8

/* Whether a weight of `bytes` takes HBM, `room` being what HBM has left for weights: each
 * weight adds its share of the room to a credit, and a weight the credit covers goes to HBM. */
static bool weight_takes_hbm(uint64_t bytes, uint64_t room, uint64_t chunk, uint64_t left, tm_route_state *state)
{
    if (left <= room || bytes <= chunk / STREAM_MIN_SHARE)
        return true; /* the rest fits, or too small to be worth a copy of its own */
    int64_t share = (int64_t)((double)bytes * (double)room / (double)left);
    if (__atomic_add_fetch(&state->weight_credit, share, __ATOMIC_RELAXED) < (int64_t)bytes)
        return false;
    __atomic_sub_fetch(&state->weight_credit, (int64_t)bytes, __ATOMIC_RELAXED);
    return true;
}

tm_route_answer tm_policy_route(const tm_policy *policy, const tm_route_query *q, tm_route_state *state)
{
    tm_alloc_desc desc = { .size = q->bytes };
    const tm_rule *rule = tm_rules_match(&policy->rules, &desc);
    if (rule && rule->plain)
        return (tm_route_answer){ TM_ROUTE_SMALL, false }; /* shareable with any process */
    bool chunks = q->bytes >= policy->min_tiered || (rule && rule->tier != TM_TIER_HBM);
    uint64_t limit = q->hbm_limit;
    if (q->streaming && !chunks && q->weights_loading) { /* a weight: the reserve stays for what comes next */
        limit = limit > q->hbm_reserve ? limit - q->hbm_reserve : 0;
        if (q->hbm_used + q->bytes <= limit &&
            !weight_takes_hbm(q->bytes, limit - q->hbm_used, policy->chunk_size, q->weights_left, state))
            return (tm_route_answer){ TM_ROUTE_LOWER, false };
    }
    bool room = q->hbm_used + q->bytes <= limit;
    bool driver_memory = q->keep_plain || !chunks;
    if (!room && driver_memory && q->hbm_used - q->hbm_pooled + q->bytes <= limit)
        return (tm_route_answer){ TM_ROUTE_SMALL, true }; /* the room the pool holds, for memory the driver makes */
    if (room && q->keep_plain)
        return (tm_route_answer){ TM_ROUTE_SMALL, false };
    if (chunks)
        return (tm_route_answer){ TM_ROUTE_CHUNKED, false };
    return (tm_route_answer){ room ? TM_ROUTE_SMALL : TM_ROUTE_CHUNKED, false };
}

/* ---------------------------------------------------------------- placement */

/* The tiers an allocation may use, in the order it fills them: the rule's tier first (when
 * one matches), then the tier order. Absent tiers are left out. */
static int tier_sequence(const tm_policy *policy, const tm_tiers *tiers, const tm_alloc_desc *alloc,
                         tm_tier_id sequence[TM_TIER_COUNT])
{
    int count = 0;
    const tm_rule *rule = tm_rules_match(&policy->rules, alloc);
    if (rule && tiers->tier[rule->tier].present)
        sequence[count++] = rule->tier;
    for (int i = 0; i < policy->order.count; i++) {
        tm_tier_id tier = policy->order.tier[i];
        if (!tiers->tier[tier].present || (rule && tier == rule->tier))
            continue;
        sequence[count++] = tier;
    }
    return count;
}

static uint64_t room_in_chunks(const tm_tiers *tiers, tm_tier_id tier, uint64_t chunk_size)
{
    return tm_tier_room(tiers, tier) / chunk_size;
}

/* Fills the tiers of `sequence` in turn; false when they cannot hold every chunk. */
static bool fill(const tm_tiers *tiers, const tm_tier_id *sequence, int count, tm_plan *plan)
{
    uint64_t left = plan->chunks;
    for (int i = 0; i < count && left > 0; i++) {
        uint64_t take = room_in_chunks(tiers, sequence[i], plan->chunk_size);
        if (take > left)
            take = left;
        if (take == 0)
            continue;
        plan->run[plan->run_count++] = (tm_run){ .tier = sequence[i], .chunks = take };
        plan->per_tier[sequence[i]] += take;
        left -= take;
    }
    return left == 0;
}

static void plan_reset(tm_plan *plan, uint64_t chunk_size, uint64_t chunks)
{
    memset(plan, 0, sizeof *plan);
    plan->chunk_size = chunk_size;
    plan->chunks = chunks;
}

bool tm_policy_place(const tm_policy *policy, const tm_tiers *tiers, const tm_alloc_desc *alloc,
                     tm_plan *plan)
{
    uint64_t chunk = policy->chunk_size;
    uint64_t chunks = alloc->size / chunk + (alloc->size % chunk != 0);
    if (chunks == 0)
        chunks = 1;
    plan_reset(plan, chunk, chunks);

    tm_tier_id sequence[TM_TIER_COUNT];
    int count = tier_sequence(policy, tiers, alloc, sequence);
    if (policy->lower_tiers_share_range)
        return fill(tiers, sequence, count, plan);

    /* HBM and the host tiers cannot share a range: try each group whole, in the order
     * its first tier appears in the sequence. */
    tm_tier_id hbm_group[1], host_group[TM_TIER_COUNT];
    int hbm_count = 0, host_count = 0;
    bool hbm_before_host = false;
    for (int i = 0; i < count; i++) {
        if (sequence[i] == TM_TIER_HBM) {
            hbm_group[hbm_count++] = sequence[i];
            hbm_before_host = host_count == 0;
        } else {
            host_group[host_count++] = sequence[i];
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        bool try_hbm = (pass == 0) == hbm_before_host;
        plan_reset(plan, chunk, chunks);
        if (try_hbm ? fill(tiers, hbm_group, hbm_count, plan) : fill(tiers, host_group, host_count, plan))
            return true;
    }
    plan_reset(plan, chunk, chunks);
    return false;
}

bool tm_policy_place_whole(const tm_policy *policy, const tm_tiers *tiers, const tm_alloc_desc *alloc,
                           bool lower_tiers, tm_tier_id *tier)
{
    tm_tier_id sequence[TM_TIER_COUNT];
    int count = tier_sequence(policy, tiers, alloc, sequence);
    uint64_t bytes = tm_round_up(alloc->size, policy->chunk_size);
    for (int i = 0; i < count; i++) {
        if (!lower_tiers && sequence[i] != TM_TIER_HBM)
            continue;
        if (tm_tier_room(tiers, sequence[i]) >= bytes) {
            *tier = sequence[i];
            return true;
        }
    }
    return false;
}

tm_tier_id tm_plan_chunk_tier(const tm_plan *plan, uint64_t index)
{
    for (int i = 0; i < plan->run_count; i++) {
        if (index < plan->run[i].chunks)
            return plan->run[i].tier;
        index -= plan->run[i].chunks;
    }
    return TM_TIER_COUNT;
}
