/* matmul.cu — tm_matvec_<wtype> and tm_matmul_<wtype>: out[t][o] = sum_i w[o][i] x[t][i].
 *
 * Layout: w [n_out][n_in] in the weight type as GGUF stores it (Q8_0: n_in / 32 blocks
 * of 34 bytes a row), x [n_tokens][n_in] f32, out [n_tokens][out_stride].
 *
 * matvec (decode): one warp per output row, 8 rows per 256-thread block. Lanes stride
 * the row 32 elements apart, so a warp reads 32 consecutive weights at a time
 * (coalesced; for Q8_0 all lanes share one block's scale). Tokens go in groups of
 * MATVEC_TOKENS per pass: each weight is loaded once per group, and a batch of up to
 * 8 sequences reads the weights once.
 *
 * matmul (prefill): a 64 (rows) x 64 (tokens) output tile per block, the K dimension in
 * steps of 32. Weights are converted to f32 once into shared memory; each of the 256
 * threads accumulates 4 x 4 outputs. Rows are padded by one float against bank
 * conflicts.
 */
#define MATVEC_TOKENS 8

template <int W>
__device__ void matvec(float *out, const float *x, const void *w, int32_t n_tokens,
                       int32_t n_in, int32_t n_out, int32_t out_stride) {
    int32_t lane = threadIdx.x & 31;
    int32_t o = blockIdx.x * TM_MATVEC_ROWS + (threadIdx.x >> 5);
    if (o >= n_out) return; /* whole warps leave together: no barrier follows */
    const uint8_t *row = (const uint8_t *)w + o * tm_wtype_row_bytes(W, n_in);
    for (int32_t t0 = 0; t0 < n_tokens; t0 += MATVEC_TOKENS) {
        int32_t nt = min(MATVEC_TOKENS, n_tokens - t0);
        float acc[MATVEC_TOKENS];
#pragma unroll
        for (int k = 0; k < MATVEC_TOKENS; k++) acc[k] = 0.0f;
        for (int32_t i = lane; i < n_in; i += 32) {
            float wv = tm_load_weight<W>(row, i);
#pragma unroll
            for (int k = 0; k < MATVEC_TOKENS; k++)
                if (k < nt) acc[k] += wv * x[(int64_t)(t0 + k) * n_in + i];
        }
#pragma unroll
        for (int k = 0; k < MATVEC_TOKENS; k++) {
            float s = tm_warp_sum(acc[k]);
            if (k < nt && lane == 0) out[(int64_t)(t0 + k) * out_stride + o] = s;
        }
    }
}

#define MM_TILE TM_MATMUL_TILE /* 64 */
#define MM_K 32

template <int W>
__device__ void matmul(float *out, const float *x, const void *w, int32_t n_tokens,
                       int32_t n_in, int32_t n_out, int32_t out_stride) {
    __shared__ float ws[MM_TILE][MM_K + 1]; /* [row][k] */
    __shared__ float xs[MM_TILE][MM_K + 1]; /* [token][k] */
    int32_t row0 = blockIdx.x * MM_TILE, tok0 = blockIdx.y * MM_TILE;
    int32_t tx = threadIdx.x % 16, ty = threadIdx.x / 16; /* rows tx + 16i, tokens ty + 16j */
    int64_t row_bytes = tm_wtype_row_bytes(W, n_in);
    float acc[4][4] = {{0.0f}};
    for (int32_t k0 = 0; k0 < n_in; k0 += MM_K) {
        for (int32_t e = threadIdx.x; e < MM_TILE * MM_K; e += blockDim.x) {
            int32_t r = e / MM_K, k = e % MM_K;
            int32_t o = row0 + r, t = tok0 + r, i = k0 + k;
            ws[r][k] = o < n_out && i < n_in
                           ? tm_load_weight<W>((const uint8_t *)w + o * row_bytes, i) : 0.0f;
            xs[r][k] = t < n_tokens && i < n_in ? x[(int64_t)t * n_in + i] : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int32_t k = 0; k < MM_K; k++) {
            float wr[4], xt[4];
#pragma unroll
            for (int a = 0; a < 4; a++) {
                wr[a] = ws[tx + 16 * a][k];
                xt[a] = xs[ty + 16 * a][k];
            }
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int b = 0; b < 4; b++) acc[a][b] += wr[a] * xt[b];
        }
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int b = 0; b < 4; b++) {
            int32_t o = row0 + tx + 16 * a, t = tok0 + ty + 16 * b;
            if (o < n_out && t < n_tokens) out[(int64_t)t * out_stride + o] = acc[a][b];
        }
}

#define TM_DEFINE_MATMUL_CU(wname, WTYPE)                                               \
    TM_GLOBAL void tm_matvec_##wname(TM_DECLARE_PARAMS(matmul)) {           \
        matvec<WTYPE>(out, x, w, n_tokens, n_in, n_out, out_stride);                    \
    }                                                                                   \
    TM_GLOBAL void tm_matmul_##wname(TM_DECLARE_PARAMS(matmul)) {           \
        matmul<WTYPE>(out, x, w, n_tokens, n_in, n_out, out_stride);                    \
    }
TM_DEFINE_MATMUL_CU(f32, TM_WTYPE_F32)
TM_DEFINE_MATMUL_CU(f16, TM_WTYPE_F16)
TM_DEFINE_MATMUL_CU(bf16, TM_WTYPE_BF16)
TM_DEFINE_MATMUL_CU(q8_0, TM_WTYPE_Q8_0)
TM_QUANT_TYPES(TM_DEFINE_MATMUL_CU)
