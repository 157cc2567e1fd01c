/* hook_pool.h — what the driver's memory pools are told of the stream-ordered
 * allocations tiermem serves itself (hook_pool.c). */
#ifndef TM_PRELOAD_HOOK_POOL_H
#define TM_PRELOAD_HOOK_POOL_H

#include "preload/driver/cuda_api.h"

/* After tiermem served `dptr` for a stream-ordered allocation from `pool` (NULL: the
 * current pool of the allocation's device, cuMemAllocAsync): counts its bytes in that
 * pool when the memory is tiermem's (chunked); the driver counted its own. */
void tm_pool_usage_served(CUdeviceptr dptr, CUmemoryPool pool);

/* Before any free of `dptr`: its bytes leave the pool they were counted in. */
void tm_pool_usage_freed(CUdeviceptr dptr);

/* A pool the program destroys takes its counts with it. */
void tm_pool_usage_forget_pool(CUmemoryPool pool);

#endif /* TM_PRELOAD_HOOK_POOL_H */
