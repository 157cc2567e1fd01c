/* test_stream_event.c — conformance: streams and events.
 *
 * Pending work is made deterministic with the gate kernel (test_kernels.h): it holds its
 * stream until the test opens it, so "not finished yet" is a state the test controls.
 * Documentation references are to the doc comments in cuda.h (CUDA 13.0) unless noted.
 */
#include <pthread.h>
#include <string.h>

#include "tests/simcuda/harness.h"
#include "tests/simcuda/suites.h"

static struct test_module tm;

static int setup_streams(void **state)
{
    if (setup_primary_context(state) != 0)
        return -1;
    if (cuModuleLoad(&tm.module, CONFORMANCE_MODULE) != CUDA_SUCCESS ||
        cuModuleGetFunction(&tm.gate, tm.module, "gate") != CUDA_SUCCESS ||
        cuModuleGetFunction(&tm.fill_u32, tm.module, "fill_u32") != CUDA_SUCCESS) {
        print_error("cannot load the test module %s\n", CONFORMANCE_MODULE);
        return -1;
    }
    return 0;
}

static int teardown_streams(void **state)
{
    cuModuleUnload(tm.module);
    return teardown_primary_context(state);
}

static CUstream create_stream(unsigned int flags)
{
    CUstream stream = NULL;
    assert_cu_ok(cuStreamCreate(&stream, flags));
    assert_non_null(stream);
    return stream;
}

static CUevent create_event(unsigned int flags)
{
    CUevent event = NULL;
    assert_cu_ok(cuEventCreate(&event, flags));
    assert_non_null(event);
    return event;
}

/* =======================================================================================
 * Streams
 * ==================================================================================== */

/* cuStreamCreate: "Valid values for Flags are" CU_STREAM_DEFAULT and
 * CU_STREAM_NON_BLOCKING. */
static void stream_create_and_destroy(void **state)
{
    (void)state;
    CUstream a = create_stream(CU_STREAM_DEFAULT), b = create_stream(CU_STREAM_NON_BLOCKING);
    assert_true(a != b);
    assert_cu_ok(cuStreamSynchronize(a));
    assert_cu_ok(cuStreamQuery(b));
    assert_cu_ok(cuStreamDestroy(a));
    assert_cu_ok(cuStreamDestroy(b));
    CUstream bad = NULL;
    assert_cu(cuStreamCreate(&bad, 0x4), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuStreamCreate(NULL, CU_STREAM_DEFAULT), CUDA_ERROR_INVALID_VALUE);
}

/* The NULL stream and the special handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * (cuda.h: "Stream handle that can be passed as a CUstream to use an implicit stream")
 * are valid wherever a stream is. */
static void implicit_streams(void **state)
{
    (void)state;
    assert_cu_ok(cuStreamSynchronize(NULL));
    assert_cu_ok(cuStreamSynchronize(CU_STREAM_LEGACY));
    assert_cu_ok(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    assert_cu_ok(cuStreamQuery(NULL));
    assert_cu_ok(cuStreamQuery(CU_STREAM_LEGACY));
    assert_cu_ok(cuStreamQuery(CU_STREAM_PER_THREAD));

    struct mapped_buffer buf;
    mapped_buffer_alloc(&buf, 64);
    assert_cu_ok(cuMemsetD32Async(buf.dev, 0xa1u, 4, CU_STREAM_LEGACY));
    assert_cu_ok(cuMemsetD32Async(buf.dev + 16, 0xb2u, 4, CU_STREAM_PER_THREAD));
    assert_cu_ok(cuStreamSynchronize(CU_STREAM_LEGACY));
    assert_cu_ok(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    assert_int_equal(load_u32(buf.host), 0xa1u);
    assert_int_equal(load_u32((uint8_t *)buf.host + 16), 0xb2u);
    mapped_buffer_free(&buf);
}

/* Work on one stream runs in order: work queued behind a held kernel does not run before
 * it. cuStreamQuery: "CUDA_ERROR_NOT_READY if not" all operations have completed. */
static void stream_runs_in_order(void **state)
{
    (void)state;
    CUstream stream = create_stream(CU_STREAM_NON_BLOCKING);
    struct mapped_buffer out;
    mapped_buffer_alloc(&out, 4 * sizeof(uint32_t));
    struct gate g;
    gate_launch(&g, &tm, stream);
    assert_cu_ok(cuMemsetD32Async(out.dev, 7u, 4, stream));
    sleep_ms(20);
    assert_cu(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
    assert_int_equal(load_u32(out.host), 0); /* still behind the gate */
    gate_open(&g);
    assert_cu_ok(cuStreamSynchronize(stream));
    assert_int_equal(gate_state(&g), GATE_DONE);
    assert_int_equal(load_u32(out.host), 7u);
    assert_cu_ok(cuStreamQuery(stream));
    gate_free(&g);
    mapped_buffer_free(&out);
    assert_cu_ok(cuStreamDestroy(stream));
}

/* cuStreamWaitEvent: "Makes all future work submitted to hStream wait for all work
 * captured in hEvent"; an event never recorded captures nothing ("Before the first call to
 * cuEventRecord(), an event represents an empty set of work"). */
static void stream_waits_for_event(void **state)
{
    (void)state;
    CUstream producer = create_stream(CU_STREAM_NON_BLOCKING);
    CUstream consumer = create_stream(CU_STREAM_NON_BLOCKING);
    CUevent produced = create_event(CU_EVENT_DISABLE_TIMING);
    struct mapped_buffer out;
    mapped_buffer_alloc(&out, 4 * sizeof(uint32_t));

    CUevent never_recorded = create_event(CU_EVENT_DEFAULT);
    assert_cu_ok(cuStreamWaitEvent(consumer, never_recorded, 0));
    assert_cu_ok(cuStreamSynchronize(consumer));

    struct gate g;
    gate_launch(&g, &tm, producer);
    assert_cu_ok(cuEventRecord(produced, producer));
    assert_cu_ok(cuStreamWaitEvent(consumer, produced, 0));
    assert_cu_ok(cuMemsetD32Async(out.dev, 9u, 4, consumer));
    sleep_ms(20);
    assert_cu(cuStreamQuery(consumer), CUDA_ERROR_NOT_READY);
    assert_int_equal(load_u32(out.host), 0);
    gate_open(&g);
    assert_cu_ok(cuStreamSynchronize(consumer));
    assert_int_equal(load_u32(out.host), 9u);
    assert_int_equal(gate_state(&g), GATE_DONE);

    assert_cu_either(cuStreamWaitEvent(consumer, NULL, 0), CUDA_ERROR_INVALID_HANDLE,
                     CUDA_ERROR_INVALID_VALUE);
    gate_free(&g);
    mapped_buffer_free(&out);
    assert_cu_ok(cuEventDestroy(produced));
    assert_cu_ok(cuEventDestroy(never_recorded));
    assert_cu_ok(cuStreamDestroy(producer));
    assert_cu_ok(cuStreamDestroy(consumer));
}

/* cuStreamDestroy: "In case the device is still doing work in the stream hStream when
 * cuStreamDestroy() is called, the function will return immediately and the resources
 * associated with hStream will be released automatically once the device has completed
 * all work". */
static void stream_destroy_with_pending_work(void **state)
{
    (void)state;
    CUstream stream = create_stream(CU_STREAM_DEFAULT);
    struct gate g;
    gate_launch(&g, &tm, stream);
    double start = now_ms();
    assert_cu_ok(cuStreamDestroy(stream));
    assert_true(now_ms() - start < 2000.0); /* returned without waiting for the gate */
    gate_open(&g);
    assert_cu_ok(cuCtxSynchronize());
    assert_int_equal(gate_state(&g), GATE_DONE);
    gate_free(&g);
}

/* cuCtxSynchronize "Blocks until the current context has completed all preceding
 * requested tasks", on every stream. */
static void context_synchronize_waits_for_all_streams(void **state)
{
    (void)state;
    CUstream a = create_stream(CU_STREAM_NON_BLOCKING), b = create_stream(CU_STREAM_NON_BLOCKING);
    struct gate ga, gb;
    gate_launch(&ga, &tm, a);
    gate_launch(&gb, &tm, b);
    gate_open(&ga);
    gate_open(&gb);
    assert_cu_ok(cuCtxSynchronize());
    assert_int_equal(gate_state(&ga), GATE_DONE);
    assert_int_equal(gate_state(&gb), GATE_DONE);
    gate_free(&ga);
    gate_free(&gb);
    assert_cu_ok(cuStreamDestroy(a));
    assert_cu_ok(cuStreamDestroy(b));
}

/* =======================================================================================
 * Events
 * ==================================================================================== */

/* cuEventCreate flags: DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS which "must be
 * specified along with CU_EVENT_DISABLE_TIMING". */
static void event_create_flags(void **state)
{
    (void)state;
    static const unsigned int valid[] = {
        CU_EVENT_DEFAULT, CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING,
        CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING,
        CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING};
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++)
        assert_cu_ok(cuEventDestroy(create_event(valid[i])));
    CUevent event = NULL;
    assert_cu(cuEventCreate(&event, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuEventCreate(&event, 0x40), CUDA_ERROR_INVALID_VALUE);
    assert_cu(cuEventCreate(NULL, CU_EVENT_DEFAULT), CUDA_ERROR_INVALID_VALUE);
}

/* "Before the first call to cuEventRecord(), an event represents an empty set of work, so
 * for example cuEventQuery() would return CUDA_SUCCESS"; cuEventElapsedTime: "If
 * cuEventRecord() has not been called on either event then CUDA_ERROR_INVALID_HANDLE is
 * returned". */
static void event_never_recorded(void **state)
{
    (void)state;
    CUevent a = create_event(CU_EVENT_DEFAULT), b = create_event(CU_EVENT_DEFAULT);
    assert_cu_ok(cuEventQuery(a));
    assert_cu_ok(cuEventSynchronize(a));
    float ms = 0;
    assert_cu(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(cuEventDestroy(a));
    assert_cu_ok(cuEventDestroy(b));
}

/* cuEventQuery: CUDA_ERROR_NOT_READY "if any captured work is incomplete";
 * cuEventElapsedTime: CUDA_ERROR_NOT_READY when "one or both of them has not yet been
 * completed"; cuEventDestroy of an incomplete event does not block. */
static void event_pending_work(void **state)
{
    (void)state;
    CUstream stream = create_stream(CU_STREAM_NON_BLOCKING);
    CUevent start = create_event(CU_EVENT_DEFAULT), end = create_event(CU_EVENT_DEFAULT);
    CUevent doomed = create_event(CU_EVENT_DEFAULT);
    assert_cu_ok(cuEventRecord(start, stream));
    struct gate g;
    gate_launch(&g, &tm, stream);
    assert_cu_ok(cuEventRecord(end, stream));
    assert_cu_ok(cuEventRecord(doomed, stream));
    assert_cu(cuEventQuery(end), CUDA_ERROR_NOT_READY);
    float ms = 0;
    assert_cu(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY);
    assert_cu_ok(cuEventDestroy(doomed));
    gate_open(&g);
    assert_cu_ok(cuEventSynchronize(end));
    assert_int_equal(gate_state(&g), GATE_DONE);
    assert_cu_ok(cuEventQuery(end));
    assert_cu_ok(cuEventElapsedTime(&ms, start, end));
    assert_true(ms >= 0.0f);
    gate_free(&g);
    assert_cu_ok(cuEventDestroy(start));
    assert_cu_ok(cuEventDestroy(end));
    assert_cu_ok(cuStreamDestroy(stream));
}

struct delayed_open {
    struct gate *g;
    unsigned delay_ms;
};

static void *open_after_delay(void *arg)
{
    struct delayed_open *d = arg;
    sleep_ms(d->delay_ms);
    gate_open(d->g);
    return NULL;
}

/* cuEventSynchronize "Waits until the completion of all work currently captured in
 * hEvent", here work that finishes only when another thread opens the gate. */
static void event_synchronize_waits(void **state)
{
    (void)state;
    CUstream stream = create_stream(CU_STREAM_NON_BLOCKING);
    CUevent event = create_event(CU_EVENT_BLOCKING_SYNC);
    struct gate g;
    gate_launch(&g, &tm, stream);
    assert_cu_ok(cuEventRecord(event, stream));
    struct delayed_open d = {&g, 50};
    pthread_t opener;
    assert_int_equal(pthread_create(&opener, NULL, open_after_delay, &d), 0);
    assert_cu_ok(cuEventSynchronize(event));
    assert_int_equal(gate_state(&g), GATE_DONE);
    assert_int_equal(pthread_join(opener, NULL), 0);
    gate_free(&g);
    assert_cu_ok(cuEventDestroy(event));
    assert_cu_ok(cuStreamDestroy(stream));
}

/* cuEventElapsedTime: milliseconds between two completed events; "If either event was
 * created with the CU_EVENT_DISABLE_TIMING flag, then this function will return
 * CUDA_ERROR_INVALID_HANDLE". */
static void event_elapsed_time(void **state)
{
    (void)state;
    CUstream stream = create_stream(CU_STREAM_NON_BLOCKING);
    CUevent start = create_event(CU_EVENT_DEFAULT), end = create_event(CU_EVENT_DEFAULT);
    CUevent untimed = create_event(CU_EVENT_DISABLE_TIMING);
    assert_cu_ok(cuEventRecord(start, stream));
    assert_cu_ok(cuEventSynchronize(start));
    sleep_ms(30);
    assert_cu_ok(cuEventRecord(end, stream));
    assert_cu_ok(cuEventRecord(untimed, stream));
    assert_cu_ok(cuEventSynchronize(end));
    assert_cu_ok(cuEventSynchronize(untimed));
    float ms = -1;
    assert_cu_ok(cuEventElapsedTime(&ms, start, end));
    if (!(ms >= 25.0f && ms < 10000.0f)) {
        print_error("elapsed %.3f ms across a 30 ms host sleep\n", (double)ms);
        fail();
    }
    assert_cu(cuEventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
    assert_cu(cuEventElapsedTime(&ms, untimed, end), CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(cuEventDestroy(start));
    assert_cu_ok(cuEventDestroy(end));
    assert_cu_ok(cuEventDestroy(untimed));
    assert_cu_ok(cuStreamDestroy(stream));
}

/* cuEventRecord: "hEvent and hStream must be from the same context otherwise
 * CUDA_ERROR_INVALID_HANDLE is returned". */
static void event_record_needs_same_context(void **state)
{
    (void)state;
    CUstream stream = create_stream(CU_STREAM_DEFAULT); /* primary context */
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext other = NULL;
    assert_cu_ok(cuCtxCreate(&other, &params, 0, tdev.dev));
    CUevent foreign = create_event(CU_EVENT_DEFAULT);
    CUcontext popped = NULL;
    assert_cu_ok(cuCtxPopCurrent(&popped));
    assert_ptr_equal(popped, other);
    assert_cu(cuEventRecord(foreign, stream), CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(cuEventDestroy(foreign));
    assert_cu_ok(cuCtxDestroy(other));
    assert_cu_ok(cuStreamDestroy(stream));
}

/* A NULL event is no event (CUDA_ERROR_INVALID_HANDLE in every list below; some drivers
 * report CUDA_ERROR_INVALID_VALUE for NULL arguments). */
static void event_null_handles(void **state)
{
    (void)state;
    assert_cu_either(cuEventRecord(NULL, NULL), CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuEventQuery(NULL), CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuEventSynchronize(NULL), CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_VALUE);
    assert_cu_either(cuEventDestroy(NULL), CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_VALUE);
    CUevent event = create_event(CU_EVENT_DEFAULT);
    assert_cu_ok(cuEventRecord(event, NULL));
    assert_cu_ok(cuEventSynchronize(event));
    assert_cu_either(cuEventElapsedTime(NULL, event, event), CUDA_ERROR_INVALID_VALUE,
                     CUDA_ERROR_INVALID_HANDLE);
    assert_cu_ok(cuEventDestroy(event));
}

/* =======================================================================================
 * Groups
 * ==================================================================================== */

int run_stream_event_tests(void)
{
    const struct CMUnitTest tests[] = {
        conformance_test(stream_create_and_destroy),
        conformance_test(implicit_streams),
        conformance_test(event_create_flags),
        conformance_test(event_never_recorded),
        conformance_test(event_elapsed_time),
        conformance_test(event_record_needs_same_context),
        conformance_test(event_null_handles),
    };
    /* These hold work back with the gate kernel: they need launches that return first. */
    const struct CMUnitTest pending[] = {
        conformance_test(stream_runs_in_order),
        conformance_test(stream_waits_for_event),
        conformance_test(stream_destroy_with_pending_work),
        conformance_test(context_synchronize_waits_for_all_streams),
        conformance_test(event_pending_work),
        conformance_test(event_synchronize_waits),
    };
    int failed = cmocka_run_group_tests_name("streams and events", tests, setup_streams,
                                             teardown_streams);
    failed += run_pending_work_group("streams and events with pending work", pending,
                                     sizeof pending / sizeof pending[0], setup_streams,
                                     teardown_streams);
    return failed;
}
