/* kernels_abi1.c — a simcuda module of host-kernel ABI 1 (before kernels declared what
 * they touch), for the test that such modules still load and run, and are charged the
 * launch overhead only. ABI 1 had no SIMCUDA_MODULE() of this header's version, so the
 * marker is spelled out. */
#include "tools/simcuda/simcuda.h"

__attribute__((visibility("default"))) const int simcuda_module_abi = 1;

/* store_u32(uint32_t *out, uint32_t value): out[0] = value. Reads only the ABI 1 fields
 * of the launch. */
SIMCUDA_KERNEL(store_u32)
{
    *SIMCUDA_ARG(launch, 0, uint32_t *) = SIMCUDA_ARG(launch, 1, uint32_t);
}
