/* test_kernels.h — the kernels of the conformance tests and what they write back.
 *
 * The same kernels exist twice with identical behaviour: as host functions for simcuda
 * (kernels_host.c, built into a simcuda module) and as CUDA kernels for a real GPU
 * (kernels.cu). Plain C, so both sides and the tests include it.
 *
 *   probe(struct probe_record *out, int32_t a, double b, uint8_t c, struct probe_triple t)
 *       writes the launch geometry, the dynamic shared memory size and its arguments.
 *   fill_u32(uint32_t *out, uint32_t n, uint32_t base)      out[i] = base + i, i < n
 *   gate(uint32_t *flag, uint32_t *done, uint64_t timeout_ns)
 *       waits until *flag != 0, then stores GATE_DONE in *done (GATE_TIMED_OUT when it
 *       gave up after timeout_ns). flag and done live in host-mapped memory.
 */
#ifndef TESTS_SIMCUDA_TEST_KERNELS_H
#define TESTS_SIMCUDA_TEST_KERNELS_H

#include <stdint.h>

#define GATE_DONE 1u
#define GATE_TIMED_OUT 2u

struct probe_triple {
    int32_t v[3];
};

struct probe_record {
    uint32_t grid[3];          /* gridDim x, y, z */
    uint32_t block[3];         /* blockDim x, y, z */
    uint32_t shared_mem_bytes; /* dynamic shared memory of the launch */
    int32_t a;
    double b;
    uint8_t c;
    struct probe_triple t;
    /* Written by the simcuda kernel only (the host-kernel ABI exposes them): */
    uint64_t stream;           /* launch->stream as a number */
    uint64_t params;           /* launch->params as a number */
    uint64_t param_ptrs[5];    /* launch->params[i] as numbers */
    uint32_t runs;             /* how many times the kernel body ran */
};

#endif /* TESTS_SIMCUDA_TEST_KERNELS_H */
