/* calibrate_kernels_sim.c — tests/gpu/calibrate_kernels.cu for simcuda (a host-kernel
 * module, tools/simcuda/simcuda.h): read_words sums the 32-bit words of its buffer and
 * declares the bytes it reads and the sum it writes, so simcuda charges the read by
 * where the buffer lives (pinned host memory or a HOST_NUMA chunk: over the link at
 * ZERO_COPY_GBPS after HOST_LATENCY_US) — the prediction the calibration table shows.
 *
 *   read_words(const uint32_t *data, uint64_t vectors, uint64_t *sum): *sum += the words
 *   of data[0, 4 * vectors) (16 bytes a vector, as the CUDA kernel loads them) */
#include <stdint.h>

#include "tools/simcuda/simcuda.h"

SIMCUDA_MODULE();

SIMCUDA_KERNEL_PARAMS(read_words, SIMCUDA_PARAM(const uint32_t *), SIMCUDA_PARAM(uint64_t), SIMCUDA_PARAM(uint64_t *));
SIMCUDA_KERNEL(read_words)
{
    const uint32_t *data = SIMCUDA_ARG(launch, 0, const uint32_t *); /* [4 * vectors] */
    uint64_t vectors = SIMCUDA_ARG(launch, 1, uint64_t);
    uint64_t *sum = SIMCUDA_ARG(launch, 2, uint64_t *);              /* [1] */
    simcuda_reads(launch, data, vectors * 16);
    simcuda_writes(launch, sum, sizeof *sum);
    uint64_t total = 0;
    for (uint64_t i = 0; i < vectors * 4; i++)
        total += data[i];
    *sum += total;
}
