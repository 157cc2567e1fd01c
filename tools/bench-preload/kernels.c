/* kernels.c — the benchmark's kernel module for simcuda: a kernel that does nothing, so a
 * launch costs only the path through the driver (and the interposer). */
#include "tools/simcuda/simcuda.h"

SIMCUDA_MODULE();

SIMCUDA_KERNEL(noop)
{
    (void)launch;
}
