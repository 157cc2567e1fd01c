/* chunk_pool.h — physical chunks kept ready, per tier, for migrations and for chunked
 * allocations.
 *
 * Creating a chunk costs 7 to 193 µs on real drivers, so a migration takes one from the
 * pool, and chunks a migration frees go back to it; the pool is filled off the critical
 * path (tm_chunk_pool_fill). The HBM chunks a cuMemFree of a chunked allocation releases
 * go back too, and the next chunked allocation maps them before creating any: an
 * alloc/free loop creates no chunk after its first round. A pooled chunk belongs to one
 * device and was created with that device's IPC handle types; it is only handed out for
 * the same. A tier keeps at most TM_CHUNK_POOL_MAX chunks of a device, HBM at most
 * max(TM_CHUNK_POOL_MAX, 1/64 of the device's HBM limit) (and TM_CHUNK_POOL_SLOTS in all).
 * Pooled chunks are counted in their tier's usage, like mapped ones, so placement never
 * counts on room the pool holds unless it takes the pooled chunks themselves
 * (tm_chunk_pool_take_many). */
#ifndef TM_PRELOAD_CHUNK_POOL_H
#define TM_PRELOAD_CHUNK_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/tier.h"
#include "preload/driver/cuda_api.h"
#include "preload/tiers/device.h"

#define TM_CHUNK_POOL_MAX   8
#define TM_CHUNK_POOL_SLOTS 1024 /* chunks of one tier pooled, all devices together */

/* A chunk of `tier`: pooled, else created now. False when the tier has no room (its limit
 * or the driver's). */
bool tm_chunk_pool_take(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *handle);

/* Takes up to `max` pooled chunks of `device` in `tier` into `out` (no chunk is created);
 * their bytes stay charged to the tier. Returns how many. */
size_t tm_chunk_pool_take_many(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *out, size_t max);

/* Gives a chunk back (released, and its bytes uncharged, when the pool of its tier is full). */
void tm_chunk_pool_give(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle handle);

/* Bytes of `device` pooled in `tier`: room any allocation of the device may have, since
 * chunked ones take the pooled chunks and a plain one has the pool drained first. */
uint64_t tm_chunk_pool_bytes(const tm_device *device, tm_tier_id tier);

/* Creates chunks until `tier` has `count` pooled (at most TM_CHUNK_POOL_MAX), room
 * permitting. */
void tm_chunk_pool_fill(tm_device *device, tm_tier_id tier, int count);

/* A fork child: the pooled chunks are the parent's. */
void tm_chunk_pool_forget_in_child(void);

/* Releases every pooled chunk (when a context goes, or at exit); with `close` (exit),
 * chunks given back later are released, not pooled: exit handlers that run after
 * tiermem's may still free memory. */
void tm_chunk_pool_drain(bool close);

#endif /* TM_PRELOAD_CHUNK_POOL_H */
