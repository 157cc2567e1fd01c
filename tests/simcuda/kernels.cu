// kernels.cu — the conformance test kernels for a real GPU (loaded as a fatbin by
// tests/gpu/conformance.sh). Semantics match kernels_host.c; see test_kernels.h.
#include <stdint.h>

#include "test_kernels.h"

static __device__ bool first_thread()
{
    return (threadIdx.x | threadIdx.y | threadIdx.z | blockIdx.x | blockIdx.y | blockIdx.z) == 0;
}

extern "C" __global__ void probe(probe_record *out, int32_t a, double b, uint8_t c, probe_triple t)
{
    if (!first_thread())
        return;
    unsigned int shared;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(shared));
    out->grid[0] = gridDim.x;
    out->grid[1] = gridDim.y;
    out->grid[2] = gridDim.z;
    out->block[0] = blockDim.x;
    out->block[1] = blockDim.y;
    out->block[2] = blockDim.z;
    out->shared_mem_bytes = shared;
    out->a = a;
    out->b = b;
    out->c = c;
    out->t = t;
    out->runs++;
}

// Grid-stride loop: correct for any grid the test picks.
extern "C" __global__ void fill_u32(uint32_t *out, uint32_t n, uint32_t base)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = base + (uint32_t)i;
}

static __device__ uint64_t globaltimer_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void gate(uint32_t *flag, uint32_t *done, uint64_t timeout_ns)
{
    if (!first_thread())
        return;
    volatile uint32_t *f = flag;
    uint64_t start = globaltimer_ns();
    uint32_t result = GATE_DONE;
    while (*f == 0) {
        if (globaltimer_ns() - start > timeout_ns) {
            result = GATE_TIMED_OUT;
            break;
        }
        __nanosleep(1000);
    }
    __threadfence_system();
    *(volatile uint32_t *)done = result;
    __threadfence_system();
}
