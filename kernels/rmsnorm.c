/* rmsnorm.c — twin of tm_rmsnorm: out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight.
 *
 * Layout: x and out [n_rows][dim] (out may alias x), weight [dim] f32.
 * Parallelisation: rows are independent; threads take rows when there are enough of
 * them (a prompt), a single row (decode at batch 1) runs in the calling thread.
 * The sum of squares is a float reduction in vector lanes (the CUDA kernel reduces in
 * a tree): the two agree to a few ulps, not bit for bit.
 */
#include <math.h>

#include "kernels/twin.h"

static void rmsnorm(TM_DECLARE_PARAMS(rmsnorm)) {
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) \
    if ((int64_t)n_rows * dim >= 64 * 1024)
    for (int32_t r = 0; r < n_rows; r++) {
        const float *xr = x + (int64_t)r * dim;
        float *o = out + (int64_t)r * dim;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int32_t i = 0; i < dim; i++) ss += xr[i] * xr[i];
        float inv = 1.0f / sqrtf(ss / (float)dim + eps);
#pragma omp simd
        for (int32_t i = 0; i < dim; i++) o[i] = xr[i] * inv * weight[i];
    }
}

TM_TWIN(tm_rmsnorm, rmsnorm, rmsnorm, rmsnorm, tm_check_rmsnorm(&args),
        tm_touch_rmsnorm(launch, &args))
