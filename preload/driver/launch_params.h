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

#endif /* TM_PRELOAD_DRIVER_LAUNCH_PARAMS_H */
