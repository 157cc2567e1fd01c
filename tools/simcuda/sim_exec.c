/* sim_exec.c — where device work runs: copies, memsets and kernel launches.
 *
 * Work runs on the calling thread at submission, which keeps every stream in order, and
 * is charged simulated time (sim_time.h): copies by the path each piece crosses,
 * memsets and kernels by the roofline of the bytes they touch per location. Every range
 * touched fires the USDT probe simcuda:touch (its arguments are documented in
 * simcuda.h). */
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

/* Starts an operation: the host clock catches up with the wall time spent outside. */
static uint64_t operation_begin(void)
{
    sim_lock();
    sim_time_host_enter();
    uint64_t seq = sim_time_next_seq();
    sim_unlock();
    return seq;
}

CUresult sim_exec_copy(sim_stream *stream, void *dst, const void *src, size_t bytes, bool host_waits)
{
    launch_record record = { .seq = operation_begin(), .name = "cuMemcpy" };
    fire_touch(&record, (uintptr_t)src, bytes, 0);
    fire_touch(&record, (uintptr_t)dst, bytes, 1);
    memmove(dst, src, bytes);
    sim_lock();
    double end = sim_time_copy(stream, (uintptr_t)dst, (uintptr_t)src, bytes);
    if (host_waits)
        sim_time_host_wait(end);
    sim_time_host_leave();
    sim_unlock();
    return CUDA_SUCCESS;
}

CUresult sim_exec_memset(sim_stream *stream, void *dst, unsigned int value, size_t element_size, size_t count)
{
    launch_record record = { .seq = operation_begin(), .name = "cuMemset", .cost.declared = true };
    fire_touch(&record, (uintptr_t)dst, element_size * count, 1);
    if (element_size == 1) {
        memset(dst, (int)(value & 0xff), count);
    } else if (element_size == 2) {
        uint16_t *p = dst;
        for (size_t i = 0; i < count; i++)
            p[i] = (uint16_t)value;
    } else {
        uint32_t *p = dst;
        for (size_t i = 0; i < count; i++)
            p[i] = value;
    }
    sim_lock();
    sim_cost_range(&record.cost, (uintptr_t)dst, element_size * count, true);
    sim_time_kernel(stream, &record.cost, sim.config.profile.copy_us);
    sim_time_host_leave();
    sim_unlock();
    return CUDA_SUCCESS;
}

void sim_exec_launch(sim_stream *stream, simcuda_kernel_fn *entry, simcuda_launch *launch, const char *name,
                     int abi)
{
    launch_record record = { .seq = operation_begin(), .name = name, .cost.declared = abi >= 2 };
    if (abi >= 2) {
        launch->touch = declare_touch;
        launch->flops = declare_flops;
        launch->cost = &record;
    }
    entry(launch);
    sim_lock();
    sim_time_kernel(stream, abi >= 2 ? &record.cost : NULL, sim.config.profile.launch_us);
    sim_time_host_leave();
    sim_unlock();
}
