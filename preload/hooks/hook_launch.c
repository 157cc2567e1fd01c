/* hook_launch.c — kernel and graph launches pass through, counted, along the one path of
 * driver/launch.h: the watchers of launches see each one (preload/lifecycle.c says who),
 * and the call passes the migration's gate. Chunked memory needs nothing here: its
 * addresses are device addresses like any other. */
#include "preload/driver/launch.h"
#include "preload/driver/submit_gate.h"
#include "preload/hooks/hook.h"

/* ---------------------------------------------------------------- the driver's calls */

static CUresult call_launch_kernel(const tm_launch *l)
{
    return tm_real.cuLaunchKernel(l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                                  l->shared_bytes, l->stream, l->params, l->extra);
}

static CUresult call_launch_kernel_ptsz(const tm_launch *l)
{
    return tm_real.cuLaunchKernel_ptsz(l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                                       l->block[2], l->shared_bytes, l->stream, l->params, l->extra);
}

static CUresult call_launch_kernel_ex(const tm_launch *l)
{
    return tm_real.cuLaunchKernelEx(l->config, l->f, l->params, l->extra);
}

static CUresult call_launch_kernel_ex_ptsz(const tm_launch *l)
{
    return tm_real.cuLaunchKernelEx_ptsz(l->config, l->f, l->params, l->extra);
}

static CUresult call_graph_launch(const tm_launch *l)
{
    return tm_real.cuGraphLaunch(l->graph, l->stream);
}

static CUresult call_graph_launch_ptsz(const tm_launch *l)
{
    return tm_real.cuGraphLaunch_ptsz(l->graph, l->stream);
}

/* ---------------------------------------------------------------- the hooks */

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, CUstream stream, void **params, void **extra,
                              bool per_thread, tm_launch_call call)
{
    tm_launch l = {
        .f = f, .stream = stream, .per_thread = per_thread, .params = params, .extra = extra,
        .threads = tm_launch_threads(gx, gy, gz, bx, by, bz),
        .grid = { gx, gy, gz }, .block = { bx, by, bz }, .shared_bytes = shared, .capturing = -1,
    };
    return tm_launch_submit(&l, call);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernel);
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                         kernelParams, extra, false, call_launch_kernel);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernel_ptsz);
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                         kernelParams, extra, true, call_launch_kernel_ptsz);
}

/* Without a config the driver refuses the launch: it goes straight there. */
static CUresult launch_kernel_ex(const CUlaunchConfig *config, CUfunction f, void **params, void **extra,
                                 bool per_thread, tm_launch_call call)
{
    tm_launch l = { .f = f, .per_thread = per_thread, .params = params, .extra = extra, .config = config,
                    .capturing = -1 };
    if (!config)
        return TM_GATED(call(&l));
    l.stream = config->hStream;
    l.threads = tm_launch_threads(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                                  config->blockDimY, config->blockDimZ);
    return tm_launch_submit(&l, call);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernelEx);
    return launch_kernel_ex(config, f, kernelParams, extra, false, call_launch_kernel_ex);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernelEx_ptsz);
    return launch_kernel_ex(config, f, kernelParams, extra, true, call_launch_kernel_ex_ptsz);
}

/* A graph's kernels may touch any chunk, so the launch waits while a migration remaps and
 * counts as a submission (a chunk a graph writes during a migration's copy is copied again);
 * its parameters were fixed at capture, so the watchers only make its memory ready. */
CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    TM_HOOK_ENTER(cuGraphLaunch);
    tm_launch l = { .graph = hGraphExec, .stream = hStream, .capturing = -1 };
    return tm_launch_submit(&l, call_graph_launch);
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    TM_HOOK_ENTER(cuGraphLaunch_ptsz);
    tm_launch l = { .graph = hGraphExec, .stream = hStream, .per_thread = true, .capturing = -1 };
    return tm_launch_submit(&l, call_graph_launch_ptsz);
}
