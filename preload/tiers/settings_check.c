/* settings_check.c — see settings_check.h. */
#include "preload/tiers/settings_check.h"

#include <string.h>

#include "policy/units.h"
#include "preload/base/log.h"

static void check_reserve(const tm_config *config, tm_tiers *tiers, uint64_t chunk_size)
{
    uint64_t limit = tiers->tier[TM_TIER_HBM].limit;
    char reserve[32], hbm[32];
    tm_format_size(tiers->hbm_reserve, reserve, sizeof reserve);
    tm_format_size(limit, hbm, sizeof hbm);
    if (tiers->hbm_reserve + chunk_size <= limit)
        return;
    if (config->hbm_reserve.set) {
        tm_warn("TIERMEM_HBM_RESERVE=%s leaves no chunk of the HBM limit (%s): chunked allocations go to the "
                "lower tiers", reserve, hbm);
    } else if (tiers->hbm_reserve) {
        tm_warn("the default HBM reserve (%s) would leave no chunk of the HBM limit (%s): tiermem keeps no reserve",
                reserve, hbm);
        tiers->hbm_reserve = 0;
    }
}

static void check_limit(const tm_opt_size *limit, const char *variable, const tm_tier_state *tier,
                        uint64_t chunk_size)
{
    if (!limit->set || !tier->present || limit->bytes >= chunk_size)
        return;
    char bytes[32], chunk[32];
    tm_warn("%s=%s is less than one chunk (%s): the tier takes no chunks", variable,
            tm_format_size(limit->bytes, bytes, sizeof bytes), tm_format_size(chunk_size, chunk, sizeof chunk));
}

static void check_order(const tm_config *config, const tm_tiers *tiers)
{
    const tm_tier_order *order = &config->order;
    if (memcmp(order, &tm_default_tier_order, sizeof *order) == 0)
        return; /* the default names every tier; absent ones are simply skipped */
    char text[32];
    tm_tier_order_format(order, text, sizeof text);
    int present = 0;
    for (int i = 0; i < order->count; i++)
        present += tiers->tier[order->tier[i]].present;
    for (int i = 0; i < order->count; i++) {
        tm_tier_id tier = order->tier[i];
        if (tiers->tier[tier].present)
            continue;
        tm_warn("TIERMEM_TIER_ORDER=%s names %s, which is absent here: %s", text, tm_tier_name(tier),
                present ? "the other tiers of the order take its chunks"
                        : "no tier of the order exists, so chunked allocations get CUDA_ERROR_OUT_OF_MEMORY");
    }
}

static void check_rules(const tm_config *config, const tm_tiers *tiers)
{
    for (int i = 0; i < config->rules.count; i++) {
        tm_tier_id tier = config->rules.rule[i].tier;
        if (!tiers->tier[tier].present)
            tm_warn("TIERMEM_RULES: rule %d sends allocations to %s, which is absent here: they follow the tier "
                    "order instead", i + 1, tm_tier_name(tier));
    }
}

/* A zero (or sub-chunk) HBM limit is accepted: every chunked allocation goes below. */
static void check_hbm_limit(const tm_config *config, const tm_tiers *tiers, uint64_t chunk_size)
{
    bool named = config->hbm_limit.set;
    for (int d = 0; d < TM_CONFIG_DEVICES; d++)
        named = named || config->hbm_limit_of[d].set;
    uint64_t limit = tiers->tier[TM_TIER_HBM].limit;
    if (!named || limit >= chunk_size)
        return;
    char bytes[32], chunk[32];
    tm_warn("TIERMEM_HBM_LIMIT (%s here) leaves HBM less than one chunk (%s): every chunked allocation goes to the "
            "lower tiers; allocations below TIERMEM_MIN_TIERED still use HBM",
            tm_format_size(limit, bytes, sizeof bytes), tm_format_size(chunk_size, chunk, sizeof chunk));
}

void tm_settings_check(const tm_config *config, tm_tiers *tiers, uint64_t chunk_size)
{
    check_hbm_limit(config, tiers, chunk_size);
    check_reserve(config, tiers, chunk_size);
    check_limit(&config->cxl_limit, "TIERMEM_CXL_LIMIT", &tiers->tier[TM_TIER_CXL], chunk_size);
    check_limit(&config->ddr_limit, "TIERMEM_DDR_LIMIT", &tiers->tier[TM_TIER_DDR], chunk_size);
    check_order(config, tiers);
    check_rules(config, tiers);
}
