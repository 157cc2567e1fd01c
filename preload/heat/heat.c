/* heat.c — the interposer's heat: source selection, heat chunks per allocation, their copy
 * in the stats region (see heat.h). */
#include "preload/heat/heat.h"

#include <stdlib.h>
#include <time.h>

#include "policy/units.h"
#include "preload/mem/alloc.h"
#include "preload/heat/heat_launch.h"
#include "preload/base/log.h"
#include "preload/region/stats.h"

static tm_heat_source active = TM_HEAT_SOURCE_OFF;
uint64_t tm_heat_span_lo = UINT64_MAX, tm_heat_span_hi;
static tm_heat_clock clock_;

void tm_heat_start(const tm_config *config)
{
    tm_heat_clock_init(&clock_, config->heat_halflife_ns);
    double halflife_s = (double)config->heat_halflife_ns / 1e9;
    switch (config->heat) {
    case TM_HEAT_SOURCE_OFF:
        active = TM_HEAT_SOURCE_OFF;
        tm_info("heat: off (TIERMEM_HEAT=off)");
        return;
    case TM_HEAT_SOURCE_EBPF:
        /* BPF programs need privileges a served process should not hold: a collector
         * beside it (tiermem-heat) loads them and writes into the stats region */
        tm_info("heat: launch (kernel parameters of sampled launches, half-life %gs); TIERMEM_HEAT=ebpf is "
                "served by tiermem-heat --feed --pid beside the process, this library loads no BPF itself",
                halflife_s);
        break;
    default:
        tm_info("heat: launch (kernel parameters of sampled launches, half-life %gs); for eBPF heat run "
                "tiermem-heat --feed --pid beside the process", halflife_s);
        break;
    }
    active = tm_heat_in_process_source(config->heat);
    tm_heat_launch_enable(config->heat_sample);
}

tm_heat_source tm_heat_source_active(void)
{
    return active;
}

uint64_t tm_heat_tick_ns(void)
{
    return clock_.tick_ns;
}

static uint64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

uint64_t tm_heat_now_tick(void)
{
    return tm_heat_tick(&clock_, monotonic_ns());
}

/* ---------------------------------------------------------------- per allocation */

void tm_heat_alloc_attach(tm_alloc *a, uint64_t extent, uint64_t chunk_size)
{
    if (active == TM_HEAT_SOURCE_OFF || a->stats_slot < 0 || !chunk_size || (chunk_size & (chunk_size - 1)))
        return;
    uint64_t count = (extent + chunk_size - 1) / chunk_size;
    if (!count || count > UINT32_MAX)
        return;
    a->heat = calloc(count, sizeof *a->heat);
    if (!a->heat) {
        tm_log_once(TM_LOG_WARN, "out of memory for heat; some allocations have none");
        return;
    }
    a->heat_chunks = (uint32_t)count;
    a->heat_chunk_shift = (uint32_t)__builtin_ctzll(chunk_size);
    uint64_t lo = __atomic_load_n(&tm_heat_span_lo, __ATOMIC_RELAXED), hi = a->range.base + a->range.size;
    while (a->range.base < lo &&
           !__atomic_compare_exchange_n(&tm_heat_span_lo, &lo, a->range.base, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    uint64_t old = __atomic_load_n(&tm_heat_span_hi, __ATOMIC_RELAXED);
    while (hi > old && !__atomic_compare_exchange_n(&tm_heat_span_hi, &old, hi, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    tm_stats_heat_attach(a->stats_slot, (uint32_t)count);
}

void tm_heat_alloc_detach(tm_alloc *a)
{
    free(a->heat);
    a->heat = NULL;
    a->heat_chunks = 0;
}

/* A collector beside the process writes better heat into the region: leave it alone
 * while its last write is fresh (under 5 s old). *until: when that ends; false without one. */
static bool collector_fresh_until(uint64_t *until)
{
    if (!__atomic_load_n(&tm_stats->heat_collector_pid, __ATOMIC_RELAXED))
        return false;
    *until = __atomic_load_n(&tm_stats->heat_collector_ns, __ATOMIC_RELAXED) + 5000000000ull;
    return true;
}

static bool collector_writes(uint64_t tick)
{
    uint64_t until;
    return collector_fresh_until(&until) && tick * clock_.tick_ns < until;
}

void tm_heat_alloc_credit(tm_alloc *a, uint64_t offset, uint64_t length, double bytes, uint64_t tick)
{
    if (!a->heat || !length)
        return;
    uint64_t chunk_size = (uint64_t)1 << a->heat_chunk_shift;
    uint64_t first = offset >> a->heat_chunk_shift;
    if (first >= a->heat_chunks)
        return;
    uint64_t last = (offset + length - 1) >> a->heat_chunk_shift;
    if (last >= a->heat_chunks || offset + length < offset)
        last = a->heat_chunks - 1;
    while (__atomic_exchange_n(&a->heat_lock, 1, __ATOMIC_ACQUIRE))
        ;
    tm_heat_credit_range(a->heat, a->heat_chunks, chunk_size, a->range.size, offset, length, bytes, false, tick);
    if (!collector_writes(tick))
        tm_stats_heat_publish(a->stats_slot, a->heat, (uint32_t)first, (uint32_t)(last - first + 1),
                              TM_HEAT_FROM_LAUNCH);
    __atomic_store_n(&a->heat_lock, 0, __ATOMIC_RELEASE);
}

double tm_heat_alloc_density(const tm_alloc *a, uint32_t h, uint64_t tick)
{
    if (!a->heat || h >= a->heat_chunks)
        return 0.0;
    /* what the collector measured, while it writes: the launch source guesses how much of
     * each buffer a kernel reaches, the collector may know (simcuda's touch probes) */
    tm_heat_chunk collected;
    uint64_t until; /* the clock is read only beside a collector */
    const tm_heat_chunk *c = collector_fresh_until(&until) && monotonic_ns() < until &&
                                     tm_stats_heat_collected(a->stats_slot, h, &collected)
                                 ? &collected
                                 : &a->heat[h];
    double bytes = tm_heat_reads(c, tick) + tm_heat_writes(c, tick);
    uint64_t extent = a->backing ? a->backing->bytes : a->range.size;
    return bytes / (double)tm_heat_chunk_bytes(extent, (uint64_t)1 << a->heat_chunk_shift, h);
}

/* ---------------------------------------------------------------- the watcher */

static void heat_created(tm_alloc *a)
{
    tm_heat_alloc_attach(a, a->backing ? a->backing->bytes : a->range.size,
                         a->backing ? a->backing->plan.chunk_size : 2 * TM_MIB);
}

static void heat_released(tm_alloc *a, tm_release_kind how)
{
    (void)how;
    tm_heat_alloc_detach(a);
}

const tm_alloc_watcher tm_heat_alloc_watcher = {
    .name = "heat",
    .created = heat_created,
    .released = heat_released,
};
