/* reference.h — test support: a seeded random generator and plain scalar references,
 * written for clarity (double precision, no tiling, no vectors) to check the twins. */
#ifndef TM_TEST_REFERENCE_H
#define TM_TEST_REFERENCE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/f16.h"
#include "kernels/fp8.h"
#include "kernels/kernels.h"
#include "kernels/q8_0.h"
#include "kernels/quantize.h"

/* ---- random numbers (splitmix64: reproducible on every machine) ---- */

static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double rng_uniform(uint64_t *s) { return (rng_next(s) >> 11) * 0x1p-53; }
static inline float rng_normal(uint64_t *s) {
    double u1 = rng_uniform(s), u2 = rng_uniform(s);
    return (float)(sqrt(-2.0 * log(u1 + 1e-300)) * cos(2.0 * M_PI * u2));
}
static inline void fill_normal(float *x, int64_t n, float sigma, uint64_t *s) {
    for (int64_t i = 0; i < n; i++) x[i] = sigma * rng_normal(s);
}

/* ---- weights of each type: random rows and their exact f32 values ---- */

/* Fills w (n_rows rows of wtype) with random values and dense (the exact f32 values
 * each element stands for). */
static inline void make_weights(int32_t wtype, void *w, float *dense /* [n_rows][n] */,
                                int64_t n_rows, int64_t n, uint64_t *s) {
    fill_normal(dense, n_rows * n, 0.5f, s);
    int64_t row_bytes = tm_wtype_row_bytes(wtype, n);
    for (int64_t r = 0; r < n_rows; r++) {
        float *d = dense + r * n;
        uint8_t *row = (uint8_t *)w + r * row_bytes;
        switch (wtype) {
        case TM_WTYPE_F32: memcpy(row, d, (size_t)n * 4); break;
        case TM_WTYPE_F16:
            for (int64_t i = 0; i < n; i++) {
                ((uint16_t *)row)[i] = tm_f32_to_f16(d[i]);
                d[i] = tm_f16_to_f32(((uint16_t *)row)[i]);
            }
            break;
        case TM_WTYPE_BF16:
            for (int64_t i = 0; i < n; i++) {
                ((uint16_t *)row)[i] = tm_f32_to_bf16(d[i]);
                d[i] = tm_bf16_to_f32(((uint16_t *)row)[i]);
            }
            break;
        case TM_WTYPE_Q8_0:
            tm_q8_0_quantize_row(row, d, n);
            tm_q8_0_dequantize_row(d, row, n);
            break;
        default: /* the block-quantised types of quants.h */
            tm_quantize_row(wtype, row, d, n);
            tm_dequantize_row(wtype, d, row, n);
            break;
        }
    }
}

/* Higham's bound for a float sum of n terms, computed in any order: gamma_n = n u / (1 - n u). */
static inline double gamma_n(double n) {
    double u = 0x1p-24;
    return n * u / (1.0 - n * u);
}

#endif /* TM_TEST_REFERENCE_H */
