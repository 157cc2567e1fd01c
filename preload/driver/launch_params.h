/* launch_params.h — the pointer-sized parameter values of a kernel launch, which the heat
 * source, the file tier and the stream ring read to learn what memory a launch reaches.
 *
 * The layout of a function's parameters comes from the driver (cuFuncGetParamInfo) and is
 * cached per function; a driver that keeps none gets a bounded scan of the argument array,
 * read without a fault (entries are read while they can be read and point near the first:
 * the arguments of one launch live together), and the first scan of a function learns
 * how many entries there are. CU_LAUNCH_PARAM_BUFFER arguments are read by the layout, or
 * word by word over their first 4 KiB. */
#ifndef TM_PRELOAD_DRIVER_LAUNCH_PARAMS_H
#define TM_PRELOAD_DRIVER_LAUNCH_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "preload/driver/cuda_api.h"

#define TM_LAUNCH_MAX_POINTERS 64

/* Fills values[TM_LAUNCH_MAX_POINTERS] with the launch's pointer-sized parameter values;
 * returns how many. *learned (may be NULL): this call asked the driver for f's layout or
 * made f's first scan, a one-time cost. */
size_t tm_launch_pointers(CUfunction f, void **params, void **extra, uint64_t *values, bool *learned);

/* ---------------------------------------------------------------- replacing values */

#define TM_LAUNCH_ARGS_BUFFER 4096 /* bytes of a CU_LAUNCH_PARAM_BUFFER that can be rewritten */
#define TM_LAUNCH_ARGS_EXTRA 16    /* entries of `extra`, its end included */

/* The arguments a launch is submitted with once some values are replaced: they need live
 * only until the launch call returns (the driver copies them). */
typedef struct tm_launch_args {
    void *params[TM_LAUNCH_MAX_POINTERS];
    uint64_t value[TM_LAUNCH_MAX_POINTERS];
    void *extra[TM_LAUNCH_ARGS_EXTRA];
    size_t buffer_size;
    _Alignas(16) char buffer[TM_LAUNCH_ARGS_BUFFER];
} tm_launch_args;

/* The value a pointer-sized parameter `value` is launched with (itself: unchanged). */
typedef uint64_t (*tm_launch_replace)(uint64_t value, void *arg);

/* Rewrites the pointer-sized parameters of a launch of f that `replace` changes: the new
 * arguments are built in *args, and *params (or *extra, for a CU_LAUNCH_PARAM_BUFFER)
 * then points there. Only where the driver described every parameter of f
 * (cuFuncGetParamInfo): a value whose size is not known is never touched. Returns how
 * many values were replaced; with 0 the launch's arguments are as they were. */
size_t tm_launch_replace_pointers(CUfunction f, void ***params, void ***extra, tm_launch_replace replace, void *arg,
                                  tm_launch_args *args);

#endif /* TM_PRELOAD_DRIVER_LAUNCH_PARAMS_H */
