/* stream_plan.c — the stream ring's size, and whether it pays (see stream_plan.h). */
#include "policy/stream_plan.h"

#include "policy/staging_ring.h"

static uint64_t whole_chunks(uint64_t bytes, uint64_t chunk)
{
    return (bytes + chunk - 1) / chunk * chunk;
}

uint64_t tm_stream_plan_most(uint64_t hbm_limit, uint64_t chunk)
{
    uint64_t most = chunk ? hbm_limit / TM_STREAM_PLAN_HBM_SHARE / chunk * chunk : 0;
    return most < TM_STREAM_PLAN_MIN_CHUNKS * chunk ? 0 : most;
}

tm_stream_plan tm_stream_plan_make(const tm_stream_plan_input *in)
{
    tm_stream_plan plan = { 0 };
    if (!in->chunk || (in->count == 0 && in->other == 0)) {
        plan.why_not = "no weight a cycle reads is below HBM";
        return plan;
    }
    uint64_t largest = in->other ? in->resident_largest : 0;
    for (size_t i = 0; i < in->count; i++)
        if (in->spilled[i] > largest)
            largest = in->spilled[i];
    uint64_t ring = in->asked ? whole_chunks(in->asked, in->chunk) : whole_chunks(largest, in->chunk) + in->chunk;
    if (ring < TM_STREAM_PLAN_MIN_CHUNKS * in->chunk)
        ring = TM_STREAM_PLAN_MIN_CHUNKS * in->chunk;
    if (!in->asked && ring > tm_stream_plan_most(in->hbm_limit, in->chunk))
        ring = tm_stream_plan_most(in->hbm_limit, in->chunk);
    if (ring == 0) {
        plan.why_not = "HBM is too small for a ring of two chunks";
        return plan;
    }
    for (size_t i = 0; i < in->count; i++) {
        if (whole_chunks(in->spilled[i], TM_STAGING_ALIGN) <= ring)
            plan.streamable += in->spilled[i];
        else
            plan.in_place += in->spilled[i];
    }
    plan.lifted = in->other;
    if (plan.streamable + plan.lifted == 0) {
        plan.why_not = "every spilled weight is larger than the ring could be";
        return plan;
    }
    double cost = in->streamed_cost > 0 && in->streamed_cost < 1 ? in->streamed_cost : 1;
    /* link time in units of a byte copied: in place 1/cost a byte, streamed 1 (what is lifted
     * into HBM puts as many bytes of weights below it, which stream) */
    double below = (double)(plan.streamable + plan.lifted);
    double in_place = below / cost;
    double streamed = below + (double)ring;
    plan.gain = in_place / streamed;
    if (!in->forced && streamed * TM_STREAM_PLAN_MARGIN > in_place) {
        plan.why_not = "its HBM would cost the link more than streaming saves";
        return plan;
    }
    plan.ring = ring;
    return plan;
}
