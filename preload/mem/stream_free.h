/* stream_free.h — stream-ordered release of chunked memory without a host sync.
 *
 * cuMemFreeAsync must not block the host. The allocation leaves the registry at once;
 * a host function queued on the stream marks it reached, and the next interposer call
 * that allocates, frees or reports memory releases it (a host function may not call
 * the driver itself). On a capturing stream nothing is queued or synchronised: the
 * memory stays mapped, because the graph being built may still use it, and goes with
 * its context. */
#ifndef TM_PRELOAD_STREAM_FREE_H
#define TM_PRELOAD_STREAM_FREE_H

#include <stdbool.h>

#include "preload/mem/alloc.h"

/* Releases `alloc`, already out of the registry, once `stream` reaches this point. */
void tm_stream_free(tm_alloc *alloc, CUstream stream, bool ptsz);

/* Frees whose streams have reached them, not released yet (atomic). */
extern int tm_stream_frees_reached;

void tm_stream_free_drain_reached(void);

/* Releases the allocations whose streams have reached their free: one load when none have. */
static inline void tm_stream_free_drain(void)
{
    if (__atomic_load_n(&tm_stream_frees_reached, __ATOMIC_ACQUIRE) != 0)
        tm_stream_free_drain_reached();
}

/* Releases the frees still waiting in `ctx` (NULL: every context), waiting for their
 * streams while the context is alive: before a context goes, and at exit. */
void tm_stream_free_finish(CUcontext ctx, bool context_alive);

void tm_stream_free_forget_in_child(void);

#endif /* TM_PRELOAD_STREAM_FREE_H */
