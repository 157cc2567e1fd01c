/* tier.c — tier names, tier order, budgets and the memory-info views (see tier.h). */
#include "policy/tier.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const tier_names[TM_TIER_COUNT] = { "hbm", "cxl", "ddr" };

const tm_tier_order tm_default_tier_order = {
    .tier = { TM_TIER_HBM, TM_TIER_CXL, TM_TIER_DDR },
    .count = 3,
};

const char *tm_tier_name(tm_tier_id tier)
{
    return (unsigned)tier < TM_TIER_COUNT ? tier_names[tier] : "?";
}

bool tm_tier_from_name(const char *name, size_t len, tm_tier_id *tier)
{
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        if (len == strlen(tier_names[t]) && strncasecmp(name, tier_names[t], len) == 0) {
            *tier = (tm_tier_id)t;
            return true;
        }
    }
    return false;
}

bool tm_tier_order_has(const tm_tier_order *order, tm_tier_id tier)
{
    for (int i = 0; i < order->count; i++)
        if (order->tier[i] == tier)
            return true;
    return false;
}

bool tm_tier_order_parse(const char *text, tm_tier_order *order)
{
    tm_tier_order parsed = { .count = 0 };
    const char *item = text;
    for (;;) {
        const char *comma = strchr(item, ',');
        size_t len = comma ? (size_t)(comma - item) : strlen(item);
        tm_tier_id tier;
        if (!tm_tier_from_name(item, len, &tier) || tm_tier_order_has(&parsed, tier))
            return false;
        parsed.tier[parsed.count++] = tier;
        if (!comma)
            break;
        item = comma + 1;
    }
    *order = parsed;
    return true;
}

char *tm_tier_order_format(const tm_tier_order *order, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < order->count && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? "," : "", tm_tier_name(order->tier[i]));
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

static uint64_t saturating_sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

static uint64_t saturating_add(uint64_t a, uint64_t b)
{
    uint64_t sum;
    return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

uint64_t tm_default_hbm_reserve(uint64_t hbm_limit, uint64_t chunk_size)
{
    uint64_t share = hbm_limit / 64;
    return chunk_size ? (share + chunk_size - 1) / chunk_size * chunk_size : share;
}

uint64_t tm_tier_room(const tm_tiers *tiers, tm_tier_id tier)
{
    const tm_tier_state *state = &tiers->tier[tier];
    if (!state->present)
        return 0;
    uint64_t limit = state->limit;
    if (tier == TM_TIER_HBM)
        limit = saturating_sub(limit, tiers->hbm_reserve);
    return saturating_sub(limit, state->used);
}

/* The limits of the present lower tiers in `order`, and their room now. */
static void lower_tiers(const tm_tiers *tiers, const tm_tier_order *order, uint64_t *limit, uint64_t *room)
{
    *limit = *room = 0;
    for (int i = 0; i < order->count; i++) {
        tm_tier_id tier = order->tier[i];
        const tm_tier_state *state = &tiers->tier[tier];
        if (tier == TM_TIER_HBM || !state->present)
            continue;
        *limit = saturating_add(*limit, state->limit);
        *room = saturating_add(*room, saturating_sub(state->limit, state->used));
    }
}

uint64_t tm_meminfo_total(const tm_tiers *tiers, const tm_tier_order *order, tm_meminfo_view view,
                          uint64_t driver_total)
{
    const tm_tier_state *hbm = &tiers->tier[TM_TIER_HBM];
    uint64_t total = hbm->limit < driver_total ? hbm->limit : driver_total;
    if (view != TM_MEMINFO_VIRTUAL)
        return total;
    uint64_t lower_limit, lower_room;
    lower_tiers(tiers, order, &lower_limit, &lower_room);
    return saturating_add(total, lower_limit);
}

void tm_meminfo(const tm_tiers *tiers, const tm_tier_order *order, tm_meminfo_view view,
                uint64_t driver_free, uint64_t driver_total, uint64_t *free, uint64_t *total)
{
    const tm_tier_state *hbm = &tiers->tier[TM_TIER_HBM];
    uint64_t hbm_total = hbm->limit < driver_total ? hbm->limit : driver_total;
    uint64_t hbm_free = saturating_sub(hbm_total, hbm->used);
    if (driver_free < hbm_free)
        hbm_free = driver_free;
    *total = tm_meminfo_total(tiers, order, view, driver_total);
    if (view == TM_MEMINFO_PHYSICAL) {
        /* what a tiered allocation may still take: the reserve is not for it */
        *free = saturating_sub(hbm_free, tiers->hbm_reserve);
        return;
    }
    *free = hbm_free;
    uint64_t lower_limit, lower_room;
    lower_tiers(tiers, order, &lower_limit, &lower_room);
    if (view == TM_MEMINFO_VIRTUAL) {
        *free = saturating_add(*free, lower_room);
        return;
    }
    uint64_t movable = tiers->hbm_chunked < lower_room ? tiers->hbm_chunked : lower_room;
    *free = saturating_add(*free, movable);
    /* HBM held by what cannot move (small allocations pass through) would read 0 free,
     * and an engine sizing its KV cache from free memory would get none although a new
     * allocation spills to the lower tiers: free never reads below their room, up to a
     * share of HBM that holds one sequence's KV cache of the models HBM is sized for. */
    uint64_t floor = *total / TM_MEMINFO_SPILL_SHARE;
    if (floor > lower_room)
        floor = lower_room;
    if (*free < floor)
        *free = floor;
    if (*free > *total)
        *free = *total;
}
