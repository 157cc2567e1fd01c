/* stream_trial.c — does streaming through remapped chunks pay here (stream_trial.h). */
#include "preload/move/stream_trial.h"

#include <stdlib.h>

#include "policy/rebalance.h"
#include "preload/driver/clock.h"
#include "preload/driver/driver.h"

bool tm_stream_trial_run(CUdeviceptr at, CUmemGenericAllocationHandle handle, uint64_t chunk, int device,
                         CUstream stream, tm_stream_trial *out)
{
    if (!tm_real.cuCtxSynchronize || !tm_real.cuMemcpyHtoDAsync_v2 || !tm_real.cuStreamSynchronize)
        return false;
    /* nothing in flight: the budget clock then moves with these calls alone */
    if (tm_real.cuCtxSynchronize() != CUDA_SUCCESS)
        return false;
    CUmemAccessDesc access = {
        .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device },
        .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    uint64_t t0 = tm_clock_ns();
    if (tm_real.cuMemUnmap(at, chunk) != CUDA_SUCCESS || tm_real.cuMemMap(at, chunk, 0, handle, 0) != CUDA_SUCCESS ||
        tm_real.cuMemSetAccess(at, chunk, &access, 1) != CUDA_SUCCESS)
        return false;
    uint64_t t1 = tm_clock_ns();
    void *host = calloc(1, chunk);
    if (!host)
        return false;
    CUresult r = tm_real.cuMemcpyHtoDAsync_v2(at, host, chunk, stream);
    if (r == CUDA_SUCCESS)
        r = tm_real.cuStreamSynchronize(stream);
    uint64_t t2 = tm_clock_ns();
    free(host);
    if (r != CUDA_SUCCESS)
        return false;
    out->remap_ns = t1 - t0;
    out->copy_ns = t2 - t1;
    return true;
}

double tm_stream_trial_saved_ns(const tm_stream_trial *trial)
{
    return (double)trial->copy_ns * (1.0 / TM_REBALANCE_STREAMED_COST - 1.0);
}

bool tm_stream_trial_pays(const tm_stream_trial *trial)
{
    return 2.0 * (double)trial->remap_ns < tm_stream_trial_saved_ns(trial);
}
