/* hook_table.h — what is generated from hooks.def: each hooked symbol declared with its
 * exact PFN type (a wrapper defined with any other prototype does not compile), the
 * descriptor of each hook (ids: hook_ids.h), and the two maps the resolvers use. */
#ifndef TM_PRELOAD_HOOK_TABLE_H
#define TM_PRELOAD_HOOK_TABLE_H

#include <stddef.h>

#include "preload/driver/cuda_api.h"
#include "preload/driver/hook_ids.h"

#define HOOK(symbol, pfn, base, version, variant) TM_EXPORT __typeof__(*(pfn)0) symbol;
#include "preload/driver/hooks.def"


typedef enum tm_stream_variant {
    TM_VARIANT_PLAIN,
    TM_VARIANT_PTSZ,
    TM_VARIANT_PTDS,
} tm_stream_variant;

typedef struct tm_hook {
    const char *symbol;          /* exported name */
    const char *base;            /* name given to cuGetProcAddress */
    int version;                 /* CUDA version of this ABI */
    tm_stream_variant variant;
    void *wrapper;               /* our definition */
    size_t real_offset;          /* where the driver's function sits in tm_real */
} tm_hook;

extern const tm_hook tm_hooks[TM_HOOK_COUNT];

/* The driver's own function behind a hook (NULL before loading, or when it lacks it). */
void *tm_hook_real(const tm_hook *hook);

/* The hook exported under `symbol`, or NULL (the dlsym map). */
const tm_hook *tm_hook_by_symbol(const char *symbol);

/* The wrapper with the same ABI as `real`, a function of the real driver, or NULL when the
 * interposer does not hook it (the cuGetProcAddress map, built at the first call: call it
 * only once tm_driver_ready() is true). */
void *tm_hook_wrapper_for(void *real);

#endif /* TM_PRELOAD_HOOK_TABLE_H */
