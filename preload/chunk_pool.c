/* chunk_pool.c — pooled physical chunks (see chunk_pool.h). */
#include "preload/chunk_pool.h"

#include <pthread.h>
#include <string.h>

#include "preload/driver.h"
#include "preload/stats.h"

static struct {
    CUmemGenericAllocationHandle handle[TM_CHUNK_POOL_MAX];
    int count;
    uint64_t chunk_size;       /* of the chunks pooled */
} pool[TM_TIER_COUNT];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

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

bool tm_chunk_pool_take(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle *handle)
{
    pthread_mutex_lock(&pool_lock);
    bool pooled = pool[tier].count > 0;
    if (pooled)
        *handle = pool[tier].handle[--pool[tier].count];
    pthread_mutex_unlock(&pool_lock);
    if (pooled) {
        tm_stat_add(pool_hits, 1);
        return true;
    }
    tm_stat_add(pool_misses, 1);
    return create_chunk(device, tier, handle);
}

void tm_chunk_pool_give(tm_device *device, tm_tier_id tier, CUmemGenericAllocationHandle handle)
{
    pthread_mutex_lock(&pool_lock);
    bool kept = pool[tier].count < TM_CHUNK_POOL_MAX;
    if (kept) {
        pool[tier].handle[pool[tier].count++] = handle;
        pool[tier].chunk_size = device->policy.chunk_size;
    }
    pthread_mutex_unlock(&pool_lock);
    if (!kept) {
        tm_release_call(tm_real.cuMemRelease(handle));
        tm_device_charge(device, tier, -(int64_t)device->policy.chunk_size, 0);
    }
}

void tm_chunk_pool_fill(tm_device *device, tm_tier_id tier, int count)
{
    if (count > TM_CHUNK_POOL_MAX)
        count = TM_CHUNK_POOL_MAX;
    for (;;) {
        pthread_mutex_lock(&pool_lock);
        bool enough = pool[tier].count >= count;
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
    for (int t = 0; t < TM_TIER_COUNT; t++)
        pool[t].count = 0;
}

void tm_chunk_pool_drain(void)
{
    pthread_mutex_lock(&pool_lock);
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        for (int i = 0; i < pool[t].count; i++) {
            tm_release_call(tm_real.cuMemRelease(pool[t].handle[i]));
            tm_device_charge(tm_device_ready(), (tm_tier_id)t, -(int64_t)pool[t].chunk_size, 0); /* the migrating device's */
        }
        pool[t].count = 0;
    }
    pthread_mutex_unlock(&pool_lock);
}
