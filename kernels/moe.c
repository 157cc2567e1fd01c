/* moe.c — twins of tm_moe_route and tm_moe_combine (moe.h; tm_moe_matvec_<wtype> is in
 * matmul.c beside the dot products it shares), and what the MoE kernels declare to
 * simcuda: the expert matvec reads only the experts its tokens chose, once each per
 * launch, so the time model and the access trace see which experts are hot.
 */
#include <math.h>

#include "kernels/moe_route.h"
#include "kernels/quants.h"
#include "kernels/twin.h"

static void moe_route(TM_DECLARE_PARAMS(moe_route)) {
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) if (n_tokens >= 64)
    for (int32_t t = 0; t < n_tokens; t++)
        tm_moe_route_token(ids + (int64_t)t * top_k, weights + (int64_t)t * top_k,
                           logits + (int64_t)t * n_expert, n_expert, top_k);
}

/* Slots are summed in order, without FMA (TM_QADD/TM_QMUL), as the CUDA kernel sums them. */
static void moe_combine(TM_DECLARE_PARAMS(moe_combine)) {
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) if (n_tokens >= 16)
    for (int32_t t = 0; t < n_tokens; t++) {
        const float *wt = weights + (int64_t)t * top_k;
        for (int32_t o = 0; o < n_out; o++) {
            const float *yt = y + (int64_t)t * top_k * n_out + o;
            float acc = 0.0f;
            for (int32_t k = 0; k < top_k; k++) acc = TM_QADD(acc, TM_QMUL(wt[k], yt[(int64_t)k * n_out]));
            out[(int64_t)t * n_out + o] = acc;
        }
    }
}

void tm_touch_moe_route(const simcuda_launch *l, const struct tm_args_moe_route *a) {
    int64_t slots = (int64_t)a->n_tokens * a->top_k;
    simcuda_reads(l, a->logits, (uint64_t)((int64_t)a->n_tokens * a->n_expert * 4));
    simcuda_writes(l, a->ids, (uint64_t)(slots * 4));
    simcuda_writes(l, a->weights, (uint64_t)(slots * 4));
    simcuda_flops(l, (double)slots * a->n_expert);
}

void tm_touch_moe_matvec(const simcuda_launch *l, const struct tm_args_moe_matvec *a, int32_t wtype) {
    int64_t slots = (int64_t)a->n_tokens * a->top_k, row_bytes = tm_wtype_row_bytes(wtype, a->n_in);
    uint32_t seen[TM_MOE_MAX_EXPERTS / 32] = {0};
    for (int64_t s = 0; s < slots; s++) { /* each chosen expert's matrix, once */
        int32_t e = a->ids[s];
        if (e < 0 || e >= a->n_expert || (seen[e / 32] >> (e % 32) & 1)) continue;
        seen[e / 32] |= 1u << (e % 32);
        simcuda_reads(l, (const uint8_t *)a->w + (int64_t)e * a->n_out * row_bytes,
                      (uint64_t)(a->n_out * row_bytes));
    }
    simcuda_reads(l, a->ids, (uint64_t)(slots * 4));
    simcuda_reads(l, a->x, (uint64_t)((a->x_per_slot ? slots : a->n_tokens) * a->n_in * 4));
    simcuda_writes(l, a->out, (uint64_t)(slots * a->n_out * 4));
    simcuda_flops(l, 2.0 * (double)slots * a->n_in * a->n_out);
}

void tm_touch_moe_combine(const simcuda_launch *l, const struct tm_args_moe_combine *a) {
    int64_t slots = (int64_t)a->n_tokens * a->top_k;
    simcuda_reads(l, a->y, (uint64_t)(slots * a->n_out * 4));
    simcuda_reads(l, a->weights, (uint64_t)(slots * 4));
    simcuda_writes(l, a->out, (uint64_t)((int64_t)a->n_tokens * a->n_out * 4));
    simcuda_flops(l, 2.0 * (double)slots * a->n_out);
}

TM_TWIN(tm_moe_route, moe_route, moe_route, moe_route, tm_check_moe_route(&args),
        tm_touch_moe_route(launch, &args))
TM_TWIN(tm_moe_combine, moe_combine, moe_combine, moe_combine, tm_check_moe_combine(&args),
        tm_touch_moe_combine(launch, &args))
