/* f16.h — IEEE binary16 and bfloat16 conversions, identical in C and CUDA.
 *
 * Decoding is exact. Encoding rounds to nearest, ties to even; f16 overflows to
 * infinity (IEEE behaviour, as __float2half_rn); NaN stays NaN; subnormals are
 * produced and read back exactly. No intrinsics: both sides run this code and give the
 * same bits, and the C compiler vectorises the decoders (see fp8.h on denormals).
 */
#ifndef TM_F16_H
#define TM_F16_H

#include <stdint.h>
#include "kernels/fp8.h" /* tm_f32_bits, tm_bits_f32 */

/* f16 -> f32 the way fp8.h decodes e5m2 (an f16 is an e5m10): bits in place, one
 * multiply by 2^112 for normals and subnormals, infinity and NaN ORed in. */
TM_FP8_FN float tm_f16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)(h & 0x7fffu) << 13; /* tested in 32-bit lanes: faster */
    uint32_t special = (0u - (uint32_t)((bits & 0x0f800000u) == 0x0f800000u)) & 0x7f800000u;
    float mag = tm_bits_f32(bits) * 0x1p112f;
    return tm_bits_f32(tm_f32_bits(mag) | special | ((uint32_t)(h & 0x8000u) << 16));
}

/* f32 -> f16, round to nearest even, overflow to infinity. */
TM_FP8_FN uint16_t tm_f32_to_f16(float x) {
    uint32_t bits = tm_f32_bits(x);
    uint32_t sign = (bits >> 16) & 0x8000u;
    uint32_t mag = bits & 0x7fffffffu;
    if (mag > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
    if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (mag < 0x38800000u) { /* below 2^-14: subnormal steps of 2^-24, exact scaling */
        float steps = tm_bits_f32(mag) * 0x1p24f;
        return (uint16_t)(sign | (uint32_t)rintf(steps));
    }
    uint32_t rounded = mag + 0xfffu + ((mag >> 13) & 1u);
    return (uint16_t)(sign | ((rounded >> 13) - (112u << 10)));
}

/* bf16 -> f32: the top half of an f32. */
TM_FP8_FN float tm_bf16_to_f32(uint16_t b) { return tm_bits_f32((uint32_t)b << 16); }

/* f32 -> bf16, round to nearest even; NaN stays a quiet NaN. */
TM_FP8_FN uint16_t tm_f32_to_bf16(float x) {
    uint32_t bits = tm_f32_bits(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40u);
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

#endif /* TM_F16_H */
