/* rebalancer.h — the `heat` policy's thread (TIERMEM_POLICY=heat): every
 * TM_REBALANCE_INTERVAL_MS it takes a snapshot of each chunked allocation's tiers and heat,
 * plans a pass (policy/rebalance.h) within the TIERMEM_MIGRATE_RATE budget and carries it
 * out with migrate.h, demotions first. Nothing moves while every chunk is in HBM. */
#ifndef TM_PRELOAD_REBALANCER_H
#define TM_PRELOAD_REBALANCER_H

#include "preload/device.h"

#define TM_REBALANCE_INTERVAL_MS 100
#define TM_REBALANCE_COOLDOWN 4     /* passes a moved chunk stays put */

/* Starts the thread once, when the policy is `heat`, heat is measured, the rate is not 0
 * and chunks can migrate (VMM backing); says why not in one info line otherwise. */
void tm_rebalancer_start(tm_device *device, uint64_t rate);

/* A fork child has no rebalancer thread. */
void tm_rebalancer_forget_in_child(void);

/* Stops it and waits for its pass to end (at exit, before memory is released). */
void tm_rebalancer_stop(void);

#endif /* TM_PRELOAD_REBALANCER_H */
