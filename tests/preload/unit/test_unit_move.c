/* test_unit_move.c — preload/move/ linked alone (with the rooms below it and policy/) on the
 * fake driver: same-address migration with its data and accounting, the rollback of a
 * migration the driver fails at each step, ping-pong counting, and the rebalancer's plan
 * carried out from the launch path (policy/rebalance.h planner to tm_migrate_range). */
#include "tests/preload/unit/fake_driver.h"

#include "preload/base/settings.h"
#include "preload/heat/heat.h"
#include "preload/mem/chunk_pool.h"
#include "preload/move/migrate.h"
#include "preload/move/rebalancer.h"

/* ---------------------------------------------------------------- this program's watchers */

/* Heat chunks for every allocation (the rebalancer ranks by them), and the rebalancer's
 * launch trigger. */
const tm_alloc_watcher *const tm_alloc_watchers[] = { &tm_heat_alloc_watcher, NULL };
const tm_launch_watcher *const tm_launch_watchers[] = { &tm_rebalancer_launch_watcher, NULL };

static void device_event(tm_device *device)
{
    (void)device;
}

const tm_device_events tm_device_watcher = { .set_up = device_event, .first_ready = device_event };

/* ---------------------------------------------------------------- helpers */

static const char *const settings[] = { "TIERMEM_POLICY=heat", "TIERMEM_HEAT=launch", "TIERMEM_MIGRATE_RATE=4G",
                                        NULL };

/* Migration keeps a staging range reserved once it has run. */
static int64_t staging_reservations;

static CUresult migrate(CUdeviceptr address, uint64_t bytes, tm_tier_id to)
{
    CUresult r = tm_migrate_range(address, bytes, to);
    staging_reservations = 1;
    return r;
}

static tm_tier_id tier_of(CUdeviceptr p, uint64_t chunk)
{
    tm_alloc *a = tm_alloc_at(p);
    assert_non_null(a);
    return tm_backing_chunk_tier(a->backing, chunk);
}

static void assert_chunks(CUdeviceptr p, uint64_t hbm, uint64_t cxl, uint64_t ddr)
{
    const tm_alloc *a = tm_alloc_at(p);
    assert_non_null(a);
    assert_int_equal(a->backing->plan.per_tier[TM_TIER_HBM], hbm);
    assert_int_equal(a->backing->plan.per_tier[TM_TIER_CXL], cxl);
    assert_int_equal(a->backing->plan.per_tier[TM_TIER_DDR], ddr);
    const tm_stats_record *r = fake_stats_record(a->stats_slot);
    assert_int_equal(r->chunks[TM_TIER_HBM], hbm);
    assert_int_equal(r->chunks[TM_TIER_CXL], cxl);
    assert_int_equal(r->chunks[TM_TIER_DDR], ddr);
}

static void assert_nothing_held(void)
{
    tm_device *d = fake_device();
    tm_chunk_pool_drain(false);
    for (int t = 0; t < TM_TIER_COUNT; t++) {
        assert_int_equal(tm_stats->tier[t].used, 0);
        assert_int_equal(tm_stats->tier[t].chunks, 0);
    }
    assert_int_equal(d->hbm_used, 0);
    assert_int_equal(d->hbm_chunks, 0);
    assert_int_equal(fake_live_handles(), 0);
    assert_int_equal(fake_live_reservations(), staging_reservations);
    assert_int_equal(fake_mapped_bytes(), 0);
}

/* ---------------------------------------------------------------- migration */

static void test_migrate_keeps_data(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    CUdeviceptr p;
    assert_int_equal(fake_alloc(8 * MIB, &p), CUDA_SUCCESS);
    fake_fill(p, 8 * MIB, 7);
    tm_alloc *a = tm_alloc_at(p);
    uint64_t migrations = tm_stats->migrations, bytes = tm_stats->migrated_bytes;
    uint64_t hbm_to_ddr = tm_stats->tier[TM_TIER_HBM].migrated_out[1];

    /* chunks 1 and 2, asked for by a range inside them */
    assert_int_equal(migrate(p + CHUNK + 4096, CHUNK, TM_TIER_DDR), CUDA_SUCCESS);
    assert_ptr_equal(tm_alloc_at(p), a);
    assert_int_equal(tier_of(p, 0), TM_TIER_HBM);
    assert_int_equal(tier_of(p, 1), TM_TIER_DDR);
    assert_int_equal(tier_of(p, 2), TM_TIER_DDR);
    assert_int_equal(tier_of(p, 3), TM_TIER_HBM);
    assert_chunks(p, 2, 0, 2);
    /* the driver maps DDR memory at the program's address now, holding the same bytes */
    CUmemLocation moved = fake_location_at(p + CHUNK);
    assert_int_equal(moved.type, CU_MEM_LOCATION_TYPE_HOST_NUMA);
    assert_int_equal(moved.id, FAKE_DDR_NODE);
    assert_int_equal(fake_location_at(p + 3 * CHUNK).type, CU_MEM_LOCATION_TYPE_DEVICE);
    assert_true(fake_holds(p, 8 * MIB, 7));
    /* accounting moves with the chunks; the HBM chunks they left wait in the pool */
    assert_int_equal(tm_stats->migrations - migrations, 2);
    assert_int_equal(tm_stats->migrated_bytes - bytes, 4 * MIB);
    assert_int_equal(tm_stats->tier[TM_TIER_HBM].migrated_out[1] - hbm_to_ddr, 2);
    assert_int_equal(tm_stats->tier[TM_TIER_HBM].chunks, 2);
    assert_int_equal(tm_stats->tier[TM_TIER_DDR].chunks, 2);
    assert_int_equal(tm_stats->tier[TM_TIER_DDR].used, 4 * MIB);
    assert_int_equal(d->hbm_chunks, 2);
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_HBM), 4 * MIB);
    assert_int_equal(d->hbm_used, 2 * CHUNK + tm_chunk_pool_bytes(d, TM_TIER_HBM));
    assert_int_equal(fake_mapped_bytes(), 8 * MIB); /* the staging range holds nothing */

    /* back, the whole allocation: the pooled HBM chunks are taken again */
    uint64_t creates = fake_calls(FAKE_MEM_CREATE);
    assert_int_equal(migrate(p, 8 * MIB, TM_TIER_HBM), CUDA_SUCCESS);
    assert_int_equal(fake_calls(FAKE_MEM_CREATE), creates);
    assert_chunks(p, 4, 0, 0);
    assert_int_equal(fake_location_at(p + CHUNK).type, CU_MEM_LOCATION_TYPE_DEVICE);
    assert_true(fake_holds(p, 8 * MIB, 7));
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_HBM), 0);
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_DDR), 4 * MIB);
    assert_int_equal(tm_stats->tier[TM_TIER_DDR].chunks, 0);
    /* already there: nothing to do */
    migrations = tm_stats->migrations;
    assert_int_equal(migrate(p, 8 * MIB, TM_TIER_HBM), CUDA_SUCCESS);
    assert_int_equal(tm_stats->migrations, migrations);

    /* what is not one chunked allocation, or no tier */
    assert_int_equal(migrate(p, 0, TM_TIER_DDR), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(migrate(p + 4 * MIB, 8 * MIB, TM_TIER_DDR), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(migrate(p + 64 * MIB, CHUNK, TM_TIER_DDR), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(migrate(p, CHUNK, TM_TIER_COUNT), CUDA_ERROR_INVALID_VALUE);
    assert_chunks(p, 4, 0, 0);
    fake_free(p);
    assert_nothing_held();
}

/* The driver fails a migration of chunks 1 and 2 to DDR at one step: the call reports the
 * error, the old chunks are (again) mapped at the address with the program's bytes, the
 * accounting is as before, and the fresh chunks wait in the pool. */
static void test_rollback(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    static const fake_failure steps[] = {
        /* two staging maps come first */
        { FAKE_MEM_MAP, 3, "the remap's cuMemMap" },
        /* the staging range's access comes first */
        { FAKE_MEM_SET_ACCESS, 2, "the remap's cuMemSetAccess" },
        { FAKE_MEMCPY_DTOD_ASYNC, 1, "the copy, before anything is unmapped" },
        { FAKE_MEM_MAP, 1, "the staging range's cuMemMap" },
    };
    for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
        print_message("# %s fails\n", steps[s].what);
        CUdeviceptr p;
        assert_int_equal(fake_alloc(8 * MIB, &p), CUDA_SUCCESS);
        fake_fill(p, 8 * MIB, 11 + (uint32_t)s);
        tm_alloc *a = tm_alloc_at(p);
        CUmemGenericAllocationHandle before[4];
        for (int i = 0; i < 4; i++)
            before[i] = tm_backing_chunk_handle(a->backing, (uint64_t)i);
        tm_stats_tier tiers[TM_STATS_TIERS];
        for (int t = 0; t < TM_STATS_TIERS; t++)
            tiers[t] = tm_stats->tier[t];
        uint64_t migrations = tm_stats->migrations, hbm_used = d->hbm_used;

        fake_fail(steps[s].call, steps[s].nth, 1, CUDA_ERROR_UNKNOWN);
        assert_int_equal(migrate(p + CHUNK, 2 * CHUNK, TM_TIER_DDR), CUDA_ERROR_UNKNOWN);
        assert_true(fake_failed(steps[s].call) > 0);
        fake_heal();

        for (int i = 0; i < 4; i++) {
            assert_int_equal(tm_backing_chunk_handle(a->backing, (uint64_t)i), before[i]);
            assert_int_equal(tier_of(p, (uint64_t)i), TM_TIER_HBM);
            assert_int_equal(fake_location_at(p + (uint64_t)i * CHUNK).type, CU_MEM_LOCATION_TYPE_DEVICE);
        }
        assert_chunks(p, 4, 0, 0);
        assert_true(fake_holds(p, 8 * MIB, 11 + (uint32_t)s));
        assert_int_equal(tm_stats->migrations, migrations);
        assert_int_equal(d->hbm_used, hbm_used);
        assert_int_equal(d->hbm_chunks, 4);
        for (int t = 0; t < TM_STATS_TIERS; t++) {
            assert_int_equal(tm_stats->tier[t].chunks, tiers[t].chunks);
            assert_int_equal(tm_stats->tier[t].migrated_out[0], tiers[t].migrated_out[0]);
            assert_int_equal(tm_stats->tier[t].migrated_out[1], tiers[t].migrated_out[1]);
        }
        assert_int_equal(tm_stats->tier[TM_TIER_HBM].used, tiers[TM_TIER_HBM].used);
        /* DDR counts only the two fresh chunks, pooled */
        assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_DDR), 2 * CHUNK);
        assert_int_equal(tm_stats->tier[TM_TIER_DDR].used, 2 * CHUNK);
        assert_int_equal(fake_live_handles(), 6);
        assert_int_equal(fake_mapped_bytes(), 8 * MIB);

        /* the driver well again, the same move goes through with the pooled chunks */
        uint64_t creates = fake_calls(FAKE_MEM_CREATE);
        assert_int_equal(migrate(p + CHUNK, 2 * CHUNK, TM_TIER_DDR), CUDA_SUCCESS);
        assert_int_equal(fake_calls(FAKE_MEM_CREATE), creates);
        assert_chunks(p, 2, 0, 2);
        assert_true(fake_holds(p, 8 * MIB, 11 + (uint32_t)s));
        fake_free(p);
        assert_nothing_held();
    }
}

/* ---------------------------------------------------------------- ping-pongs */

static void test_ping_pong(void **state)
{
    (void)state;
    CUdeviceptr p;
    assert_int_equal(fake_alloc(8 * MIB, &p), CUDA_SUCCESS);
    uint32_t pass = 100;
    __atomic_store_n(&tm_migrate_pass, pass, __ATOMIC_RELAXED);
    uint64_t pongs = tm_stats->ping_pongs;

    /* chunk 0: hbm, ddr, hbm within one pass: one ping-pong */
    assert_int_equal(migrate(p, CHUNK, TM_TIER_DDR), CUDA_SUCCESS);
    assert_int_equal(tm_stats->ping_pongs, pongs);
    assert_int_equal(migrate(p, CHUNK, TM_TIER_HBM), CUDA_SUCCESS);
    assert_int_equal(tm_stats->ping_pongs - pongs, 1);

    /* chunk 1: hbm, ddr, cxl: a move on, not back */
    assert_int_equal(migrate(p + CHUNK, CHUNK, TM_TIER_DDR), CUDA_SUCCESS);
    assert_int_equal(migrate(p + CHUNK, CHUNK, TM_TIER_CXL), CUDA_SUCCESS);
    assert_int_equal(tm_stats->ping_pongs - pongs, 1);

    /* chunks 2 and 3 leave at pass 100; 3 comes back at the last pass of the window, 2 at
     * the first after it */
    assert_int_equal(migrate(p + 2 * CHUNK, 2 * CHUNK, TM_TIER_DDR), CUDA_SUCCESS);
    __atomic_store_n(&tm_migrate_pass, pass + TM_MIGRATE_PING_PONG - 1, __ATOMIC_RELAXED);
    assert_int_equal(migrate(p + 3 * CHUNK, CHUNK, TM_TIER_HBM), CUDA_SUCCESS);
    assert_int_equal(tm_stats->ping_pongs - pongs, 2);
    __atomic_store_n(&tm_migrate_pass, pass + TM_MIGRATE_PING_PONG, __ATOMIC_RELAXED);
    assert_int_equal(migrate(p + 2 * CHUNK, CHUNK, TM_TIER_HBM), CUDA_SUCCESS);
    assert_int_equal(tm_stats->ping_pongs - pongs, 2);

    assert_int_equal(tier_of(p, 0), TM_TIER_HBM);
    assert_int_equal(tier_of(p, 1), TM_TIER_CXL);
    assert_int_equal(tier_of(p, 2), TM_TIER_HBM);
    assert_int_equal(tier_of(p, 3), TM_TIER_HBM);
    assert_chunks(p, 3, 1, 0);
    __atomic_store_n(&tm_migrate_pass, 1, __ATOMIC_RELAXED);
    fake_free(p);
    assert_nothing_held();
}

/* ---------------------------------------------------------------- the rebalancer */

static int submitted;

static CUresult submit(const tm_launch *launch)
{
    (void)launch;
    submitted++;
    return CUDA_SUCCESS;
}

/* One thread's launches until its next pass, through the path every launch hook takes.
 * `f` is only a token: no watcher here reads the function. */
static void launch_a_turn(bool capturing)
{
    static int token;
    for (int i = 0; i < TM_REBALANCE_LAUNCHES; i++) {
        tm_launch l = { .f = (CUfunction)&token, .capturing = capturing };
        assert_int_equal(tm_launch_submit(&l, submit), CUDA_SUCCESS);
    }
}

static void credit_all(CUdeviceptr p, uint64_t bytes)
{
    tm_alloc *a = tm_alloc_at(p);
    assert_non_null(a->heat);
    tm_heat_alloc_credit(a, 0, bytes, (double)bytes, tm_heat_now_tick());
}

/* 4 GiB/s earns this many nanoseconds per chunk (and a little) */
#define NS_PER_CHUNK 490000ull

static void test_rebalancer_promotes_hot(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    /* hot and cold land in DDR behind a full HBM and CXL, which then empty */
    CUdeviceptr full_hbm, full_cxl, hot, cold;
    assert_int_equal(fake_alloc(8 * MIB, &full_hbm), CUDA_SUCCESS);
    assert_int_equal(fake_alloc(8 * MIB, &full_cxl), CUDA_SUCCESS);
    assert_int_equal(fake_alloc(4 * MIB, &hot), CUDA_SUCCESS);
    assert_int_equal(fake_alloc(4 * MIB, &cold), CUDA_SUCCESS);
    assert_chunks(hot, 0, 0, 2);
    assert_chunks(cold, 0, 0, 2);
    fake_free(full_hbm);
    fake_free(full_cxl);
    tm_chunk_pool_drain(false);
    fake_fill(hot, 4 * MIB, 21);
    credit_all(hot, 4 * MIB);

    tm_rebalancer_start(d, tm_settings()->migrate_rate);
    uint32_t pass = __atomic_load_n(&tm_migrate_pass, __ATOMIC_RELAXED);
    uint64_t migrations = tm_stats->migrations;
    int launched = submitted;
    /* no time has passed on the budget clock: nothing earned, no pass */
    launch_a_turn(false);
    assert_int_equal(submitted - launched, TM_REBALANCE_LAUNCHES);
    assert_int_equal(tm_migrate_pass, pass);
    assert_int_equal(tm_stats->last_rebalance_ns, 0);
    assert_chunks(hot, 0, 0, 2);
    /* two chunks earned, but a launch being captured never runs the pass */
    fake_clock_advance(2 * NS_PER_CHUNK);
    launch_a_turn(true);
    assert_int_equal(tm_migrate_pass, pass);
    assert_chunks(hot, 0, 0, 2);
    /* the next turn does: the hot chunks to HBM, the cold ones stay */
    launch_a_turn(false);
    assert_int_equal(tm_migrate_pass, pass + 1);
    assert_true(tm_stats->last_rebalance_ns != 0);
    assert_int_equal(tm_stats->rebalance_budget, 2 * CHUNK);
    assert_chunks(hot, 2, 0, 0);
    assert_chunks(cold, 0, 0, 2);
    assert_int_equal(tm_stats->migrations - migrations, 2);
    assert_int_equal(fake_location_at(hot).type, CU_MEM_LOCATION_TYPE_DEVICE);
    assert_true(fake_holds(hot, 4 * MIB, 21));
    assert_int_equal(d->hbm_chunks, 2);

    /* the cold one warms; one chunk earned: its first chunk alone moves */
    credit_all(cold, 4 * MIB);
    fake_clock_advance(NS_PER_CHUNK);
    launch_a_turn(false);
    assert_int_equal(tm_migrate_pass, pass + 2);
    assert_int_equal(tm_stats->rebalance_budget, CHUNK);
    assert_int_equal(tier_of(cold, 0), TM_TIER_HBM);
    assert_int_equal(tier_of(cold, 1), TM_TIER_DDR);
    assert_chunks(hot, 2, 0, 0);
    assert_int_equal(tm_stats->migrations - migrations, 3);

    tm_rebalancer_stop();
    fake_free(hot);
    fake_free(cold);
    assert_nothing_held();
}

int main(int argc, char **argv)
{
    int status;
    if (fake_child(argc, argv, settings, NULL, 0, &status))
        return status;
    fake_start(settings);
    tm_heat_start(tm_settings()); /* as the library's start does */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_keeps_data),
        cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_ping_pong),
        cmocka_unit_test(test_rebalancer_promotes_hot),
    };
    return cmocka_run_group_tests_name("move/ alone on the fake driver", tests, NULL, NULL);
}
