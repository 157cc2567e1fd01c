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
#include "preload/driver/launch.h"
#include "preload/driver/launch_params.h"

#define TM_HEAT_LAUNCH_BUDGET_NS 40   /* average added cost per launch aimed at (goal: under 50) */
#define TM_HEAT_SAMPLE_EVERY_MAX TM_HEAT_SAMPLE_MAX
#define TM_HEAT_BURST_MIN 64          /* launches sampled in a row: a step of a small model or more */
#define TM_HEAT_BURST_MAX 1024
#define TM_HEAT_BURSTS_PER_TICK 4      /* bursts aimed at per heat interval */

/* Without a better guess, a kernel touches at most this much of each buffer it is handed,
 * per thread launched: a gather of a few rows reaches little of a table, a matrix-vector
 * product over all rows reaches all of its matrix. */
#define TM_HEAT_BYTES_PER_THREAD 16

extern bool tm_heat_launch_on;

/* Turns the source on (tm_heat_start): `fixed_every` 1 launch in N sampled, or 0: N adapts. */
void tm_heat_launch_enable(uint32_t fixed_every);

/* The source as a watcher of launches (driver/launch.h): while on, each launch counts down
 * to the next sample; a sampled one has its parameters read and heat credited. */
extern const tm_launch_watcher tm_heat_launch_watcher;

#endif /* TM_PRELOAD_HEAT_LAUNCH_H */
