/* rebalance.c — the heat policy's pass (see rebalance.h). */
#include "policy/rebalance.h"

#include <stdlib.h>

typedef struct candidate {
    size_t alloc;
    uint64_t index;
    double heat;
    bool loaded;
} candidate;

/* ---------------------------------------------------------------- order */

static int order_address(const candidate *a, const candidate *b)
{
    if (a->alloc != b->alloc)
        return a->alloc < b->alloc ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The heat a chunk ranks by: a difference within TM_REBALANCE_MARGIN is one the pass
 * never acts on between two chunks, so within it model-file data ranks hotter. */
static double rank_heat(const candidate *c)
{
    return c->loaded ? c->heat * TM_REBALANCE_MARGIN : c->heat;
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

/* The lower tier with room for a demoted chunk, CXL before DDR; TM_TIER_HBM when none. */
static tm_tier_id demotion_tier(uint64_t room[TM_TIER_COUNT])
{
    for (int t = TM_TIER_HBM + 1; t < TM_TIER_COUNT; t++)
        if (room[t])
            return (tm_tier_id)t;
    return TM_TIER_HBM;
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
    chunk_move *moves = malloc((2 * lower + 1) * sizeof *moves);
    if (!up || !down || !moves) {
        free(up);
        free(down);
        free(moves);
        return -1;
    }
    size_t nu = 0, nd = 0;
    for (size_t a = 0; a < in->alloc_count; a++) {
        const tm_rebalance_alloc *al = &in->alloc[a];
        for (uint64_t i = 0; i < al->chunks; i++) {
            if (al->tier[i] >= TM_TIER_COUNT || settled(al, i, in->cooldown))
                continue;
            candidate c = { a, i, al->heat[i], al->loaded };
            if (al->tier[i] == TM_TIER_HBM)
                down[nd++] = c;
            else
                up[nu++] = c;
        }
    }
    qsort(up, nu, sizeof *up, hottest_first);
    qsort(down, nd, sizeof *down, coldest_first);

    uint64_t room[TM_TIER_COUNT];
    for (int t = 0; t < TM_TIER_COUNT; t++)
        room[t] = in->room[t];
    uint64_t budget = in->budget;
    size_t n = 0, u = 0, d = 0;
    for (; u < nu && budget > 0; u++) {
        const candidate *p = &up[u];
        tm_tier_id from = (tm_tier_id)in->alloc[p->alloc].tier[p->index];
        if (room[TM_TIER_HBM] > 0) { /* free room: a promotion alone */
            if (p->heat <= 0)
                break; /* no heat, no reason to move */
            moves[n++] = (chunk_move){ p->alloc, p->index, TM_TIER_HBM };
            room[TM_TIER_HBM]--;
            room[from]++;
            budget--;
            continue;
        }
        if (d >= nd || budget < 2)
            break;
        const candidate *q = &down[d];
        if (p->heat <= q->heat * TM_REBALANCE_MARGIN + TM_REBALANCE_MIN_GAIN)
            break; /* the hottest below is not clearly hotter than the coldest above */
        tm_tier_id to = demotion_tier(room);
        if (to == TM_TIER_HBM)
            break; /* no lower tier has room for the chunk going out */
        room[to]--;
        room[from]++;
        moves[n++] = (chunk_move){ q->alloc, q->index, to };
        moves[n++] = (chunk_move){ p->alloc, p->index, TM_TIER_HBM };
        d++;
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
