/* embed.cu — tm_embed_<wtype>: out[t] = table[ids[t]] converted to f32.
 *
 * Layout: table [vocab][dim] in the weight type (Q8_0 rows: dim / 32 blocks of 34
 * bytes), ids [n_tokens], out [n_tokens][dim]; an id outside [0, vocab) gives zeros.
 * Parallelisation: one block per token (grid n_tokens, 256 threads); threads stride
 * over the row, so reads and writes are coalesced.
 */
template <int W>
__device__ void embed(float *out, const void *table, const int32_t *ids, int32_t dim,
                      int32_t vocab) {
    int32_t t = blockIdx.x;
    int32_t id = ids[t];
    float *o = out + (int64_t)t * dim;
    bool valid = id >= 0 && id < vocab;
    const uint8_t *row = (const uint8_t *)table + (valid ? id * tm_wtype_row_bytes(W, dim) : 0);
    for (int32_t i = threadIdx.x; i < dim; i += blockDim.x)
        o[i] = valid ? tm_load_weight<W>(row, i) : 0.0f;
}

#define TM_DEFINE_EMBED_CU(wname, WTYPE)                                                \
    TM_GLOBAL void tm_embed_##wname(TM_DECLARE_PARAMS(embed)) {             \
        if ((int32_t)blockIdx.x >= n_tokens) return; /* a grid is never empty */       \
        embed<WTYPE>(out, table, ids, dim, vocab);                                      \
    }
TM_DEFINE_EMBED_CU(f32, TM_WTYPE_F32)
TM_DEFINE_EMBED_CU(f16, TM_WTYPE_F16)
TM_DEFINE_EMBED_CU(bf16, TM_WTYPE_BF16)
TM_DEFINE_EMBED_CU(q8_0, TM_WTYPE_Q8_0)
TM_QUANT_TYPES(TM_DEFINE_EMBED_CU)
