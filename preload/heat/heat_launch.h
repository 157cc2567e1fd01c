/* heat_launch.h — the `launch` heat source: kernel parameters of sampled launches.
 *
 * A launch pays one load and one thread-local decrement unless it is sampled. A sampled
 * launch reads the kernel's pointer-sized parameters (layout from cuFuncGetParamInfo,
 * cached per function; without it, a bounded scan of the argument array) and credits
 * every tracked allocation a parameter points into, over the part of it the parameter can
 * reach. Sampling is 1 launch in N, with N adapted to the measured cost of a sample so the
 * added cost per launch stays near TM_HEAT_LAUNCH_BUDGET_NS on average; each sample counts
 * for the N launches it stands for. Samples come in bursts of consecutive launches (a gap of
 * about (N - 1) bursts between them), a few bursts per heat interval: a burst sees every
 * buffer one step of a program hands its kernels, so memory used every step is credited in
 * the same intervals and ranks level, where lone samples would miss some of it in some
 * intervals and rank it colder at random. At low launch rates a burst may come less often
 * than once an interval: then everything it would have seen cools alike.
 * TIERMEM_HEAT_SAMPLE=N fixes N and the burst length (TM_HEAT_BURST_MIN): the launches
 * sampled are then the same every run of a program, whatever the host's load, at whatever
 * a sample costs. */
#ifndef TM_PRELOAD_HEAT_LAUNCH_H
#define TM_PRELOAD_HEAT_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"
#include "preload/driver/cuda_api.h"

#define TM_HEAT_LAUNCH_BUDGET_NS 40   /* average added cost per launch aimed at (goal: under 50) */
#define TM_HEAT_SAMPLE_EVERY_MAX TM_HEAT_SAMPLE_MAX
#define TM_HEAT_BURST_MIN 64          /* launches sampled in a row: a step of a small model or more */
#define TM_HEAT_BURST_MAX 1024
#define TM_HEAT_BURSTS_PER_TICK 4      /* bursts aimed at per heat interval */

extern bool tm_heat_launch_on;
extern __thread uint32_t tm_heat_countdown;

/* Turns the source on (tm_heat_start): `fixed_every` 1 launch in N sampled, or 0: N adapts. */
void tm_heat_launch_enable(uint32_t fixed_every);

/* Reads the parameters of one launch of `threads` threads in all and credits heat. */
void tm_heat_sample_launch(CUfunction f, uint64_t threads, void **params, void **extra);

/* The pointer-sized parameter values of a launch, from the cached layout of f (as a
 * sample reads them), into values[TM_LAUNCH_MAX_POINTERS]; returns how many. */
#define TM_LAUNCH_MAX_POINTERS 64
size_t tm_launch_pointers(CUfunction f, void **params, void **extra, uint64_t *values);

/* The fast path every launch hook takes. */
static inline void tm_heat_on_launch(CUfunction f, uint64_t threads, void **params, void **extra)
{
    if (!__atomic_load_n(&tm_heat_launch_on, __ATOMIC_RELAXED))
        return;
    if (tm_heat_countdown > 1) {
        tm_heat_countdown--;
        return;
    }
    tm_heat_sample_launch(f, threads, params, extra);
}

static inline uint64_t tm_launch_threads(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                         unsigned bz)
{
    return (uint64_t)gx * gy * gz * ((uint64_t)bx * by * bz);
}

#endif /* TM_PRELOAD_HEAT_LAUNCH_H */
