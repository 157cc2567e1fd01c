/* device.c — setting up the tiered device (see device.h). */
#include "preload/device.h"

#include <stdio.h>
#include <string.h>

#include "policy/units.h"
#include "preload/device_plan.h"
#include "preload/driver.h"
#include "preload/heat.h"
#include "preload/ipc.h"
#include "preload/ledger.h"
#include "preload/log.h"
#include "preload/rebalancer.h"
#include "preload/stream_ring.h"
#include "preload/state.h"
#include "preload/stats.h"

enum { DEVICE_NOT_SET_UP = 0, DEVICE_READY = 1, DEVICE_FAILED = -1 };

static tm_device device = { .place_lock = PTHREAD_MUTEX_INITIALIZER };
static int device_state = DEVICE_NOT_SET_UP;
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- set-up */

/* "hbm 16 GiB (device 0, reserve 256 MiB), cxl 4 GiB (node 1, TIERMEM_CXL_NODE), ..." */
static void log_start_up(const tm_discovery *found, const tm_config *config)
{
    char line[768], size[32], reserve[32], chunk[32], order[32];
    size_t used = 0;
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        const tm_tier_state *state = &device.tiers.tier[t];
        int n;
        if (!state->present)
            n = snprintf(line + used, sizeof line - used, "%s%s absent (%s)", t ? ", " : "",
                         tm_tier_name((tm_tier_id)t), found->source[t]);
        else if (t == TM_TIER_HBM)
            n = snprintf(line + used, sizeof line - used, "hbm %s (%s, reserve %s)",
                         tm_format_size(state->limit, size, sizeof size), found->source[t],
                         tm_format_size(device.tiers.hbm_reserve, reserve, sizeof reserve));
        else
            n = snprintf(line + used, sizeof line - used, ", %s %s (%s)", tm_tier_name((tm_tier_id)t),
                         tm_format_size(state->limit, size, sizeof size), found->source[t]);
        if (n > 0 && (size_t)n < sizeof line - used)
            used += (size_t)n;
    }
    tm_info("tiers: %s; chunk %s, policy %s, order %s, meminfo %s, lower tiers %s", line,
            tm_format_size(device.policy.chunk_size, chunk, sizeof chunk), tm_policy_name(config->policy),
            tm_tier_order_format(&config->order, order, sizeof order), tm_meminfo_view_name(config->meminfo),
            device.target.pinned_host ? "as pinned host memory (no HOST_NUMA in the VMM API: they cannot migrate)"
                                      : "as VMM HOST_NUMA chunks");
}

static bool set_up(CUdevice ordinal)
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

    device.ordinal = ordinal;
    device.memory = memory;
    device.tiers = plan->tiers;
    device.policy = (tm_policy){
        .kind = config->policy,
        .order = config->order,
        .rules = config->rules,
        .min_tiered = config->min_tiered,
        .chunk_size = chunk,
        .lower_tiers_share_range = host_numa,
    };
    device.target.device = ordinal;
    device.target.pinned_host = !host_numa;
    for (int t = 0; t < TM_TIER_COUNT; t++)
        device.target.node[t] = plan->tiers.tier[t].node;
    /* chunks another process can map: cuIpcGetMemHandle on tiered memory */
    device.target.handle_types = tm_ipc_chunk_handle_types(&device.target, &plan->tiers, chunk);

    tm_stats_setup setup = {
        .device = ordinal,
        .device_memory = memory,
        .chunk_size = chunk,
        .pinned_host_backing = !host_numa,
        .tiers = &device.tiers,
        .heat = tm_heat_source_active(),
    };
    tm_ledger_join(config, &device.tiers);
    tm_stats_open(config, &setup);
    log_start_up(found, config);
    tm_state_register_exit();
    tm_rebalancer_start(&device, config->migrate_rate);
    tm_stream_ring_start(&device, config);
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
    int state = __atomic_load_n(&device_state, __ATOMIC_ACQUIRE);
    if (state == DEVICE_NOT_SET_UP) {
        pthread_mutex_lock(&setup_lock);
        state = device_state;
        if (state == DEVICE_NOT_SET_UP) {
            state = set_up(ordinal) ? DEVICE_READY : DEVICE_FAILED;
            __atomic_store_n(&device_state, state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&setup_lock);
    }
    if (state != DEVICE_READY)
        return NULL;
    if (ordinal != device.ordinal) {
        tm_log_once(TM_LOG_INFO, "allocations on device %d pass through: tiering covers device %d",
                    (int)ordinal, (int)device.ordinal);
        return NULL;
    }
    return &device;
}

tm_device *tm_device_ready(void)
{
    return __atomic_load_n(&device_state, __ATOMIC_ACQUIRE) == DEVICE_READY ? &device : NULL;
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
    tiers->hbm_chunked = __atomic_load_n(&tm_stats->tier[TM_TIER_HBM].chunks, __ATOMIC_RELAXED) * d->policy.chunk_size;
}

/* ---------------------------------------------------------------- fork */

void tm_device_lock(void)
{
    pthread_mutex_lock(&setup_lock);
    pthread_mutex_lock(&device.place_lock);
}

void tm_device_unlock(void)
{
    pthread_mutex_unlock(&device.place_lock);
    pthread_mutex_unlock(&setup_lock);
}

/* A fork child starts over: the parent's device state is not the child's to use. */
void tm_device_forget_in_child(void)
{
    pthread_mutex_init(&setup_lock, NULL);
    pthread_mutex_init(&device.place_lock, NULL);
    device_state = DEVICE_NOT_SET_UP;
    device.primary_ctx = NULL;
}
