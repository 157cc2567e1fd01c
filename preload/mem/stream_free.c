/* stream_free.c — stream-ordered release without a host sync (see stream_free.h). Frees
 * waiting for their stream sit in one list; the host function only flags its entry, and
 * draining takes the flagged ones out. */
#include "preload/mem/stream_free.h"

#include <pthread.h>
#include <stdlib.h>

#include "preload/driver/driver.h"
#include "preload/base/log.h"

typedef struct pending {
    tm_alloc *alloc;
    bool reached;                   /* set by the host function */
    bool listed;                    /* still in `outstanding` */
    struct pending *next;
} pending;

static pending *outstanding;        /* frees queued on streams, newest first */
int tm_stream_frees_reached;         /* of those, flagged ones not yet drained */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Runs on the driver's thread when the stream gets here: no driver calls allowed. */
static void CUDA_CB on_reached(void *arg)
{
    pending *p = arg;
    pthread_mutex_lock(&lock);
    p->reached = true;
    if (p->listed)
        __atomic_add_fetch(&tm_stream_frees_reached, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
}

void tm_stream_free(tm_alloc *a, CUstream stream, bool ptsz)
{
    if (tm_stream_capturing(stream, ptsz)) {
        tm_log_once(TM_LOG_INFO, "a chunked allocation freed during stream capture stays mapped until its "
                    "context goes (a graph may still use it)");
        tm_retrack(a);
        return;
    }
    PFN_cuLaunchHostFunc_v10000 launch =
        ptsz && tm_real.cuLaunchHostFunc_ptsz ? tm_real.cuLaunchHostFunc_ptsz : tm_real.cuLaunchHostFunc;
    pending *p = calloc(1, sizeof *p);
    if (p && launch) {
        p->alloc = a;
        p->listed = true;
        pthread_mutex_lock(&lock);
        p->next = outstanding;
        outstanding = p;
        pthread_mutex_unlock(&lock);
        if (launch(stream, on_reached, p) == CUDA_SUCCESS)
            return;
        pthread_mutex_lock(&lock);
        for (pending **at = &outstanding; *at; at = &(*at)->next)
            if (*at == p) {
                *at = p->next;
                p->listed = false;
                break;
            }
        pthread_mutex_unlock(&lock);
    }
    free(p);
    /* no host function: fall back to waiting for the stream */
    tm_free_chunked(a, ptsz ? TM_WAIT_STREAM_PTSZ : TM_WAIT_STREAM, stream);
}

/* Takes out of the list the entries `pick` wants, as a list of their own. */
static pending *take(bool (*pick)(const pending *p, CUcontext ctx), CUcontext ctx)
{
    pending *taken = NULL;
    pthread_mutex_lock(&lock);
    for (pending **at = &outstanding; *at;) {
        pending *p = *at;
        if (!pick(p, ctx)) {
            at = &p->next;
            continue;
        }
        *at = p->next;
        p->listed = false;
        if (p->reached)
            __atomic_sub_fetch(&tm_stream_frees_reached, 1, __ATOMIC_RELAXED);
        p->next = taken;
        taken = p;
    }
    pthread_mutex_unlock(&lock);
    return taken;
}

static bool is_reached(const pending *p, CUcontext ctx)
{
    (void)ctx;
    return p->reached;
}

static bool in_context(const pending *p, CUcontext ctx)
{
    return !ctx || p->alloc->ctx == ctx;
}

void tm_stream_free_drain_reached(void)
{
    for (pending *p = take(is_reached, NULL), *next; p; p = next) {
        next = p->next;
        tm_free_chunked(p->alloc, TM_WAIT_NOTHING, NULL);
        free(p);
    }
}

void tm_stream_free_finish(CUcontext ctx, bool context_alive)
{
    if (__atomic_load_n(&outstanding, __ATOMIC_RELAXED) == NULL)
        return;
    for (pending *p = take(in_context, ctx), *next; p; p = next) {
        next = p->next;
        bool reached = p->reached;
        /* waiting in the context runs the host function; a dead context's never will */
        tm_free_chunked(p->alloc, reached || !context_alive ? TM_WAIT_NOTHING : TM_WAIT_CONTEXT, NULL);
        if (reached || context_alive)
            free(p);
    }
}

void tm_stream_free_forget_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    outstanding = NULL; /* the parent's memory: not the child's to release */
    tm_stream_frees_reached = 0;
}
