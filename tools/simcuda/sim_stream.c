/* sim_stream.c — streams and events.
 *
 * Work submitted to a stream runs before the submitting call returns (sim_exec.c), so
 * every stream is always idle: a query answers CUDA_SUCCESS and an event is complete as
 * soon as it is recorded. Time is simulated (sim_time.h): an event records when the
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
    return stream_create(handle, flags, 0);
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *handle, unsigned int flags, int priority)
{
    return stream_create(handle, flags, priority);
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
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
    sim_lock();
    CUresult result = sim_current_context_locked(NULL);
    sim_stream *stream = NULL;
    if (result == CUDA_SUCCESS) {
        stream = sim_object_find(handle, SIM_STREAM);
        if (!stream)
            result = CUDA_ERROR_INVALID_HANDLE;
        else
            sim_object_remove(&stream->obj);
    }
    sim_unlock();
    free(stream);
    return result;
}

static CUresult stream_synchronize(CUstream handle)
{
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result == CUDA_SUCCESS) {
        sim_lock();
        sim_time_synchronize(sim_time_stream_done(stream));
        sim_unlock();
    }
    return result;
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream handle) { return stream_synchronize(handle); }
SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream handle) { return stream_synchronize(handle); }
SIM_EXPORT CUresult cuStreamQuery(CUstream handle) { return sim_stream_enter(handle, NULL); }
SIM_EXPORT CUresult cuStreamQuery_ptsz(CUstream handle) { return sim_stream_enter(handle, NULL); }

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
    if (result == CUDA_SUCCESS && event->recorded)
        sim_time_advance(stream, event->when_ns);
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuStreamWaitEvent(CUstream handle, CUevent event, unsigned int flags)
{ return stream_wait_event(handle, event, flags); }
SIM_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream handle, CUevent event, unsigned int flags)
{ return stream_wait_event(handle, event, flags); }

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

SIM_EXPORT CUresult cuStreamGetFlags(CUstream handle, unsigned int *flags) { return stream_get_flags(handle, flags); }
SIM_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream handle, unsigned int *flags) { return stream_get_flags(handle, flags); }

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

SIM_EXPORT CUresult cuStreamGetPriority(CUstream handle, int *priority) { return stream_get_priority(handle, priority); }
SIM_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream handle, int *priority) { return stream_get_priority(handle, priority); }

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

SIM_EXPORT CUresult cuStreamGetCtx(CUstream handle, CUcontext *pctx) { return stream_get_ctx(handle, pctx); }
SIM_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream handle, CUcontext *pctx) { return stream_get_ctx(handle, pctx); }

static CUresult stream_host_func(CUstream handle, CUhostFn fn, void *user_data)
{
    CUresult result = fn ? sim_stream_enter(handle, NULL) : CUDA_ERROR_INVALID_VALUE;
    if (result == CUDA_SUCCESS)
        fn(user_data); /* in stream order: everything before it has already run */
    return result;
}

SIM_EXPORT CUresult cuLaunchHostFunc(CUstream handle, CUhostFn fn, void *user_data)
{ return stream_host_func(handle, fn, user_data); }
SIM_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream handle, CUhostFn fn, void *user_data)
{ return stream_host_func(handle, fn, user_data); }

/* ---------------------------------------------------------------- events */

SIM_EXPORT CUresult cuEventCreate(CUevent *handle, unsigned int flags)
{
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
    sim_lock();
    CUresult result = sim_check_init();
    sim_event *event = NULL;
    if (result == CUDA_SUCCESS) {
        event = sim_object_find(handle, SIM_EVENT);
        if (!event)
            result = CUDA_ERROR_INVALID_HANDLE;
        else
            sim_object_remove(&event->obj);
    }
    sim_unlock();
    free(event);
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
    if (result == CUDA_SUCCESS) {
        sim_time_host_enter();
        event->when_ns = sim_time_ready(stream);
        event->recorded = true;
    }
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) { return event_record(event, stream, 0); }
SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) { return event_record(event, stream, 0); }
SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags)
{ return event_record(event, stream, flags); }
SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream, unsigned int flags)
{ return event_record(event, stream, flags); }

/* wait: cuEventSynchronize (the host clock moves to the event's time), else a query. */
static CUresult event_check(CUevent handle, bool wait)
{
    sim_lock();
    CUresult result = sim_check_init();
    sim_event *event = result == CUDA_SUCCESS ? sim_object_find(handle, SIM_EVENT) : NULL;
    if (result == CUDA_SUCCESS && !event)
        result = CUDA_ERROR_INVALID_HANDLE;
    if (result == CUDA_SUCCESS && wait && event->recorded)
        sim_time_synchronize(event->when_ns);
    sim_unlock();
    return result;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent handle) { return event_check(handle, true); }
SIM_EXPORT CUresult cuEventQuery(CUevent handle) { return event_check(handle, false); }

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
    } else {
        *ms = (float)((end->when_ns - start->when_ns) / 1e6);
    }
    sim_unlock();
    return result;
}

/* cuda.h maps the name to _v2; both ABIs are exported. */
#undef cuEventElapsedTime
SIM_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) { return event_elapsed(ms, start, end); }
SIM_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) { return event_elapsed(ms, start, end); }

/* ---------------------------------------------------------------- context teardown */

void sim_stream_release_context(sim_context *ctx)
{
    sim_object *object, *next;
    HASH_ITER(hh, sim.objects, object, next) {
        if (object->kind == SIM_STREAM && ((sim_stream *)object)->ctx == ctx) {
            sim_object_remove(object);
            free(object);
        } else if (object->kind == SIM_EVENT && ((sim_event *)object)->ctx == ctx) {
            sim_object_remove(object);
            free(object);
        }
    }
}
