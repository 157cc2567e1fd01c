/* driver.h — the real driver: loaded with dlopen (TIERMEM_DRIVER, default libcuda.so.1),
 * every function the interposer forwards to or calls held in one table of exact types. */
#ifndef TM_PRELOAD_DRIVER_H
#define TM_PRELOAD_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "preload/driver/cuda_api.h"

/* simcuda_storage_read (tools/simcuda/sim_time.c): the host read `bytes` from storage. */
typedef void (*PFN_simcuda_storage_read)(uint64_t bytes);
/* simcuda_now_ns (tools/simcuda/sim_time.c): simulated time now. */
typedef uint64_t (*PFN_simcuda_now_ns)(void);

typedef struct tm_driver_table {
#define HOOK(symbol, pfn, base, version, variant) pfn symbol;
#include "preload/driver/hooks.def"
#define DRIVER_CALL(symbol, pfn) pfn symbol;
#include "preload/driver/driver_calls.def"
} tm_driver_table;

/* The real driver's functions; a member is NULL when the driver lacks that symbol. */
extern tm_driver_table tm_real;

/* Loads the driver and fills tm_real, once. True when the driver is usable. */
bool tm_driver_load(void);

extern bool tm_driver_loaded;

static inline bool tm_driver_ready(void)
{
    return __atomic_load_n(&tm_driver_loaded, __ATOMIC_ACQUIRE) || tm_driver_load();
}

/* Is `stream` capturing into a graph? (`ptsz`: the per-thread default stream form.)
 * False when the driver cannot say. */
bool tm_stream_capturing(CUstream stream, bool ptsz);

/* A driver call that gives memory back: a refusal is tried once more (what tiermem holds
 * must not leak for one failed call), and a second one is logged once. Used only through
 * the macro below, which names the call. */
void tm_release_failed(const char *call, CUresult result);
#define tm_release_call(call)                                                \
    do {                                                                     \
        CUresult tm_released_ = (call);                                      \
        if (tm_released_ != CUDA_SUCCESS && (tm_released_ = (call)) != CUDA_SUCCESS) \
            tm_release_failed(#call, tm_released_);                          \
    } while (0)

#endif /* TM_PRELOAD_DRIVER_H */
