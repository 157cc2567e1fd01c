/* cuda_common.cuh — what the CUDA kernels share: warp and block reductions and the
 * weight element loaders. Included by kernels/module.cu before the kernel files. */
#ifndef TM_CUDA_COMMON_CUH
#define TM_CUDA_COMMON_CUH

#include <stdint.h>

#include "kernels/f16.h"
#include "kernels/kernels.h"
#include "kernels/q8_0.h"
#include "kernels/quants.h"

/* How a kernel is declared: exported with its plain name, as the engine looks it up.
 * (A CPU emulation of these kernels, tests/kernels/cuda_emu.h, defines it otherwise.) */
#ifndef TM_GLOBAL
#define TM_GLOBAL extern "C" __global__
#endif

#define TM_FULL_MASK 0xffffffffu

__device__ __forceinline__ float tm_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(TM_FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ float tm_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(TM_FULL_MASK, v, o));
    return v;
}

/* Sum over the block, returned to every thread. scratch: [32] shared floats. Every
 * thread of the block must call it (it synchronises). */
__device__ __forceinline__ float tm_block_sum(float v, float *scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
    v = tm_warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (int)threadIdx.x < n_warps ? scratch[threadIdx.x] : 0.0f;
    if (warp == 0) v = tm_warp_sum(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads(); /* scratch is free again when this returns */
    return v;
}

/* Max over the block (NaN ignored, as fmaxf does), returned to every thread. */
__device__ __forceinline__ float tm_block_max(float v, float *scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
    v = tm_warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (int)threadIdx.x < n_warps ? scratch[threadIdx.x] : -INFINITY;
    if (warp == 0) v = tm_warp_max(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    v = scratch[0];
    __syncthreads();
    return v;
}

/* Element i of a weight row of type W, as f32 (Q8_0: d * q, as the twins compute it). */
template <int W> __device__ __forceinline__ float tm_load_weight(const uint8_t *row, int64_t i);

template <> __device__ __forceinline__ float tm_load_weight<TM_WTYPE_F32>(const uint8_t *row,
                                                                         int64_t i) {
    return ((const float *)row)[i];
}
template <> __device__ __forceinline__ float tm_load_weight<TM_WTYPE_F16>(const uint8_t *row,
                                                                         int64_t i) {
    return tm_f16_to_f32(((const uint16_t *)row)[i]);
}
template <> __device__ __forceinline__ float tm_load_weight<TM_WTYPE_BF16>(const uint8_t *row,
                                                                          int64_t i) {
    return tm_bf16_to_f32(((const uint16_t *)row)[i]);
}
template <> __device__ __forceinline__ float tm_load_weight<TM_WTYPE_Q8_0>(const uint8_t *row,
                                                                          int64_t i) {
    const uint8_t *block = row + (i / TM_Q8_0_BLOCK) * TM_Q8_0_BLOCK_BYTES;
    return tm_q8_0_scale(block) * (float)(int8_t)block[2 + i % TM_Q8_0_BLOCK];
}

/* The block-quantised types: element i is value i % QK of block i / QK, decoded by
 * quants.h exactly as the twins decode it. */
#define TM_LOAD_QUANT(wname, WTYPE)                                                     \
    template <> __device__ __forceinline__ float tm_load_weight<WTYPE>(const uint8_t *row, \
                                                                      int64_t i) {      \
        const int32_t qk = tm_wtype_block(WTYPE);                                       \
        return tm_quant_##wname(row + (i / qk) * tm_wtype_block_bytes(WTYPE), (int)(i % qk)); \
    }
TM_QUANT_TYPES(TM_LOAD_QUANT)

#endif /* TM_CUDA_COMMON_CUH */
