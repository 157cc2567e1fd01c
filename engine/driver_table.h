/* driver_table.h — every CUDA driver entry point the engine calls, listed once.
 *
 * X(name, abi): `name` is the symbol asked of cuGetProcAddress_v2 with cudaVersion =
 * CUDA_VERSION (13000); `abi` is the version of the function that request returns (the
 * newest at or below 13000), which picks the exact PFN_<name>_v<abi> typedef from
 * cudaTypedefs.h. NOTE: these are not always the versions cuda.h's macros name: at
 * 13000 "cuCtxSynchronize" returns cuCtxSynchronize_v2, which takes a CUcontext.
 */
#ifndef TM_ENGINE_DRIVER_TABLE_H
#define TM_ENGINE_DRIVER_TABLE_H

#define TM_DRIVER_TABLE(X)                 \
    X(cuGetErrorName, 6000)                \
    X(cuGetErrorString, 6000)              \
    X(cuInit, 2000)                        \
    X(cuDriverGetVersion, 2020)            \
    X(cuDeviceGetCount, 2000)              \
    X(cuDeviceGet, 2000)                   \
    X(cuDeviceGetName, 2000)               \
    X(cuDeviceTotalMem, 3020)              \
    X(cuDevicePrimaryCtxRetain, 7000)      \
    X(cuDevicePrimaryCtxRelease, 11000)    \
    X(cuCtxSetCurrent, 4000)               \
    X(cuCtxSynchronize, 13000)             \
    X(cuMemGetInfo, 3020)                  \
    X(cuMemAlloc, 3020)                    \
    X(cuMemFree, 3020)                     \
    X(cuMemcpyHtoD, 3020)                  \
    X(cuMemcpyHtoDAsync, 3020)             \
    X(cuMemHostRegister, 6050)             \
    X(cuMemHostUnregister, 4000)           \
    X(cuStreamCreate, 2000)                \
    X(cuStreamDestroy, 4000)               \
    X(cuStreamSynchronize, 2000)           \
    X(cuMemcpyDtoH, 3020)                  \
    X(cuMemsetD8, 3020)                    \
    X(cuModuleLoad, 2000)                  \
    X(cuModuleLoadData, 2000)              \
    X(cuModuleUnload, 2000)                \
    X(cuModuleGetFunction, 2000)           \
    X(cuLaunchKernel, 4000)                \
    X(cuEventCreate, 2000)                 \
    X(cuEventRecord, 2000)                 \
    X(cuEventSynchronize, 2000)            \
    X(cuEventElapsedTime, 12080)           \
    X(cuEventDestroy, 4000)

#endif /* TM_ENGINE_DRIVER_TABLE_H */
