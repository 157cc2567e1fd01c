/* moe.cu — the mixture-of-experts kernels (moe.h): routing, expert matvec, combine.
 *
 * route: one block per token, its first thread picks the experts (n_expert <= 256,
 * top_k <= 16: a serial scan, the same code as the twin). matvec: a warp per output row
 * as in matmul.cu, blockIdx.y the (token, slot); the slot's expert id selects which
 * expert's rows the block reads, so only chosen experts are ever read. combine: one
 * block per token, threads over the output, slots summed in order without FMA (as the
 * twin sums them).
 */
TM_GLOBAL void tm_moe_route(TM_DECLARE_PARAMS(moe_route)) {
    int32_t t = blockIdx.x;
    if (t >= n_tokens || threadIdx.x != 0) return;
    tm_moe_route_token(ids + (int64_t)t * top_k, weights + (int64_t)t * top_k, logits + (int64_t)t * n_expert,
                       n_expert, top_k);
}

template <int W>
__device__ void moe_matvec(float *out, const float *x, const void *w, const int32_t *ids, int32_t n_tokens,
                           int32_t top_k, int32_t n_expert, int32_t n_in, int32_t n_out, int32_t x_per_slot) {
    int64_t slot = blockIdx.y;
    if (slot >= (int64_t)n_tokens * top_k) return; /* n_tokens = 0 still launches a block */
    int32_t lane = threadIdx.x & 31;
    int32_t o = blockIdx.x * TM_MATVEC_ROWS + (threadIdx.x >> 5);
    if (o >= n_out) return; /* whole warps leave together */
    int32_t e = ids[slot];
    float acc = 0.0f;
    if (e >= 0 && e < n_expert) { /* an id out of range gives zeros */
        int64_t row_bytes = tm_wtype_row_bytes(W, n_in);
        const uint8_t *row = (const uint8_t *)w + ((int64_t)e * n_out + o) * row_bytes;
        const float *xr = x + (x_per_slot ? slot : slot / top_k) * n_in;
        for (int32_t i = lane; i < n_in; i += 32) acc += tm_load_weight<W>(row, i) * xr[i];
    }
    acc = tm_warp_sum(acc);
    if (lane == 0) out[slot * n_out + o] = acc;
}

#define TM_DEFINE_MOE_CU(wname, WTYPE)                                                  \
    TM_GLOBAL void tm_moe_matvec_##wname(TM_DECLARE_PARAMS(moe_matvec)) {               \
        moe_matvec<WTYPE>(out, x, w, ids, n_tokens, top_k, n_expert, n_in, n_out, x_per_slot); \
    }
TM_DEFINE_MOE_CU(f32, TM_WTYPE_F32)
TM_DEFINE_MOE_CU(f16, TM_WTYPE_F16)
TM_DEFINE_MOE_CU(bf16, TM_WTYPE_BF16)
TM_DEFINE_MOE_CU(q8_0, TM_WTYPE_Q8_0)
TM_QUANT_TYPES(TM_DEFINE_MOE_CU)

TM_GLOBAL void tm_moe_combine(TM_DECLARE_PARAMS(moe_combine)) {
    int32_t t = blockIdx.x;
    if (t >= n_tokens) return;
    const float *wt = weights + (int64_t)t * top_k;
    for (int32_t o = threadIdx.x; o < n_out; o += blockDim.x) {
        const float *yt = y + (int64_t)t * top_k * n_out + o;
        float acc = 0.0f;
        for (int32_t k = 0; k < top_k; k++) acc = TM_QADD(acc, TM_QMUL(wt[k], yt[(int64_t)k * n_out]));
        out[(int64_t)t * n_out + o] = acc;
    }
}
