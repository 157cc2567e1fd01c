/* cuda_api.h — the CUDA driver API as the interposer sees it: cuda.h with every ABI
 * version's function-pointer type from cudaTypedefs.h.
 *
 * cuda.h renames cuGetProcAddress to cuGetProcAddress_v2, cuIpcOpenMemHandle to
 * cuIpcOpenMemHandle_v2 and cuDevicePrimaryCtxRelease and _Reset to their _v2; the
 * interposer defines and forwards both ABIs of each by their exported names, so the
 * renames are undone here. */
#ifndef TM_PRELOAD_CUDA_API_H
#define TM_PRELOAD_CUDA_API_H

#include <cuda.h>
#include <cudaTypedefs.h>

#undef cuGetProcAddress
#undef cuIpcOpenMemHandle
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset

/* cudaTypedefs.h declares the first ABI of cuIpcOpenMemHandle only for the driver's own
 * build; this is its prototype there, the same as the _v11000 one. */
typedef CUresult (CUDAAPI *PFN_cuIpcOpenMemHandle_v4010)(CUdeviceptr_v2 *pdptr, CUipcMemHandle_v1 handle,
                                                         unsigned int Flags);

/* Likewise the first ABIs of the primary context's release and reset, which libcudart
 * 13.0 asks cuGetProcAddress for at version 7000 (cudaDeviceReset calls the reset). */
typedef CUresult (CUDAAPI *PFN_cuDevicePrimaryCtxRelease_v7000)(CUdevice_v1 dev);
typedef CUresult (CUDAAPI *PFN_cuDevicePrimaryCtxReset_v7000)(CUdevice_v1 dev);

#define TM_EXPORT __attribute__((visibility("default")))

#endif /* TM_PRELOAD_CUDA_API_H */
