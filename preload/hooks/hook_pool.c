/* hook_pool.c — the counters of the driver's memory pools (cuMemPoolGetAttribute) count
 * the chunked allocations tiermem served from them, which the driver never saw: PyTorch's
 * cudaMallocAsync backend reads USED_MEM_CURRENT and RESERVED_MEM_CURRENT for
 * torch.cuda.memory_stats. tiermem holds no memory back once freed, so its part of
 * "reserved" is what is in use; each high is the driver's high plus tiermem's own, a bound
 * on the high of the sum. */
#include <pthread.h>
#include <stdlib.h>
#include <uthash.h>

#include "preload/hooks/hook_pool.h"
#include "preload/hooks/hook.h"
#include "preload/mem/alloc.h"

typedef struct pool_usage {
    CUmemoryPool pool;              /* key */
    uint64_t used, high;            /* tiermem's bytes in it now, and the most since reset */
    UT_hash_handle hh;
} pool_usage;

typedef struct served {
    CUdeviceptr dptr;               /* key */
    CUmemoryPool pool;
    uint64_t bytes;
    UT_hash_handle hh;
} served;

static pool_usage *pools;
static served *allocations;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Lock held. */
static pool_usage *usage_of(CUmemoryPool pool, bool create)
{
    pool_usage *u;
    HASH_FIND_PTR(pools, &pool, u);
    if (!u && create && (u = calloc(1, sizeof *u))) {
        u->pool = pool;
        HASH_ADD_PTR(pools, pool, u);
    }
    return u;
}

void tm_pool_usage_served(CUdeviceptr dptr, CUmemoryPool pool)
{
    tm_alloc_view view;
    if (!tm_lookup(dptr, &view) || !view.chunked)
        return;
    if (!pool && (!tm_real.cuDeviceGetMemPool || tm_real.cuDeviceGetMemPool(&pool, (CUdevice)view.device) != CUDA_SUCCESS))
        return;
    served *s = malloc(sizeof *s);
    if (!s)
        return; /* uncounted: the pool reads as the driver alone says */
    *s = (served){ .dptr = dptr, .pool = pool, .bytes = view.size };
    pthread_mutex_lock(&lock);
    pool_usage *u = usage_of(pool, true);
    served *old;
    HASH_FIND(hh, allocations, &dptr, sizeof dptr, old);
    if (!u || old) {
        pthread_mutex_unlock(&lock);
        free(s);
        return;
    }
    HASH_ADD(hh, allocations, dptr, sizeof s->dptr, s);
    u->used += s->bytes;
    if (u->used > u->high)
        u->high = u->used;
    pthread_mutex_unlock(&lock);
}

void tm_pool_usage_freed(CUdeviceptr dptr)
{
    if (__atomic_load_n(&allocations, __ATOMIC_RELAXED) == NULL)
        return;
    pthread_mutex_lock(&lock);
    served *s;
    HASH_FIND(hh, allocations, &dptr, sizeof dptr, s);
    if (s) {
        pool_usage *u = usage_of(s->pool, false);
        if (u)
            u->used -= s->bytes < u->used ? s->bytes : u->used;
        HASH_DEL(allocations, s);
        free(s);
    }
    pthread_mutex_unlock(&lock);
}

void tm_pool_usage_forget_pool(CUmemoryPool pool)
{
    pthread_mutex_lock(&lock);
    pool_usage *u = usage_of(pool, false);
    if (u) {
        HASH_DEL(pools, u);
        free(u);
    }
    served *s, *next;
    HASH_ITER(hh, allocations, s, next) {
        if (s->pool == pool) {
            HASH_DEL(allocations, s);
            free(s);
        }
    }
    pthread_mutex_unlock(&lock);
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    TM_HOOK_ENTER(cuMemPoolGetAttribute);
    CUresult result = tm_real.cuMemPoolGetAttribute(pool, attr, value);
    if (result != CUDA_SUCCESS || !value || __atomic_load_n(&pools, __ATOMIC_RELAXED) == NULL)
        return result;
    pthread_mutex_lock(&lock);
    pool_usage *u = usage_of(pool, false);
    if (u) {
        switch (attr) {
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value += u->used; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value += u->high; break;
        default: break;
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}

/* Resetting a high (the only value these take is 0) resets tiermem's part to what is in
 * use now. */
CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    TM_HOOK_ENTER(cuMemPoolSetAttribute);
    CUresult result = tm_real.cuMemPoolSetAttribute(pool, attr, value);
    if (result == CUDA_SUCCESS && (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH || attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH)) {
        pthread_mutex_lock(&lock);
        pool_usage *u = usage_of(pool, false);
        if (u)
            u->high = u->used;
        pthread_mutex_unlock(&lock);
    }
    return result;
}
