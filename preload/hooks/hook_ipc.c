/* hook_ipc.c — legacy CUDA IPC: handles of tiered memory are tiermem's own (ipc.h);
 * plain memory and the driver's handles pass through. */
#include "preload/mem/alloc.h"
#include "preload/hooks/hook.h"
#include "preload/ipc/ipc.h"

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    TM_HOOK_ENTER(cuIpcGetMemHandle);
    tm_alloc_view view;
    if (!pHandle || !tm_lookup(dptr, &view) || !view.chunked)
        return tm_real.cuIpcGetMemHandle(pHandle, dptr);
    return tm_ipc_export(dptr, pHandle);
}

/* Both ABIs of the open take the same arguments; each forwards to its own driver entry. */
static CUresult open_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags,
                            PFN_cuIpcOpenMemHandle_v11000 real)
{
    if (!pdptr || !tm_ipc_is_ours(&handle))
        return real(pdptr, handle, flags);
    if (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        return CUDA_ERROR_INVALID_VALUE;
    return tm_ipc_open(&handle, pdptr);
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    TM_HOOK_ENTER(cuIpcOpenMemHandle);
    return open_handle(pdptr, handle, Flags, tm_real.cuIpcOpenMemHandle);
}

CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    TM_HOOK_ENTER(cuIpcOpenMemHandle_v2);
    return open_handle(pdptr, handle, Flags, tm_real.cuIpcOpenMemHandle_v2);
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    TM_HOOK_ENTER(cuIpcCloseMemHandle);
    CUresult result;
    if (tm_ipc_close(dptr, &result))
        return result;
    return tm_real.cuIpcCloseMemHandle(dptr);
}
