/* sim_graph.c — stream capture and graphs, the basic subset: cuStreamBeginCapture,
 * cuStreamEndCapture, cuStreamIsCapturing, cuGraphInstantiate, cuGraphLaunch and their
 * destruction. A capturing stream's work (copies, memsets, launches, host functions) is
 * recorded instead of run; a launch replays it in order on the stream it is given.
 * Stream-ordered allocations made while capturing are the graph's allocation nodes: made
 * at once, at a fixed address, and freed with the graph. Frees of other memory are free
 * nodes, run at launch after the graph's work. Work that would make the host wait
 * (synchronous or pageable copies, stream or event synchronisation, events) cannot be
 * captured: it invalidates the capture, as on a GPU. */
#include <stdlib.h>

#include "tools/simcuda/sim_internal.h"

struct sim_graph {
    sim_object obj;
    sim_op *head, *tail;        /* the recorded work, in stream order */
    CUdeviceptr *owned;         /* allocation nodes: [owned_count] */
    size_t owned_count;
    CUdeviceptr *frees;         /* free nodes of memory made outside: [free_count] */
    size_t free_count;
};

typedef struct sim_graph_exec {
    sim_object obj;
    sim_graph *work;            /* a private copy of the graph's ops and free nodes */
} sim_graph_exec;

/* Appends `value` to a growing array. */
static bool push(CUdeviceptr **array, size_t *count, CUdeviceptr value)
{
    CUdeviceptr *grown = realloc(*array, (*count + 1) * sizeof **array);
    if (!grown)
        return false;
    grown[(*count)++] = value;
    *array = grown;
    return true;
}

static void append(sim_graph *graph, sim_op *op)
{
    if (graph->tail)
        graph->tail->next = op;
    else
        graph->head = op;
    graph->tail = op;
}

static void free_ops(sim_graph *graph)
{
    for (sim_op *op = graph->head, *next; op; op = next) {
        next = op->next;
        sim_op_free(op);
    }
    free(graph->frees);
}

/* ---------------------------------------------------------------- capturing */

CUresult sim_graph_capture_op(sim_stream *stream, const sim_op *op, bool queueable)
{
    if (op->kind == SIM_OP_RECORD || op->kind == SIM_OP_WAIT) {
        sim_event *event = op->event.event; /* undo what recording it took */
        if (op->kind == SIM_OP_RECORD && op->event.record > event->records_done)
            event->records_done = op->event.record;
        event->op_refs--;
        sim_event_release(event);
        queueable = false;
    }
    sim_op *copy = queueable ? sim_op_clone(op) : NULL;
    if (!copy) {
        stream->capture_invalid = true;
        return queueable ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    append(stream->capture, copy);
    return CUDA_SUCCESS;
}

void sim_graph_capture_alloc(sim_stream *stream, CUdeviceptr dptr)
{
    if (!push(&stream->capture->owned, &stream->capture->owned_count, dptr))
        stream->capture_invalid = true;
}

CUresult sim_graph_capture_free(sim_stream *stream, CUdeviceptr dptr)
{
    sim_graph *graph = stream->capture;
    for (size_t i = 0; i < graph->owned_count; i++)
        if (graph->owned[i] == dptr)
            return CUDA_SUCCESS; /* the graph's own: freed with it */
    if (!push(&graph->frees, &graph->free_count, dptr)) {
        stream->capture_invalid = true;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

bool sim_graph_capture_refuses(sim_stream *stream)
{
    if (!stream)
        return false;
    sim_lock();
    bool capturing = stream->capture != NULL;
    if (capturing)
        stream->capture_invalid = true;
    sim_unlock();
    return capturing;
}

static CUresult begin_capture(CUstream handle, CUstreamCaptureMode mode)
{
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    if (!stream) /* the legacy stream cannot be captured */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    sim_graph *graph = calloc(1, sizeof *graph);
    if (!graph)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    if (stream->capture) {
        result = CUDA_ERROR_ILLEGAL_STATE;
    } else {
        sim_object_add(&graph->obj, SIM_GRAPH);
        stream->capture = graph;
        stream->capture_invalid = false;
    }
    sim_unlock();
    if (result != CUDA_SUCCESS)
        free(graph);
    return result;
}

SIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode)
{ SIM_FAIL_POINT(cuStreamBeginCapture_v2); return begin_capture(stream, mode); }
SIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode)
{ SIM_FAIL_POINT(cuStreamBeginCapture_v2_ptsz); return begin_capture(stream, mode); }

static void graph_destroy_locked(sim_graph *graph, CUdeviceptr **owned, size_t *owned_count)
{
    sim_object_remove(&graph->obj);
    free_ops(graph);
    *owned = graph->owned;
    *owned_count = graph->owned_count;
    free(graph);
}

/* Frees a destroyed graph's allocations (lock not held). */
static void free_owned(CUdeviceptr *owned, size_t count)
{
    for (size_t i = 0; i < count; i++)
        sim_device_free(owned[i]);
    free(owned);
}

static CUresult end_capture(CUstream handle, CUgraph *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    CUdeviceptr *owned = NULL;
    size_t owned_count = 0;
    sim_lock();
    sim_graph *graph = stream ? stream->capture : NULL;
    if (!graph) {
        result = CUDA_ERROR_ILLEGAL_STATE;
    } else {
        stream->capture = NULL;
        if (stream->capture_invalid) {
            graph_destroy_locked(graph, &owned, &owned_count);
            result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            graph = NULL;
        }
    }
    sim_unlock();
    free_owned(owned, owned_count);
    *out = (CUgraph)graph;
    return result;
}

SIM_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph)
{ SIM_FAIL_POINT(cuStreamEndCapture); return end_capture(stream, graph); }
SIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph *graph)
{ SIM_FAIL_POINT(cuStreamEndCapture_ptsz); return end_capture(stream, graph); }

static CUresult is_capturing(CUstream handle, CUstreamCaptureStatus *status)
{
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    sim_stream *stream;
    CUresult result = sim_stream_enter(handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    *status = !stream || !stream->capture ? CU_STREAM_CAPTURE_STATUS_NONE
              : stream->capture_invalid  ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                         : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status)
{ SIM_FAIL_POINT(cuStreamIsCapturing); return is_capturing(stream, status); }
SIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus *status)
{ SIM_FAIL_POINT(cuStreamIsCapturing_ptsz); return is_capturing(stream, status); }

/* ---------------------------------------------------------------- graphs */

SIM_EXPORT CUresult cuGraphDestroy(CUgraph handle)
{
    SIM_FAIL_POINT(cuGraphDestroy);
    CUdeviceptr *owned = NULL;
    size_t owned_count = 0;
    sim_lock();
    sim_graph *graph = sim_object_find(handle, SIM_GRAPH);
    if (graph)
        graph_destroy_locked(graph, &owned, &owned_count);
    sim_unlock();
    if (!graph)
        return CUDA_ERROR_INVALID_VALUE;
    free_owned(owned, owned_count);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph handle, unsigned long long flags)
{
    SIM_FAIL_POINT(cuGraphInstantiateWithFlags);
    if (!out || flags & ~(unsigned long long)CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        return CUDA_ERROR_INVALID_VALUE;
    sim_graph_exec *exec = calloc(1, sizeof *exec);
    sim_graph *work = calloc(1, sizeof *work);
    CUresult result = exec && work ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_graph *graph = result == CUDA_SUCCESS ? sim_object_find(handle, SIM_GRAPH) : NULL;
    if (result == CUDA_SUCCESS && !graph)
        result = CUDA_ERROR_INVALID_VALUE;
    for (sim_op *op = graph ? graph->head : NULL; op && result == CUDA_SUCCESS; op = op->next) {
        sim_op *copy = sim_op_clone(op);
        if (copy)
            append(work, copy);
        else
            result = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; graph && i < graph->free_count && result == CUDA_SUCCESS; i++)
        if (!push(&work->frees, &work->free_count, graph->frees[i]))
            result = CUDA_ERROR_OUT_OF_MEMORY;
    if (result == CUDA_SUCCESS) {
        exec->work = work;
        sim_object_add(&exec->obj, SIM_GRAPH_EXEC);
    }
    sim_unlock();
    if (result != CUDA_SUCCESS) {
        if (work)
            free_ops(work);
        free(work);
        free(exec);
        return result;
    }
    *out = (CUgraphExec)exec;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec handle)
{
    SIM_FAIL_POINT(cuGraphExecDestroy);
    sim_lock();
    sim_graph_exec *exec = sim_object_find(handle, SIM_GRAPH_EXEC);
    if (exec)
        sim_object_remove(&exec->obj);
    sim_unlock();
    if (!exec)
        return CUDA_ERROR_INVALID_VALUE;
    free_ops(exec->work);
    free(exec->work);
    free(exec);
    return CUDA_SUCCESS;
}

/* Replays the work in order on `handle`; free nodes run once the stream reached them. */
static CUresult graph_launch(CUgraphExec handle, CUstream stream_handle)
{
    sim_stream *stream;
    CUresult result = sim_stream_enter(stream_handle, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    sim_graph_exec *exec = sim_object_find(handle, SIM_GRAPH_EXEC);
    if (!exec)
        result = CUDA_ERROR_INVALID_VALUE;
    else if (stream && stream->capture)
        result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* graphs in graphs: not emulated */
    sim_unlock();
    for (sim_op *op = exec && result == CUDA_SUCCESS ? exec->work->head : NULL; op; op = op->next)
        if ((result = sim_exec_op(stream, op)) != CUDA_SUCCESS)
            return result;
    if (result != CUDA_SUCCESS || exec->work->free_count == 0)
        return result;
    sim_lock();
    sim_async_wait_stream(stream);
    sim_unlock();
    for (size_t i = 0; i < exec->work->free_count; i++)
        sim_device_free(exec->work->frees[i]);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream)
{ SIM_FAIL_POINT(cuGraphLaunch); return graph_launch(exec, stream); }
SIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream stream)
{ SIM_FAIL_POINT(cuGraphLaunch_ptsz); return graph_launch(exec, stream); }
