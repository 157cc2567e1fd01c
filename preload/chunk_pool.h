/* chunk_pool.h — physical chunks kept ready for migrations, per tier.
 *
 * Creating a chunk costs 7 to 193 µs on real drivers, so a migration takes one from the
 * pool, and chunks a migration frees go back to it; the pool is filled off the critical
 * path (tm_chunk_pool_fill) and holds at most TM_CHUNK_POOL_MAX chunks of a tier. Pooled
 * chunks are counted in their tier's usage, like mapped ones, so placement never counts
 * on room the pool holds. */
#ifndef TM_PRELOAD_CHUNK_POOL_H
#define TM_PRELOAD_CHUNK_POOL_H

#include <stdbool.h>

#include "policy/tier.h"
#include "preload/cuda_api.h"
#include "preload/device.h"

#define TM_CHUNK_POOL_MAX 8

/* A chunk of `tier`: pooled, else created now. False when the tier has no room (its limit
 * or the driver's). */
bool tm_chunk_pool_take(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *handle);

/* Gives a chunk back (released when the pool of its tier is full). */
void tm_chunk_pool_give(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle handle);

/* Creates chunks until `tier` has `count` pooled (at most TM_CHUNK_POOL_MAX), room
 * permitting. */
void tm_chunk_pool_fill(tm_device *device, tm_tier_id tier, int count);

/* A fork child: the pooled chunks are the parent's. */
void tm_chunk_pool_forget_in_child(void);

/* Releases every pooled chunk (at exit, or when a tier needs its room back). */
void tm_chunk_pool_drain(void);

#endif /* TM_PRELOAD_CHUNK_POOL_H */
