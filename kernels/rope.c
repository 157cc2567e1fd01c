/* rope.c — twin of tm_rope: rotary position embedding on adjacent pairs, in place.
 *
 * Layout: x is [n_tokens][row_stride]; a token's heads are [n_heads][head_dim] from the
 * start of its row. Pair i of a head is (2i, 2i+1), for i < rot_dim / 2 (GGUF /
 * llama.cpp "normal" order, which is how GGUF stores attn_q and attn_k rows); the
 * rest of the head is untouched. Angle = pos[t] * base^(-2i / rot_dim).
 *
 * The angle and its sine and cosine are computed in double on both sides: in float,
 * an angle of ~2000 radians carries an error of ~1e-4 that CUDA's and glibc's
 * functions would each round their own way; in double the two agree to f32 rounding.
 * Parallelisation: tokens, when a prompt has enough of them.
 */
#include <math.h>

#include "kernels/twin.h"

static void rope(TM_DECLARE_PARAMS(rope)) {
    int32_t half = rot_dim / 2;
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) if (n_tokens >= 32)
    for (int32_t t = 0; t < n_tokens; t++) {
        float *xt = x + (int64_t)t * row_stride;
        for (int32_t i = 0; i < half; i++) {
            double angle = (double)pos[t] * pow((double)base, -2.0 * i / rot_dim);
            float c = (float)cos(angle), s = (float)sin(angle);
            for (int32_t h = 0; h < n_heads; h++) {
                float *p = xt + (int64_t)h * head_dim + 2 * i;
                float x0 = p[0], x1 = p[1];
                p[0] = x0 * c - x1 * s;
                p[1] = x0 * s + x1 * c;
            }
        }
    }
}

TM_TWIN(tm_rope, rope, rope, rope, tm_check_rope(&args), tm_touch_rope(launch, &args))
