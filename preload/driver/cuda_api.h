/* cuda_api.h — the CUDA driver API as the interposer sees it: cuda.h with every ABI
 * version's function-pointer type from cudaTypedefs.h.
 *
 * cuda.h renames cuGetProcAddress to cuGetProcAddress_v2 and cuIpcOpenMemHandle to
 * cuIpcOpenMemHandle_v2; the interposer defines and forwards both ABIs by their exported
 * names, so the renames are undone here. */
#ifndef TM_PRELOAD_CUDA_API_H
#define TM_PRELOAD_CUDA_API_H

#include <cuda.h>
#include <cudaTypedefs.h>

#undef cuGetProcAddress
#undef cuIpcOpenMemHandle

/* cudaTypedefs.h declares the first ABI of cuIpcOpenMemHandle only for the driver's own
 * build; this is its prototype there, the same as the _v11000 one. */
typedef CUresult (CUDAAPI *PFN_cuIpcOpenMemHandle_v4010)(CUdeviceptr_v2 *pdptr, CUipcMemHandle_v1 handle,
                                                         unsigned int Flags);

#define TM_EXPORT __attribute__((visibility("default")))

#endif /* TM_PRELOAD_CUDA_API_H */
