/* simcuda.h — the host-kernel ABI of simcuda, the emulated CUDA driver.
 *
 * On simcuda a "module" is a shared library of host functions, loaded with
 * cuModuleLoad(path) or cuModuleLoadData(bytes of the .so). cuModuleGetFunction(name)
 * finds the exported symbol `name`; cuLaunchKernel calls it once per launch with a
 * description of the launch. The kernel covers the whole grid itself (a loop over
 * blocks, or threads of its own): simcuda does not iterate over blocks or threads.
 *
 * Device pointers on simcuda are host virtual addresses, so a kernel dereferences the
 * CUdeviceptr values in its parameters directly. Memory mapped without access
 * (cuMemMap before cuMemSetAccess) is PROT_NONE: touching it faults, as on a GPU.
 *
 * A module marks itself as a simcuda module by defining SIMCUDA_MODULE() once; a shared
 * library without that marker is refused with CUDA_ERROR_INVALID_IMAGE.
 *
 * This header needs nothing but the C library; it is the only simcuda header a kernel
 * library includes.
 */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <stdint.h>

#define SIMCUDA_ABI_VERSION 1

typedef struct simcuda_dim3 {
    unsigned int x, y, z;
} simcuda_dim3;

typedef struct simcuda_launch {
    simcuda_dim3 grid;              /* gridDimX/Y/Z as passed to cuLaunchKernel */
    simcuda_dim3 block;             /* blockDimX/Y/Z as passed */
    unsigned int shared_mem_bytes;  /* dynamic shared memory requested */
    void *stream;                   /* the CUstream of the launch (opaque here) */
    void **params;                  /* kernelParams exactly as the caller passed them:
                                     * params[i] points at the i-th argument's value */
} simcuda_launch;

/* Every kernel has this type; `name` in cuModuleGetFunction is its symbol name. */
typedef void simcuda_kernel_fn(const simcuda_launch *launch);

/* Read the i-th kernel argument as `type`, e.g. SIMCUDA_ARG(l, 0, float *). */
#define SIMCUDA_ARG(launch, i, type) (*(type const *)((launch)->params[(i)]))

/* Put once in a kernel library: marks it as a simcuda module of this ABI version. */
#define SIMCUDA_MODULE() \
    __attribute__((visibility("default"))) const int simcuda_module_abi = SIMCUDA_ABI_VERSION

/* Declares a kernel with the exported, unmangled name the module lookup expects. */
#define SIMCUDA_KERNEL(name) \
    __attribute__((visibility("default"))) void name(const simcuda_launch *launch)

#endif /* SIMCUDA_H */
