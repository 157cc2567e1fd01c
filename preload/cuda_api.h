/* cuda_api.h — the CUDA driver API as the interposer sees it: cuda.h with every ABI
 * version's function-pointer type from cudaTypedefs.h.
 *
 * cuda.h renames cuGetProcAddress to cuGetProcAddress_v2; the interposer defines and
 * forwards both ABIs by their exported names, so the rename is undone here. */
#ifndef TM_PRELOAD_CUDA_API_H
#define TM_PRELOAD_CUDA_API_H

#include <cuda.h>
#include <cudaTypedefs.h>

#undef cuGetProcAddress

#define TM_EXPORT __attribute__((visibility("default")))

#endif /* TM_PRELOAD_CUDA_API_H */
