/* deferred_move.h — migrations asked for on a path that must not wait for them.
 *
 * A name rule learns where a chunk belongs while the copy that named it is being
 * submitted; a chunk that holds live bytes then has to migrate (migrate.h), which drains
 * the context and copies, and that must not stall the program's copy. The move is queued
 * here instead and a worker thread, started at the first one, carries it out with
 * tm_migrate_range: the migration fences itself, so it may run while the copy is still in
 * flight, and it finds the allocation again by address (a freed one is simply skipped).
 * Adjacent requests for one tier merge. The stats count requests queued and done. */
#ifndef TM_PRELOAD_DEFERRED_MOVE_H
#define TM_PRELOAD_DEFERRED_MOVE_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/tier.h"
#include "preload/driver/cuda_api.h"

#define TM_DEFERRED_MOVES_MAX 1024 /* requests waiting at once; more are refused */

/* Queues a move of [address, address + bytes) to `tier`. False when the queue is full or
 * the worker cannot start (the chunks then stay where they are). */
bool tm_deferred_move(CUdeviceptr address, uint64_t bytes, tm_tier_id tier);

/* Stops the worker after the move it is making (at exit, before memory is released);
 * requests still queued are dropped. */
void tm_deferred_move_stop(void);

/* A fork child has no worker and no requests. */
void tm_deferred_move_forget_in_child(void);

#endif /* TM_PRELOAD_DEFERRED_MOVE_H */
