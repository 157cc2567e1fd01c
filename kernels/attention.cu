/* attention.cu — tm_attn_decode_<dtype> and tm_attn_prefill_<dtype>: attention of one
 * query head over a paged K/V cache (grouped-query attention: query head h reads KV
 * head h / (n_heads / n_kv_heads)).
 *
 * Layout: q, out rows hold [n_heads][head_dim]; pools are
 * [n_blocks][n_kv_heads][block_size][head_dim] of the dtype; position p is at block
 * table[p / block_size], offset p % block_size (kv_layout.h).
 *
 * Parallelisation: one block of 128 threads per (query head, query). Positions go in
 * tiles of TM_ATTN_TILE (128), one position per thread:
 *   1. thread j scores position t0 + j against q (held in shared memory);
 *   2. block max and sum fold the tile into the running max and sum (online softmax;
 *      the accumulator is rescaled when the max grows), the same steps as the twin;
 *   3. threads take head dimensions and accumulate the tile's weighted V rows, so a
 *      V row is read by consecutive threads (coalesced).
 * Shared memory is static: q and the accumulator (TM_ATTN_MAX_HEAD_DIM each) and the
 * tile's probabilities. Decode and prefill call the same noinline function, so a
 * prefill query gives decode's result for its position bit for bit.
 */
template <int D>
__device__ __noinline__ void attend_one(float *out /* [head_dim] */, const float *q /* [head_dim] */,
                                        const void *k_pool, const void *v_pool,
                                        const int32_t *block_table, int32_t n_pos,
                                        int32_t kv_head, int32_t n_kv_heads, int32_t head_dim,
                                        int32_t block_size, float score_scale, float v_scale) {
    __shared__ float q_s[TM_ATTN_MAX_HEAD_DIM];
    __shared__ float acc[TM_ATTN_MAX_HEAD_DIM];
    __shared__ float probs[TM_ATTN_TILE];
    __shared__ float scratch[32];
    if (n_pos <= 0) {
        for (int32_t d = threadIdx.x; d < head_dim; d += blockDim.x) out[d] = 0.0f;
        return;
    }
    for (int32_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
        q_s[d] = q[d];
        acc[d] = 0.0f;
    }
    __syncthreads();
    float run_max = -INFINITY, run_sum = 0.0f;
    for (int32_t t0 = 0; t0 < n_pos; t0 += TM_ATTN_TILE) {
        int32_t n = min(TM_ATTN_TILE, n_pos - t0);
        int32_t j = threadIdx.x;
        float s = -INFINITY;
        if (j < n) {
            int32_t p = t0 + j;
            int64_t idx = tm_kv_index(block_table[p / block_size], kv_head, p % block_size,
                                      n_kv_heads, block_size, head_dim);
            float dot = 0.0f;
            for (int32_t d = 0; d < head_dim; d++) dot += q_s[d] * tm_kv_load(D, k_pool, idx + d);
            s = dot * score_scale;
        }
        float tile_max = tm_block_max(s, scratch);
        float new_max = fmaxf(run_max, tile_max);
        float correction = expf(run_max - new_max);
        float prob = j < n ? expf(s - new_max) : 0.0f;
        if (j < TM_ATTN_TILE) probs[j] = prob;
        float tile_sum = tm_block_sum(prob, scratch); /* its barriers publish probs */
        run_sum = run_sum * correction + tile_sum;
        run_max = new_max;
        for (int32_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
            float a = acc[d] * correction;
            for (int32_t jj = 0; jj < n; jj++) {
                int32_t p = t0 + jj;
                int64_t idx = tm_kv_index(block_table[p / block_size], kv_head,
                                          p % block_size, n_kv_heads, block_size, head_dim);
                a += probs[jj] * tm_kv_load(D, v_pool, idx + d);
            }
            acc[d] = a;
        }
        __syncthreads(); /* probs is rewritten by the next tile */
    }
    float f = v_scale / run_sum;
    for (int32_t d = threadIdx.x; d < head_dim; d += blockDim.x) out[d] = acc[d] * f;
}

#define TM_DEFINE_ATTENTION_CU(kvname, DTYPE)                                           \
    TM_GLOBAL void tm_attn_decode_##kvname(TM_DECLARE_PARAMS(attn_decode)) {            \
        int32_t h = blockIdx.x, s = blockIdx.y;                                         \
        if (s >= n_seqs) return; /* n_seqs = 0 still launches one block */             \
        int32_t kv_head = h / (n_heads / n_kv_heads);                                   \
        attend_one<DTYPE>(out + ((int64_t)s * n_heads + h) * head_dim,                  \
                          q + (int64_t)s * q_stride + (int64_t)h * head_dim, k_pool,    \
                          v_pool, block_tables + (int64_t)s * max_blocks_per_seq,       \
                          seq_lens[s], kv_head, n_kv_heads, head_dim, block_size,       \
                          attn_scale * tm_kv_scale(DTYPE, k_scale),                     \
                          tm_kv_scale(DTYPE, v_scale));                                 \
    }                                                                                   \
    TM_GLOBAL void tm_attn_prefill_##kvname(TM_DECLARE_PARAMS(attn_prefill)) {          \
        int32_t h = blockIdx.x, t = blockIdx.y;                                         \
        if (t >= n_tokens) return;                                                      \
        int32_t kv_head = h / (n_heads / n_kv_heads);                                   \
        attend_one<DTYPE>(out + ((int64_t)t * n_heads + h) * head_dim,                  \
                          q + (int64_t)t * q_stride + (int64_t)h * head_dim, k_pool,    \
                          v_pool, block_table, start_pos + t + 1, kv_head, n_kv_heads,  \
                          head_dim, block_size, attn_scale * tm_kv_scale(DTYPE, k_scale), \
                          tm_kv_scale(DTYPE, v_scale));                                 \
    }
TM_DEFINE_ATTENTION_CU(f32, TM_KV_F32)
TM_DEFINE_ATTENTION_CU(f16, TM_KV_F16)
TM_DEFINE_ATTENTION_CU(fp8_e4m3, TM_KV_FP8_E4M3)
TM_DEFINE_ATTENTION_CU(fp8_e5m2, TM_KV_FP8_E5M2)
