// cuda_emu.h — just enough of CUDA to run the project's .cu kernels on a CPU, so that
// their code (indexing, barriers, warp shuffles, shared memory) is checked against the
// C twins on machines without a GPU. It is a test tool, not a CUDA implementation:
//
// - A launch runs the blocks one after another. The threads of a block are coroutines
//   (ucontext) on one OS thread, each on its own stack; a thread runs until it reaches
//   __syncthreads() or a warp shuffle, then the next one runs. A barrier opens when every
//   thread that has not returned is waiting at it (exited threads do not count, as on a
//   GPU); a shuffle's barrier is per warp. Mixing the two, or a barrier reached by only
//   some threads of a block, is reported as a deadlock.
// - __shared__ becomes `static`: one copy, shared by the threads of the running block;
//   blocks never overlap, so that is what a block sees on a GPU.
// - Math is the host's libm (expf, sinf, ...), so results differ from a GPU's in the
//   last bits, as the twins' do: kernel_check's tolerances apply unchanged.
// The kernels see __CUDACC__ (so the headers take their CUDA branches) but not
// __CUDA_ARCH__ (so bit casts use memcpy).
#ifndef TM_CUDA_EMU_H
#define TM_CUDA_EMU_H

#define __CUDACC__ 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>

struct emu_dim3 {
    unsigned int x, y, z;
};

// The running thread's coordinates, switched by the scheduler.
extern emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

void __syncthreads();
void emu_warp_barrier();
uint32_t *emu_shuffle_slots(); // [threads of the block]

template <class T> T __shfl_xor_sync(unsigned int mask, T v, int lane_mask) {
    (void)mask;
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    uint32_t *slots = emu_shuffle_slots();
    unsigned int me = threadIdx.x;
    unsigned int partner = (me & ~31u) | ((me & 31u) ^ (unsigned int)lane_mask);
    memcpy(&slots[me], &v, 4);
    emu_warp_barrier(); // every lane has published its value
    T r;
    memcpy(&r, &slots[partner], 4);
    emu_warp_barrier(); // every lane has read before the slots are reused
    return r;
}

using std::max;
using std::min;

#endif // TM_CUDA_EMU_H
