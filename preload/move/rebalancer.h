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

#include "preload/driver/launch.h"
#include "preload/tiers/device.h"

#define TM_REBALANCE_INTERVAL_MS 100
#define TM_REBALANCE_COOLDOWN 4     /* passes a moved chunk stays put */
#define TM_REBALANCE_LAUNCHES 256   /* launches of a thread between two passes it runs */

/* The launch trigger, a watcher of launches (driver/launch.h): while the rebalancer runs,
 * each thread counts its launches down, and a thread whose count ran out runs a pass
 * before its launch goes, unless the launch is being captured into a graph; a warm-start
 * profile waiting to be applied makes the next launch of any thread run one. */
extern const tm_launch_watcher tm_rebalancer_launch_watcher;

/* Starts the thread once, when the policy is `heat`, heat is measured, the rate is not 0
 * and chunks can migrate (VMM backing); says why not in one info line otherwise. */
void tm_rebalancer_start(tm_device *device, uint64_t rate);

/* A fork child has no rebalancer thread. */
void tm_rebalancer_forget_in_child(void);

/* Stops it and waits for its pass to end (at exit, before memory is released). */
void tm_rebalancer_stop(void);

#endif /* TM_PRELOAD_REBALANCER_H */
