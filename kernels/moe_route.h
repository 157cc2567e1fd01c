/* moe_route.h — one token's expert routing, the same code in the CUDA kernel and the
 * twin (moe.h describes the kernels). */
#ifndef TM_MOE_ROUTE_H
#define TM_MOE_ROUTE_H

#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* One token's routing, the same code on both sides: the top_k largest logits (NaN counts
 * as -inf; ties go to the lower expert id), best first, and the softmax over them. */
static inline TM_HD void tm_moe_route_token(int32_t *ids /* [top_k] */, float *weights /* [top_k] */,
                                            const float *logits /* [n_expert] */, int32_t n_expert,
                                            int32_t top_k) {
    uint32_t taken[TM_MOE_MAX_EXPERTS / 32] = {0};
    for (int32_t k = 0; k < top_k; k++) {
        int32_t best = -1;
        float best_v = 0.0f;
        for (int32_t e = 0; e < n_expert; e++) {
            if (taken[e / 32] >> (e % 32) & 1) continue;
            float v = logits[e] == logits[e] ? logits[e] : -INFINITY;
            if (best < 0 || v > best_v) best = e, best_v = v;
        }
        taken[best / 32] |= 1u << (best % 32);
        ids[k] = best;
        weights[k] = best_v;
    }
    float m = weights[0], sum = 0.0f;
    for (int32_t k = 0; k < top_k; k++) {
        weights[k] = m == -INFINITY ? 1.0f : expf(weights[k] - m);
        sum += weights[k];
    }
    for (int32_t k = 0; k < top_k; k++) weights[k] = weights[k] / sum;
}

#endif /* TM_MOE_ROUTE_H */
