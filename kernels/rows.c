/* rows.c — twins of tm_softmax and tm_argmax, row by row over [n_rows][n_cols] f32.
 *
 * Rows are logits (one per sequence), so there are few of them and they are long:
 * threads take rows when there are several, each row runs in one thread.
 */
#include <math.h>

#include "kernels/twin.h"

static void softmax(TM_DECLARE_PARAMS(softmax)) {
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) if (n_rows >= 4)
    for (int32_t r = 0; r < n_rows; r++) {
        float *xr = x + (int64_t)r * n_cols;
        float m = -INFINITY;
        for (int32_t i = 0; i < n_cols; i++) m = fmaxf(m, xr[i]);
        float sum = 0.0f;
        for (int32_t i = 0; i < n_cols; i++) {
            xr[i] = expf(xr[i] - m);
            sum += xr[i];
        }
        for (int32_t i = 0; i < n_cols; i++) xr[i] = xr[i] / sum;
    }
}

/* The first index of the largest value; NaN never compares greater, so it is never
 * chosen, and a row of NaN gives 0. */
static void argmax(TM_DECLARE_PARAMS(argmax)) {
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) if (n_rows >= 4)
    for (int32_t r = 0; r < n_rows; r++) {
        const float *xr = x + (int64_t)r * n_cols;
        int32_t best = 0;
        float best_v = xr[0];
        for (int32_t i = 1; i < n_cols; i++)
            if (xr[i] > best_v || (best_v != best_v && xr[i] == xr[i])) {
                best = i;
                best_v = xr[i];
            }
        out[r] = best;
    }
}

TM_TWIN(tm_softmax, softmax, row, softmax, tm_check_softmax(&args),
        tm_touch_softmax(launch, &args))
TM_TWIN(tm_argmax, argmax, row, argmax, tm_check_argmax(&args),
        tm_touch_argmax(launch, &args))
