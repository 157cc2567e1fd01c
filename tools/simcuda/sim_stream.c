/* sim_stream.c — streams and events.
 *
 * Work submitted to a stream runs before the submitting call returns (sim_exec.c), so
 * every stream is always idle: a query answers CUDA_SUCCESS and an event is complete as
 * soon as it is recorded. With SIMCUDA_ASYNC=1 work is queued for worker threads
 * (sim_async.c): queries answer CUDA_ERROR_NOT_READY while it is pending, synchronising
 * waits for it, and event records and waits are stream operations. Time is simulated (sim_time.h): an event records when the
 * work before it ends, cuEventElapsedTime answers the simulated milliseconds between
 * two, synchronising moves the host clock to the end of what it waited for, and
 * cuStreamWaitEvent moves the stream's clock to the event's. */
#include <stdlib.h>

#include "tools/simcuda/sim_internal.h"

/* ---------------------------------------------------------------- resolution */

CUresult sim_stream_resolve(CUstream handle, sim_stream **stream)
{
    *stream = NULL;
    if (handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD)
        return CUDA_SUCCESS;
    sim_stream *s = sim_object_find(handle, SIM_STREAM);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    *stream = s;
    return CUDA_SUCCESS;
}

CUresult sim_stream_enter(CUstream handle, sim_stream **stream)
{
    sim_stream *ignored;
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(handle, stream ? stream : &ignored);
    sim_unlock();
    return result;
}

/* ---------------------------------------------------------------- streams */

static CUresult stream_create(CUstream *handle, unsigned int flags, int priority)
{
    if (!handle || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    sim_stream *stream = calloc(1, sizeof *stream);
    if (!stream)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS) {
        stream->ctx = ctx;
        stream->flags = flags;
        /* Priorities are clamped to the range the device reports, like the driver. */
        stream->priority = priority > 0 ? 0 : priority < -5 ? -5 : priority;
        sim_object_add(&stream->obj, SIM_STREAM);
    }
    sim_unlock();
    if (result != CUDA_SUCCESS) {
        free(stream);
        return result;
    }
    *handle = (CUstream)stream;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamCreate(CUstream *handle, unsigned int flags)
{
    SIM_FAIL_POINT(cuStreamCreate);
    return stream_create(handle, flags, 0);
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *handle, unsigned int flags, int priority)
{
    SIM_FAIL_POINT(cuStreamCreateWithPriority);
    return stream_create(handle, flags, priority);
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    SIM_FAIL_POINT(cuCtxGetStreamPriorityRange);
    CUresult result = sim_current_context(NULL);
    if (result != CUDA_SUCCESS)
        return result;
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream handle)
{
    SIM_FAIL_POINT(cuStreamDestroy_v2);
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    sim_stream *stream = NULL;
    if (result == CUDA_SUCCESS) {
        stream = sim_object_find(handle, SIM_STREAM);
        if (!stream)
            result = CUDA_ERROR_INVALID_HANDLE;
        else {
            sim_object_remove(&stream->obj);
            sim_async_stream_gone(stream); /* pending work still runs, then it is freed */
        }
    }
    sim_unlock();
    return result;
}

/* A stream the host waits on or queries: a capturing one refuses (and its capture ends
 * invalidated), as on a GPU. */
static CUresult stream_enter_uncaptured(CUstream handle, sim_stream **stream)
{
    CUresult result = sim_stream_enter(handle, stream);
    if (result == CUDA_SUCCESS && sim_graph_capture_refuses(*stream))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return result;
}

static CUresult stream_synchronize(CUstream handle)
{
    sim_stream *stream;
    CUresult result = stream_enter_uncaptured(handle, &stream);
    if (result == CUDA_SUCCESS) {
        sim_lock();
        sim_async_wait_stream(stream);
        sim_time_synchronize(sim_time_stream_done(stream));
        sim_unlock();
    }
    return result;
}

static CUresult stream_query(CUstream handle)
{
    sim_stream *stream;
    CUresult result = stream_enter_uncaptured(handle, &stream);
    if (result == CUDA_SUCCESS) {
        sim_lock();
        if (sim_async_busy(stream))
            result = CUDA_ERROR_NOT_READY;
        sim_unlock();
    }
    return result;
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream handle) { SIM_FAIL_POINT(cuStreamSynchronize); return stream_synchronize(handle); }
SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream handle) { SIM_FAIL_POINT(cuStreamSynchronize_ptsz); return stream_synchronize(handle); }
SIM_EXPORT CUresult cuStreamQuery(CUstream handle) { SIM_FAIL_POINT(cuStreamQuery); return stream_query(handle); }
SIM_EXPORT CUresult cuStreamQuery_ptsz(CUstream handle) { SIM_FAIL_POINT(cuStreamQuery_ptsz); return stream_query(handle); }

static CUresult stream_wait_event(CUstream handle, CUevent event_handle, unsigned int flags)
{
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_stream *stream;
    CUresult result = sim_current_context_locked(NULL);
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(handle, &stream);
    sim_event *event = result == CUDA_SUCCESS ? sim_object_find(event_handle, SIM_EVENT) : NULL;
    if (result == CUDA_SUCCESS && !event)
        result = CUDA_ERROR_INVALID_HANDLE;
    /* An event never recorded captures no work: nothing to wait for. */
    bool wait = result == CUDA_SUCCESS && event->recorded;
    uint64_t record = wait ? event->records : 0;
    if (wait)
        event->op_refs++;
    sim_unlock();
    return wait ? sim_exec_event(stream, SIM_OP_WAIT, event, record) : result;
}

SIM_EXPORT CUresult cuStreamWaitEvent(CUstream handle, CUevent event, unsigned int flags)
{ SIM_FAIL_POINT(cuStreamWaitEvent); return stream_wait_event(handle, event, flags); }
SIM_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream handle, CUevent event, unsigned int flags)
{ SIM_FAIL_POINT(cuStreamWaitEvent_ptsz); return stream_wait_event(handle, event, flags); }

static CUresult stream_get_flags(CUstream handle, unsigned int *flags)
{
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result == CUDA_SUCCESS)
        *flags = stream ? stream->flags : 0;
    return result;
}

SIM_EXPORT CUresult cuStreamGetFlags(CUstream handle, unsigned int *flags) { SIM_FAIL_POINT(cuStreamGetFlags); return stream_get_flags(handle, flags); }
SIM_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream handle, unsigned int *flags) { SIM_FAIL_POINT(cuStreamGetFlags_ptsz); return stream_get_flags(handle, flags); }

static CUresult stream_get_priority(CUstream handle, int *priority)
{
    if (!priority)
        return CUDA_ERROR_INVALID_VALUE;
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result == CUDA_SUCCESS)
        *priority = stream ? stream->priority : 0;
    return result;
}

SIM_EXPORT CUresult cuStreamGetPriority(CUstream handle, int *priority) { SIM_FAIL_POINT(cuStreamGetPriority); return stream_get_priority(handle, priority); }
SIM_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream handle, int *priority) { SIM_FAIL_POINT(cuStreamGetPriority_ptsz); return stream_get_priority(handle, priority); }

static CUresult stream_get_ctx(CUstream handle, CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_context *ctx = NULL;
    sim_stream *stream;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(handle, &stream);
    if (result == CUDA_SUCCESS)
        *pctx = (CUcontext)(stream ? stream->ctx : ctx);
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuStreamGetCtx(CUstream handle, CUcontext *pctx) { SIM_FAIL_POINT(cuStreamGetCtx); return stream_get_ctx(handle, pctx); }
SIM_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream handle, CUcontext *pctx) { SIM_FAIL_POINT(cuStreamGetCtx_ptsz); return stream_get_ctx(handle, pctx); }

static CUresult stream_host_func(CUstream handle, CUhostFn fn, void *user_data)
{
    sim_stream *stream;
    CUresult result = fn ? sim_stream_enter(handle, &stream) : CUDA_ERROR_INVALID_VALUE;
    return result == CUDA_SUCCESS ? sim_exec_host_func(stream, fn, user_data) : result;
}

SIM_EXPORT CUresult cuLaunchHostFunc(CUstream handle, CUhostFn fn, void *user_data)
{ SIM_FAIL_POINT(cuLaunchHostFunc); return stream_host_func(handle, fn, user_data); }
SIM_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream handle, CUhostFn fn, void *user_data)
{ SIM_FAIL_POINT(cuLaunchHostFunc_ptsz); return stream_host_func(handle, fn, user_data); }

/* ---------------------------------------------------------------- events */

SIM_EXPORT CUresult cuEventCreate(CUevent *handle, unsigned int flags)
{
    SIM_FAIL_POINT(cuEventCreate);
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!handle || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    sim_event *event = calloc(1, sizeof *event);
    if (!event)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS) {
        event->ctx = ctx;
        event->flags = flags;
        sim_object_add(&event->obj, SIM_EVENT);
    }
    sim_unlock();
    if (result != CUDA_SUCCESS) {
        free(event);
        return result;
    }
    *handle = (CUevent)event;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent handle)
{
    SIM_FAIL_POINT(cuEventDestroy_v2);
    sim_lock();
    CUresult result = sim_check_init();
    sim_event *event = NULL;
    if (result == CUDA_SUCCESS) {
        event = sim_object_find(handle, SIM_EVENT);
        if (!event)
            result = CUDA_ERROR_INVALID_HANDLE;
        else {
            sim_object_remove(&event->obj);
            event->destroyed = true; /* does not wait for work that would complete it */
            sim_event_release(event);
        }
    }
    sim_unlock();
    return result;
}

static CUresult event_record(CUevent handle, CUstream stream_handle, unsigned int flags)
{
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    sim_stream *stream;
    sim_context *ctx;
    CUresult result = sim_current_context_locked(&ctx);
    if (result == CUDA_SUCCESS)
        result = sim_stream_resolve(stream_handle, &stream);
    sim_event *event = result == CUDA_SUCCESS ? sim_object_find(handle, SIM_EVENT) : NULL;
    if (result == CUDA_SUCCESS && (!event || event->ctx != (stream ? stream->ctx : ctx)))
        result = CUDA_ERROR_INVALID_HANDLE; /* event and stream must share a context */
    uint64_t record = 0;
    if (result == CUDA_SUCCESS) {
        event->recorded = true;
        record = ++event->records;
        event->op_refs++;
    }
    sim_unlock();
    return result == CUDA_SUCCESS ? sim_exec_event(stream, SIM_OP_RECORD, event, record) : result;
}

SIM_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) { SIM_FAIL_POINT(cuEventRecord); return event_record(event, stream, 0); }
SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) { SIM_FAIL_POINT(cuEventRecord_ptsz); return event_record(event, stream, 0); }
SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags)
{ SIM_FAIL_POINT(cuEventRecordWithFlags); return event_record(event, stream, flags); }
SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream, unsigned int flags)
{ SIM_FAIL_POINT(cuEventRecordWithFlags_ptsz); return event_record(event, stream, flags); }

/* Lock held: the work of the event's last record is done. */
static bool event_complete(const sim_event *event)
{
    return event->records_done == event->records;
}

/* wait: cuEventSynchronize (the host clock moves to the event's time), else a query. */
static CUresult event_check(CUevent handle, bool wait)
{
    sim_lock();
    CUresult result = sim_check_init();
    sim_event *event = result == CUDA_SUCCESS ? sim_object_find(handle, SIM_EVENT) : NULL;
    if (result == CUDA_SUCCESS && !event)
        result = CUDA_ERROR_INVALID_HANDLE;
    if (result == CUDA_SUCCESS && wait) {
        event->op_refs++; /* a destroy from another thread must not free it under us */
        while (!event_complete(event))
            pthread_cond_wait(&sim.async_done, &sim.lock);
        event->op_refs--;
        if (event->recorded)
            sim_time_synchronize(event->when_ns);
        sim_event_release(event);
    } else if (result == CUDA_SUCCESS && !event_complete(event)) {
        result = CUDA_ERROR_NOT_READY;
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent handle) { SIM_FAIL_POINT(cuEventSynchronize); return event_check(handle, true); }
SIM_EXPORT CUresult cuEventQuery(CUevent handle) { SIM_FAIL_POINT(cuEventQuery); return event_check(handle, false); }

static CUresult event_elapsed(float *ms, CUevent start_handle, CUevent end_handle)
{
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult result = sim_check_init();
    sim_event *start = sim_object_find(start_handle, SIM_EVENT);
    sim_event *end = sim_object_find(end_handle, SIM_EVENT);
    if (result != CUDA_SUCCESS) {
    } else if (!start || !end) {
        result = CUDA_ERROR_INVALID_HANDLE;
    } else if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) {
        result = CUDA_ERROR_INVALID_HANDLE;
    } else if (!start->recorded || !end->recorded) {
        result = CUDA_ERROR_INVALID_HANDLE;
    } else if (!event_complete(start) || !event_complete(end)) {
        result = CUDA_ERROR_NOT_READY;
    } else {
        *ms = (float)((end->when_ns - start->when_ns) / 1e6);
    }
    sim_unlock();
    return result;
}

/* cuda.h maps the name to _v2; both ABIs are exported. */
#undef cuEventElapsedTime
SIM_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) { SIM_FAIL_POINT(cuEventElapsedTime); return event_elapsed(ms, start, end); }
SIM_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) { SIM_FAIL_POINT(cuEventElapsedTime_v2); return event_elapsed(ms, start, end); }

/* ---------------------------------------------------------------- context teardown */

void sim_stream_release_context(sim_context *ctx)
{
    sim_object *object, *next;
    HASH_ITER(hh, sim.objects, object, next) {
        if (object->kind == SIM_STREAM && ((sim_stream *)object)->ctx == ctx) {
            sim_object_remove(object);
            sim_async_stream_gone((sim_stream *)object);
        } else if (object->kind == SIM_EVENT && ((sim_event *)object)->ctx == ctx) {
            sim_object_remove(object);
            ((sim_event *)object)->destroyed = true;
            sim_event_release((sim_event *)object);
        }
    }
}
