/* rebalance.c — the heat policy's pass (see rebalance.h). */
#include "policy/rebalance.h"

#include <stdlib.h>

typedef struct candidate {
    size_t alloc;
    uint64_t index;
    double value;               /* heat times the link time a byte of it costs below HBM */
    bool loaded;
    bool streams;
} candidate;

/* ---------------------------------------------------------------- order */

static int order_address(const candidate *a, const candidate *b)
{
    if (a->alloc != b->alloc)
        return a->alloc < b->alloc ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* What a chunk ranks by: a difference within TM_REBALANCE_MARGIN is one the pass never
 * acts on between two chunks, so within it model-file data ranks hotter. */
static double rank_heat(const candidate *c)
{
    return c->loaded ? c->value * TM_REBALANCE_MARGIN : c->value;
}

/* Hottest first; equal heat in address order. */
static int hottest_first(const void *x, const void *y)
{
    const candidate *a = x, *b = y;
    double ha = rank_heat(a), hb = rank_heat(b);
    if (ha != hb)
        return ha > hb ? -1 : 1;
    return order_address(a, b);
}

/* Coldest first; equal heat in address order. */
static int coldest_first(const void *x, const void *y)
{
    const candidate *a = x, *b = y;
    double ha = rank_heat(a), hb = rank_heat(b);
    if (ha != hb)
        return ha < hb ? -1 : 1;
    return order_address(a, b);
}

/* ---------------------------------------------------------------- the pass */

static bool settled(const tm_rebalance_alloc *a, uint64_t index, uint32_t cooldown)
{
    return a->idle && a->idle[index] < cooldown;
}

/* The tier a rule keeps chunk `index` in, TM_TIER_COUNT when none. */
static tm_tier_id pin_of(const tm_rebalance_alloc *a, uint64_t index)
{
    return a->pin && a->pin[index] < TM_TIER_COUNT ? (tm_tier_id)a->pin[index] : TM_TIER_COUNT;
}

/* Where HBM stands in the order; order->count when it is not there. */
static int hbm_position(const tm_tier_order *order)
{
    int i = 0;
    while (i < order->count && order->tier[i] != TM_TIER_HBM)
        i++;
    return i;
}

/* The first tier after HBM in the order with room for a demoted chunk; TM_TIER_HBM when
 * none. */
static tm_tier_id demotion_tier(const tm_tier_order *order, const uint64_t room[TM_TIER_COUNT])
{
    for (int i = hbm_position(order) + 1; i < order->count; i++)
        if (room[order->tier[i]])
            return order->tier[i];
    return TM_TIER_HBM;
}

/* May a chunk in `from` go up into HBM: HBM comes before `from` in the order (a tier the
 * order leaves out comes after all of it). */
static bool promotable(const tm_tier_order *order, tm_tier_id from)
{
    int hbm = hbm_position(order);
    if (hbm == order->count)
        return false;
    for (int i = 0; i < hbm; i++)
        if (order->tier[i] == from)
            return false;
    return true;
}

typedef struct chunk_move {
    size_t alloc;
    uint64_t index;
    tm_tier_id to;
} chunk_move;

static int move_order(const void *x, const void *y)
{
    const chunk_move *a = x, *b = y;
    if (a->alloc != b->alloc)
        return a->alloc < b->alloc ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Merges chunk moves into runs (sorted by allocation and chunk). */
static int merge_runs(const tm_rebalance_input *in, chunk_move *moves, size_t count, tm_rebalance_move *out,
                      size_t capacity)
{
    qsort(moves, count, sizeof *moves, move_order);
    size_t n = 0;
    for (size_t i = 0; i < count && n < capacity; i++) {
        tm_rebalance_move *last = n ? &out[n - 1] : NULL;
        if (last && last->alloc == moves[i].alloc && last->to == moves[i].to &&
            last->first + last->count == moves[i].index) {
            last->count++;
        } else {
            out[n++] = (tm_rebalance_move){ .alloc = moves[i].alloc, .first = moves[i].index, .count = 1,
                                            .to = moves[i].to };
        }
    }
    for (size_t i = 0; i < n; i++)
        out[i].whole = out[i].first == 0 && out[i].count == in->alloc[out[i].alloc].chunks;
    return (int)n;
}

int tm_rebalance_plan(const tm_rebalance_input *in, tm_rebalance_move *out, size_t capacity)
{
    size_t lower = 0, upper = 0;
    for (size_t a = 0; a < in->alloc_count; a++)
        for (uint64_t i = 0; i < in->alloc[a].chunks; i++) {
            if (in->alloc[a].tier[i] >= TM_TIER_COUNT)
                continue; /* in no tier (the file tier dropped it): not for this pass to move */
            if (in->alloc[a].tier[i] == TM_TIER_HBM)
                upper++;
            else
                lower++;
        }
    if (lower == 0 || in->budget == 0 || capacity == 0)
        return 0; /* everything is in HBM already: nothing to move */

    candidate *up = malloc((lower + 1) * sizeof *up);     /* lower-tier chunks, hottest first */
    candidate *down = malloc((upper + 1) * sizeof *down); /* HBM chunks, coldest first */
    /* each chunk goes home at most once, and each lower one takes part in one swap at most */
    chunk_move *moves = malloc((upper + 3 * lower + 1) * sizeof *moves);
    if (!up || !down || !moves) {
        free(up);
        free(down);
        free(moves);
        return -1;
    }
    const tm_tier_order *order = in->order ? in->order : &tm_default_tier_order;
    uint64_t room[TM_TIER_COUNT];
    for (int t = 0; t < TM_TIER_COUNT; t++)
        room[t] = in->room[t];
    uint64_t budget = in->budget;
    double streamed_cost = in->streamed_cost > 0 && in->streamed_cost < 1 ? in->streamed_cost : 1.0;
    /* a weight read whole every step is read as much per byte as anything is: it ranks with
     * the hottest chunk (its own measured heat says how kernels read it, or nothing yet) */
    double hottest = 0;
    for (size_t a = 0; in->weights_stay && a < in->alloc_count; a++)
        for (uint64_t i = 0; i < in->alloc[a].chunks; i++)
            if (in->alloc[a].heat[i] > hottest)
                hottest = in->alloc[a].heat[i];
    size_t n = 0, nu = 0, nd = 0;
    for (size_t a = 0; a < in->alloc_count; a++) {
        const tm_rebalance_alloc *al = &in->alloc[a];
        for (uint64_t i = 0; i < al->chunks; i++) {
            tm_tier_id from = (tm_tier_id)al->tier[i], pin = pin_of(al, i);
            if (from >= TM_TIER_COUNT || settled(al, i, in->cooldown))
                continue;
            if (pin != TM_TIER_COUNT) { /* a rule's chunk: home when its tier has room, else stays */
                if (pin != from && room[pin] > 0 && budget > 0) {
                    moves[n++] = (chunk_move){ a, i, pin };
                    room[pin]--;
                    room[from]++;
                    budget--;
                }
                continue;
            }
            bool stays = al->streams && in->weights_stay;
            double heat = stays ? hottest : al->heat[i];
            candidate c = { a, i, heat * (al->loaded ? streamed_cost : 1.0), al->loaded, stays };
            if (from == TM_TIER_HBM)
                down[nd++] = c;
            else if (promotable(order, from))
                up[nu++] = c;
        }
    }
    qsort(up, nu, sizeof *up, hottest_first);
    qsort(down, nd, sizeof *down, coldest_first);

    /* While weights stay, a weight read whole going up displaces only a gathered one (rebalance.h). */
    size_t d_other = 0; /* the coldest HBM chunk not yet swapped that is no streaming weight */
    size_t u = 0, d = 0;
    for (; u < nu && budget > 0; u++) {
        const candidate *p = &up[u];
        tm_tier_id from = (tm_tier_id)in->alloc[p->alloc].tier[p->index];
        if (room[TM_TIER_HBM] > 0) { /* free room: a promotion alone */
            if (p->value <= 0)
                break; /* no heat, no reason to move */
            moves[n++] = (chunk_move){ p->alloc, p->index, TM_TIER_HBM };
            room[TM_TIER_HBM]--;
            room[from]++;
            budget--;
            continue;
        }
        size_t *next = p->streams ? &d_other : &d;
        while (*next < nd && (down[*next].value < 0 || (p->streams && (down[*next].streams || !down[*next].loaded))))
            (*next)++;
        if (*next >= nd || budget < 2) {
            if (p->streams)
                continue; /* nothing it may displace: the next one below may be other memory */
            break;
        }
        const candidate *q = &down[*next];
        if (p->value <= q->value * TM_REBALANCE_MARGIN + TM_REBALANCE_MIN_GAIN) {
            if (p->streams)
                continue;
            break; /* the hottest below is not clearly hotter than the coldest above */
        }
        tm_tier_id to = demotion_tier(order, room);
        if (to == TM_TIER_HBM)
            break; /* no lower tier has room for the chunk going out */
        room[to]--;
        room[from]++;
        moves[n++] = (chunk_move){ q->alloc, q->index, to };
        moves[n++] = (chunk_move){ p->alloc, p->index, TM_TIER_HBM };
        down[(*next)++].value = -1; /* swapped: neither pointer takes it again */
        budget -= 2;
    }
    int runs = merge_runs(in, moves, n, out, capacity);
    free(up);
    free(down);
    free(moves);
    return runs;
}

uint64_t tm_rebalance_budget(uint64_t rate, uint64_t interval_ns, uint64_t chunk_size)
{
    if (rate == 0 || chunk_size == 0)
        return 0;
    /* rate * interval can pass 2^64 for absurd inputs: divide first */
    uint64_t bytes = rate / 1000 * (interval_ns / 1000000) + rate % 1000 * (interval_ns / 1000000) / 1000;
    uint64_t chunks = bytes / chunk_size;
    return chunks ? chunks : 1;
}

uint64_t tm_rebalance_elapsed(uint64_t last_ns, uint64_t now_ns, bool before_first_launch)
{
    if (before_first_launch)
        return TM_REBALANCE_MAX_SAVED_NS;
    return now_ns > last_ns ? now_ns - last_ns : 0;
}

uint64_t tm_rebalance_earned(uint64_t rate, uint64_t elapsed_ns, uint64_t chunk_size)
{
    if (rate == 0 || chunk_size == 0)
        return 0;
    unsigned __int128 bytes = (unsigned __int128)rate * elapsed_ns / 1000000000u;
    unsigned __int128 cap = (unsigned __int128)rate * TM_REBALANCE_MAX_SAVED_NS / 1000000000u;
    if (cap < chunk_size)
        cap = chunk_size; /* a rate under a chunk per cap still moves one, now and then */
    if (bytes > cap)
        bytes = cap;
    return (uint64_t)(bytes / chunk_size);
}
