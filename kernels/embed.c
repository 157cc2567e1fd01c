/* embed.c — twins of tm_embed_<wtype>: out[t] = table[ids[t]] converted to f32.
 *
 * Layout: table is [vocab][dim] in the weight type (Q8_0: dim / 32 blocks of 34 bytes
 * a row), ids [n_tokens], out [n_tokens][dim]. An id outside [0, vocab) gives zeros.
 * Parallelisation: tokens are independent rows; one thread per run of tokens, and only
 * for prompts long enough to pay for the threads.
 */
#include <string.h>

#include "kernels/f16.h"
#include "kernels/q8_0.h"
#include "kernels/quants.h"
#include "kernels/twin.h"

static void row_f32(float *out, const uint8_t *row, int32_t dim) {
    memcpy(out, row, (size_t)dim * sizeof(float));
}
static void row_f16(float *out, const uint8_t *row, int32_t dim) {
    const uint16_t *h = (const uint16_t *)row;
    for (int32_t i = 0; i < dim; i++) out[i] = tm_f16_to_f32(h[i]);
}
static void row_bf16(float *out, const uint8_t *row, int32_t dim) {
    const uint16_t *h = (const uint16_t *)row;
    for (int32_t i = 0; i < dim; i++) out[i] = tm_bf16_to_f32(h[i]);
}
static void row_q8_0(float *out, const uint8_t *row, int32_t dim) {
    tm_q8_0_dequantize_row(out, row, dim);
}
#define DEFINE_ROW_QUANT(wname, WTYPE)                                                  \
    static void row_##wname(float *out, const uint8_t *row, int32_t dim) {              \
        tm_dequantize_row_##wname(out, row, dim);                                       \
    }
TM_QUANT_TYPES(DEFINE_ROW_QUANT)

typedef void row_fn(float *out, const uint8_t *row, int32_t dim);

static void embed_any(row_fn *convert, int32_t wtype, float *out /* [n_tokens][dim] */,
                      const void *table /* [vocab][dim] of wtype */,
                      const int32_t *ids /* [n_tokens] */, int32_t n_tokens, int32_t dim,
                      int32_t vocab) {
    int64_t row_bytes = tm_wtype_row_bytes(wtype, dim);
#pragma omp parallel for schedule(static) num_threads(tm_twin_threads()) if (n_tokens >= 64)
    for (int32_t t = 0; t < n_tokens; t++) {
        float *o = out + (int64_t)t * dim;
        int32_t id = ids[t];
        if (id < 0 || id >= vocab) memset(o, 0, (size_t)dim * sizeof(float));
        else convert(o, (const uint8_t *)table + id * row_bytes, dim);
    }
}

#define DEFINE_EMBED(wname, WTYPE)                                                      \
    static void embed_##wname(TM_DECLARE_PARAMS(embed)) {                               \
        embed_any(row_##wname, WTYPE, out, table, ids, n_tokens, dim, vocab);           \
    }                                                                                   \
    TM_TWIN(tm_embed_##wname, embed, embed, embed_##wname, tm_check_embed(&args, WTYPE),    \
            tm_touch_embed(launch, &args, WTYPE))

DEFINE_EMBED(f32, TM_WTYPE_F32)
DEFINE_EMBED(f16, TM_WTYPE_F16)
DEFINE_EMBED(bf16, TM_WTYPE_BF16)
DEFINE_EMBED(q8_0, TM_WTYPE_Q8_0)
TM_QUANT_TYPES(DEFINE_EMBED)
