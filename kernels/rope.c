/* rope.c — twin of tm_rope: rotary position embedding, in place.
 *
 * Layout: x is [n_tokens][row_stride]; a token's heads are [n_heads][head_dim] from the
 * start of its row. Pair i of a head is (2i, 2i+1), for i < rot_dim / 2 (GGUF /
 * llama.cpp "normal" order, which is how GGUF stores llama's attn_q and attn_k rows),
 * or (i, i + rot_dim / 2) with neox (Qwen); the rest of the head is untouched.
 * Angle = pos[t] * base^(-2i / rot_dim), divided by freq_factors[i] when given.
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
            if (freq_factors) angle /= (double)freq_factors[i];
            float c = (float)cos(angle), s = (float)sin(angle);
            int32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
            for (int32_t h = 0; h < n_heads; h++) {
                float *p = xt + (int64_t)h * head_dim;
                float x0 = p[a], x1 = p[b];
                p[a] = x0 * c - x1 * s;
                p[b] = x0 * s + x1 * c;
            }
        }
    }
}

TM_TWIN(tm_rope, rope, rope, rope, tm_check_rope(&args), tm_touch_rope(launch, &args))
