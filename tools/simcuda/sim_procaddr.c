/* sim_procaddr.c — cuGetProcAddress and the error strings.
 *
 * cuGetProcAddress(symbol, ..., cudaVersion, flags) resolves a base name ("cuMemAlloc")
 * to the newest ABI introduced at or before cudaVersion. With
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM it prefers the _ptsz/_ptds variant of
 * that ABI when one exists; CU_GET_PROC_ADDRESS_DEFAULT and LEGACY_STREAM give the
 * legacy-stream function. It needs no cuInit: the CUDA runtime uses it to find cuInit. */
#include <string.h>

#include "tools/simcuda/sim_internal.h"
#include "tools/simcuda/sim_symbols.h"

static CUresult resolve(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult ignored;
    if (!status)
        status = &ignored;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
        flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    int driver_version;
    cuDriverGetVersion(&driver_version);
    if (cuda_version > driver_version)
        return CUDA_ERROR_INVALID_VALUE;
    bool per_thread = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    const sim_symbol *plain = NULL, *threaded = NULL;
    bool exists = false;
    for (size_t i = 0; i < sim_symbol_count; i++) {
        const sim_symbol *s = &sim_symbols[i];
        if (strcmp(s->base, symbol) != 0)
            continue;
        exists = true;
        if (s->version > cuda_version)
            continue;
        const sim_symbol **best = s->variant == SIM_PLAIN ? &plain : &threaded;
        if (!*best || s->version > (*best)->version)
            *best = s;
    }
    *pfn = NULL;
    if (!plain) {
        *status = exists ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    /* A per-thread variant belongs to the newest plain ABI at or below its own version:
     * use it only when that is the plain ABI chosen. */
    const sim_symbol *chosen = plain;
    if (per_thread && threaded && threaded->version >= plain->version)
        chosen = threaded;
    *pfn = chosen->address;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *status)
{
    SIM_FAIL_POINT(cuGetProcAddress_v2);
    return resolve(symbol, pfn, cuda_version, flags, status);
}

/* cuda.h maps the name to _v2; both ABIs are exported. */
#undef cuGetProcAddress
SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version, cuuint64_t flags)
{
    SIM_FAIL_POINT(cuGetProcAddress);
    return resolve(symbol, pfn, cuda_version, flags, NULL);
}

int sim_unimplemented(const char *name)
{
    return (int)sim_not_supported(name);
}

/* ---------------------------------------------------------------- error strings */

typedef struct error_text {
    CUresult code;
    const char *name;
    const char *text;
} error_text;

static const error_text errors[] = {
#define SIMCUDA_ERROR(name, text) { name, #name, text },
#include "error_table.h"
#undef SIMCUDA_ERROR
};

static const error_text *error_find(CUresult code)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

bool sim_error_from_name(const char *name, size_t len, CUresult *code)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (strlen(errors[i].name) == len && strncmp(errors[i].name, name, len) == 0) {
            *code = errors[i].code;
            return true;
        }
    }
    return false;
}

SIM_EXPORT CUresult cuGetErrorName(CUresult code, const char **name)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    const error_text *e = error_find(code);
    *name = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuGetErrorString(CUresult code, const char **text)
{
    if (!text)
        return CUDA_ERROR_INVALID_VALUE;
    const error_text *e = error_find(code);
    *text = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
