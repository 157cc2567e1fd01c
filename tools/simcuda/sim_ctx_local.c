/* sim_ctx_local.c — context-local storage: the values the CUDA runtime attaches to a
 * context (its per-context state) through export table 5, with their destructors.
 *
 * The runtime asks for its value before almost every call, so `get` is a short walk of
 * the context's list under the driver lock (a handful of keys per context). Destructors
 * run outside the lock: the runtime's own frees streams, modules and memory through the
 * driver while the context is still live. */
#include <stdlib.h>

#include "tools/simcuda/sim_internal.h"

struct sim_local {
    sim_local *next;
    void *key;
    void *value;
    sim_local_dtor *dtor;   /* may be NULL */
};

/* Lock held: the context a call names (NULL: the current one). A primary context is
 * accepted before its first retain: the runtime stores its state while setting it up. */
static CUresult local_context(CUcontext handle, sim_context **ctx)
{
    if (handle == NULL)
        return sim_current_context_locked(ctx);
    CUresult result = sim_check_init();
    if (result != CUDA_SUCCESS)
        return result;
    *ctx = sim_object_find(handle, SIM_CONTEXT);
    return *ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static sim_local **local_find(sim_context *ctx, void *key)
{
    sim_local **at = &ctx->locals;
    while (*at && (*at)->key != key)
        at = &(*at)->next;
    return at;
}

CUresult sim_local_put(CUcontext handle, void *key, void *value, sim_local_dtor *dtor)
{
    sim_local *fresh = malloc(sizeof *fresh);
    if (!fresh)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_context *ctx = NULL;
    CUresult result = local_context(handle, &ctx);
    if (result == CUDA_SUCCESS) {
        sim_local **at = local_find(ctx, key);
        if (*at) {
            /* A second put of a key replaces its value (and its destructor). */
            (*at)->value = value;
            (*at)->dtor = dtor;
        } else {
            *fresh = (sim_local){ .next = NULL, .key = key, .value = value, .dtor = dtor };
            *at = fresh;
            fresh = NULL;
        }
    }
    sim_unlock();
    free(fresh);
    return result;
}

CUresult sim_local_delete(CUcontext handle, void *key)
{
    sim_lock();
    sim_context *ctx = NULL;
    CUresult result = local_context(handle, &ctx);
    sim_local *gone = NULL;
    if (result == CUDA_SUCCESS) {
        sim_local **at = local_find(ctx, key);
        if (*at) {
            gone = *at;
            *at = gone->next;
        } else {
            result = CUDA_ERROR_NOT_FOUND;
        }
    }
    sim_unlock();
    free(gone); /* deleting forgets the value; its owner frees it */
    return result;
}

CUresult sim_local_get(void **value, CUcontext handle, void *key)
{
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_context *ctx = NULL;
    CUresult result = local_context(handle, &ctx);
    if (result == CUDA_SUCCESS) {
        sim_local *local = *local_find(ctx, key);
        if (local)
            *value = local->value;
        else
            result = CUDA_ERROR_NOT_FOUND;
    }
    sim_unlock();
    return result;
}

void sim_local_destroy(sim_context *ctx)
{
    /* A destructor may put again (state rebuilt while tearing down): take the list until
     * it stays empty, a bounded number of times. */
    for (int round = 0; round < 8; round++) {
        sim_lock();
        sim_local *list = ctx->locals;
        ctx->locals = NULL;
        sim_unlock();
        if (!list)
            return;
        while (list) {
            sim_local *local = list;
            list = local->next;
            if (local->dtor)
                local->dtor((CUcontext)ctx, local->key, local->value);
            free(local);
        }
    }
    sim_log("context-local storage of context %llu still refilled after 8 rounds of destructors; dropped",
            ctx->id);
    sim_lock();
    sim_local *list = ctx->locals;
    ctx->locals = NULL;
    sim_unlock();
    while (list) {
        sim_local *next = list->next;
        free(list);
        list = next;
    }
}
