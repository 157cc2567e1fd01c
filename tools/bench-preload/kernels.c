/* kernels.c — the benchmark's kernel module for simcuda: a kernel that does nothing, so a
 * launch costs only the path through the driver (and the interposer), and one that
 * declares the ranges a matrix-vector product would touch without doing the work (each
 * fires simcuda:touch, what the eBPF heat source counts). */
#include <stdint.h>

#include "tools/simcuda/simcuda.h"

SIMCUDA_MODULE();

SIMCUDA_KERNEL(noop)
{
    (void)launch;
}

/* touch4(out, x, w, n): declares reads of x[n] and w[n * n] (floats), a write of out[n]. */
SIMCUDA_KERNEL(touch4)
{
    float *out = SIMCUDA_ARG(launch, 0, float *); /* [n] */
    const float *x = SIMCUDA_ARG(launch, 1, const float *); /* [n] */
    const float *w = SIMCUDA_ARG(launch, 2, const float *); /* [n][n] */
    uint64_t n = SIMCUDA_ARG(launch, 3, uint64_t);
    simcuda_reads(launch, x, n * sizeof *x);
    simcuda_reads(launch, w, n * n * sizeof *w);
    simcuda_writes(launch, out, n * sizeof *out);
}
