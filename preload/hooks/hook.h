/* hook.h — what every wrapper starts with. */
#ifndef TM_PRELOAD_HOOK_H
#define TM_PRELOAD_HOOK_H

#include "preload/driver/driver.h"
#include "preload/hooks/hook_table.h"
#include "preload/region/stats.h"

/* Counts the call and makes sure the real driver, and this function of it, are there. */
#define TM_HOOK_ENTER(symbol)                        \
    do {                                             \
        tm_count_call(symbol);                       \
        if (!tm_driver_ready())                      \
            return CUDA_ERROR_NOT_INITIALIZED;       \
        if (!tm_real.symbol)                         \
            return CUDA_ERROR_NOT_SUPPORTED;         \
    } while (0)

#endif /* TM_PRELOAD_HOOK_H */
