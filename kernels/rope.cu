/* rope.cu — tm_rope: rotary position embedding, in place.
 *
 * Layout: x [n_tokens][row_stride], heads [n_heads][head_dim] from each row's start;
 * pairs i < rot_dim / 2, (2i, 2i+1) or with neox (i, i + rot_dim / 2), turn by
 * pos[t] * base^(-2i / rot_dim) / freq_factors[i], in double as the twin does (rope.c). Parallelisation: one block per token (128 threads); threads take
 * (head, pair) items.
 */
TM_GLOBAL void tm_rope(TM_DECLARE_PARAMS(rope)) {
    int32_t t = blockIdx.x, half = rot_dim / 2;
    if (t >= n_tokens) return; /* n_tokens = 0 still launches one block */
    float *xt = x + (int64_t)t * row_stride;
    for (int32_t item = threadIdx.x; item < n_heads * half; item += blockDim.x) {
        int32_t h = item / half, i = item % half;
        double angle = (double)pos[t] * pow((double)base, -2.0 * i / rot_dim);
        if (freq_factors) angle /= (double)freq_factors[i];
        float c = (float)cos(angle), s = (float)sin(angle);
        float *p = xt + (int64_t)h * head_dim;
        int32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
        float x0 = p[a], x1 = p[b];
        p[a] = x0 * c - x1 * s;
        p[b] = x0 * s + x1 * c;
    }
}
