/* rebalancer.h — the `heat` policy's passes (TIERMEM_POLICY=heat): a pass takes a snapshot
 * of each chunked allocation's tiers and heat, plans (policy/rebalance.h) within the moves
 * TIERMEM_MIGRATE_RATE has earned since the last pass and carries them out with migrate.h,
 * demotions first. Nothing moves, and no snapshot is taken, while every chunk is in HBM.
 *
 * Passes come from two triggers: every TM_REBALANCE_LAUNCHES kernel launches of a thread,
 * in that thread before its launch is submitted (a short run, or a real GPU, gets passes
 * at the same points of its launch stream every time), and a thread every
 * TM_REBALANCE_INTERVAL_MS for a program that launches little. The budget is the rate times
 * the time since the last pass, whichever trigger ran it, so the rate holds either way.
 * On simcuda that time is simulated (clock.h) and there is no thread: the same launch
 * stream gets the same passes with the same budgets, however loaded the host is. */
#ifndef TM_PRELOAD_REBALANCER_H
#define TM_PRELOAD_REBALANCER_H

#include <stdbool.h>
#include <stdint.h>

#include "preload/tiers/device.h"

#define TM_REBALANCE_INTERVAL_MS 100
#define TM_REBALANCE_COOLDOWN 4     /* passes a moved chunk stays put */
#define TM_REBALANCE_LAUNCHES 256   /* launches of a thread between two passes it runs */

/* The launch trigger: on while the rebalancer runs; a countdown per thread; `soon`: the
 * next launch of any thread runs a pass (a warm-start profile waits to be applied). */
extern bool tm_rebalance_on_launches;
extern bool tm_rebalance_soon;
extern __thread uint32_t tm_rebalance_countdown;

/* A thread's countdown ran out: a pass, unless `stream` is capturing a graph. */
void tm_rebalancer_launches_done(CUstream stream, bool ptsz);

/* In every launch hook, before the launch is submitted. */
static inline void tm_rebalancer_on_launch(CUstream stream, bool ptsz)
{
    if (!__atomic_load_n(&tm_rebalance_on_launches, __ATOMIC_RELAXED))
        return;
    if (--tm_rebalance_countdown == 0 || __atomic_load_n(&tm_rebalance_soon, __ATOMIC_RELAXED))
        tm_rebalancer_launches_done(stream, ptsz);
}

/* Starts the thread once, when the policy is `heat`, heat is measured, the rate is not 0
 * and chunks can migrate (VMM backing); says why not in one info line otherwise. */
void tm_rebalancer_start(tm_device *device, uint64_t rate);

/* A fork child has no rebalancer thread. */
void tm_rebalancer_forget_in_child(void);

/* Stops it and waits for its pass to end (at exit, before memory is released). */
void tm_rebalancer_stop(void);

#endif /* TM_PRELOAD_REBALANCER_H */
