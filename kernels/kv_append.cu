/* kv_append.cu — tm_kv_append_<dtype>: quantise new tokens' K and V into pages.
 *
 * Layout: k, v [n_tokens][stride] f32 with heads [n_kv_heads][head_dim]; slots
 * [n_tokens] (block * block_size + offset; negative: skip); pools
 * [n_blocks][n_kv_heads][block_size][head_dim] of the dtype (kv_layout.h).
 * Parallelisation: one block per (token, KV head), 128 threads over head_dim. Stores
 * use kv_elem.h, the twins' code, so pages match byte for byte.
 */
template <int D>
__device__ void kv_append(void *k_pool, void *v_pool, const float *k, const float *v,
                          const int32_t *slots, int32_t n_kv_heads, int32_t head_dim,
                          int32_t block_size, int32_t k_stride, int32_t v_stride,
                          float k_scale, float v_scale) {
    int32_t t = blockIdx.x, h = blockIdx.y;
    int32_t slot = slots[t];
    if (slot < 0) return;
    int64_t idx = tm_kv_index(slot / block_size, h, slot % block_size, n_kv_heads,
                              block_size, head_dim);
    const float *kh = k + (int64_t)t * k_stride + (int64_t)h * head_dim;
    const float *vh = v + (int64_t)t * v_stride + (int64_t)h * head_dim;
    for (int32_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
        tm_kv_store(D, k_pool, idx + d, kh[d], k_scale);
        tm_kv_store(D, v_pool, idx + d, vh[d], v_scale);
    }
}

#define TM_DEFINE_KV_APPEND_CU(kvname, DTYPE)                                           \
    TM_GLOBAL void tm_kv_append_##kvname(TM_DECLARE_PARAMS(kv_append)) {    \
        if ((int32_t)blockIdx.x >= n_tokens) return; /* a grid is never empty */       \
        kv_append<DTYPE>(k_pool, v_pool, k, v, slots, n_kv_heads, head_dim, block_size, \
                         k_stride, v_stride, k_scale, v_scale);                         \
    }
TM_DEFINE_KV_APPEND_CU(f32, TM_KV_F32)
TM_DEFINE_KV_APPEND_CU(f16, TM_KV_F16)
TM_DEFINE_KV_APPEND_CU(fp8_e4m3, TM_KV_FP8_E4M3)
TM_DEFINE_KV_APPEND_CU(fp8_e5m2, TM_KV_FP8_E5M2)
