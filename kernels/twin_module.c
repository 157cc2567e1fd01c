/* twin_module.c — the simcuda module marker of libtiermem-kernels.so, the thread count
 * the twins use, and the launch checks they share (twin.h).
 *
 * tm_set_threads is a kernel like the others so that the engine reaches it through
 * the driver API alone; it stores the count in a process-wide atomic that every
 * parallel loop of the twins reads (num_threads clause), whichever thread launches.
 */
#include <omp.h>
#include <stdio.h>

#include "kernels/twin.h"

SIMCUDA_MODULE();

static int twin_threads; /* 0: OpenMP's default; read and written atomically */

int tm_twin_threads(void) {
    int n = __atomic_load_n(&twin_threads, __ATOMIC_RELAXED);
    return n > 0 ? n : omp_get_max_threads();
}

void tm_twin_refuse(const char *name, const char *why, int *reported) {
    if (!__atomic_exchange_n(reported, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "tiermem-kernels: %s: launch refused: %s\n", name, why);
}

int tm_twin_geom_ok(const char *name, const simcuda_launch *launch, struct tm_geom want,
                    int *reported) {
    const simcuda_dim3 *g = &launch->grid, *b = &launch->block;
    if (g->x == want.grid[0] && g->y == want.grid[1] && g->z == want.grid[2] &&
        b->x == want.block[0] && b->y == want.block[1] && b->z == want.block[2] &&
        launch->shared_mem_bytes == want.shared_bytes)
        return 1;
    if (!__atomic_exchange_n(reported, 1, __ATOMIC_RELAXED))
        fprintf(stderr,
                "tiermem-kernels: %s: launch refused: grid (%u,%u,%u) block (%u,%u,%u) "
                "shared %u, kernels.h wants grid (%u,%u,%u) block (%u,%u,%u) shared %u\n",
                name, g->x, g->y, g->z, b->x, b->y, b->z, launch->shared_mem_bytes,
                want.grid[0], want.grid[1], want.grid[2], want.block[0], want.block[1],
                want.block[2], want.shared_bytes);
    return 0;
}

static void set_threads(int32_t n_threads) {
    __atomic_store_n(&twin_threads, n_threads, __ATOMIC_RELAXED);
}

TM_TWIN(tm_set_threads, set_threads, single, set_threads, tm_check_set_threads(&args), (void)0)
