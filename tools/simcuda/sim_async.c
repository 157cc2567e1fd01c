/* sim_async.c — asynchronous streams (SIMCUDA_ASYNC=1): each stream that gets queued work
 * has a worker thread that runs it in order (sim_exec_run), so work is pending after
 * the call that submitted it returns, as on a GPU. Kernel arguments are copied at launch
 * from the module's parameter table. The legacy default stream runs its work at
 * submission, after the work queued before it on blocking streams; synchronising waits
 * on sim.async_done, which each completed operation broadcasts. Every queued operation
 * is also on one list in submission order (sim.order_head), so a synchronisation waits
 * for the work queued before it and not for work that keeps coming. A destroyed stream's
 * worker finishes the queue, then frees the stream. Everything here runs with the lock
 * held, except the work itself. */
#include <stdlib.h>
#include <string.h>

#include "tools/simcuda/sim_internal.h"

static bool blocking(const sim_stream *stream)
{
    return !(stream->flags & CU_STREAM_NON_BLOCKING);
}

void sim_op_free(sim_op *op)
{
    if (op->kind == SIM_OP_LAUNCH)
        free(op->launch.param_copy);
    free(op);
}

static void order_append(sim_op *op)
{
    op->order = ++sim.order_last;
    op->order_next = NULL;
    op->order_prev = sim.order_tail;
    if (sim.order_tail)
        sim.order_tail->order_next = op;
    else
        sim.order_head = op;
    sim.order_tail = op;
}

static void order_unlink(sim_op *op)
{
    if (op->order_prev)
        op->order_prev->order_next = op->order_next;
    else
        sim.order_head = op->order_next;
    if (op->order_next)
        op->order_next->order_prev = op->order_prev;
    else
        sim.order_tail = op->order_prev;
}

static void *worker_main(void *arg)
{
    sim_stream *stream = arg;
    sim_lock();
    for (;;) {
        while (!stream->head && !stream->destroyed)
            pthread_cond_wait(&stream->wake, &sim.lock);
        sim_op *op = stream->head;
        if (!op)
            break; /* destroyed and idle */
        sim_unlock();
        sim_exec_run(stream, op);
        sim_lock();
        order_unlink(op);
        stream->head = op->next;
        if (!stream->head)
            stream->tail = NULL;
        stream->pending--;
        sim.async_pending--;
        if (blocking(stream))
            sim.async_blocking_pending--;
        pthread_cond_broadcast(&sim.async_done);
        sim_unlock();
        sim_op_free(op);
        sim_lock();
    }
    sim_unlock();
    pthread_cond_destroy(&stream->wake);
    free(stream);
    return NULL;
}

/* Copies kernelParams into one buffer laid out as the table says; the launch points at
 * the copy. */
static bool copy_params(sim_op *op)
{
    const simcuda_params *table = op->launch.table;
    void **caller = op->launch.launch.params;
    size_t count = table->count, values = sim_param_offset(table, count);
    void **params = malloc(count * sizeof *params + values + 1);
    if (!params)
        return false;
    unsigned char *base = (unsigned char *)(params + count);
    for (size_t i = 0; i < count; i++) {
        params[i] = base + sim_param_offset(table, i);
        if (caller)
            memcpy(params[i], caller[i], table->params[i].size);
    }
    op->launch.param_copy = params;
    op->launch.launch.params = params;
    return true;
}

sim_op *sim_op_clone(const sim_op *op)
{
    sim_op *copy = malloc(sizeof *copy);
    if (!copy)
        return NULL;
    *copy = *op;
    copy->next = NULL;
    if (copy->kind == SIM_OP_LAUNCH && !copy_params(copy)) {
        free(copy);
        return NULL;
    }
    return copy;
}

CUresult sim_async_enqueue(sim_stream *stream, const sim_op *op)
{
    sim_op *copy = sim_op_clone(op);
    if (!copy)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!stream->has_worker) {
        pthread_t thread;
        pthread_cond_init(&stream->wake, NULL);
        if (pthread_create(&thread, NULL, worker_main, stream) != 0) {
            pthread_cond_destroy(&stream->wake);
            sim_op_free(copy);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        pthread_detach(thread);
        stream->has_worker = true;
    }
    if (stream->tail)
        stream->tail->next = copy;
    else
        stream->head = copy;
    stream->tail = copy;
    copy->blocking = blocking(stream);
    order_append(copy);
    stream->pending++;
    sim.async_pending++;
    if (blocking(stream))
        sim.async_blocking_pending++;
    pthread_cond_signal(&stream->wake);
    return CUDA_SUCCESS;
}

bool sim_async_busy(const sim_stream *stream)
{
    return stream ? stream->pending > 0 : sim.async_blocking_pending > 0;
}

/* Whether work queued on the stream (NULL: on a blocking stream) up to `last` is pending.
 * A stream runs its queue in order, so its head is its oldest. */
static bool pending_until(const sim_stream *stream, uint64_t last)
{
    if (stream)
        return stream->head && stream->head->order <= last;
    for (const sim_op *op = sim.order_head; op && op->order <= last; op = op->order_next)
        if (op->blocking)
            return true;
    return false;
}

void sim_async_wait_stream(const sim_stream *stream)
{
    uint64_t last = sim.order_last;
    while (pending_until(stream, last))
        pthread_cond_wait(&sim.async_done, &sim.lock);
}

void sim_async_wait_all(void)
{
    uint64_t last = sim.order_last;
    while (sim.order_head && sim.order_head->order <= last)
        pthread_cond_wait(&sim.async_done, &sim.lock);
}

void sim_async_stream_gone(sim_stream *stream)
{
    if (!stream->has_worker) {
        free(stream);
        return;
    }
    stream->destroyed = true;
    pthread_cond_signal(&stream->wake);
}

void sim_event_release(sim_event *event)
{
    if (event->destroyed && event->op_refs == 0)
        free(event);
}
