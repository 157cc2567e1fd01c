/* launch.h — kernel and graph launches as the rooms above see them: the one path every
 * launch hook takes (hooks/hook_launch.c), and the table of those who watch launches.
 *
 * A watcher is one entry per subsystem (preload/lifecycle.c lists them, in order): the
 * rebalancer runs a pass every so many launches, the heat source samples parameters, the
 * file tier pins what a captured launch reaches and reads dropped chunks back, the stream
 * ring maps streamed chunks before a launch and lets them go after it. A launch costs each
 * watcher one load of its flag while the watcher has nothing to do.
 *
 * The submission itself passes the migration's gate (submit_gate.h). Watchers that make
 * memory ready first (`prepare`) say under the entered gate whether it still is (`holds`):
 * if not (a chunk was dropped again meanwhile), they prepare again before the launch goes. */
#ifndef TM_PRELOAD_DRIVER_LAUNCH_H
#define TM_PRELOAD_DRIVER_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "preload/driver/cuda_api.h"

typedef struct tm_launch {
    CUfunction f;                 /* NULL for a graph launch */
    CUgraphExec graph;            /* cuGraphLaunch's graph, else NULL */
    CUstream stream;
    bool per_thread;              /* a _ptsz call: a NULL stream is the thread's own */
    void **params;                /* kernelParams, may be NULL */
    void **extra;                 /* extra, may be NULL */
    uint64_t threads;             /* threads launched, all dimensions together */
    /* the rest of the call, for the submission */
    unsigned grid[3], block[3], shared_bytes;
    const CUlaunchConfig *config; /* cuLaunchKernelEx's, else NULL */
    int8_t capturing;             /* -1 until asked (tm_launch_capturing) */
} tm_launch;

/* The driver call a hook makes once the watchers are done. */
typedef CUresult (*tm_launch_call)(const tm_launch *launch);

/* prepare's answer when it made nothing ready that could be undone: holds is not asked. */
#define TM_LAUNCH_NOTHING_HELD UINT64_MAX

typedef struct tm_launch_watcher {
    const char *name;
    const bool *watching;         /* before and after run while *watching */
    /* Before a kernel launch is submitted; true: call `after` once it is. */
    bool (*before)(tm_launch *launch);
    void (*after)(tm_launch *launch, CUresult launched);
    const uint64_t *preparing;    /* prepare and holds run while *preparing is not 0 */
    /* Makes the memory a launch (kernel or graph) needs ready; *epoch what holds checks.
     * An error fails the launch with it. */
    CUresult (*prepare)(tm_launch *launch, uint64_t *epoch);
    bool (*holds)(uint64_t epoch); /* with the gate entered: still ready? */
} tm_launch_watcher;

/* NULL-terminated, in the order they see a launch: preload/lifecycle.c defines it. */
extern const tm_launch_watcher *const tm_launch_watchers[];

/* Everything a launch goes through: the watchers, then `call` through the gate. */
CUresult tm_launch_submit(tm_launch *launch, tm_launch_call call);

/* True once a kernel launch has been submitted (the end of a program's loading phase). */
extern bool tm_launched;
static inline bool tm_launch_seen(void)
{
    return __atomic_load_n(&tm_launched, __ATOMIC_ACQUIRE);
}

/* Whether the launch's stream is capturing into a graph (asked once per launch). */
bool tm_launch_capturing(tm_launch *launch);

static inline uint64_t tm_launch_threads(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                         unsigned bz)
{
    return (uint64_t)gx * gy * gz * ((uint64_t)bx * by * bz);
}

#endif /* TM_PRELOAD_DRIVER_LAUNCH_H */
