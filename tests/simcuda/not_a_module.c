/* not_a_module.c — a shared library with a kernel-shaped function but without the
 * SIMCUDA_MODULE() marker: simcuda must refuse it with CUDA_ERROR_INVALID_IMAGE. */
#include "tools/simcuda/simcuda.h"

SIMCUDA_KERNEL(fill_u32)
{
    (void)launch;
}
