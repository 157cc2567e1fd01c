/* heat.c — decayed access heat per chunk and classes by rank (see heat.h). */
#include "policy/heat.h"

#include <stdlib.h>

/* 2^(-1/8): the decay of one interval, and 2^(-2^i/8) for the powers of two after it. */
static const double decay_pow2[] = {
    0.91700404320467123, 0.84089641525371454, 0.70710678118654752, 0.5,
    0.25, 0.0625, 0.00390625, 1.52587890625e-05, 2.3283064365386963e-10, 5.4210108624275222e-20,
};
#define DECAY_POW2_COUNT (sizeof decay_pow2 / sizeof decay_pow2[0])

/* What a fully touched interval adds, so that touching everything in every interval
 * converges to 1. */
#define GAIN (1.0 - 0.91700404320467123)

void tm_heat_clock_init(tm_heat_clock *clock, uint64_t halflife_ns)
{
    uint64_t tick = halflife_ns / TM_HEAT_TICKS_PER_HALFLIFE;
    clock->tick_ns = tick ? tick : 1;
}

double tm_heat_decay(uint64_t ticks)
{
    if (ticks >> DECAY_POW2_COUNT)
        return 0.0; /* past 2^10 intervals (128 half-lives) nothing is left */
    double left = 1.0;
    for (unsigned i = 0; ticks; i++, ticks >>= 1)
        if (ticks & 1)
            left *= decay_pow2[i];
    return left;
}

static double score(double bytes, uint64_t chunk_bytes)
{
    double share = bytes / (double)(chunk_bytes ? chunk_bytes : 1);
    return GAIN * (share < 1.0 ? share : 1.0);
}

/* `heat` holds the score of the intervals before `tick`, valued at the start of `tick`;
 * one more interval multiplies it by the decay and adds the interval's own score. */
static double heat_through(const tm_heat_chunk *chunk, uint64_t chunk_size)
{
    return chunk->heat * decay_pow2[0] + score(chunk->pending, chunk_size);
}

void tm_heat_touch(tm_heat_chunk *chunk, uint64_t tick, uint64_t chunk_size, double bytes, bool write)
{
    if (tick > chunk->tick) {
        double left = tm_heat_decay(tick - chunk->tick);
        chunk->heat = heat_through(chunk, chunk_size) * tm_heat_decay(tick - chunk->tick - 1);
        chunk->reads *= left;
        chunk->writes *= left;
        chunk->pending = 0;
        chunk->tick = tick;
    }
    chunk->pending += bytes;
    if (write)
        chunk->writes += bytes;
    else
        chunk->reads += bytes;
}

/* The interval in progress counts as if it ended now, so fresh access shows at once. */
double tm_heat_value(const tm_heat_chunk *chunk, uint64_t tick, uint64_t chunk_size)
{
    double value = heat_through(chunk, chunk_size);
    return tick > chunk->tick + 1 ? value * tm_heat_decay(tick - chunk->tick - 1) : value;
}

double tm_heat_reads(const tm_heat_chunk *chunk, uint64_t tick)
{
    return tick > chunk->tick ? chunk->reads * tm_heat_decay(tick - chunk->tick) : chunk->reads;
}

double tm_heat_writes(const tm_heat_chunk *chunk, uint64_t tick)
{
    return tick > chunk->tick ? chunk->writes * tm_heat_decay(tick - chunk->tick) : chunk->writes;
}

void tm_heat_credit_range(tm_heat_chunk *chunks, size_t count, uint64_t chunk_size, uint64_t extent, uint64_t offset,
                          uint64_t length, double bytes, bool write, uint64_t tick)
{
    if (!length || !count || offset >= count * chunk_size)
        return;
    uint64_t end = offset + length;
    if (end < offset || end > count * chunk_size)
        end = count * chunk_size;
    double per_byte = bytes / (double)length;
    for (size_t c = offset / chunk_size; c < count && (uint64_t)c * chunk_size < end; c++) {
        uint64_t lo = (uint64_t)c * chunk_size, hi = lo + chunk_size;
        uint64_t from = offset > lo ? offset : lo, to = end < hi ? end : hi;
        tm_heat_touch(&chunks[c], tick, tm_heat_chunk_bytes(extent, chunk_size, c), per_byte * (double)(to - from),
                      write);
    }
}

/* ---------------------------------------------------------------- classes by rank */

/* qsort takes no argument: the values being ranked, per thread. */
static __thread const double *sort_heat;

static int hotter_first(const void *a, const void *b)
{
    double x = sort_heat[*(const size_t *)a], y = sort_heat[*(const size_t *)b];
    return (x < y) - (x > y);
}

bool tm_heat_classify(const double *heat, size_t count, tm_heat_class *out)
{
    for (size_t i = 0; i < count; i++)
        out[i] = TM_HEAT_COLD;
    if (!count)
        return true;
    size_t *order = malloc(count * sizeof *order);
    if (!order)
        return false;
    for (size_t i = 0; i < count; i++)
        order[i] = i;
    sort_heat = heat;
    qsort(order, count, sizeof *order, hotter_first);

    size_t hot_ranks = (count + 2) / 3, cold_from = count - count / 3;
    size_t group_rank = 0;
    double group_top = count ? heat[order[0]] : 0;
    for (size_t r = 0; r < count; r++) {
        size_t i = order[r];
        if (heat[i] < group_top * TM_HEAT_SAME_SHARE) {
            group_rank = r; /* values this close to the first of a group share its rank */
            group_top = heat[i];
        }
        if (heat[i] <= 0.0 || group_rank >= cold_from)
            out[i] = TM_HEAT_COLD;
        else if (group_rank < hot_ranks)
            out[i] = TM_HEAT_HOT;
        else
            out[i] = TM_HEAT_WARM;
    }
    free(order);
    return true;
}

const char *tm_heat_class_name(tm_heat_class cls)
{
    switch (cls) {
    case TM_HEAT_HOT: return "hot";
    case TM_HEAT_WARM: return "warm";
    default: return "cold";
    }
}
