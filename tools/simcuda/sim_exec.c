/* sim_exec.c — where device work runs: copies, memsets, kernel launches, event records
 * and waits, host functions.
 *
 * Each operation is submitted here. It runs at once on the calling thread, in stream
 * order, unless SIMCUDA_ASYNC is on and it can wait (sim_async.c queues it for the
 * stream's worker, which calls sim_exec_run). Either way it is charged simulated time
 * (sim_time.h): copies by the path each piece crosses, memsets and kernels by the
 * roofline of the bytes they touch per location. Every range touched fires the USDT
 * probe simcuda:touch (its arguments are documented in simcuda.h). */
#include <string.h>
#include <sys/sdt.h>

#include "tools/simcuda/sim_internal.h"

/* What one launch declared: simcuda_launch.cost points here while the kernel runs. */
typedef struct launch_record {
    sim_cost cost;
    uint64_t seq;           /* launch sequence number */
    const char *name;       /* kernel function name, "cuMemcpy" or "cuMemset" */
} launch_record;

static void fire_touch(const launch_record *record, uintptr_t start, uint64_t bytes, int is_write)
{
    DTRACE_PROBE5(simcuda, touch, (uint64_t)start, bytes, (int32_t)is_write, record->seq, record->name);
}

/* ABI 2 callbacks (simcuda_reads/simcuda_writes/simcuda_flops); a kernel may call them
 * from several threads. */
static void declare_touch(const simcuda_launch *launch, const void *start, uint64_t bytes, int is_write)
{
    launch_record *record = launch->cost;
    fire_touch(record, (uintptr_t)start, bytes, is_write != 0);
    sim_lock();
    sim_cost_range(&record->cost, (uintptr_t)start, bytes, is_write != 0);
    sim_unlock();
}

static void declare_flops(const simcuda_launch *launch, double flops)
{
    launch_record *record = launch->cost;
    sim_lock();
    if (flops > 0)
        record->cost.flops += flops;
    sim_unlock();
}

/* Lock held: an operation ended at `end` in simulated time. Run by the submitting call,
 * the host clock follows it (to its end when the call is synchronous), and the CPU time
 * the work itself took is no host time. */
static double finish(const sim_op *op, double end)
{
    if (op->on_host_thread) {
        if (op->host_waits)
            sim_time_host_wait(end);
        sim_time_host_leave();
    }
    return end;
}

/* ---------------------------------------------------------------- running */

static double run_copy(sim_stream *stream, const sim_op *op)
{
    launch_record record = { .seq = op->seq, .name = "cuMemcpy" };
    fire_touch(&record, (uintptr_t)op->copy.src, op->copy.bytes, 0);
    fire_touch(&record, (uintptr_t)op->copy.dst, op->copy.bytes, 1);
    memmove(op->copy.dst, op->copy.src, op->copy.bytes);
    sim_lock();
    double end = finish(op, sim_time_copy(stream, op->submitted_ns, (uintptr_t)op->copy.dst,
                                          (uintptr_t)op->copy.src, op->copy.bytes));
    sim_unlock();
    return end;
}

static double run_memset(sim_stream *stream, const sim_op *op)
{
    size_t count = op->memset.count, bytes = op->memset.element_size * count;
    launch_record record = { .seq = op->seq, .name = "cuMemset", .cost.declared = true };
    fire_touch(&record, (uintptr_t)op->memset.dst, bytes, 1);
    if (op->memset.element_size == 1) {
        memset(op->memset.dst, (int)(op->memset.value & 0xff), count);
    } else if (op->memset.element_size == 2) {
        uint16_t *p = op->memset.dst;
        for (size_t i = 0; i < count; i++)
            p[i] = (uint16_t)op->memset.value;
    } else {
        uint32_t *p = op->memset.dst;
        for (size_t i = 0; i < count; i++)
            p[i] = op->memset.value;
    }
    sim_lock();
    sim_cost_range(&record.cost, (uintptr_t)op->memset.dst, bytes, true);
    sim_managed_settle(&record.cost.managed);
    double end = finish(op, sim_time_kernel(stream, op->submitted_ns, &record.cost, sim.config.profile.copy_us));
    sim_unlock();
    return end;
}

static double run_launch(sim_stream *stream, sim_op *op)
{
    bool declares = op->launch.abi >= 2;
    launch_record record = { .seq = op->seq, .name = op->launch.name, .cost.declared = declares };
    simcuda_launch *launch = &op->launch.launch;
    if (declares) {
        launch->touch = declare_touch;
        launch->flops = declare_flops;
        launch->cost = &record;
    }
    op->launch.entry(launch);
    sim_lock();
    sim_managed_settle(&record.cost.managed);
    double end = finish(op, sim_time_kernel(stream, op->submitted_ns, declares ? &record.cost : NULL,
                                            sim.config.profile.launch_us));
    sim_unlock();
    return end;
}

/* An event record captures the stream's work so far; a wait holds the stream until the
 * record it names completed, and starts it no earlier than the event's time. */
static double run_event(sim_stream *stream, const sim_op *op)
{
    sim_event *event = op->event.event;
    sim_lock();
    if (op->kind == SIM_OP_RECORD) {
        event->when_ns = sim_time_ready(stream, op->submitted_ns);
        if (op->event.record > event->records_done)
            event->records_done = op->event.record;
    } else {
        while (event->records_done < op->event.record)
            pthread_cond_wait(&sim.async_done, &sim.lock);
        sim_time_advance(stream, event->when_ns);
    }
    double end = finish(op, sim_time_ready(stream, op->submitted_ns));
    event->op_refs--;
    sim_event_release(event);
    pthread_cond_broadcast(&sim.async_done);
    sim_unlock();
    return end;
}

double sim_exec_run(sim_stream *stream, sim_op *op)
{
    switch (op->kind) {
    case SIM_OP_COPY: return run_copy(stream, op);
    case SIM_OP_MEMSET: return run_memset(stream, op);
    case SIM_OP_LAUNCH: return run_launch(stream, op);
    case SIM_OP_RECORD:
    case SIM_OP_WAIT: return run_event(stream, op);
    case SIM_OP_HOST_FUNC: break;
    }
    op->host.fn(op->host.data);
    sim_lock();
    double end = finish(op, sim_time_ready(stream, op->submitted_ns));
    sim_unlock();
    return end;
}

/* ---------------------------------------------------------------- submitting */

/* queueable: the operation may run after the call returns (its inputs are copied or
 * stay valid). Otherwise, with SIMCUDA_ASYNC, it waits for the work before it. */
static CUresult submit(sim_stream *stream, sim_op *op, bool queueable, bool host_waits)
{
    sim_lock();
    op->submitted_ns = sim_time_host_enter();
    op->seq = sim_time_next_seq();
    op->host_waits = host_waits;
    if (sim.config.async && stream && queueable) {
        CUresult result = sim_async_enqueue(stream, op);
        sim_unlock();
        return result;
    }
    if (sim.config.async)
        sim_async_wait_stream(stream); /* stream order (the legacy stream: every blocking one) */
    op->on_host_thread = true;
    sim_unlock();
    sim_exec_run(stream, op);
    return CUDA_SUCCESS;
}

/* Lock not held: whether simcuda knows the address (pageable host memory it does not). */
static bool known_memory(const void *address)
{
    sim_lock();
    bool known = sim_region_find(TREE_REGIONS, (uintptr_t)address) != NULL;
    sim_unlock();
    return known;
}

CUresult sim_exec_copy(sim_stream *stream, void *dst, const void *src, size_t bytes, bool host_waits)
{
    sim_op op = { .kind = SIM_OP_COPY, .copy = { dst, src, bytes } };
    /* As the driver documents, a copy from or to pageable memory returns only once the
     * host side is done with, so it never waits in a queue. */
    bool queueable = !host_waits && (!sim.config.async || (known_memory(dst) && known_memory(src)));
    return submit(stream, &op, queueable, host_waits);
}

CUresult sim_exec_memset(sim_stream *stream, void *dst, unsigned int value, size_t element_size, size_t count)
{
    sim_op op = { .kind = SIM_OP_MEMSET, .memset = { dst, value, element_size, count } };
    return submit(stream, &op, true, false);
}

CUresult sim_exec_launch(sim_stream *stream, simcuda_kernel_fn *entry, const simcuda_params *table,
                         simcuda_launch *launch, const char *name, int abi)
{
    sim_op op = { .kind = SIM_OP_LAUNCH };
    op.launch.entry = entry;
    op.launch.table = table;
    op.launch.launch = *launch;
    op.launch.name = name;
    op.launch.abi = abi;
    /* Without a parameter table the arguments cannot be copied: run in stream order now. */
    return submit(stream, &op, table != NULL, false);
}

CUresult sim_exec_event(sim_stream *stream, sim_op_kind kind, sim_event *event, uint64_t record)
{
    sim_op op = { .kind = kind, .event = { event, record } };
    return submit(stream, &op, true, false);
}

CUresult sim_exec_host_func(sim_stream *stream, CUhostFn fn, void *data)
{
    sim_op op = { .kind = SIM_OP_HOST_FUNC, .host = { fn, data } };
    return submit(stream, &op, true, false);
}
