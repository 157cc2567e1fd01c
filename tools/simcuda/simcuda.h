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
 * ABI 2 (this header) adds what a launch costs. simcuda keeps simulated time (see the
 * docs/simcuda.md, "simcuda keeps time"): a kernel is charged the roofline of what it touches.
 * While it runs (best: first thing), a kernel declares every byte range it reads and
 * writes with simcuda_reads()/simcuda_writes(), and its floating-point operations with
 * simcuda_flops(). simcuda splits each range by where its memory lives (device memory,
 * a HOST_NUMA chunk of a node, pinned host memory, managed memory) and charges, per
 * location, bytes over that location's bandwidth as seen from the GPU, against FLOPs
 * over peak compute, plus the launch overhead. Declare what the CUDA twin of the kernel
 * would really read: the rows of a table it gathers, not the whole table.
 * Modules of ABI 1 keep working; their launches are charged the launch overhead only.
 *
 * A kernel may also publish its parameter layout with SIMCUDA_KERNEL_PARAMS (ABI 2): then
 * simcuda copies kernelParams at launch, as a GPU driver does, so the launch can run
 * later on an asynchronous stream (SIMCUDA_ASYNC=1), and cuFuncGetParamInfo answers from
 * it. A kernel without it runs at submission, in stream order.
 *
 * Every declared range fires the USDT probe simcuda:touch (also for copies and memsets:
 * the source as a read, the destination as a write), the ground-truth access trace:
 *   arg1  uint64      device address of the range start
 *   arg2  uint64      bytes
 *   arg3  int32       1 for a write, 0 for a read
 *   arg4  uint64      launch sequence number: monotonic per process, the same for every
 *                     range of one launch, copy or memset
 *   arg5  const char* the kernel's function name, or "cuMemcpy" / "cuMemset"
 *
 * This header needs nothing but the C library; it is the only simcuda header a kernel
 * library includes.
 */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <stdint.h>

#define SIMCUDA_ABI_VERSION 2

typedef struct simcuda_dim3 {
    unsigned int x, y, z;
} simcuda_dim3;

typedef struct simcuda_launch simcuda_launch;

struct simcuda_launch {
    simcuda_dim3 grid;              /* gridDimX/Y/Z as passed to cuLaunchKernel */
    simcuda_dim3 block;             /* blockDimX/Y/Z as passed */
    unsigned int shared_mem_bytes;  /* dynamic shared memory requested */
    void *stream;                   /* the CUstream of the launch (opaque here) */
    void **params;                  /* kernelParams exactly as the caller passed them
                                     * (a copy taken at launch when the launch waits in
                                     * an asynchronous stream's queue): params[i]
                                     * points at the i-th argument's value */
    /* ABI 2: what the launch touches (call through the helpers below). */
    void (*touch)(const simcuda_launch *launch, const void *start, uint64_t bytes, int is_write);
    void (*flops)(const simcuda_launch *launch, double flops);
    void *cost;                     /* simcuda's record of this launch (opaque) */
};

/* Every kernel has this type; `name` in cuModuleGetFunction is its symbol name. */
typedef void simcuda_kernel_fn(const simcuda_launch *launch);

/* Read the i-th kernel argument as `type`, e.g. SIMCUDA_ARG(l, 0, float *). */
#define SIMCUDA_ARG(launch, i, type) (*(type const *)((launch)->params[(i)]))

/* The kernel reads (writes) [start, start + bytes). Ranges may repeat; each is charged. */
static inline void simcuda_reads(const simcuda_launch *launch, const void *start, uint64_t bytes)
{
    if (launch->touch && bytes)
        launch->touch(launch, start, bytes, 0);
}
static inline void simcuda_writes(const simcuda_launch *launch, void *start, uint64_t bytes)
{
    if (launch->touch && bytes)
        launch->touch(launch, start, bytes, 1);
}
/* The kernel does `flops` floating-point operations (a multiply-add counts 2). */
static inline void simcuda_flops(const simcuda_launch *launch, double flops)
{
    if (launch->flops)
        launch->flops(launch, flops);
}

/* One kernel parameter: its size and alignment (SIMCUDA_PARAM(type) fills both). */
typedef struct simcuda_param {
    uint32_t size;
    uint32_t align;
} simcuda_param;

typedef struct simcuda_params {
    uint32_t count;
    const simcuda_param *params;  /* [count], in launch order */
} simcuda_params;

#define SIMCUDA_PARAM(type) { sizeof(type), _Alignof(type) }

/* Exports the parameter layout of kernel `name` (the symbol simcuda_params_<name>), e.g.
 * SIMCUDA_KERNEL_PARAMS(fill, SIMCUDA_PARAM(uint32_t *), SIMCUDA_PARAM(uint32_t)). */
#define SIMCUDA_KERNEL_PARAMS(name, ...)                                                    \
    static const simcuda_param simcuda_param_list_##name[] = { __VA_ARGS__ };               \
    __attribute__((visibility("default"))) const simcuda_params simcuda_params_##name = {   \
        sizeof simcuda_param_list_##name / sizeof(simcuda_param), simcuda_param_list_##name }

/* Put once in a kernel library: marks it as a simcuda module of this ABI version. */
#define SIMCUDA_MODULE() \
    __attribute__((visibility("default"))) const int simcuda_module_abi = SIMCUDA_ABI_VERSION

/* Declares a kernel with the exported, unmangled name the module lookup expects. */
#define SIMCUDA_KERNEL(name) \
    __attribute__((visibility("default"))) void name(const simcuda_launch *launch)

#endif /* SIMCUDA_H */
