/* device.c — setting up the tiered devices (see device.h). */
#include "preload/tiers/device.h"

#include <stdio.h>
#include <string.h>

#include "policy/heat.h"
#include "policy/units.h"
#include "preload/base/log.h"
#include "preload/base/settings.h"
#include "preload/driver/driver.h"
#include "preload/region/stats.h"
#include "preload/tiers/device_plan.h"
#include "preload/tiers/ledger.h"

enum { DEVICE_NOT_SET_UP = 0, DEVICE_READY = 1, DEVICE_FAILED = -1 };

static tm_device devices[TM_MAX_DEVICES] = {
    [0 ... TM_MAX_DEVICES - 1] = { .place_lock = PTHREAD_MUTEX_INITIALIZER, .stats_slot = -1 },
};
static int device_state[TM_MAX_DEVICES];   /* DEVICE_* per ordinal */
static tm_device *first_device;            /* the first set up: the stats header's */
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- set-up */

/* "hbm 16 GiB (device 0, reserve 256 MiB), cxl 4 GiB (node 1, TIERMEM_CXL_NODE), ..." */
static void log_start_up(const tm_device *d, const tm_discovery *found, const tm_config *config)
{
    char line[768], size[32], reserve[32], chunk[32], order[32];
    size_t used = 0;
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        const tm_tier_state *state = &d->tiers.tier[t];
        int n;
        if (!state->present)
            n = snprintf(line + used, sizeof line - used, "%s%s absent (%s)", t ? ", " : "",
                         tm_tier_name((tm_tier_id)t), found->source[t]);
        else if (t == TM_TIER_HBM)
            n = snprintf(line + used, sizeof line - used, "hbm %s (%s, reserve %s)",
                         tm_format_size(state->limit, size, sizeof size), found->source[t],
                         tm_format_size(d->tiers.hbm_reserve, reserve, sizeof reserve));
        else
            n = snprintf(line + used, sizeof line - used, ", %s %s (%s)", tm_tier_name((tm_tier_id)t),
                         tm_format_size(state->limit, size, sizeof size), found->source[t]);
        if (n > 0 && (size_t)n < sizeof line - used)
            used += (size_t)n;
    }
    tm_info("tiers: %s; chunk %s, policy %s, order %s, meminfo %s, lower tiers %s", line,
            tm_format_size(d->policy.chunk_size, chunk, sizeof chunk), tm_policy_name(config->policy),
            tm_tier_order_format(&config->order, order, sizeof order), tm_meminfo_view_name(config->meminfo),
            d->target.pinned_host ? "as pinned host memory (no HOST_NUMA in the VMM API: they cannot migrate)"
                                      : "as VMM HOST_NUMA chunks");
}

static bool set_up(tm_device *device, CUdevice ordinal)
{
    const tm_config *config = tm_settings();
    const tm_device_plan *plan = tm_device_plan_of(ordinal);
    if (!plan || !plan->usable) {
        tm_tiering_off(plan ? plan->why_not : "the device's memory size cannot be read");
        return false;
    }
    uint64_t memory = plan->memory, chunk = plan->chunk_size;
    bool host_numa = plan->host_numa;
    const tm_discovery *found = &plan->found;

    device->ordinal = ordinal;
    device->memory = memory;
    device->tiers = plan->tiers;
    device->policy = (tm_policy){
        .kind = config->policy,
        .order = config->order,
        .rules = config->rules,
        .min_tiered = config->min_tiered,
        .chunk_size = chunk,
        .lower_tiers_share_range = host_numa,
    };
    device->target.device = ordinal;
    device->target.pinned_host = !host_numa;
    for (int t = 0; t < TM_TIER_COUNT; t++)
        device->target.node[t] = plan->tiers.tier[t].node;
    tm_device_watcher.set_up(device); /* the rooms above: chunks another process can map */

    if (!first_device) {
        tm_stats_setup setup = {
            .device = ordinal,
            .device_memory = memory,
            .chunk_size = chunk,
            .pinned_host_backing = !host_numa,
            .tiers = &device->tiers,
            .heat = tm_heat_in_process_source(config->heat),
        };
        /* the lower tiers are one budget per process: it joins the shared ledger once */
        tm_ledger_join(config, &device->tiers);
        tm_stats_open(config, &setup);
    }
    CUuuid uuid;
    bool have_uuid = tm_real.cuDeviceGetUuid_v2 && tm_real.cuDeviceGetUuid_v2(&uuid, ordinal) == CUDA_SUCCESS;
    device->stats_slot = tm_stats_device_add(ordinal, device->tiers.tier[TM_TIER_DDR].node,
                                             device->tiers.tier[TM_TIER_HBM].limit,
                                             have_uuid ? (const uint8_t *)uuid.bytes : NULL);
    log_start_up(device, found, config);
    if (!first_device) {
        /* heat rebalancing, the file tier and streaming move the first device's chunks; the
         * others keep their placement */
        tm_device_watcher.first_ready(device);
        __atomic_store_n(&first_device, device, __ATOMIC_RELEASE);
    }
    return true;
}

/* ---------------------------------------------------------------- access */

tm_device *tm_device_current(CUcontext *ctx)
{
    if (!tm_tiering_on())
        return NULL;
    CUdevice ordinal;
    if (tm_real.cuCtxGetCurrent(ctx) != CUDA_SUCCESS || !*ctx || tm_real.cuCtxGetDevice(&ordinal) != CUDA_SUCCESS)
        return NULL;
    if (ordinal < 0 || ordinal >= TM_MAX_DEVICES) {
        tm_log_once(TM_LOG_INFO, "allocations on device %d pass through: tiering covers devices 0 to %d",
                    (int)ordinal, TM_MAX_DEVICES - 1);
        return NULL;
    }
    int state = __atomic_load_n(&device_state[ordinal], __ATOMIC_ACQUIRE);
    if (state == DEVICE_NOT_SET_UP) {
        pthread_mutex_lock(&setup_lock);
        state = device_state[ordinal];
        if (state == DEVICE_NOT_SET_UP) {
            state = set_up(&devices[ordinal], ordinal) ? DEVICE_READY : DEVICE_FAILED;
            __atomic_store_n(&device_state[ordinal], state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&setup_lock);
    }
    return state == DEVICE_READY ? &devices[ordinal] : NULL;
}

tm_device *tm_device_ready(void)
{
    return __atomic_load_n(&first_device, __ATOMIC_ACQUIRE);
}

tm_device *tm_device_of(CUdevice ordinal)
{
    if (ordinal < 0 || ordinal >= TM_MAX_DEVICES ||
        __atomic_load_n(&device_state[ordinal], __ATOMIC_ACQUIRE) != DEVICE_READY)
        return NULL;
    return &devices[ordinal];
}

void tm_device_charge(tm_device *d, tm_tier_id tier, int64_t bytes, int64_t chunks)
{
    tm_ledger_add(tier, bytes); /* lower tiers: the share other processes see */
    tm_stats_tier_add(tier, bytes, chunks);
    if (!d || tier != TM_TIER_HBM)
        return;
    uint64_t used = __atomic_add_fetch(&d->hbm_used, (uint64_t)bytes, __ATOMIC_RELAXED);
    uint64_t held = __atomic_add_fetch(&d->hbm_chunks, (uint64_t)chunks, __ATOMIC_RELAXED);
    tm_stats_device_set(d->stats_slot, used, held);
}

void tm_device_place_lock(tm_device *d)
{
    pthread_mutex_lock(&d->place_lock);
    tm_ledger_lock();
}

void tm_device_place_unlock(tm_device *d)
{
    tm_ledger_unlock();
    pthread_mutex_unlock(&d->place_lock);
}

void tm_device_tiers_now(const tm_device *d, tm_tiers *tiers)
{
    *tiers = d->tiers;
    for (int t = 0; t < TM_TIER_COUNT; t++)
        if (!tm_ledger_used((tm_tier_id)t, &tiers->tier[t].used))
            tiers->tier[t].used = tm_stats_tier_used((tm_tier_id)t);
    tiers->tier[TM_TIER_HBM].used = __atomic_load_n(&d->hbm_used, __ATOMIC_RELAXED);
    tiers->hbm_chunked = __atomic_load_n(&d->hbm_chunks, __ATOMIC_RELAXED) * d->policy.chunk_size;
}

/* ---------------------------------------------------------------- peers */

/* The device of a context that may not be current. */
static bool device_of_context(CUcontext ctx, CUdevice *ordinal)
{
    if (tm_real.cuCtxPushCurrent_v2(ctx) != CUDA_SUCCESS)
        return false;
    bool ok = tm_real.cuCtxGetDevice(ordinal) == CUDA_SUCCESS;
    CUcontext popped;
    tm_real.cuCtxPopCurrent_v2(&popped);
    return ok;
}

tm_device *tm_device_peer_enabled(CUcontext peer, CUdevice *accessor)
{
    CUdevice owner;
    if (!tm_tiering_on() || tm_real.cuCtxGetDevice(accessor) != CUDA_SUCCESS || *accessor < 0 ||
        *accessor >= TM_MAX_DEVICES || !device_of_context(peer, &owner))
        return NULL;
    tm_device *d = tm_device_of(owner);
    if (d)
        __atomic_fetch_or(&d->target.peers, (uint64_t)1 << *accessor, __ATOMIC_ACQ_REL);
    return d;
}

/* ---------------------------------------------------------------- fork */

void tm_device_lock(void)
{
    pthread_mutex_lock(&setup_lock);
    for (int d = 0; d < TM_MAX_DEVICES; d++)
        pthread_mutex_lock(&devices[d].place_lock);
}

void tm_device_unlock(void)
{
    for (int d = TM_MAX_DEVICES - 1; d >= 0; d--)
        pthread_mutex_unlock(&devices[d].place_lock);
    pthread_mutex_unlock(&setup_lock);
}

/* A fork child starts over: the parent's device state is not the child's to use. */
void tm_device_forget_in_child(void)
{
    pthread_mutex_init(&setup_lock, NULL);
    for (int d = 0; d < TM_MAX_DEVICES; d++) {
        pthread_mutex_init(&devices[d].place_lock, NULL);
        device_state[d] = DEVICE_NOT_SET_UP;
        devices[d].primary_ctx = NULL;
        devices[d].hbm_used = devices[d].hbm_chunks = 0;
        devices[d].target.peers = 0;
        devices[d].streams = false;
        devices[d].stats_slot = -1;
    }
    first_device = NULL;
}
