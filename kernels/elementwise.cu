/* elementwise.cu — tm_silu_mul, tm_add, tm_absmax over flat f32 arrays [n], and
 * tm_set_threads (nothing to do on a GPU).
 *
 * Parallelisation: grid-stride loops (any grid is correct; kernels.h fixes the one to
 * use); absmax is one block that reduces the whole array (it runs for calibration,
 * not per token).
 */
TM_GLOBAL void tm_silu_mul(TM_DECLARE_PARAMS(silu_mul)) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

TM_GLOBAL void tm_add(TM_DECLARE_PARAMS(add)) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

TM_GLOBAL void tm_absmax(TM_DECLARE_PARAMS(absmax)) {
    __shared__ float scratch[32];
    float m = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, fabsf(x[i]));
    m = tm_block_max(m, scratch);
    if (threadIdx.x == 0) out[0] = fmaxf(out[0], m);
}

TM_GLOBAL void tm_set_threads(TM_DECLARE_PARAMS(set_threads)) {
    (void)n_threads;
}
