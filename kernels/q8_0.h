/* q8_0.h — the GGUF Q8_0 block: 32 values as one f16 scale d and 32 int8 q, value = d * q.
 *
 * Layout of a block (34 bytes, 2-byte aligned at best, as in GGML's block_q8_0):
 *     uint16_t d;      f16 scale
 *     int8_t   q[32];
 * A row of n values (n a multiple of 32) is n / 32 consecutive blocks.
 *
 * Quantising follows GGML (quantize_row_q8_0_ref): d = max|x| / 127, q = round(x / d)
 * (halves away from zero), d stored as f16. Round-trip error per value is at most
 * d / 2 plus 127 * |d - f16(d)| (the f16 rounding of the scale, relative 2^-11).
 */
#ifndef TM_Q8_0_H
#define TM_Q8_0_H

#include <stdint.h>
#include <string.h>
#include "kernels/kernels.h"
#include "kernels/f16.h"

struct tm_q8_0_block {
    uint16_t d;                 /* f16 scale */
    int8_t q[TM_Q8_0_BLOCK];    /* quants */
};

/* Scale of a block, read without assuming alignment (blocks are 34 bytes apart). */
TM_FP8_FN float tm_q8_0_scale(const uint8_t *block /* [34] */) {
    return tm_f16_to_f32((uint16_t)(block[0] | (uint16_t)block[1] << 8));
}

#ifndef __CUDACC__
/* x[n] -> out[n / 32 blocks]; n must be a multiple of 32. */
static inline void tm_q8_0_quantize_row(uint8_t *out /* [n / 32][34] */,
                                        const float *x /* [n] */, int64_t n) {
    for (int64_t b = 0; b < n / TM_Q8_0_BLOCK; b++) {
        const float *xb = x + b * TM_Q8_0_BLOCK;
        float amax = 0.0f;
        for (int j = 0; j < TM_Q8_0_BLOCK; j++) amax = fmaxf(amax, fabsf(xb[j]));
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t *ob = out + b * TM_Q8_0_BLOCK_BYTES;
        uint16_t dh = tm_f32_to_f16(d);
        ob[0] = (uint8_t)(dh & 0xff);
        ob[1] = (uint8_t)(dh >> 8);
        for (int j = 0; j < TM_Q8_0_BLOCK; j++) ob[2 + j] = (uint8_t)(int8_t)roundf(xb[j] * id);
    }
}

/* blocks -> x[n]. */
static inline void tm_q8_0_dequantize_row(float *out /* [n] */,
                                          const uint8_t *in /* [n / 32][34] */, int64_t n) {
    for (int64_t b = 0; b < n / TM_Q8_0_BLOCK; b++) {
        const uint8_t *ib = in + b * TM_Q8_0_BLOCK_BYTES;
        float d = tm_q8_0_scale(ib);
        for (int j = 0; j < TM_Q8_0_BLOCK; j++)
            out[b * TM_Q8_0_BLOCK + j] = d * (float)(int8_t)ib[2 + j];
    }
}
#endif

#endif /* TM_Q8_0_H */
