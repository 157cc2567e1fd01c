/* sim_exec.c — where device work runs: copies, memsets and kernel launches.
 *
 * Work runs on the calling thread at submission, which keeps every stream in order.
 * Each operation is timed and charged to its stream (sim_stream.sim_time_ms) and its
 * bytes are counted by source and destination location: a cost model of the memory
 * system (link bandwidth per location, simulated time per stream) replaces the host
 * timing here without touching the API layer. */
#include <string.h>

#include "tools/simcuda/sim_internal.h"

static void charge(sim_stream *stream, const struct timespec *start)
{
    if (!stream)
        return;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    sim_lock();
    stream->sim_time_ms += sim_ms_between(start, &end);
    sim_unlock();
}

static void count_bytes(int dst_class, int src_class, size_t bytes)
{
    sim_lock();
    sim.copy_bytes[dst_class][src_class] += bytes;
    sim_unlock();
}

CUresult sim_exec_copy(sim_stream *stream, void *dst, const void *src, size_t bytes, int dst_class, int src_class)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    memmove(dst, src, bytes);
    count_bytes(dst_class, src_class, bytes);
    charge(stream, &start);
    return CUDA_SUCCESS;
}

CUresult sim_exec_memset(sim_stream *stream, void *dst, unsigned int value, size_t element_size, size_t count,
                         int dst_class)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
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
    count_bytes(dst_class, SIM_LOC_DEVICE, element_size * count);
    charge(stream, &start);
    return CUDA_SUCCESS;
}

void sim_exec_launch(sim_stream *stream, simcuda_kernel_fn *entry, const simcuda_launch *launch)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    entry(launch);
    charge(stream, &start);
}
