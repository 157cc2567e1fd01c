/* kv_elem.h — reading and writing one KV cache element of each dtype, for the C twins
 * and the CUDA kernels alike (so pages written by either are the same bytes).
 *
 * Stores: f32 as is; f16 rounded to nearest even (tm_f32_to_f16); fp8 as
 * sat(x / scale) (fp8.h). Loads return the stored value without the scale: the
 * attention kernels fold k_scale into the score scale and v_scale into the output,
 * which is the same q * scale up to one rounding.
 * `dtype` is a compile-time constant at every call site, so each kernel variant
 * compiles to straight-line code for its dtype. tm_kv_scale() is the scale a kernel
 * applies: the given one for fp8, 1 for f32 and f16 (whose pages hold plain values).
 */
#ifndef TM_KV_ELEM_H
#define TM_KV_ELEM_H

#include <stdint.h>
#include "kernels/f16.h"
#include "kernels/kernels.h"

#ifdef __CUDACC__
#define TM_KV_FN static __forceinline__ __host__ __device__
#else
#define TM_KV_FN static inline __attribute__((always_inline))
#endif

TM_KV_FN float tm_kv_scale(int dtype, float scale) {
    return dtype == TM_KV_FP8_E4M3 || dtype == TM_KV_FP8_E5M2 ? scale : 1.0f;
}

TM_KV_FN float tm_kv_load(int dtype, const void *pool, int64_t idx) {
    switch (dtype) {
    case TM_KV_F16: return tm_f16_to_f32(((const uint16_t *)pool)[idx]);
    case TM_KV_FP8_E4M3: return tm_fp8_e4m3_to_f32(((const uint8_t *)pool)[idx]);
    case TM_KV_FP8_E5M2: return tm_fp8_e5m2_to_f32(((const uint8_t *)pool)[idx]);
    default: return ((const float *)pool)[idx];
    }
}

TM_KV_FN void tm_kv_store(int dtype, void *pool, int64_t idx, float x, float scale) {
    switch (dtype) {
    case TM_KV_F16: ((uint16_t *)pool)[idx] = tm_f32_to_f16(x); break;
    case TM_KV_FP8_E4M3: ((uint8_t *)pool)[idx] = tm_fp8_e4m3_from_f32(x / scale); break;
    case TM_KV_FP8_E5M2: ((uint8_t *)pool)[idx] = tm_fp8_e5m2_from_f32(x / scale); break;
    default: ((float *)pool)[idx] = x; break;
    }
}

#endif /* TM_KV_ELEM_H */
