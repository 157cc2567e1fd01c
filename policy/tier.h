/* tier.h — the tier model: HBM (device memory), CXL-attached memory and host DDR.
 *
 * The policy sees each tier as a budget: a limit (bytes this process may place there) and
 * what is placed now. HBM keeps a reserve that tiered allocations leave free for small
 * allocations and the driver. Everything here is plain numbers; the interposer measures
 * the machine and its own usage and fills them in. */
#ifndef TM_POLICY_TIER_H
#define TM_POLICY_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tm_tier_id {
    TM_TIER_HBM = 0,
    TM_TIER_CXL = 1,
    TM_TIER_DDR = 2,
    TM_TIER_COUNT = 3,
} tm_tier_id;

/* "hbm", "cxl", "ddr". */
const char *tm_tier_name(tm_tier_id tier);
/* Looks a tier up by the first `len` bytes of name (case-insensitive). */
bool tm_tier_from_name(const char *name, size_t len, tm_tier_id *tier);

/* The order in which tiers receive chunks (TIERMEM_TIER_ORDER), each tier at most once. */
typedef struct tm_tier_order {
    tm_tier_id tier[TM_TIER_COUNT];
    int count;
} tm_tier_order;

extern const tm_tier_order tm_default_tier_order; /* hbm,cxl,ddr */

/* Parses "hbm,cxl,ddr" and the like: known names, comma-separated, no repeats. */
bool tm_tier_order_parse(const char *text, tm_tier_order *order);
/* Writes "hbm,cxl,ddr" into buf. */
char *tm_tier_order_format(const tm_tier_order *order, char *buf, size_t len);
bool tm_tier_order_has(const tm_tier_order *order, tm_tier_id tier);

typedef struct tm_tier_state {
    bool present;        /* the tier exists here (discovered or named in the environment) */
    int node;            /* NUMA node holding a CXL or DDR tier; -1 for HBM */
    uint64_t limit;      /* bytes this process may place in the tier */
    uint64_t used;       /* bytes placed in it now */
} tm_tier_state;

typedef struct tm_tiers {
    tm_tier_state tier[TM_TIER_COUNT];
    uint64_t hbm_reserve; /* HBM bytes tiered allocations leave free */
    uint64_t hbm_chunked; /* HBM bytes held by chunks (they can move down to make room) */
} tm_tiers;

/* The HBM reserve when TIERMEM_HBM_RESERVE is not given: 1/64 of the HBM limit, in whole
 * chunks. */
uint64_t tm_default_hbm_reserve(uint64_t hbm_limit, uint64_t chunk_size);

/* Bytes a tiered allocation may still take from `tier` (0 for an absent tier; for HBM,
 * what the limit leaves after the reserve). */
uint64_t tm_tier_room(const tm_tiers *tiers, tm_tier_id tier);

/* What cuMemGetInfo reports (TIERMEM_MEMINFO). */
#define TM_MEMINFO_SPILL_SHARE 8 /* available: free reads at least total / 8 while the lower tiers
                                  * have it (one sequence's KV cache: Llama-2-7B's 4096 fp16
                                  * positions are 2 GiB, 1/8 of a 16 GiB card) */
typedef enum tm_meminfo_view {
    TM_MEMINFO_PHYSICAL, /* what HBM really has, within its limit */
    TM_MEMINFO_VIRTUAL,  /* HBM plus the lower tiers of the tier order */
    TM_MEMINFO_AVAILABLE,/* HBM's size; free counts the HBM chunks could leave by moving down */
} tm_meminfo_view;

/* The total of a view from the tiers' limits alone (usage plays no part, so the total never
 * changes while the program runs): the HBM limit within what the driver has, plus under
 * `virtual` the limits of the present lower tiers in `order`. */
uint64_t tm_meminfo_total(const tm_tiers *tiers, const tm_tier_order *order, tm_meminfo_view view,
                          uint64_t driver_total);

/* Free and total memory in a view, from the driver's own answer and the tiers' budgets.
 * Physical: total = HBM limit, free = min(driver free, limit - used) less the HBM reserve,
 * which tiered allocations may not take. Virtual adds, for each
 * present lower tier in `order`, its limit to total and its room to free. Available keeps
 * the physical total and adds to free the HBM bytes chunks hold, as far as the lower tiers
 * in `order` have room for them, never above the total: memory a new allocation gets
 * because chunks spill or move down, as a program sizing a cache from free memory needs;
 * and never below the lower tiers' room up to 1/TM_MEMINFO_SPILL_SHARE of the total, what a
 * new allocation gets by spilling when HBM holds nothing that can move. */
void tm_meminfo(const tm_tiers *tiers, const tm_tier_order *order, tm_meminfo_view view,
                uint64_t driver_free, uint64_t driver_total, uint64_t *free, uint64_t *total);

#endif /* TM_POLICY_TIER_H */
