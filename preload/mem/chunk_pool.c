/* chunk_pool.c — pooled physical chunks (see chunk_pool.h). */
#include "preload/mem/chunk_pool.h"

#include <pthread.h>
#include <string.h>

#include "preload/driver/driver.h"
#include "preload/region/stats.h"

typedef struct pooled {
    CUmemGenericAllocationHandle handle;
    tm_device *device;                      /* whose memory it is */
    CUmemAllocationHandleType handle_types; /* it was created exportable as these */
} pooled;

static struct {
    pooled chunk[TM_CHUNK_POOL_SLOTS];
    int count;
    int per_device[TM_MAX_DEVICES];         /* of count, by device ordinal */
} pool[TM_TIER_COUNT];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static bool closed; /* after exit's drain: chunks given back are released */

/* Charges a chunk's room in `tier` if it has it (one step with the placement of others). */
static bool charge_room(tm_device *device, tm_tier_id tier)
{
    uint64_t chunk = device->policy.chunk_size;
    tm_device_place_lock(device);
    tm_tiers now;
    tm_device_tiers_now(device, &now);
    bool room = now.tier[tier].present && tm_tier_room(&now, tier) >= chunk;
    if (room)
        tm_device_charge(device, tier, (int64_t)chunk, 0);
    tm_device_place_unlock(device);
    return room;
}

static bool create_chunk(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *handle)
{
    if (!charge_room(device, tier))
        return false;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = device->target.handle_types;
    prop.location.type = tier == TM_TIER_HBM ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.location.id = tier == TM_TIER_HBM ? device->target.device : device->target.node[tier];
    if (tm_real.cuMemCreate(handle, device->policy.chunk_size, &prop, 0) != CUDA_SUCCESS) {
        tm_device_charge(device, tier, -(int64_t)device->policy.chunk_size, 0);
        return false;
    }
    return true;
}

/* Pooled chunks a device may keep in a tier. */
static int bound(const tm_device *device, tm_tier_id tier)
{
    if (tier != TM_TIER_HBM || device->policy.chunk_size == 0)
        return TM_CHUNK_POOL_MAX;
    uint64_t share = device->tiers.tier[TM_TIER_HBM].limit / 64 / device->policy.chunk_size;
    if (share < TM_CHUNK_POOL_MAX)
        return TM_CHUNK_POOL_MAX;
    return share < TM_CHUNK_POOL_SLOTS ? (int)share : TM_CHUNK_POOL_SLOTS;
}

/* Pops up to `max` chunks of `device` into `out`; under pool_lock. */
static size_t pop(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *out, size_t max)
{
    size_t got = 0;
    if (device->ordinal < 0 || device->ordinal >= TM_MAX_DEVICES || pool[tier].per_device[device->ordinal] == 0)
        return 0;
    for (int i = pool[tier].count - 1; i >= 0 && got < max; i--) {
        pooled *p = &pool[tier].chunk[i];
        if (p->device != device || p->handle_types != device->target.handle_types)
            continue;
        out[got++] = p->handle;
        *p = pool[tier].chunk[--pool[tier].count];
        pool[tier].per_device[device->ordinal]--;
    }
    return got;
}

bool tm_chunk_pool_take(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *handle)
{
    pthread_mutex_lock(&pool_lock);
    bool pooled = pop(device, tier, handle, 1) == 1;
    pthread_mutex_unlock(&pool_lock);
    if (pooled) {
        tm_stat_add(pool_hits, 1);
        return true;
    }
    tm_stat_add(pool_misses, 1);
    return create_chunk(device, tier, handle);
}

size_t tm_chunk_pool_take_many(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *out, size_t max)
{
    pthread_mutex_lock(&pool_lock);
    size_t got = pop(device, tier, out, max);
    pthread_mutex_unlock(&pool_lock);
    return got;
}

void tm_chunk_pool_give(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle handle)
{
    pthread_mutex_lock(&pool_lock);
    bool kept = !closed && device->ordinal >= 0 && device->ordinal < TM_MAX_DEVICES && pool[tier].count < TM_CHUNK_POOL_SLOTS &&
                pool[tier].per_device[device->ordinal] < bound(device, tier);
    if (kept) {
        pool[tier].chunk[pool[tier].count++] = (pooled){ handle, device, device->target.handle_types };
        pool[tier].per_device[device->ordinal]++;
    }
    pthread_mutex_unlock(&pool_lock);
    if (!kept) {
        tm_release_call(tm_real.cuMemRelease(handle));
        tm_device_charge(device, tier, -(int64_t)device->policy.chunk_size, 0);
    }
}

uint64_t tm_chunk_pool_bytes(const tm_device *device, tm_tier_id tier)
{
    if (device->ordinal < 0 || device->ordinal >= TM_MAX_DEVICES)
        return 0;
    pthread_mutex_lock(&pool_lock);
    uint64_t count = (uint64_t)pool[tier].per_device[device->ordinal];
    pthread_mutex_unlock(&pool_lock);
    return count * device->policy.chunk_size;
}

void tm_chunk_pool_fill(tm_device *device, tm_tier_id tier, int count)
{
    if (count > TM_CHUNK_POOL_MAX)
        count = TM_CHUNK_POOL_MAX;
    if (device->ordinal < 0 || device->ordinal >= TM_MAX_DEVICES)
        return;
    for (;;) {
        pthread_mutex_lock(&pool_lock);
        bool enough = pool[tier].per_device[device->ordinal] >= count;
        pthread_mutex_unlock(&pool_lock);
        CUmemGenericAllocationHandle handle;
        if (enough || !create_chunk(device, tier, &handle))
            return;
        tm_chunk_pool_give(device, tier, handle);
    }
}

void tm_chunk_pool_forget_in_child(void)
{
    pthread_mutex_init(&pool_lock, NULL);
    memset(pool, 0, sizeof pool);
    closed = false;
}

void tm_chunk_pool_drain(bool close)
{
    pthread_mutex_lock(&pool_lock);
    closed = closed || close;
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        for (int i = 0; i < pool[t].count; i++) {
            pooled *p = &pool[t].chunk[i];
            tm_release_call(tm_real.cuMemRelease(p->handle));
            tm_device_charge(p->device, (tm_tier_id)t, -(int64_t)p->device->policy.chunk_size, 0);
        }
        pool[t].count = 0;
        memset(pool[t].per_device, 0, sizeof pool[t].per_device);
    }
    pthread_mutex_unlock(&pool_lock);
}
