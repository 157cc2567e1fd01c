// calibrate_kernels.cu — the GPU side of tests/gpu/calibrate.c: one kernel that reads a
// buffer in place (pinned host memory or a HOST_NUMA chunk, over the link) and sums its
// 32-bit words, so the read cannot be optimised away and the program can check it.
// calibrate_kernels_sim.c is the same kernel for simcuda. Built as a fatbin for sm_80 and
// sm_90 (+ compute_90 PTX) by tests/gpu/module.mk.
//
// Each thread loads 16 bytes at a time over a grid-stride loop (many loads in flight is
// what reading host memory needs), sums within its warp, and one lane per warp adds the
// warp's sum to *sum.
extern "C" __global__ void read_words(const uint4 *data,      // [vectors]
                                      unsigned long long vectors,
                                      unsigned long long *sum) // [1], accumulated
{
    unsigned long long local = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride) {
        const uint4 v = data[i];
        local += (unsigned long long)v.x + v.y + v.z + v.w;
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        local += __shfl_down_sync(0xffffffffu, local, offset);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(sum, local);
}
