/* stream_plan.h — how much HBM the stream ring takes, and whether streaming pays at all.
 * Pure C, no CUDA.
 *
 * Asked once a program's launches have shown a whole cycle (a decode step): the weights a
 * cycle reads that sit below HBM are known then, with their sizes. Streaming them costs the
 * link their bytes at the copy engines' rate, plus the ring's own bytes: its HBM is taken
 * from weights that stayed resident, which then stream too. Reading them in place costs
 * their bytes at the SMs' rate, 1 / TM_REBALANCE_STREAMED_COST slower. So the ring streams
 * when (spilled + ring) * TM_STREAM_PLAN_MARGIN <= spilled / TM_REBALANCE_STREAMED_COST:
 * on PCIe 5 a ring of up to about 0.3 of the spilled bytes.
 *
 * Memory a cycle reads below HBM that cannot stream (KV cache, activations) counts with the
 * spilled weights: with the ring it goes up into HBM in place of weights, which then stream;
 * without it, it is read in place like them (as much of it as resident weights can make room
 * for).
 *
 * The ring holds a weight whole, so its size follows the largest spilled weight: that one
 * and one chunk more, so the next weight's copy can start while the largest is read; at
 * least two chunks; never more than 1/TM_STREAM_PLAN_HBM_SHARE of HBM (a weight larger
 * than the ring is read in place). TIERMEM_STREAM_RING sets it instead; TIERMEM_STREAM=on
 * streams without asking whether it pays. */
#ifndef TM_POLICY_STREAM_PLAN_H
#define TM_POLICY_STREAM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_STREAM_PLAN_MARGIN 1.1   /* streaming must win by this much to be chosen */
#define TM_STREAM_PLAN_HBM_SHARE 4  /* the ring never takes more than this share of HBM */
#define TM_STREAM_PLAN_MIN_CHUNKS 2

typedef struct tm_stream_plan_input {
    const uint64_t *spilled;    /* [count] bytes of each weight a cycle reads that has chunks below HBM */
    size_t count;
    uint64_t other;             /* bytes of memory that cannot stream a cycle reads below HBM (no
                                 * more than resident weights can make room for) */
    uint64_t resident_largest;  /* the largest resident weight that could go below HBM for it */
    uint64_t asked;             /* TIERMEM_STREAM_RING, or 0 */
    bool forced;                /* TIERMEM_STREAM=on */
    uint64_t chunk;
    uint64_t hbm_limit;
    double streamed_cost;       /* TM_REBALANCE_STREAMED_COST */
} tm_stream_plan_input;

typedef struct tm_stream_plan {
    uint64_t ring;              /* bytes of HBM the ring takes (whole chunks); 0: it does not stream */
    uint64_t streamable;        /* the spilled weights' bytes that fit in the ring: what streams */
    uint64_t in_place;          /* the spilled bytes of weights larger than the ring */
    uint64_t lifted;            /* bytes of `other` the ring lets into HBM (in place of weights) */
    double gain;                /* in-place link time over streamed link time (ring included) */
    const char *why_not;        /* with ring 0: why, in words */
} tm_stream_plan;

tm_stream_plan tm_stream_plan_make(const tm_stream_plan_input *input);

/* The largest ring a device of `hbm_limit` bytes gets unless TIERMEM_STREAM_RING asks for
 * one: 1/TM_STREAM_PLAN_HBM_SHARE of it in whole chunks, or 0 when that is under
 * TM_STREAM_PLAN_MIN_CHUNKS (no ring at all). */
uint64_t tm_stream_plan_most(uint64_t hbm_limit, uint64_t chunk);

#endif /* TM_POLICY_STREAM_PLAN_H */
