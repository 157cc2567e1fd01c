/* kernels_host.c — the conformance test kernels as a simcuda module (host functions).
 *
 * simcuda calls each kernel once per launch; the kernel covers the whole grid itself.
 * Device pointers are host addresses here, so arguments are dereferenced directly.
 * Semantics match kernels.cu; see test_kernels.h.
 */
#include <time.h>

#include "tools/simcuda/simcuda.h"
#include "tests/simcuda/test_kernels.h"

SIMCUDA_MODULE();

SIMCUDA_KERNEL(probe)
{
    struct probe_record *out = SIMCUDA_ARG(launch, 0, struct probe_record *);
    out->grid[0] = launch->grid.x;
    out->grid[1] = launch->grid.y;
    out->grid[2] = launch->grid.z;
    out->block[0] = launch->block.x;
    out->block[1] = launch->block.y;
    out->block[2] = launch->block.z;
    out->shared_mem_bytes = launch->shared_mem_bytes;
    out->a = SIMCUDA_ARG(launch, 1, int32_t);
    out->b = SIMCUDA_ARG(launch, 2, double);
    out->c = SIMCUDA_ARG(launch, 3, uint8_t);
    out->t = SIMCUDA_ARG(launch, 4, struct probe_triple);
    out->stream = (uint64_t)(uintptr_t)launch->stream;
    out->params = (uint64_t)(uintptr_t)launch->params;
    for (int i = 0; i < 5; i++)
        out->param_ptrs[i] = (uint64_t)(uintptr_t)launch->params[i];
    out->runs++;
}

SIMCUDA_KERNEL(fill_u32)
{
    uint32_t *out = SIMCUDA_ARG(launch, 0, uint32_t *); /* [n] */
    uint32_t n = SIMCUDA_ARG(launch, 1, uint32_t);
    uint32_t base = SIMCUDA_ARG(launch, 2, uint32_t);
    for (uint32_t i = 0; i < n; i++)
        out[i] = base + i;
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

SIMCUDA_KERNEL(gate)
{
    uint32_t *flag = SIMCUDA_ARG(launch, 0, uint32_t *);
    uint32_t *done = SIMCUDA_ARG(launch, 1, uint32_t *);
    uint64_t timeout_ns = SIMCUDA_ARG(launch, 2, uint64_t);
    uint64_t start = monotonic_ns();
    uint32_t result = GATE_DONE;
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) {
        if (monotonic_ns() - start > timeout_ns) {
            result = GATE_TIMED_OUT;
            break;
        }
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
    __atomic_store_n(done, result, __ATOMIC_RELEASE);
}

/* simcuda only (the time model, ABI 2): touch_declare(const void *start, uint64_t bytes,
 * int32_t is_write, double flops) declares one range and its FLOPs and touches nothing,
 * so a test can charge gigabytes without using them. */
SIMCUDA_KERNEL(touch_declare)
{
    const void *start = SIMCUDA_ARG(launch, 0, const void *);
    uint64_t bytes = SIMCUDA_ARG(launch, 1, uint64_t);
    if (SIMCUDA_ARG(launch, 2, int32_t))
        simcuda_writes(launch, (void *)start, bytes);
    else
        simcuda_reads(launch, start, bytes);
    simcuda_flops(launch, SIMCUDA_ARG(launch, 3, double));
}
