/* lifecycle.c — the library's start, fork and exit, and the wiring of its rooms: who
 * watches devices, allocations and launches, and in what order. The rooms below know only
 * the tables (tiers/device.h, mem/alloc.h, driver/launch.h), never who fills them. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy/units.h"
#include "preload/base/log.h"
#include "preload/base/settings.h"
#include "preload/driver/launch.h"
#include "preload/driver/submit_gate.h"
#include "preload/filetier/file_tier.h"
#include "preload/heat/heat.h"
#include "preload/heat/heat_launch.h"
#include "preload/heat/warm_start.h"
#include "preload/ipc/ipc.h"
#include "preload/mem/alloc.h"
#include "preload/mem/backing.h"
#include "preload/mem/registry.h"
#include "preload/mem/stream_free.h"
#include "preload/mem/vmm_handles.h"
#include "preload/move/deferred_move.h"
#include "preload/move/migrate.h"
#include "preload/move/rebalancer.h"
#include "preload/move/stream_ring.h"
#include "preload/naming/provenance.h"
#include "preload/region/stats.h"
#include "preload/tiers/device.h"
#include "preload/tiers/device_plan.h"
#include "preload/tiers/ledger.h"

static void start_once(void);

/* ---------------------------------------------------------------- who watches what */

/* In the order they hear of a release: warm start keeps the heat before it goes, the file
 * tier and the ring let go of the chunks, then the heat and the labels go. */
const tm_alloc_watcher *const tm_alloc_watchers[] = {
    &tm_warm_start_alloc_watcher,
    &tm_file_tier_alloc_watcher,
    &tm_stream_ring_alloc_watcher,
    &tm_heat_alloc_watcher,
    &tm_provenance_alloc_watcher,
    NULL,
};

/* In the order they see a launch: a pass first (it may move what the launch reads), then
 * the sample, the file tier's read-backs, and the ring's remaps right before it goes. */
const tm_launch_watcher *const tm_launch_watchers[] = {
    &tm_rebalancer_launch_watcher,
    &tm_heat_launch_watcher,
    &tm_file_tier_launch_watcher,
    &tm_stream_ring_launch_watcher,
    NULL,
};

static void device_set_up(tm_device *device)
{
    tm_ipc_device_set_up(device); /* chunks another process can map: cuIpcGetMemHandle on tiered memory */
}

static pid_t exit_pid;
static void at_exit(void);

/* Heat rebalancing, the file tier and streaming move the first device's chunks; the others
 * keep their placement. The exit handler is registered once the driver is in use: it must
 * run before the driver's. */
static void first_device_ready(tm_device *device)
{
    const tm_config *config = tm_settings();
    start_once(); /* an allocation may come before this library's constructor has run */
    bool first = exit_pid == 0;
    exit_pid = getpid();
    if (first)
        atexit(at_exit);
    tm_warm_start_load(config);
    tm_rebalancer_start(device, config->migrate_rate);
    if (config->file_tier)
        tm_file_tier_start(device);
    tm_stream_ring_start(device, config);
}

const tm_device_events tm_device_watcher = {
    .set_up = device_set_up,
    .first_ready = first_device_ready,
};

/* ---------------------------------------------------------------- fork */

static void before_fork(void)
{
    tm_device_lock();
    tm_vmm_handles_lock();
    tm_registry_lock_all();
    tm_stats_lock();
}

static void after_fork_in_parent(void)
{
    tm_stats_unlock();
    tm_registry_unlock_all();
    tm_vmm_handles_unlock();
    tm_device_unlock();
}

/* The child has its own address space and its own driver state: it keeps the
 * configuration and starts over with no allocations, its own stats region at its first
 * allocation, and no say over the parent's. Its one thread does not own the locks the
 * forking thread took: each module makes fresh ones. */
static void after_fork_in_child(void)
{
    tm_forget_all_in_child();
    tm_remap_lock_forget_in_child();
    tm_vmm_handles_forget_in_child();
    tm_stream_free_forget_in_child();
    tm_stats_forget_in_child();
    tm_device_forget_in_child();
    tm_device_plan_forget_in_child();
    tm_ledger_forget_in_child();
    tm_gate_reinit_in_child();
    tm_migrate_forget_in_child();
    tm_rebalancer_forget_in_child();
    tm_deferred_move_forget_in_child();
    tm_file_tier_forget_in_child();
    tm_stream_ring_forget_in_child();
}

/* ---------------------------------------------------------------- start */

static pthread_once_t started = PTHREAD_ONCE_INIT;

static void start(void)
{
    const tm_config *config = tm_settings();
    if (tm_tiering_on())
        tm_heat_start(config);
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

static void start_once(void)
{
    pthread_once(&started, start);
}

/* Start-up reports a bad environment at once, even before the program touches CUDA. */
__attribute__((constructor)) static void on_load(void)
{
    start_once();
}

/* ---------------------------------------------------------------- exit */

static void log_exit_summary(void)
{
    if (!tm_log_enabled(TM_LOG_INFO))
        return;
    char peak[TM_STATS_TIERS][32];
    for (int t = 0; t < TM_STATS_TIERS; t++)
        tm_format_size(tm_stats->tier[t].peak, peak[t], sizeof peak[t]);
    tm_info("exit: peak hbm %s, cxl %s, ddr %s; %llu allocations (%llu out of memory), %llu passed through "
            "after an internal error; chunks %llu created, %llu reused from the pool",
            peak[0], peak[1], peak[2], (unsigned long long)tm_stats->alloc_total,
            (unsigned long long)tm_stats->oom_total, (unsigned long long)tm_stats->passthrough_total,
            (unsigned long long)tm_stats->chunks_created, (unsigned long long)tm_stats->chunks_reused);
}

/* Stops moving memory and closes the stats region. What the program left allocated stays:
 * exit handlers registered before this one (C++ static destructors of objects made before
 * the first allocation) run after it and may still read or free it; the driver takes it
 * all back when the process ends. */
static void at_exit(void)
{
    if (exit_pid != getpid())
        return; /* a fork child that never allocated: the parent's memory is not its own */
    tm_rebalancer_stop();
    tm_deferred_move_stop();
    tm_stream_free_finish(NULL, true);
    tm_stream_ring_stop();
    tm_warm_start_save(); /* the live chunked allocations and those released before */
    tm_ledger_leave();
    tm_migrate_shutdown();
    log_exit_summary();
    tm_stats_close();
}
