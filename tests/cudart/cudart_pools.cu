// cudart_pools.cu — stream-ordered memory through the CUDA runtime, with and without
// libtiermem.so in front: the device's default pool, a pool of the program's own with a
// release threshold, memory freed on another stream than the one that allocated it, a
// trim, and allocation inside stream capture with the graph replayed. Every buffer is
// 8 MiB or more, so libtiermem.so chunks it. Built and run as tests/cudart/module.mk and
// cases.txt say.
//
//   cudart_pools pools      the default pool and a created one: data, attributes, trim
//   cudart_pools capture    cudaMallocAsync and cudaFreeAsync captured into a graph,
//                           replayed three times with new data each time
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "tests/cudart/cudart_tap.h"

static const size_t kBytes = (size_t)8 << 20;

// Fills `pinned` with the pattern of `seed`, copies it to `device` on `stream`, back into
// `check`, and says whether it came back; the copies are ordered behind what `stream`
// already holds (the allocation itself).
static bool round_trip(unsigned char *device, unsigned char *pinned, unsigned char *check, cudaStream_t stream,
                       unsigned seed)
{
    tap_pattern_fill(pinned, kBytes, seed);
    memset(check, 0, kBytes);
    return cudaMemcpyAsync(device, pinned, kBytes, cudaMemcpyHostToDevice, stream) == cudaSuccess &&
           cudaMemcpyAsync(check, device, kBytes, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
           cudaStreamSynchronize(stream) == cudaSuccess && tap_pattern_holds(check, kBytes, seed);
}

static uint64_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute)
{
    uint64_t value = UINT64_MAX;
    if (cudaMemPoolGetAttribute(pool, attribute, &value) != cudaSuccess)
        return UINT64_MAX;
    return value;
}

// ---------------------------------------------------------------- pools

static int run_pools(void)
{
    cudaStream_t first = NULL, second = NULL;
    cudaEvent_t written = NULL;
    unsigned char *pinned = NULL, *check = NULL;
    TAP_CUDA(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking), "cudaStreamCreate, the allocating stream");
    TAP_CUDA(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking), "cudaStreamCreate, the freeing stream");
    TAP_CUDA(cudaEventCreateWithFlags(&written, cudaEventDisableTiming), "cudaEventCreate");
    TAP_CUDA(cudaMallocHost((void **)&pinned, kBytes), "cudaMallocHost of 8 MiB");
    TAP_CUDA(cudaMallocHost((void **)&check, kBytes), "cudaMallocHost of 8 MiB to read back into");

    // The default pool.
    cudaMemPool_t default_pool = NULL;
    TAP_CUDA(cudaDeviceGetDefaultMemPool(&default_pool, 0), "cudaDeviceGetDefaultMemPool");
    unsigned char *from_default = NULL;
    TAP_CUDA(cudaMallocAsync((void **)&from_default, kBytes, first), "cudaMallocAsync of 8 MiB on the default pool");
    TAP_CHECK(from_default && round_trip(from_default, pinned, check, first, 1),
              "the default pool's memory held a pattern both ways");
    TAP_CHECK(pool_attribute(default_pool, cudaMemPoolAttrUsedMemCurrent) >= kBytes,
              "the default pool counts its 8 MiB (%llu)",
              (unsigned long long)pool_attribute(default_pool, cudaMemPoolAttrUsedMemCurrent));
    cudaPointerAttributes at;
    memset(&at, 0, sizeof at);
    TAP_CUDA(cudaPointerGetAttributes(&at, from_default + kBytes / 2), "cudaPointerGetAttributes on it");
    TAP_CHECK(at.type == cudaMemoryTypeDevice && at.device == 0, "it is device 0's memory (type %d)", (int)at.type);
    TAP_CUDA(cudaEventRecord(written, first), "cudaEventRecord after its last use");
    TAP_CUDA(cudaStreamWaitEvent(second, written, 0), "the freeing stream waits for it");
    TAP_CUDA(cudaFreeAsync(from_default, second), "cudaFreeAsync on the other stream");
    TAP_CUDA(cudaStreamSynchronize(second), "cudaStreamSynchronize the freeing stream");
    TAP_CHECK(pool_attribute(default_pool, cudaMemPoolAttrUsedMemCurrent) == 0,
              "the default pool counts nothing used once it is freed");

    // A pool of the program's own: a release threshold of 16 MiB keeps that much reserved
    // across synchronisations; a trim gives it back.
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool = NULL;
    TAP_CUDA(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate on device 0");
    uint64_t threshold = (uint64_t)16 << 20;
    TAP_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
             "cudaMemPoolSetAttribute release threshold 16 MiB");
    TAP_CHECK(pool_attribute(pool, cudaMemPoolAttrReleaseThreshold) == threshold,
              "the release threshold reads back as 16 MiB");
    unsigned char *pieces[3] = { NULL, NULL, NULL };
    bool allocated = true, intact = true;
    for (int i = 0; i < 3; i++)
        allocated &= cudaMallocFromPoolAsync((void **)&pieces[i], kBytes, pool, first) == cudaSuccess;
    TAP_CHECK(allocated, "cudaMallocFromPoolAsync of 3 x 8 MiB");
    for (int i = 0; allocated && i < 3; i++)
        intact &= round_trip(pieces[i], pinned, check, first, 10 + (unsigned)i);
    TAP_CHECK(allocated && intact, "each of the 3 held its own pattern both ways");
    const uint64_t used = pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent);
    const uint64_t reserved = pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent);
    // Under libtiermem.so the memory is chunked, outside the driver's pool: the pool's
    // counters count it all the same (PyTorch's cudaMallocAsync backend reads them).
    TAP_CHECK(used >= 3 * kBytes && used != UINT64_MAX && reserved >= used,
              "the pool counts 24 MiB used, at most what it reserved (used %llu, reserved %llu)",
              (unsigned long long)used, (unsigned long long)reserved);
    const uint64_t used_high = pool_attribute(pool, cudaMemPoolAttrUsedMemHigh);
    TAP_CHECK(used_high >= used && used_high != UINT64_MAX, "its high mark is at least that (%llu)",
              (unsigned long long)used_high);
    TAP_CUDA(cudaEventRecord(written, first), "cudaEventRecord after their last use");
    TAP_CUDA(cudaStreamWaitEvent(second, written, 0), "the freeing stream waits for them");
    bool freed = true;
    for (int i = 0; i < 3; i++)
        freed &= cudaFreeAsync(pieces[i], second) == cudaSuccess;
    TAP_CHECK(freed, "cudaFreeAsync of the 3 on the other stream");
    TAP_CUDA(cudaStreamSynchronize(second), "cudaStreamSynchronize the freeing stream");
    TAP_CHECK(pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent) == 0, "nothing is used once they are freed");
    uint64_t zero = 0;
    TAP_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), "reset the used high mark");
    TAP_CHECK(pool_attribute(pool, cudaMemPoolAttrUsedMemHigh) == 0, "the high mark reads 0 with nothing in use");
    TAP_CUDA(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo 0");
    TAP_CHECK(pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent) == 0,
              "after the trim the pool reserves nothing (%llu)",
              (unsigned long long)pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent));
    unsigned char *again = NULL;
    TAP_CUDA(cudaMallocFromPoolAsync((void **)&again, kBytes, pool, first), "cudaMallocFromPoolAsync after the trim");
    TAP_CHECK(again && round_trip(again, pinned, check, first, 20), "memory after the trim holds a pattern");
    TAP_CUDA(cudaFreeAsync(again, first), "cudaFreeAsync");
    TAP_CUDA(cudaStreamSynchronize(first), "cudaStreamSynchronize");
    TAP_CUDA(cudaMemPoolDestroy(pool), "cudaMemPoolDestroy");

    TAP_CUDA(cudaFreeHost(pinned), "cudaFreeHost");
    TAP_CUDA(cudaFreeHost(check), "cudaFreeHost");
    TAP_CUDA(cudaEventDestroy(written), "cudaEventDestroy");
    TAP_CUDA(cudaStreamDestroy(first), "cudaStreamDestroy");
    TAP_CUDA(cudaStreamDestroy(second), "cudaStreamDestroy");
    return tap_plan();
}

// ---------------------------------------------------------------- capture

static const size_t kMarkAt = (size_t)3 << 20, kMarkBytes = 4096;

// What a replay leaves in `out`: the input's pattern with 4 KiB at 3 MiB set to 0x5a.
static bool replay_output_holds(const unsigned char *out, unsigned seed)
{
    for (size_t i = 0; i < kBytes; i++) {
        const unsigned char want = (i >= kMarkAt && i < kMarkAt + kMarkBytes) ? 0x5a : tap_pattern_byte(i, seed);
        if (out[i] != want)
            return false;
    }
    return true;
}

static int run_capture(void)
{
    cudaStream_t stream = NULL;
    unsigned char *in = NULL, *out = NULL;
    TAP_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    TAP_CUDA(cudaMallocHost((void **)&in, kBytes), "cudaMallocHost, the input");
    TAP_CUDA(cudaMallocHost((void **)&out, kBytes), "cudaMallocHost, the output");
    if (!in || !out)
        return tap_plan();

    // The graph: allocate 8 MiB, copy the input in, mark 4 KiB, copy it out, free.
    unsigned char *scratch = NULL;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    TAP_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    TAP_CUDA(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
    TAP_CHECK(status == cudaStreamCaptureStatusActive, "the stream is capturing (status %d)", (int)status);
    TAP_CUDA(cudaMallocAsync((void **)&scratch, kBytes, stream), "cudaMallocAsync inside the capture");
    TAP_CUDA(cudaMemcpyAsync(scratch, in, kBytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync in, captured");
    TAP_CUDA(cudaMemsetAsync(scratch + kMarkAt, 0x5a, kMarkBytes, stream), "cudaMemsetAsync, captured");
    TAP_CUDA(cudaMemcpyAsync(out, scratch, kBytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync out, captured");
    TAP_CUDA(cudaFreeAsync(scratch, stream), "cudaFreeAsync inside the capture");
    cudaGraph_t graph = NULL;
    TAP_CUDA(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    TAP_CHECK(graph != NULL, "the capture made a graph");
    cudaGraphExec_t exec = NULL;
    TAP_CUDA(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    for (unsigned replay = 0; exec && replay < 3; replay++) {
        char what[96];
        tap_pattern_fill(in, kBytes, 30 + replay);
        memset(out, 0, kBytes);
        snprintf(what, sizeof what, "replay %u: cudaGraphLaunch", replay + 1);
        TAP_CUDA(cudaGraphLaunch(exec, stream), what);
        snprintf(what, sizeof what, "replay %u: cudaStreamSynchronize", replay + 1);
        TAP_CUDA(cudaStreamSynchronize(stream), what);
        TAP_CHECK(replay_output_holds(out, 30 + replay), "replay %u: the output is this replay's input, marked",
                  replay + 1);
    }
    // Memory the graph freed is the pool's again: an ordinary allocation still works.
    unsigned char *after = NULL;
    TAP_CUDA(cudaMallocAsync((void **)&after, kBytes, stream), "cudaMallocAsync after the replays");
    TAP_CUDA(cudaFreeAsync(after, stream), "cudaFreeAsync");
    TAP_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    TAP_CUDA(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
    TAP_CUDA(cudaGraphDestroy(graph), "cudaGraphDestroy");
    TAP_CUDA(cudaFreeHost(in), "cudaFreeHost");
    TAP_CUDA(cudaFreeHost(out), "cudaFreeHost");
    TAP_CUDA(cudaStreamDestroy(stream), "cudaStreamDestroy");
    return tap_plan();
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "pools") == 0)
        return run_pools();
    if (argc == 2 && strcmp(argv[1], "capture") == 0)
        return run_capture();
    fprintf(stderr, "usage: %s pools | capture\n", argv[0]);
    return 2;
}
