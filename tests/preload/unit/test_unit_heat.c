/* test_unit_heat.c — preload/heat/ linked alone (with the rooms below it and policy/) on the
 * fake driver: heat chunks per allocation (attach, credit, density and their copy in the
 * stats region), the launch source crediting what a launch's pointer parameters point
 * into at a fixed TIERMEM_HEAT_SAMPLE, and heat a collector beside the process writes
 * into the region (preferred while fresh; stale, NaN or negative heat is not). */
#include "tests/preload/unit/fake_driver.h"

#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "preload/base/settings.h"
#include "preload/driver/launch_params.h"
#include "preload/heat/heat.h"
#include "preload/heat/heat_launch.h"
#include "preload/mem/chunk_pool.h"

#ifndef TM_TEST_KERNELS
#error "TM_TEST_KERNELS names the test kernel module"
#endif

/* ---------------------------------------------------------------- this program's watchers */

const tm_alloc_watcher *const tm_alloc_watchers[] = { &tm_heat_alloc_watcher, NULL };
const tm_launch_watcher *const tm_launch_watchers[] = { &tm_heat_launch_watcher, NULL };

static void device_event(tm_device *device)
{
    (void)device;
}

const tm_device_events tm_device_watcher = { .set_up = device_event, .first_ready = device_event };

/* ---------------------------------------------------------------- helpers */

#define SAMPLE_EVERY 4
static const char *const settings[] = { "TIERMEM_POLICY=size", "TIERMEM_HEAT=launch", "TIERMEM_HEAT_SAMPLE=4",
                                        NULL };

static void assert_near(double value, double expected)
{
    if (!(fabs(value - expected) <= 1e-9 * fabs(expected))) { /* NaN is never near */
        print_error("%.17g is not %.17g\n", value, expected);
        fail();
    }
}

/* The density of heat chunk `h` as of its own last interval (no decay in between). */
static double density(const tm_alloc *a, uint32_t h)
{
    return tm_heat_alloc_density(a, h, a->heat[h].tick);
}

static uint64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static void assert_nothing_held(void)
{
    tm_chunk_pool_drain(false);
    for (int t = 0; t < TM_TIER_COUNT; t++)
        assert_int_equal(tm_stats->tier[t].chunks, 0);
    assert_int_equal(fake_live_handles(), 0);
    assert_int_equal(tm_stats->heat_chunks_used, 0);
}

/* ---------------------------------------------------------------- per allocation */

static void test_attach_credit_density(void **state)
{
    (void)state;
    CUdeviceptr p;
    assert_int_equal(fake_alloc(6 * MIB, &p), CUDA_SUCCESS);
    tm_alloc *a = tm_alloc_at(p);
    /* the watcher gave it one heat chunk per chunk, and entries in the region's pool */
    assert_non_null(a->heat);
    assert_int_equal(a->heat_chunks, 3);
    assert_int_equal(a->heat_chunk_shift, 21);
    assert_int_equal(tm_stats->heat_chunks_used, 3);
    tm_stats_heat_record *hr = fake_heat_record(a->stats_slot);
    assert_int_equal(hr->chunk_count, 3);
    assert_true(tm_heat_span_lo <= p && tm_heat_span_hi >= p + 6 * MIB);
    for (uint32_t h = 0; h < 3; h++)
        assert_near(tm_heat_alloc_density(a, h, tm_heat_now_tick()), 0);

    /* the middle chunk read whole: one byte per byte there, nothing elsewhere */
    uint64_t tick = tm_heat_now_tick();
    tm_heat_alloc_credit(a, 2 * MIB, 2 * MIB, (double)(2 * MIB), tick);
    assert_near(tm_heat_alloc_density(a, 1, tick), 1.0);
    assert_near(tm_heat_alloc_density(a, 0, tick), 0);
    assert_near(tm_heat_alloc_density(a, 2, tick), 0);
    /* a half-life later, half of it */
    assert_near(tm_heat_alloc_density(a, 1, tick + TM_HEAT_TICKS_PER_HALFLIFE), 0.5);
    /* published for readers of the region, marked as the launch source's */
    assert_true(hr->sources & TM_HEAT_FROM_LAUNCH);
    assert_near(fake_heat_chunk(hr->first_chunk + 1)->reads, (double)(2 * MIB));
    assert_near(fake_heat_chunk(hr->first_chunk)->reads, 0);

    /* a range spanning chunks is spread by overlap; past the end, nothing */
    tm_heat_alloc_credit(a, 3 * MIB, 2 * MIB, (double)MIB, tick);
    assert_near(tm_heat_alloc_density(a, 1, tick), 1.25);
    assert_near(tm_heat_alloc_density(a, 2, tick), 0.25);
    tm_heat_alloc_credit(a, 6 * MIB, MIB, (double)MIB, tick);
    tm_heat_alloc_credit(a, 0, 0, (double)MIB, tick);
    assert_near(tm_heat_alloc_density(a, 0, tick), 0);
    assert_near(tm_heat_alloc_density(a, 2, tick), 0.25);
    assert_near(tm_heat_alloc_density(a, 3, tick), 0); /* no such chunk */

    /* the release gives the pool entries back */
    fake_free(p);
    assert_nothing_held();
}

/* ---------------------------------------------------------------- the launch source */

static CUfunction sum_bytes;
static CUfunction add_bytes; /* no parameter table */
static int submitted;

static CUresult submit(const tm_launch *launch)
{
    (void)launch;
    submitted++;
    return CUDA_SUCCESS;
}

/* A launch of sum_bytes(data, n, out) on 256 threads, through the path every launch hook
 * takes (the driver is not asked to run it). */
static void launch_sum(CUdeviceptr data, uint64_t n, uint64_t *out)
{
    void *params[] = { &data, &n, &out };
    tm_launch l = { .f = sum_bytes, .params = params, .threads = tm_launch_threads(1, 1, 1, 256, 1, 1),
                    .grid = { 1, 1, 1 }, .block = { 256, 1, 1 }, .capturing = 0 };
    assert_int_equal(tm_launch_submit(&l, submit), CUDA_SUCCESS);
}

/* What a sample credits a buffer: 16 bytes per thread, for each of the launches it stands
 * for (heat_launch.c). */
#define SAMPLE_BYTES (256.0 * 16 * SAMPLE_EVERY)

static void test_launch_credits_what_it_points_into(void **state)
{
    (void)state;
    CUdeviceptr first, second;
    assert_int_equal(fake_alloc(4 * MIB, &first), CUDA_SUCCESS);
    assert_int_equal(fake_alloc(4 * MIB, &second), CUDA_SUCCESS);
    tm_alloc *a = tm_alloc_at(first), *b = tm_alloc_at(second);
    uint64_t sum = 0, samples = tm_stats->heat_samples, launches = tm_stats->heat_launches;
    int calls = submitted;

    /* a pointer inside the first one's second chunk: that chunk alone, not the other buffer;
     * the size and the host pointer among the parameters credit nothing */
    launch_sum(first + 2 * MIB + 100, 4096, &sum);
    assert_int_equal(submitted - calls, 1);
    assert_int_equal(tm_stats->heat_samples - samples, 1);
    assert_int_equal(tm_stats->heat_launches - launches, SAMPLE_EVERY);
    assert_near(density(a, 1), SAMPLE_BYTES / (double)(2 * MIB));
    assert_near(density(a, 0), 0);
    assert_near(density(b, 0), 0);
    assert_near(density(b, 1), 0);

    /* the next launch (samples come in bursts) points at the second one's start: its reach
     * spreads over the rest of the buffer */
    launch_sum(second, 4096, &sum);
    assert_int_equal(tm_stats->heat_samples - samples, 2);
    assert_near(density(b, 0), SAMPLE_BYTES / 2 / (double)(2 * MIB));
    assert_near(density(b, 1), SAMPLE_BYTES / 2 / (double)(2 * MIB));
    assert_near(density(a, 1), SAMPLE_BYTES / (double)(2 * MIB));
    assert_near(density(a, 0), 0);

    /* a pointer into no tracked memory: no allocation changes */
    double before = density(a, 1);
    launch_sum(first + 64 * MIB, 4096, &sum);
    assert_int_equal(tm_stats->heat_samples - samples, 3);
    assert_near(density(a, 1), before);
    assert_near(density(b, 0), SAMPLE_BYTES / 2 / (double)(2 * MIB));
    fake_free(first);
    fake_free(second);
    assert_nothing_held();
}

/* TIERMEM_HEAT_SAMPLE=4: bursts of 64 sampled launches, then a gap; in the long run one
 * launch in four is sampled, and each sample stands for four. */
static void test_fixed_sampling(void **state)
{
    (void)state;
    CUdeviceptr p;
    assert_int_equal(fake_alloc(4 * MIB, &p), CUDA_SUCCESS);
    uint64_t sum = 0, samples = tm_stats->heat_samples;
    const int launches = 64 * SAMPLE_EVERY * 16;
    int sampled_in_a_row = 0;
    for (int i = 0; i < launches; i++) {
        uint64_t seen = tm_stats->heat_samples;
        launch_sum(p, 4096, &sum);
        sampled_in_a_row = tm_stats->heat_samples != seen ? sampled_in_a_row + 1 : 0;
        assert_true(sampled_in_a_row <= TM_HEAT_BURST_MIN);
    }
    uint64_t taken = tm_stats->heat_samples - samples;
    assert_true(taken * SAMPLE_EVERY >= (uint64_t)launches * 3 / 4);
    assert_true(taken * SAMPLE_EVERY <= (uint64_t)launches * 5 / 4);
    assert_int_equal(tm_stats->heat_sample_every, SAMPLE_EVERY);
    fake_free(p);
    assert_nothing_held();
}

/* ---------------------------------------------------------------- a collector beside the process */

static void write_as_collector(int slot, uint64_t index, uint64_t tick, double reads, uint64_t written_ns)
{
    tm_stats_heat_record *hr = fake_heat_record(slot);
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_ACQ_REL);
    *fake_heat_chunk(hr->first_chunk + index) = (tm_stats_heat_chunk){ .tick = tick, .reads = reads };
    hr->sources |= TM_HEAT_FROM_USDT;
    __atomic_fetch_add(&hr->seq, 1, __ATOMIC_RELEASE);
    tm_stats->heat_collector_pid = (int32_t)getpid();
    tm_stats->heat_collector_ns = written_ns;
}

static void test_collector_heat(void **state)
{
    (void)state;
    CUdeviceptr p, q;
    assert_int_equal(fake_alloc(4 * MIB, &p), CUDA_SUCCESS);
    assert_int_equal(fake_alloc(4 * MIB, &q), CUDA_SUCCESS);
    tm_alloc *a = tm_alloc_at(p), *b = tm_alloc_at(q);
    uint64_t tick = tm_heat_now_tick();
    tm_heat_alloc_credit(a, 0, 2 * MIB, (double)MIB, tick); /* in-process: 0.5 */
    tm_heat_alloc_credit(b, 0, 2 * MIB, (double)MIB, tick);
    assert_near(tm_heat_alloc_density(a, 0, tick), 0.5);
    const tm_stats_heat_chunk *published = fake_heat_chunk(fake_heat_record(a->stats_slot)->first_chunk);

    /* fresh: what the collector measured */
    write_as_collector(a->stats_slot, 0, tick, (double)(2 * MIB), monotonic_ns());
    assert_near(tm_heat_alloc_density(a, 0, tick), 1.0);
    /* ... for the records it wrote; another keeps the process's own */
    assert_near(tm_heat_alloc_density(b, 0, tick), 0.5);
    /* and the process stops publishing its own over it */
    tm_heat_alloc_credit(a, 0, 2 * MIB, (double)MIB / 2, tick);
    assert_near(a->heat[0].reads, 1.5 * MIB);
    assert_near(published->reads, (double)(2 * MIB));
    assert_near(tm_heat_alloc_density(a, 0, tick), 1.0);

    /* values no decayed count can take read as none */
    write_as_collector(a->stats_slot, 0, tick, NAN, monotonic_ns());
    assert_near(tm_heat_alloc_density(a, 0, tick), 0);
    write_as_collector(a->stats_slot, 0, tick, -(double)MIB, monotonic_ns());
    assert_near(tm_heat_alloc_density(a, 0, tick), 0);
    write_as_collector(a->stats_slot, 0, tick, INFINITY, monotonic_ns());
    assert_near(tm_heat_alloc_density(a, 0, tick), 0);

    /* stale (its last write 10 s old): the process's own heat again, published again */
    write_as_collector(a->stats_slot, 0, tick, (double)(4 * MIB), monotonic_ns() - 10000000000ull);
    assert_near(tm_heat_alloc_density(a, 0, tick), 0.75); /* a->heat: 1.5 MiB read */
    tm_heat_alloc_credit(a, 0, 2 * MIB, (double)MIB, tick);
    assert_near(tm_heat_alloc_density(a, 0, tick), 1.25);
    assert_near(published->reads, 2.5 * MIB);

    /* no collector at all */
    tm_stats->heat_collector_pid = 0;
    assert_near(tm_heat_alloc_density(a, 0, tick), 1.25);
    fake_free(p);
    fake_free(q);
    assert_nothing_held();
}

/* ---------------------------------------------------------------- launch arguments */

static uint64_t move_to_b(uint64_t value, void *arg)
{
    const uint64_t *ab = arg; /* [2]: a, and b, where what pointed at a points now */
    return value >= ab[0] && value < ab[0] + 64 ? ab[1] + (value - ab[0]) : value;
}

/* The stream ring hands a launch a weight's copy: pointer-sized parameters are replaced in
 * a copy of the arguments (array or buffer), others and the program's own arguments stay;
 * the launch then reads the copy. A function the driver describes no parameters of is
 * never rewritten. */
static void test_launch_values_replaced(void **state)
{
    (void)state;
    CUdeviceptr a, b, sum;
    assert_int_equal(cuMemAlloc(&a, 64), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&b, 64), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&sum, 8), CUDA_SUCCESS);
    assert_int_equal(cuMemsetD8(a, 1, 64), CUDA_SUCCESS);
    assert_int_equal(cuMemsetD8(b, 2, 64), CUDA_SUCCESS);
    assert_int_equal(cuMemsetD8(sum, 0, 8), CUDA_SUCCESS);
    uint64_t ab[2] = { a, b }, n = 16;
    CUdeviceptr from = a + 8;
    void *args[] = { &from, &n, &sum };
    void **params = args, **extra = NULL;
    tm_launch_args storage;
    assert_int_equal(tm_launch_replace_pointers(sum_bytes, &params, &extra, move_to_b, ab, &storage), 1);
    assert_ptr_equal(params, storage.params);
    assert_int_equal(*(CUdeviceptr *)params[0], b + 8);
    assert_ptr_equal(params[1], &n);
    assert_ptr_equal(params[2], &sum);
    assert_int_equal(from, a + 8); /* the program's own arguments are left alone */
    assert_int_equal(cuLaunchKernel(sum_bytes, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
    uint64_t total = 0;
    assert_int_equal(cuMemcpyDtoH(&total, sum, 8), CUDA_SUCCESS);
    assert_int_equal(total, 2 * 16); /* read from b */

    /* nothing to replace: the launch keeps its own arguments */
    uint64_t none[2] = { sum + 1000, sum + 2000 };
    params = args;
    assert_int_equal(tm_launch_replace_pointers(sum_bytes, &params, &extra, move_to_b, none, &storage), 0);
    assert_ptr_equal(params, args);

    /* the same through a CU_LAUNCH_PARAM_BUFFER */
    struct { CUdeviceptr data; uint64_t n; CUdeviceptr sum; } buffer = { a, 32, sum };
    size_t size = sizeof buffer;
    void *config[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };
    params = NULL;
    extra = config;
    assert_int_equal(tm_launch_replace_pointers(sum_bytes, &params, &extra, move_to_b, ab, &storage), 1);
    assert_ptr_equal(extra, storage.extra);
    assert_ptr_equal(extra[0], CU_LAUNCH_PARAM_BUFFER_POINTER);
    assert_ptr_equal(extra[1], storage.buffer);
    assert_int_equal(*(size_t *)extra[3], size);
    assert_ptr_equal(extra[4], CU_LAUNCH_PARAM_END);
    assert_int_equal(buffer.data, a);
    const CUdeviceptr *copied = (const CUdeviceptr *)storage.buffer; /* simcuda takes no buffers: read it */
    assert_int_equal(copied[0], b);
    assert_int_equal(copied[1], 32);
    assert_int_equal(copied[2], sum);

    /* a kernel without a parameter table: sizes unknown, nothing rewritten */
    params = args;
    extra = NULL;
    assert_int_equal(tm_launch_replace_pointers(add_bytes, &params, &extra, move_to_b, ab, &storage), 0);
    assert_ptr_equal(params, args);
    cuMemFree(a);
    cuMemFree(b);
    cuMemFree(sum);
}

int main(int argc, char **argv)
{
    int status;
    if (fake_child(argc, argv, settings, NULL, 0, &status))
        return status;
    fake_start(settings);
    tm_heat_start(tm_settings()); /* as the library's start does */
    CUmodule module;
    if (cuModuleLoad(&module, TM_TEST_KERNELS) != CUDA_SUCCESS ||
        cuModuleGetFunction(&sum_bytes, module, "sum_bytes") != CUDA_SUCCESS ||
        cuModuleGetFunction(&add_bytes, module, "add_bytes") != CUDA_SUCCESS) {
        fprintf(stderr, "cannot load sum_bytes from %s\n", TM_TEST_KERNELS);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attach_credit_density),
        cmocka_unit_test(test_launch_credits_what_it_points_into),
        cmocka_unit_test(test_fixed_sampling),
        cmocka_unit_test(test_collector_heat),
        cmocka_unit_test(test_launch_values_replaced),
    };
    return cmocka_run_group_tests_name("heat/ alone on the fake driver", tests, NULL, NULL);
}
