/* kv_append.c — twins of tm_kv_append_<dtype>: quantise new tokens' K and V into pages.
 *
 * Layout: k and v are [n_tokens][stride] f32 with heads [n_kv_heads][head_dim] at the
 * start of each row; slots [n_tokens] give block * block_size + offset (negative:
 * skip); pools are [n_blocks][n_kv_heads][block_size][head_dim] of the dtype
 * (kv_layout.h). Parallelisation: tokens, for a prompt long enough to pay for threads.
 */
#include "kernels/kv_elem.h"
#include "kernels/kv_layout.h"
#include "kernels/twin.h"

static inline __attribute__((always_inline)) void
kv_append_any(int dtype, void *k_pool, void *v_pool, const float *k /* [n_tokens][k_stride] */,
              const float *v /* [n_tokens][v_stride] */, const int32_t *slots /* [n_tokens] */,
              int32_t n_tokens, int32_t n_kv_heads, int32_t head_dim, int32_t block_size,
              int32_t k_stride, int32_t v_stride, float k_scale, float v_scale) {
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) if (n_tokens >= 64)
    for (int32_t t = 0; t < n_tokens; t++) {
        int32_t slot = slots[t];
        if (slot < 0) continue;
        int64_t block = slot / block_size;
        int32_t offset = slot % block_size;
        for (int32_t h = 0; h < n_kv_heads; h++) {
            int64_t idx = tm_kv_index(block, h, offset, n_kv_heads, block_size, head_dim);
            const float *kh = k + (int64_t)t * k_stride + (int64_t)h * head_dim;
            const float *vh = v + (int64_t)t * v_stride + (int64_t)h * head_dim;
            for (int32_t d = 0; d < head_dim; d++) {
                tm_kv_store(dtype, k_pool, idx + d, kh[d], k_scale);
                tm_kv_store(dtype, v_pool, idx + d, vh[d], v_scale);
            }
        }
    }
}

#define DEFINE_KV_APPEND(kvname, DTYPE)                                                 \
    static void kv_append_##kvname(TM_DECLARE_PARAMS(kv_append)) {                      \
        kv_append_any(DTYPE, k_pool, v_pool, k, v, slots, n_tokens, n_kv_heads,         \
                      head_dim, block_size, k_stride, v_stride, k_scale, v_scale);      \
    }                                                                                   \
    TM_TWIN(tm_kv_append_##kvname, kv_append, kv_append, kv_append_##kvname,           \
            tm_check_kv_append(&args), tm_touch_kv_append(launch, &args, DTYPE))

DEFINE_KV_APPEND(f32, TM_KV_F32)
DEFINE_KV_APPEND(f16, TM_KV_F16)
DEFINE_KV_APPEND(fp8_e4m3, TM_KV_FP8_E4M3)
DEFINE_KV_APPEND(fp8_e5m2, TM_KV_FP8_E5M2)
