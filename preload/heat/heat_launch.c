/* heat_launch.c — the `launch` heat source (see heat_launch.h). */
#include "preload/heat/heat_launch.h"

#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "preload/mem/alloc.h"
#include "preload/driver/driver.h"
#include "preload/heat/heat.h"
#include "preload/mem/registry.h"
#include "preload/region/stats.h"

bool tm_heat_launch_on;
static __thread uint32_t countdown; /* launches of this thread until its next sample */

static uint32_t sample_every = 1;
static bool sample_fixed;              /* TIERMEM_HEAT_SAMPLE: sample_every and burst_len stay */
/* xorshift, from the same seed in every thread and run: samples must not lock onto a
 * period of launches, and need not differ from one run to the next */
#define JITTER_SEED 0x9E3779B9u
static __thread uint32_t jitter_state;
static uint64_t sample_ns = 500; /* running average cost of one sample, from a modest guess */
static uint32_t burst_len = TM_HEAT_BURST_MIN;
static __thread uint32_t burst_left;     /* samples left in this thread's burst */
static __thread uint64_t burst_start_ns; /* when its last burst began */
static __thread uint64_t burst_launches; /* launches since then */

void tm_heat_launch_enable(uint32_t fixed_every)
{
    if (fixed_every) {
        sample_every = fixed_every;
        sample_fixed = true;
    }
    __atomic_store_n(&tm_heat_launch_on, true, __ATOMIC_RELEASE);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* ---------------------------------------------------------------- bursts */

/* A burst begins: its length is set from this thread's launch rate, so that a heat interval
 * holds TM_HEAT_BURSTS_PER_TICK of them at 1 launch in `every` sampled. */
static void begin_burst(uint64_t now, uint32_t every)
{
    uint32_t len = __atomic_load_n(&burst_len, __ATOMIC_RELAXED);
    if (!sample_fixed && burst_start_ns && now > burst_start_ns && burst_launches) {
        double per_tick = (double)burst_launches / (double)(now - burst_start_ns) * (double)tm_heat_tick_ns();
        double want = per_tick / ((double)TM_HEAT_BURSTS_PER_TICK * every);
        len = want < TM_HEAT_BURST_MIN ? TM_HEAT_BURST_MIN : want > TM_HEAT_BURST_MAX ? TM_HEAT_BURST_MAX : (uint32_t)want;
        __atomic_store_n(&burst_len, len, __ATOMIC_RELAXED);
    }
    burst_start_ns = now;
    burst_launches = 0;
    burst_left = len;
}

/* Launches until the next sample: the next one within a burst, else a jittered gap that
 * keeps 1 launch in `every` sampled on average. */
static uint32_t next_countdown(uint32_t every)
{
    burst_launches++;
    if (burst_left && --burst_left)
        return 1;
    uint64_t gap = (uint64_t)(every - 1) * __atomic_load_n(&burst_len, __ATOMIC_RELAXED);
    uint32_t x = jitter_state ? jitter_state : JITTER_SEED;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    jitter_state = x;
    gap = gap / 2 + x % (gap + 1); /* gap on average */
    burst_launches += gap;
    return (uint32_t)gap + 1;
}

/* ---------------------------------------------------------------- crediting */

typedef struct sample {
    uint64_t value;            /* the parameter: an address inside the allocation */
    double reach_bytes;        /* what the launch may touch of it */
    double weight;             /* launches this sample stands for */
    uint64_t tick;
} sample;

static void credit_one(tm_alloc *a, void *arg) /* heat is changed under the allocation's heat lock */
{
    const sample *s = arg;
    uint64_t offset = s->value - a->range.base;
    if (!a->heat || offset >= a->range.size)
        return;
    uint64_t reach = a->range.size - offset;
    double bytes = (double)reach < s->reach_bytes ? (double)reach : s->reach_bytes;
    tm_heat_alloc_credit(a, offset, reach, bytes * s->weight, s->tick);
}

static void sample_launch(CUfunction f, uint64_t threads, void **params, void **extra)
{
    uint64_t start = now_ns();
    uint32_t every = __atomic_load_n(&sample_every, __ATOMIC_RELAXED);
    if (!burst_left)
        begin_burst(start, every);
    bool learning = false; /* asking the driver for a layout, or a first scan: once per function */
    if (tm_registry_count() != 0 && (params || extra)) {
        uint64_t values[TM_LAUNCH_MAX_POINTERS];
        size_t n = tm_launch_pointers(f, params, extra, values, &learning);
        sample s = { .reach_bytes = (double)threads * TM_HEAT_BYTES_PER_THREAD, .weight = every,
                     .tick = tm_heat_now_tick() };
        uint64_t lo = __atomic_load_n(&tm_heat_span_lo, __ATOMIC_RELAXED);
        uint64_t hi = __atomic_load_n(&tm_heat_span_hi, __ATOMIC_RELAXED);
        for (size_t i = 0; i < n; i++) {
            s.value = values[i];
            if (s.value >= lo && s.value < hi) /* sizes, counts, floats: never addresses */
                tm_alloc_find(s.value, credit_one, &s);
        }
    }
    uint64_t cost = now_ns() - start;
    uint64_t average = __atomic_load_n(&sample_ns, __ATOMIC_RELAXED);
    if (!learning) {
        /* falls fast, rises slowly: a sample the scheduler interrupted is no measure of
         * what sampling costs, a run of dearer samples is */
        if (cost < average)
            average = (average + cost) / 2;
        else
            average += cost - average < average / 16 + 8 ? cost - average : average / 16 + 8;
        __atomic_store_n(&sample_ns, average, __ATOMIC_RELAXED);
    }
    uint64_t next = (average + TM_HEAT_LAUNCH_BUDGET_NS - 1) / TM_HEAT_LAUNCH_BUDGET_NS;
    /* sample less often at most twice as fast as before: one slow sample is no trend */
    if (next > 2 * (uint64_t)every)
        next = 2 * (uint64_t)every;
    next = next < 1 ? 1 : next > TM_HEAT_SAMPLE_EVERY_MAX ? TM_HEAT_SAMPLE_EVERY_MAX : next;
    if (sample_fixed)
        next = every;
    __atomic_store_n(&sample_every, (uint32_t)next, __ATOMIC_RELAXED);
    countdown = next_countdown((uint32_t)next);
    tm_stat_add(heat_samples, 1);
    tm_stat_add(heat_launches, every);
    __atomic_store_n(&tm_stats->heat_sample_every, next, __ATOMIC_RELAXED);
    __atomic_store_n(&tm_stats->heat_sample_ns, average, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- the watcher */

static bool heat_before_launch(tm_launch *l)
{
    if (countdown > 1) {
        countdown--;
        return false;
    }
    sample_launch(l->f, l->threads, l->params, l->extra);
    return false;
}

const tm_launch_watcher tm_heat_launch_watcher = {
    .name = "heat",
    .watching = &tm_heat_launch_on,
    .before = heat_before_launch,
};
