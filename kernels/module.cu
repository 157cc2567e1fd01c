/* module.cu — every CUDA kernel in one translation unit, so that the fatbin holds one
 * cubin per architecture and one cuModuleLoadData gives the engine every kernel.
 * The kernel files are written to be included here, after the shared headers. */
#include <math.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"
#include "kernels/fp8.h"
#include "kernels/kernels.h"
#include "kernels/kv_elem.h"
#include "kernels/kv_layout.h"
#include "kernels/moe_route.h"

#include "kernels/embed.cu"
#include "kernels/rmsnorm.cu"
#include "kernels/matmul.cu"
#include "kernels/rope.cu"
#include "kernels/elementwise.cu"
#include "kernels/rows.cu"
#include "kernels/kv_append.cu"
#include "kernels/attention.cu"
#include "kernels/moe.cu"
