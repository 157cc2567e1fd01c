/* rmsnorm.cu — tm_rmsnorm: out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight.
 *
 * Layout: x, out [n_rows][dim] (out may alias x), weight [dim].
 * Parallelisation: one block per row (256 threads); the sum of squares is a block
 * reduction (warp shuffles, then one warp over the warp sums). Every read of x for the
 * sum happens before the reduction's barrier, so writing out over x is safe.
 */
TM_GLOBAL void tm_rmsnorm(TM_DECLARE_PARAMS(rmsnorm)) {
    __shared__ float scratch[32];
    if ((int32_t)blockIdx.x >= n_rows) return; /* n_rows = 0 still launches one block */
    const float *xr = x + (int64_t)blockIdx.x * dim;
    float *o = out + (int64_t)blockIdx.x * dim;
    float ss = 0.0f;
    for (int32_t i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
    ss = tm_block_sum(ss, scratch);
    float inv = 1.0f / sqrtf(ss / (float)dim + eps);
    for (int32_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = xr[i] * inv * weight[i];
}
