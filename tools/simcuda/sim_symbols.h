/* sim_symbols.h — the table of every exported driver symbol, for cuGetProcAddress.
 *
 * Generated from cudaTypedefs.h (gen-driver-symbols.sh): each PFN_<base>_v<version>
 * typedef is one ABI of a driver function. Symbols simcuda does not implement resolve to
 * weak stubs that say once which function it was and return CUDA_ERROR_NOT_SUPPORTED,
 * so a program that links or looks up any driver function never fails to load.
 * This header deliberately does not include cuda.h: cuda.h renames many of these
 * symbols with macros (cuMemAlloc -> cuMemAlloc_v2). */
#ifndef SIM_SYMBOLS_H
#define SIM_SYMBOLS_H

#include <stddef.h>

enum { SIM_PLAIN, SIM_PTSZ, SIM_PTDS };

typedef struct sim_symbol {
    const char *name;   /* exported name, e.g. "cuMemAlloc_v2" */
    const char *base;   /* the name cuGetProcAddress takes, e.g. "cuMemAlloc" */
    int version;        /* CUDA version that introduced this ABI, e.g. 3020 */
    int variant;        /* SIM_PLAIN, SIM_PTSZ or SIM_PTDS */
    void *address;
} sim_symbol;

extern const sim_symbol sim_symbols[];
extern const size_t sim_symbol_count;

/* Reports `name` once as not implemented; returns CUDA_ERROR_NOT_SUPPORTED. */
int sim_unimplemented(const char *name);

#endif /* SIM_SYMBOLS_H */
