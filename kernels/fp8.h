/* fp8.h — fp8 e4m3 and e5m2 encode/decode, identical in C and CUDA.
 *
 * Formats (OCP 8-bit floating point, the ones NVIDIA's __nv_fp8_e4m3/__nv_fp8_e5m2 hold):
 *   e4m3 ("fn"): sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinity; only
 *                S.1111.111 (0x7f, 0xff) is NaN. Largest finite 448, smallest normal
 *                2^-6, smallest subnormal 2^-9.
 *   e5m2:        sign, 5 exponent bits (bias 15), 2 mantissa bits; the top byte of an
 *                IEEE f16. Infinity 0x7c, NaN 0x7d..0x7f. Largest finite 57344,
 *                smallest normal 2^-14, smallest subnormal 2^-16.
 *
 * Encoding rounds to nearest, ties to even, and saturates: anything beyond the largest
 * finite value, infinity included, becomes +-448 (e4m3) or +-57344 (e5m2), the
 * behaviour of __NV_SATFINITE. NaN stays NaN (0x7f with the input's sign). The sign of
 * zero is kept, and values too small for the smallest subnormal round to +-0.
 *
 * Both sides run this same integer code (no conversion intrinsics), so a KV page
 * written by a CUDA kernel and one written by a C twin are equal byte for byte.
 */
#ifndef TM_FP8_H
#define TM_FP8_H

#include <stdint.h>
#include <string.h>
#ifndef __CUDACC__
#include <math.h>
#endif

#ifdef __CUDACC__
#define TM_FP8_FN static inline __host__ __device__
#else
#define TM_FP8_FN static inline
#endif

#define TM_FP8_E4M3_MAX 448.0f
#define TM_FP8_E5M2_MAX 57344.0f

TM_FP8_FN uint32_t tm_f32_bits(float x) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(x);
#else
    uint32_t u; /* memcpy, not a union: GCC vectorises loops over it */
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

TM_FP8_FN float tm_bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

/* Encodes x into a format with man_bits mantissa bits and exponent bias `bias`;
 * max_code is the largest finite code, nan_code the NaN code (without sign). */
TM_FP8_FN uint8_t tm_fp8_encode(float x, int man_bits, int bias, uint32_t max_code,
                                uint32_t nan_code) {
    uint32_t bits = tm_f32_bits(x);
    uint32_t sign = (bits >> 24) & 0x80u;
    uint32_t mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) return (uint8_t)(sign | nan_code);
    uint32_t min_normal = (uint32_t)(127 + 1 - bias) << 23;
    uint32_t code;
    if (mag < min_normal) {
        /* Subnormal range: multiples of 2^(1 - bias - man_bits). Scaling by a power of
         * two is exact, rintf rounds to nearest even. A result of 2^man_bits is the
         * smallest normal's code, which is what it should become. */
        float steps = tm_bits_f32(mag) * tm_bits_f32((uint32_t)(127 + bias - 1 + man_bits) << 23);
        code = (uint32_t)rintf(steps);
    } else {
        int shift = 23 - man_bits;
        uint32_t rounded = mag + ((1u << (shift - 1)) - 1u) + ((mag >> shift) & 1u);
        code = (rounded >> shift) - ((uint32_t)(127 - bias) << man_bits);
    }
    if (code > max_code) code = max_code; /* saturate (infinity included) */
    return (uint8_t)(sign | code);
}

TM_FP8_FN uint8_t tm_fp8_e4m3_from_f32(float x) { return tm_fp8_encode(x, 3, 7, 0x7e, 0x7f); }
TM_FP8_FN uint8_t tm_fp8_e5m2_from_f32(float x) { return tm_fp8_encode(x, 2, 15, 0x7b, 0x7f); }

/* Decoders: the code's exponent and mantissa bits are placed where an f32 keeps them
 * and one multiply by a power of two rebiases the exponent. That covers normals and
 * subnormals alike (a subnormal passes through an f32 denormal, exact as long as the
 * FPU does not flush denormals: no -ffast-math, no FTZ/DAZ; CUDA without -ftz). NaN
 * (and e5m2 infinity) are ORed in with a mask. No branches and no selects, so C loops
 * over these vectorise. */
TM_FP8_FN float tm_fp8_e4m3_to_f32(uint8_t q) {
    uint32_t bits = (uint32_t)(q & 0x7fu) << 20;
    uint32_t nan = (0u - (uint32_t)(bits == 0x07f00000u)) & 0x7fc00000u;
    float mag = tm_bits_f32(bits) * 0x1p120f;
    return tm_bits_f32(tm_f32_bits(mag) | nan | ((uint32_t)(q & 0x80u) << 24));
}

TM_FP8_FN float tm_fp8_e5m2_to_f32(uint8_t q) {
    uint32_t bits = (uint32_t)(q & 0x7fu) << 21;
    uint32_t special = (0u - (uint32_t)((bits & 0x0f800000u) == 0x0f800000u)) & 0x7f800000u;
    float mag = tm_bits_f32(bits) * 0x1p112f; /* special: infinity, or NaN */
    return tm_bits_f32(tm_f32_bits(mag) | special | ((uint32_t)(q & 0x80u) << 24));
}

#endif /* TM_FP8_H */
