/* twin_launch.h — calling a C twin the way simcuda does, for the kernel tests.
 *
 * TWIN_LAUNCH(kernel, family, geom, args) packs `args` (a struct tm_args_<family>) into
 * kernelParams, builds the simcuda_launch with the geometry kernels.h prescribes, and
 * calls the exported twin `kernel` directly. */
#ifndef TM_TEST_TWIN_LAUNCH_H
#define TM_TEST_TWIN_LAUNCH_H

#include "kernels/kernels.h"
#include "tools/simcuda/simcuda.h"

/* The twins, as the library exports them. */
#define TM_X_DECLARE(name, family, geom) simcuda_kernel_fn name;
TM_KERNEL_TABLE(TM_X_DECLARE)
#undef TM_X_DECLARE

static inline simcuda_launch twin_launch_of(struct tm_geom g, void **params) {
    simcuda_launch l = {
        .grid = {g.grid[0], g.grid[1], g.grid[2]},
        .block = {g.block[0], g.block[1], g.block[2]},
        .shared_mem_bytes = g.shared_bytes,
        .stream = 0,
        .params = params,
    };
    return l;
}

#define TWIN_LAUNCH(kernel, family, geom, args)                                         \
    do {                                                                                \
        void *params_[TM_NPARAMS_##family];                                             \
        tm_params_##family(&(args), params_);                                           \
        simcuda_launch launch_ = twin_launch_of(tm_geom_##geom(&(args)), params_);      \
        (kernel)(&launch_);                                                             \
    } while (0)

/* Sets the twins' thread count (0: OpenMP's default) through the tm_set_threads kernel. */
static inline void twin_set_threads(int32_t n) {
    struct tm_args_set_threads a = {.n_threads = n};
    TWIN_LAUNCH(tm_set_threads, set_threads, single, a);
}

#endif /* TM_TEST_TWIN_LAUNCH_H */
