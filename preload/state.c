/* state.c — start-up, the on/off switch of tiering, fork and exit (see state.h). */
#include "preload/state.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy/units.h"
#include "preload/mem/alloc.h"
#include "preload/move/deferred_move.h"
#include "preload/tiers/device.h"
#include "preload/tiers/device_plan.h"
#include "preload/filetier/file_tier.h"
#include "preload/heat/heat.h"
#include "preload/tiers/ledger.h"
#include "preload/base/log.h"
#include "preload/move/migrate.h"
#include "preload/model/model_files.h"
#include "preload/move/rebalancer.h"
#include "preload/heat/warm_start.h"
#include "preload/mem/registry.h"
#include "preload/region/stats.h"
#include "preload/mem/stream_free.h"
#include "preload/move/stream_ring.h"
#include "preload/driver/submit_gate.h"
#include "preload/mem/vmm_handles.h"

static tm_config config;
static bool tiering;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

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

/* ---------------------------------------------------------------- start-up */

static void load_config(void)
{
    tm_config_load(&config, STDERR_FILENO);
    bool log_ok = tm_log_open(&config);
    tiering = !config.disabled && log_ok;
    tm_model_files_enable(tiering);
    if (config.disabled && config.invalid_count == 0)
        tm_info("TIERMEM_DISABLE=1: every call passes through to the driver");
    if (tiering)
        tm_heat_start(&config);
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

/* Start-up reports a bad environment at once, even before the program touches CUDA. */
__attribute__((constructor)) static void start(void)
{
    pthread_once(&config_once, load_config);
}

const tm_config *tm_settings(void)
{
    pthread_once(&config_once, load_config);
    return &config;
}

bool tm_tiering_on(void)
{
    tm_settings();
    return __atomic_load_n(&tiering, __ATOMIC_ACQUIRE);
}

void tm_tiering_off(const char *why)
{
    if (__atomic_exchange_n(&tiering, false, __ATOMIC_ACQ_REL))
        tm_warn("%s: tiering is off, every call passes through to the driver", why);
}

/* ---------------------------------------------------------------- exit */

static pid_t exit_pid;

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

void tm_state_register_exit(void)
{
    bool first = exit_pid == 0;
    exit_pid = getpid();
    if (first)
        atexit(at_exit);
}
