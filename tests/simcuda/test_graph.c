/* test_graph.c — conformance: stream capture and graphs, the subset stream-ordered
 * allocators use (PyTorch's cudaMallocAsync backend with CUDA graphs). References are to
 * the doc comments in cuda.h (CUDA 13.0). */
#include <string.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

enum { BYTES = 1 << 16 };

static CUstream capturing_stream(void)
{
    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    assert_cu_ok(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    return stream;
}

static CUstreamCaptureStatus capture_status(CUstream stream)
{
    CUstreamCaptureStatus status = (CUstreamCaptureStatus)-1;
    assert_cu_ok(cuStreamIsCapturing(stream, &status));
    return status;
}

/* Checks that every byte of `dptr` holds `value`. */
static void assert_bytes(CUdeviceptr dptr, unsigned char value)
{
    static unsigned char seen[BYTES];
    assert_cu_ok(cuMemcpyDtoH(seen, dptr, BYTES));
    for (size_t i = 0; i < BYTES; i++)
        if (seen[i] != value)
            fail_msg("byte %zu is 0x%02x, expected 0x%02x", i, seen[i], value);
}

/* cuStreamIsCapturing: NONE outside a capture, ACTIVE inside; cuStreamBeginCapture: "the
 * legacy stream" cannot be captured. */
static void capture_status_follows_begin_and_end(void **state)
{
    (void)state;
    CUstreamCaptureStatus status;
    assert_cu_ok(cuStreamIsCapturing(NULL, &status));
    assert_int_equal(status, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_either(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CUDA_ERROR_ILLEGAL_STATE);
    CUstream stream = capturing_stream();
    assert_int_equal(capture_status(stream), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph graph = NULL;
    assert_cu_ok(cuStreamEndCapture(stream, &graph));
    assert_non_null(graph);
    assert_int_equal(capture_status(stream), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(cuGraphDestroy(graph));
    assert_cu_ok(cuStreamDestroy(stream));
}

/* Captured work is recorded, not run; each launch of the graph runs it. */
static void captured_work_runs_at_launch(void **state)
{
    (void)state;
    CUdeviceptr dptr;
    assert_cu_ok(cuMemAlloc(&dptr, BYTES));
    assert_cu_ok(cuMemsetD8(dptr, 0, BYTES));
    CUstream stream = capturing_stream();
    assert_cu_ok(cuMemsetD8Async(dptr, 0x21, BYTES, stream));
    CUgraph graph;
    assert_cu_ok(cuStreamEndCapture(stream, &graph));
    assert_bytes(dptr, 0);
    CUgraphExec exec;
    assert_cu_ok(cuGraphInstantiate(&exec, graph, 0));
    for (int launch = 0; launch < 2; launch++) {
        assert_cu_ok(cuMemsetD8(dptr, 0, BYTES));
        assert_cu_ok(cuGraphLaunch(exec, stream));
        assert_cu_ok(cuStreamSynchronize(stream));
        assert_bytes(dptr, 0x21);
    }
    assert_cu_ok(cuGraphExecDestroy(exec));
    assert_cu_ok(cuGraphDestroy(graph));
    assert_cu_ok(cuStreamDestroy(stream));
    assert_cu_ok(cuMemFree(dptr));
}

/* Synchronising a capturing stream is not allowed: the call fails and the capture is
 * invalidated, so ending it returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph. */
static void synchronize_invalidates_capture(void **state)
{
    (void)state;
    CUstream stream = capturing_stream();
    assert_cu(cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(capture_status(stream), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph graph = (CUgraph)1;
    assert_cu(cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(graph);
    assert_int_equal(capture_status(stream), CU_STREAM_CAPTURE_STATUS_NONE);
    assert_cu_ok(cuStreamDestroy(stream));
}

/* cuMemAllocAsync and cuMemFreeAsync while capturing become allocation and free nodes:
 * the address is fixed at capture and usable by the captured work. */
static void allocation_and_free_nodes(void **state)
{
    (void)state;
    CUdeviceptr target;
    assert_cu_ok(cuMemAlloc(&target, BYTES));
    assert_cu_ok(cuMemsetD8(target, 0, BYTES));
    CUstream stream = capturing_stream();
    CUdeviceptr scratch = 0;
    assert_cu_ok(cuMemAllocAsync(&scratch, BYTES, stream));
    assert_true(scratch != 0);
    assert_cu_ok(cuMemsetD8Async(scratch, 0x3c, BYTES, stream));
    assert_cu_ok(cuMemcpyDtoDAsync(target, scratch, BYTES, stream));
    assert_cu_ok(cuMemFreeAsync(scratch, stream));
    CUgraph graph;
    assert_cu_ok(cuStreamEndCapture(stream, &graph));
    CUgraphExec exec;
    assert_cu_ok(cuGraphInstantiate(&exec, graph, 0));
    assert_cu_ok(cuGraphLaunch(exec, stream));
    assert_cu_ok(cuStreamSynchronize(stream));
    assert_bytes(target, 0x3c);
    assert_cu_ok(cuGraphExecDestroy(exec));
    assert_cu_ok(cuGraphDestroy(graph));
    assert_cu_ok(cuStreamDestroy(stream));
    assert_cu_ok(cuMemFree(target));
}

int run_graph_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(capture_status_follows_begin_and_end),
        conformance_test(captured_work_runs_at_launch),
        conformance_test(synchronize_invalidates_capture),
        conformance_test(allocation_and_free_nodes),
    };
    return cmocka_run_group_tests_name("stream capture and graphs", tests, setup_primary_context,
                                       teardown_primary_context);
}
