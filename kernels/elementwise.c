/* elementwise.c — twins of tm_silu_mul, tm_add and tm_absmax over flat f32 arrays.
 *
 * Layout: every array is [n] contiguous (a [tokens][width] activation seen flat).
 * Parallelisation: chunks of the range, for arrays large enough to pay for threads.
 */
#include <math.h>

#include "kernels/twin.h"

#define PARALLEL_MIN 65536

static void silu_mul(TM_DECLARE_PARAMS(silu_mul)) {
#pragma omp parallel for simd schedule(static) num_threads(tm_twin_threads()) \
    if (n >= PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

static void add(TM_DECLARE_PARAMS(add)) {
#pragma omp parallel for simd schedule(static) num_threads(tm_twin_threads()) \
    if (n >= PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* fmaxf ignores NaN, as the CUDA kernel's fmaxf does. */
static void absmax(TM_DECLARE_PARAMS(absmax)) {
    float m = out[0];
#pragma omp parallel for simd schedule(static) num_threads(tm_twin_threads()) \
    reduction(max : m) if (n >= PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    out[0] = m;
}

TM_TWIN(tm_silu_mul, silu_mul, elementwise, silu_mul, tm_check_silu_mul(&args),
        tm_touch_silu_mul(launch, &args))
TM_TWIN(tm_add, add, elementwise, add, tm_check_add(&args), tm_touch_add(launch, &args))
TM_TWIN(tm_absmax, absmax, absmax, absmax, tm_check_absmax(&args),
        tm_touch_absmax(launch, &args))
