/* place.h — the `size` placement policy: which tier each chunk of an allocation goes to.
 *
 * Allocations below the tiering threshold (and not sent elsewhere by a rule) stay whole in
 * HBM, passed through to the driver. Larger ones are split into chunks of the VMM
 * granularity. HBM takes chunks up to its limit minus the reserve, so when HBM runs short
 * it is the large allocations that spill while small ones still find room; the rest
 * follow the tier order (default hbm, then cxl, then ddr). A matching rule puts its tier
 * first. The plan lists runs of chunks in address order: the HBM part is the head. */
#ifndef TM_POLICY_PLACE_H
#define TM_POLICY_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/rules.h"
#include "policy/tier.h"

typedef enum tm_policy_kind {
    TM_POLICY_SIZE,             /* by size, rules and room */
    TM_POLICY_MANAGED,          /* the baseline: tiered allocations become managed memory */
    TM_POLICY_MANAGED_ADVISED,  /* the same with the usual advice (policy/managed.h) */
    TM_POLICY_HEAT,             /* placed by size, then moved by heat (policy/rebalance.h) */
} tm_policy_kind;

typedef struct tm_policy {
    tm_policy_kind kind;
    tm_tier_order order;
    tm_rules rules;
    uint64_t min_tiered;      /* allocations at or above this size are chunked */
    uint64_t chunk_size;      /* the VMM granularity */
    bool lower_tiers_share_range; /* CXL/DDR chunks may sit in one VA range with HBM chunks;
                                   * false when lower tiers are pinned host memory, which a
                                   * VMM range cannot map: then an allocation lives whole in
                                   * HBM or whole in the host tiers */
} tm_policy;

typedef struct tm_run {
    tm_tier_id tier;
    uint64_t chunks;
} tm_run;

typedef struct tm_plan {
    uint64_t chunk_size;
    uint64_t chunks;                   /* total: size rounded up to whole chunks */
    uint64_t per_tier[TM_TIER_COUNT];  /* chunks per tier */
    tm_run run[TM_TIER_COUNT];         /* address order; run[0] holds the first chunks */
    int run_count;
} tm_plan;

/* ---------------------------------------------------------------- routing */

/* How an allocation request is served. */
typedef enum tm_route {
    TM_ROUTE_DRIVER,        /* straight to the driver, not tracked (tiering off, no context) */
    TM_ROUTE_SMALL,         /* to the driver, counted in HBM */
    TM_ROUTE_CHUNKED,       /* chunks placed across the tiers */
    TM_ROUTE_LOWER,         /* chunks placed in the tiers below HBM (a weight that streams) */
} tm_route;

/* What routing one request looks at: the device's HBM now, and the program's phase. */
typedef struct tm_route_query {
    uint64_t bytes;
    uint64_t hbm_used;          /* HBM placed now, pooled chunks included */
    uint64_t hbm_limit;
    uint64_t hbm_reserve;       /* kept for what the program makes after its weights */
    uint64_t hbm_pooled;        /* of hbm_used, what the chunk pool holds: room once drained */
    bool streaming;             /* spilled weights stream through a ring of HBM chunks */
    bool weights_loading;       /* a model file's tensors are being uploaded */
    uint64_t weights_left;      /* bytes of those tensors not uploaded yet */
    bool keep_plain;            /* TIERMEM_IPC=passthrough: what HBM has room for stays plain */
} tm_route_query;

/* What one device's routing carries from request to request. */
typedef struct tm_route_state {
    int64_t weight_credit;      /* HBM share of the loading weights not spent yet, bytes (atomic) */
} tm_route_state;

typedef struct tm_route_answer {
    tm_route route;
    bool drain_pool;            /* HBM has the room only once the chunk pool is drained: drain
                                 * it, then ask again with what HBM holds then */
} tm_route_answer;

/* Routes one request. While weights load with a ring to stream them, a small allocation is
 * taken for a weight and leaves HBM's reserve alone, as chunked ones do; the loading files'
 * bytes still to come get HBM in the share the room left is of them, spread evenly over the
 * load order, so that streamed and resident weights alternate through a step (the copy
 * engine fills the ring while kernels read what stays in HBM). A small allocation HBM has
 * no room for any more goes to the lower tiers, chunked. */
tm_route_answer tm_policy_route(const tm_policy *policy, const tm_route_query *query, tm_route_state *state);

/* Should this allocation be chunked (VMM-backed), or pass through to HBM? */
bool tm_policy_wants_chunks(const tm_policy *policy, const tm_alloc_desc *alloc);

/* Does a `plain` rule keep this allocation plain driver memory (never chunked)? */
bool tm_policy_wants_plain(const tm_policy *policy, const tm_alloc_desc *alloc);

/* Plans where the chunks of `alloc` go, given the tiers' room now. Returns false when the
 * tiers together cannot hold it (the caller answers CUDA_ERROR_OUT_OF_MEMORY). */
bool tm_policy_place(const tm_policy *policy, const tm_tiers *tiers, const tm_alloc_desc *alloc,
                     tm_plan *plan);

/* For memory that cannot be split (a physical handle the program creates itself): the
 * first tier of the allocation's sequence with room for all of it. `lower_tiers` false
 * leaves only HBM. Returns false when none has room. */
bool tm_policy_place_whole(const tm_policy *policy, const tm_tiers *tiers, const tm_alloc_desc *alloc,
                           bool lower_tiers, tm_tier_id *tier);

/* The tier of chunk `index` in a plan. */
tm_tier_id tm_plan_chunk_tier(const tm_plan *plan, uint64_t index);

#endif /* TM_POLICY_PLACE_H */
