/* hook_launch.c — kernel launches pass straight through, counted. Chunked memory needs
 * nothing here (its addresses are device addresses like any other) unless the file tier
 * dropped chunks a launch's parameters point into: they are read back first, and those of
 * a launch captured into a graph are never dropped again (file_tier.h).
 * The first launch ends the managed baseline's loading phase (managed.h); the `launch`
 * heat source reads the parameters of sampled launches (heat_launch.h) before they go;
 * every so many launches the heat policy runs a pass first (rebalancer.h); while chunks
 * are spilled under the heat policy, the staging ring (stream_ring.h) maps the chunks a
 * launch reads before it and records its reads after it. */
#include "preload/filetier/file_tier.h"
#include "preload/heat/heat_launch.h"
#include "preload/hooks/hook.h"
#include "preload/driver/submit_gate.h"
#include "preload/mem/managed.h"
#include "preload/move/rebalancer.h"
#include "preload/move/stream_ring.h"

/* The gated launch `call` on `stream`, its dropped chunks read back (but while a graph
 * captures it: file_tier.h), with the ring around it. */
#define TM_LAUNCH(stream, per_thread, params, extra, call)                                          \
    ({                                                                                              \
        bool tm_captured_ = tm_file_tier_note_capture(f, (stream), (per_thread), (params), (extra)); \
        bool tm_streamed_ = tm_stream_before_launch(f, (stream), (per_thread), (params), (extra));   \
        CUresult tm_launched_ = tm_captured_ ? TM_GATED(call)                                       \
                                             : TM_FILE_GATED_LAUNCH(f, (params), (extra), call);    \
        if (tm_streamed_)                                                                           \
            tm_stream_after_launch((stream), (per_thread), tm_launched_);                           \
        tm_launched_;                                                                               \
    })

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernel);
    tm_managed_note_launch();
    tm_rebalancer_on_launch(hStream, false);
    tm_heat_on_launch(f, tm_launch_threads(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ),
                      kernelParams, extra);
    return TM_LAUNCH(hStream, false, kernelParams, extra,
                     tm_real.cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                            sharedMemBytes, hStream, kernelParams, extra));
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernel_ptsz);
    tm_managed_note_launch();
    tm_rebalancer_on_launch(hStream, true);
    tm_heat_on_launch(f, tm_launch_threads(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ),
                      kernelParams, extra);
    return TM_LAUNCH(hStream, true, kernelParams, extra,
                     tm_real.cuLaunchKernel_ptsz(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                                                 sharedMemBytes, hStream, kernelParams, extra));
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernelEx);
    tm_managed_note_launch();
    if (!config)
        return TM_FILE_GATED_LAUNCH(f, kernelParams, extra, tm_real.cuLaunchKernelEx(config, f, kernelParams, extra));
    tm_rebalancer_on_launch(config->hStream, false);
    tm_heat_on_launch(f, tm_launch_threads(config->gridDimX, config->gridDimY, config->gridDimZ,
                                           config->blockDimX, config->blockDimY, config->blockDimZ),
                      kernelParams, extra);
    return TM_LAUNCH(config->hStream, false, kernelParams, extra, tm_real.cuLaunchKernelEx(config, f, kernelParams, extra));
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    TM_HOOK_ENTER(cuLaunchKernelEx_ptsz);
    tm_managed_note_launch();
    if (!config)
        return TM_FILE_GATED_LAUNCH(f, kernelParams, extra,
                                    tm_real.cuLaunchKernelEx_ptsz(config, f, kernelParams, extra));
    tm_rebalancer_on_launch(config->hStream, true);
    tm_heat_on_launch(f, tm_launch_threads(config->gridDimX, config->gridDimY, config->gridDimZ,
                                           config->blockDimX, config->blockDimY, config->blockDimZ),
                      kernelParams, extra);
    return TM_LAUNCH(config->hStream, true, kernelParams, extra,
                     tm_real.cuLaunchKernelEx_ptsz(config, f, kernelParams, extra));
}

/* A graph's kernels may touch any chunk, so the launch waits while a migration remaps and
 * counts as a submission (a chunk a graph writes during a migration's copy is copied again). */
CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    TM_HOOK_ENTER(cuGraphLaunch);
    return TM_FILE_GATED_GRAPH(tm_real.cuGraphLaunch(hGraphExec, hStream));
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    TM_HOOK_ENTER(cuGraphLaunch_ptsz);
    return TM_FILE_GATED_GRAPH(tm_real.cuGraphLaunch_ptsz(hGraphExec, hStream));
}
