/* rows.cu — tm_softmax and tm_argmax over [n_rows][n_cols] f32.
 *
 * Parallelisation: one block per row (256 threads), threads stride the row; maxima
 * and sums are block reductions.
 */
TM_GLOBAL void tm_softmax(TM_DECLARE_PARAMS(softmax)) {
    __shared__ float scratch[32];
    if ((int32_t)blockIdx.x >= n_rows) return; /* n_rows = 0 still launches one block */
    float *xr = x + (int64_t)blockIdx.x * n_cols;
    float m = -INFINITY;
    for (int32_t i = threadIdx.x; i < n_cols; i += blockDim.x) m = fmaxf(m, xr[i]);
    m = tm_block_max(m, scratch);
    float sum = 0.0f;
    for (int32_t i = threadIdx.x; i < n_cols; i += blockDim.x) {
        float e = expf(xr[i] - m);
        xr[i] = e;
        sum += e;
    }
    sum = tm_block_sum(sum, scratch);
    for (int32_t i = threadIdx.x; i < n_cols; i += blockDim.x) xr[i] = xr[i] / sum;
}

/* (value, index) pairs: a better pair has a larger value, or an equal value and a lower
 * index; index -1 (only NaN seen) loses to everything. */
__device__ __forceinline__ void argmax_merge(float *v, int32_t *idx, float ov, int32_t oi) {
    if (oi < 0) return;
    if (*idx < 0 || ov > *v || (ov == *v && oi < *idx)) {
        *v = ov;
        *idx = oi;
    }
}

TM_GLOBAL void tm_argmax(TM_DECLARE_PARAMS(argmax)) {
    __shared__ float best_v[32];
    __shared__ int32_t best_i[32];
    if ((int32_t)blockIdx.x >= n_rows) return;
    const float *xr = x + (int64_t)blockIdx.x * n_cols;
    float v = 0.0f;
    int32_t idx = -1;
    for (int32_t i = threadIdx.x; i < n_cols; i += blockDim.x)
        if (xr[i] == xr[i]) argmax_merge(&v, &idx, xr[i], i);
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(TM_FULL_MASK, v, o);
        int32_t oi = __shfl_xor_sync(TM_FULL_MASK, idx, o);
        argmax_merge(&v, &idx, ov, oi);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        best_v[warp] = v;
        best_i[warp] = idx;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)((blockDim.x + 31) >> 5); w++)
            argmax_merge(&v, &idx, best_v[w], best_i[w]);
        out[blockIdx.x] = idx < 0 ? 0 : idx;
    }
}
