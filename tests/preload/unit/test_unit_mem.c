/* test_unit_mem.c — preload/mem/ linked alone (with the rooms below it and policy/) on the
 * fake driver: chunk accounting per tier as an allocation spills over a capped HBM, the
 * pool of freed HBM chunks, backings the driver refuses or fails, routing, and the
 * allocation watchers. */
#include "tests/preload/unit/fake_driver.h"

#include <string.h>

#include "preload/mem/chunk_pool.h"

/* ---------------------------------------------------------------- this program's watchers */

static struct {
    int created, released;
    tm_alloc *last_created;
    int created_slot;           /* stats_slot the last `created` saw */
    bool created_registered;    /* it was in the registry then */
    tm_release_kind released_how;
    bool released_registered;   /* still in the registry at its release (it must not be) */
    bool released_mapped;       /* its first chunk still mapped then (it must be) */
    int make_room_calls;
    uint64_t make_room_asked;   /* chunks the last call asked for */
    CUdeviceptr victim;         /* make_room frees this allocation, when set */
    uint64_t victim_chunks;
} seen;

static void watch_created(tm_alloc *a)
{
    seen.created++;
    seen.last_created = a;
    seen.created_slot = a->stats_slot;
    seen.created_registered = tm_alloc_at(a->range.base) == a;
}

static void watch_released(tm_alloc *a, tm_release_kind how)
{
    seen.released++;
    seen.released_how = how;
    seen.released_registered = tm_alloc_at(a->range.base) != NULL;
    seen.released_mapped = !a->backing || (int)fake_location_at(a->range.base).type != -1;
}

static uint64_t watch_make_room(tm_device *device, uint64_t chunks)
{
    (void)device;
    seen.make_room_calls++;
    seen.make_room_asked = chunks;
    if (!seen.victim)
        return 0;
    fake_free(seen.victim);
    seen.victim = 0;
    return seen.victim_chunks;
}

static const tm_alloc_watcher recorder = {
    .name = "recorder",
    .created = watch_created,
    .released = watch_released,
    .make_room = watch_make_room,
};

const tm_alloc_watcher *const tm_alloc_watchers[] = { &recorder, NULL };
const tm_launch_watcher *const tm_launch_watchers[] = { NULL };

static int devices_set_up, devices_ready;

static void device_set_up(tm_device *device)
{
    (void)device;
    devices_set_up++;
}

static void device_ready(tm_device *device)
{
    (void)device;
    devices_ready++;
}

const tm_device_events tm_device_watcher = { .set_up = device_set_up, .first_ready = device_ready };

/* ---------------------------------------------------------------- helpers */

static const char *const settings[] = { NULL };

/* Nothing is held once the pool is drained: no bytes or chunks in any tier, no handle,
 * reservation or mapping in the driver. */
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
    assert_int_equal(fake_live_reservations(), 0);
    assert_int_equal(fake_mapped_bytes(), 0);
    assert_int_equal(tm_stats->tiered_count, 0);
}

static void assert_plan(const tm_alloc *a, uint64_t hbm, uint64_t cxl, uint64_t ddr)
{
    assert_non_null(a);
    assert_non_null(a->backing);
    assert_int_equal(a->backing->plan.per_tier[TM_TIER_HBM], hbm);
    assert_int_equal(a->backing->plan.per_tier[TM_TIER_CXL], cxl);
    assert_int_equal(a->backing->plan.per_tier[TM_TIER_DDR], ddr);
    const tm_stats_record *r = fake_stats_record(a->stats_slot);
    assert_int_equal(r->in_use, 1);
    assert_int_equal(r->chunks[TM_TIER_HBM], hbm);
    assert_int_equal(r->chunks[TM_TIER_CXL], cxl);
    assert_int_equal(r->chunks[TM_TIER_DDR], ddr);
}

static void assert_tier(tm_tier_id tier, uint64_t used, uint64_t chunks)
{
    assert_int_equal(tm_stats->tier[tier].used, used);
    assert_int_equal(tm_stats->tier[tier].chunks, chunks);
}

/* ---------------------------------------------------------------- accounting */

static void test_spill_accounting(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    assert_nothing_held();
    CUdeviceptr p;
    assert_int_equal(fake_alloc(12 * MIB, &p), CUDA_SUCCESS);
    tm_alloc *a = tm_alloc_at(p);
    /* HBM holds its limit, the rest spills to the next tier of the order */
    assert_plan(a, 4, 2, 0);
    assert_int_equal(a->backing->plan.chunks, 6);
    assert_int_equal(d->hbm_used, 8 * MIB);
    assert_int_equal(d->hbm_chunks, 4);
    assert_tier(TM_TIER_HBM, 8 * MIB, 4);
    assert_tier(TM_TIER_CXL, 4 * MIB, 2);
    assert_tier(TM_TIER_DDR, 0, 0);
    assert_true(d->stats_slot >= 0);
    assert_int_equal(tm_stats->devices[d->stats_slot].hbm_used, 8 * MIB);
    assert_int_equal(tm_stats->devices[d->stats_slot].hbm_chunks, 4);
    const tm_stats_record *r = fake_stats_record(a->stats_slot);
    assert_int_equal(r->address, p);
    assert_int_equal(r->size, 12 * MIB);
    assert_int_equal(tm_stats->tiered_count, 1);
    assert_int_equal(tm_stats->tiered_bytes, 12 * MIB);
    /* the driver agrees on where each chunk is */
    assert_int_equal(fake_location_at(p + 3 * CHUNK).type, CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemLocation spilled = fake_location_at(p + 4 * CHUNK);
    assert_int_equal(spilled.type, CU_MEM_LOCATION_TYPE_HOST_NUMA);
    assert_int_equal(spilled.id, FAKE_CXL_NODE);
    assert_int_equal(fake_live_handles(), 6);
    assert_int_equal(fake_live_reservations(), 1);
    assert_int_equal(fake_mapped_bytes(), 12 * MIB);
    /* one range across the tiers holds the program's bytes */
    fake_fill(p, 12 * MIB, 1);
    assert_true(fake_holds(p, 12 * MIB, 1));

    fake_free(p);
    assert_int_equal(r->in_use, 0);
    for (int t = 0; t < TM_TIER_COUNT; t++)
        assert_int_equal(tm_stats->tier[t].chunks, 0);
    assert_int_equal(d->hbm_chunks, 0);
    /* the HBM chunks wait in the pool, still charged; the CXL ones are gone */
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_HBM), 8 * MIB);
    assert_int_equal(d->hbm_used, 8 * MIB);
    assert_tier(TM_TIER_HBM, 8 * MIB, 0);
    assert_tier(TM_TIER_CXL, 0, 0);
    assert_int_equal(fake_live_handles(), 4);
    assert_int_equal(fake_live_reservations(), 0);
    assert_nothing_held();
}

static void test_pool_reuse(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    CUdeviceptr p;
    assert_int_equal(fake_alloc(8 * MIB, &p), CUDA_SUCCESS);
    CUmemGenericAllocationHandle first[4];
    memcpy(first, tm_alloc_at(p)->backing->handle, sizeof first);
    fake_free(p);
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_HBM), 8 * MIB);

    uint64_t creates = fake_calls(FAKE_MEM_CREATE);
    uint64_t reused = tm_stats->chunks_reused, created = tm_stats->chunks_created;
    assert_int_equal(fake_alloc(12 * MIB, &p), CUDA_SUCCESS);
    tm_alloc *a = tm_alloc_at(p);
    assert_plan(a, 4, 2, 0);
    /* the four HBM chunks are the pooled ones; only the two CXL chunks are new */
    assert_int_equal(fake_calls(FAKE_MEM_CREATE) - creates, 2);
    assert_int_equal(tm_stats->chunks_reused - reused, 4);
    assert_int_equal(tm_stats->chunks_created - created, 2);
    for (int i = 0; i < 4; i++) {
        bool pooled = false;
        for (int j = 0; j < 4; j++)
            pooled |= a->backing->handle[i] == first[j];
        assert_true(pooled);
    }
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_HBM), 0);
    /* the pool's charge became the allocation's: counted once */
    assert_int_equal(d->hbm_used, 8 * MIB);
    assert_tier(TM_TIER_HBM, 8 * MIB, 4);
    assert_int_equal(fake_live_handles(), 6);
    fake_free(p);
    assert_nothing_held();
}

/* ---------------------------------------------------------------- the driver says no */

static void test_tier_full_in_driver(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    fake_refuse_location(CU_MEM_LOCATION_TYPE_HOST_NUMA, FAKE_CXL_NODE, CUDA_ERROR_OUT_OF_MEMORY);
    uint64_t refused = fake_failed(FAKE_MEM_CREATE);
    CUdeviceptr p;
    assert_int_equal(fake_alloc(12 * MIB, &p), CUDA_SUCCESS);
    fake_heal();
    assert_true(fake_failed(FAKE_MEM_CREATE) > refused);
    tm_alloc *a = tm_alloc_at(p);
    /* placed again without CXL for this allocation; CXL stays a tier */
    assert_plan(a, 4, 0, 2);
    assert_true(d->tiers.tier[TM_TIER_CXL].present);
    assert_int_equal(tm_stats->tier[TM_TIER_CXL].present, 1);
    assert_tier(TM_TIER_HBM, 8 * MIB, 4);
    assert_tier(TM_TIER_CXL, 0, 0);
    assert_tier(TM_TIER_DDR, 4 * MIB, 2);
    CUmemLocation spilled = fake_location_at(p + 5 * CHUNK);
    assert_int_equal(spilled.type, CU_MEM_LOCATION_TYPE_HOST_NUMA);
    assert_int_equal(spilled.id, FAKE_DDR_NODE);
    /* the chunks of the failed attempt went back to the driver */
    assert_int_equal(fake_live_handles(), 6);
    assert_int_equal(fake_live_reservations(), 1);
    fake_free(p);
    assert_nothing_held();
}

/* In a process of its own: the refused tier stays absent. */
static void child_tier_refused(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    fake_refuse_location(CU_MEM_LOCATION_TYPE_HOST_NUMA, FAKE_CXL_NODE, CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr p;
    assert_int_equal(fake_alloc(12 * MIB, &p), CUDA_SUCCESS);
    assert_true(fake_failed(FAKE_MEM_CREATE) > 0);
    assert_plan(tm_alloc_at(p), 4, 0, 2);
    assert_false(d->tiers.tier[TM_TIER_CXL].present);
    assert_int_equal(tm_stats->tier[TM_TIER_CXL].present, 0);
    assert_tier(TM_TIER_CXL, 0, 0);
    assert_tier(TM_TIER_DDR, 4 * MIB, 2);
    assert_int_equal(fake_live_handles(), 6);
    assert_int_equal(fake_live_reservations(), 1);
    /* the next allocation does not ask the refused node again */
    uint64_t refused = fake_failed(FAKE_MEM_CREATE);
    CUdeviceptr q;
    assert_int_equal(fake_alloc(4 * MIB, &q), CUDA_SUCCESS);
    assert_int_equal(fake_failed(FAKE_MEM_CREATE), refused);
    assert_plan(tm_alloc_at(q), 0, 0, 2);
    fake_free(q);
    fake_free(p);
    fake_heal();
    assert_nothing_held();
}

static void test_tier_refused(void **state)
{
    (void)state;
    assert_int_equal(fake_run_child("child_tier_refused", NULL), 0);
}

/* A failure in the driver that is no tier's: the call passes through, nothing is left
 * behind, and the pooled chunks the attempt did not map stay pooled and charged. */
static void test_internal_failure_passes_through(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    static const fake_failure failures[] = {
        { FAKE_MEM_MAP, 3, "the third cuMemMap" },
        { FAKE_MEM_SET_ACCESS, 1, "cuMemSetAccess" },
        { FAKE_MEM_ADDRESS_RESERVE, 1, "cuMemAddressReserve" },
        { FAKE_CALL_COUNT, 0, "cuMemCreate in HBM, not for want of memory" },
    };
    for (size_t i = 0; i < sizeof failures / sizeof *failures; i++) {
        print_message("# %s fails\n", failures[i].what);
        CUdeviceptr p;
        assert_int_equal(fake_alloc(8 * MIB, &p), CUDA_SUCCESS);
        fake_free(p); /* four HBM chunks pooled */
        int created = seen.created;
        uint64_t passed = tm_stats->passthrough_total, records = tm_registry_count();
        if (failures[i].call == FAKE_CALL_COUNT)
            fake_refuse_location(CU_MEM_LOCATION_TYPE_DEVICE, 0, CUDA_ERROR_INVALID_VALUE);
        else
            fake_fail(failures[i].call, failures[i].nth, 1, CUDA_ERROR_UNKNOWN);
        CUresult result = CUDA_ERROR_NOT_FOUND;
        CUdeviceptr q = 0;
        /* all HBM chunks pooled: the refusal of DEVICE needs an allocation that creates one */
        uint64_t bytes = failures[i].call == FAKE_CALL_COUNT ? 10 * MIB : 12 * MIB;
        if (failures[i].call == FAKE_CALL_COUNT)
            tm_chunk_pool_drain(false);
        assert_false(tm_alloc_chunked(d, fake_context(), bytes, TM_PATH_MEM_ALLOC, &q, &result));
        fake_heal();
        assert_int_equal(tm_stats->passthrough_total - passed, 1);
        assert_int_equal(seen.created, created);
        assert_int_equal(tm_registry_count(), records);
        assert_int_equal(fake_live_reservations(), 0);
        assert_int_equal(fake_mapped_bytes(), 0);
        for (int t = 0; t < TM_TIER_COUNT; t++)
            assert_int_equal(tm_stats->tier[t].chunks, 0);
        assert_tier(TM_TIER_CXL, 0, 0);
        /* what HBM still counts is what the pool holds, handle for handle */
        uint64_t pooled = tm_chunk_pool_bytes(d, TM_TIER_HBM);
        assert_int_equal(d->hbm_used, pooled);
        assert_int_equal(tm_stats->tier[TM_TIER_HBM].used, pooled);
        assert_int_equal(fake_live_handles(), (int64_t)(pooled / CHUNK));
        assert_nothing_held();
    }
    /* the driver well again, the same request is served */
    CUdeviceptr p;
    assert_int_equal(fake_alloc(12 * MIB, &p), CUDA_SUCCESS);
    fake_free(p);
    assert_nothing_held();
}

/* ---------------------------------------------------------------- routing */

static tm_route route(uint64_t bytes)
{
    tm_device *d = NULL;
    CUcontext ctx = NULL;
    tm_route r = tm_route_allocation(bytes, &d, &ctx);
    if (r != TM_ROUTE_DRIVER) {
        assert_ptr_equal(d, fake_device());
        assert_ptr_equal(ctx, fake_context());
    }
    return r;
}

static void test_route(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    assert_int_equal(route(0), TM_ROUTE_DRIVER);
    assert_int_equal(route(1 * MIB), TM_ROUTE_SMALL);
    assert_int_equal(route(2 * MIB - 1), TM_ROUTE_SMALL);
    assert_int_equal(route(2 * MIB), TM_ROUTE_CHUNKED); /* TIERMEM_MIN_TIERED */
    assert_int_equal(route(64 * MIB), TM_ROUTE_CHUNKED);

    /* HBM full of chunks: a small request is chunked, in the tiers that have room */
    CUdeviceptr p;
    assert_int_equal(fake_alloc(8 * MIB, &p), CUDA_SUCCESS);
    assert_int_equal(route(1 * MIB), TM_ROUTE_CHUNKED);
    /* HBM full of pooled chunks: the pool is drained for the driver's memory */
    fake_free(p);
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_HBM), 8 * MIB);
    assert_int_equal(route(1 * MIB), TM_ROUTE_SMALL);
    assert_int_equal(tm_chunk_pool_bytes(d, TM_TIER_HBM), 0);
    assert_int_equal(fake_live_handles(), 0);

    /* no current context: the driver's */
    assert_int_equal(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    assert_int_equal(route(4 * MIB), TM_ROUTE_DRIVER);
    assert_int_equal(cuCtxSetCurrent(fake_context()), CUDA_SUCCESS);
    assert_int_equal(route(4 * MIB), TM_ROUTE_CHUNKED);
    assert_nothing_held();
}

static void child_route_ipc_passthrough(void **state)
{
    (void)state;
    /* what fits in HBM stays plain driver memory; only what does not is chunked */
    assert_int_equal(route(1 * MIB), TM_ROUTE_SMALL);
    assert_int_equal(route(4 * MIB), TM_ROUTE_SMALL);
    assert_int_equal(route(8 * MIB), TM_ROUTE_SMALL);
    assert_int_equal(route(12 * MIB), TM_ROUTE_CHUNKED);
}

static void test_route_ipc_passthrough(void **state)
{
    (void)state;
    assert_int_equal(fake_run_child("child_route_ipc_passthrough", (const char *[]){ "TIERMEM_IPC=passthrough", NULL }), 0);
}

static int driver_allocs;

static CUresult driver_alloc(CUdeviceptr *dptr, size_t bytes, const void *args)
{
    (void)args;
    driver_allocs++;
    return tm_real.cuMemAlloc_v2(dptr, bytes);
}

/* tm_alloc_serve: a small request is the driver's memory, counted in HBM; a large one is
 * chunked without the driver's allocation call. */
static void test_serve(void **state)
{
    (void)state;
    tm_device *d = fake_device();
    int allocs = driver_allocs, created = seen.created, released = seen.released;
    CUdeviceptr small;
    assert_int_equal(tm_alloc_serve(1 * MIB, TM_PATH_MEM_ALLOC, &small, driver_alloc, NULL), CUDA_SUCCESS);
    assert_int_equal(driver_allocs - allocs, 1);
    assert_int_equal(tm_stats->small_count, 1);
    assert_int_equal(tm_stats->small_bytes, 1 * MIB);
    assert_int_equal(d->hbm_used, 1 * MIB);
    assert_int_equal(d->hbm_chunks, 0);
    tm_alloc_view view;
    assert_true(tm_lookup(small + 4096, &view));
    assert_false(view.chunked);
    assert_int_equal(view.base, small);

    CUdeviceptr large;
    assert_int_equal(tm_alloc_serve(4 * MIB, TM_PATH_MEM_ALLOC, &large, driver_alloc, NULL), CUDA_SUCCESS);
    assert_int_equal(driver_allocs - allocs, 1);
    assert_int_equal(seen.created - created, 1);
    assert_true(tm_lookup(large, &view));
    assert_true(view.chunked);
    assert_plan(tm_alloc_at(large), 2, 0, 0);
    assert_int_equal(d->hbm_used, 5 * MIB);
    fake_free(large);

    tm_alloc *a = tm_untrack(small);
    assert_non_null(a);
    assert_int_equal(cuMemFree(small), CUDA_SUCCESS);
    tm_forget(a);
    assert_int_equal(seen.released - released, 2);
    assert_int_equal(seen.released_how, TM_RELEASE_FREED);
    assert_int_equal(tm_stats->small_count, 0);
    assert_nothing_held();
}

/* ---------------------------------------------------------------- watchers */

static void test_watchers(void **state)
{
    (void)state;
    int created = seen.created, released = seen.released;
    CUdeviceptr p;
    assert_int_equal(fake_alloc(4 * MIB, &p), CUDA_SUCCESS);
    assert_int_equal(seen.created - created, 1);
    assert_ptr_equal(seen.last_created, tm_alloc_at(p));
    assert_true(seen.created_slot >= 0);
    assert_int_equal(seen.created_slot, tm_alloc_at(p)->stats_slot);
    assert_true(seen.created_registered);
    assert_int_equal(seen.released, released);

    fake_free(p);
    assert_int_equal(seen.created - created, 1);
    assert_int_equal(seen.released - released, 1);
    assert_int_equal(seen.released_how, TM_RELEASE_FREED);
    assert_false(seen.released_registered);
    assert_true(seen.released_mapped);
    assert_nothing_held();
}

static void test_make_room(void **state)
{
    (void)state;
    /* more than every tier together (8 + 8 + 32 MiB): asked once, nothing given, no memory */
    int calls = seen.make_room_calls, created = seen.created;
    uint64_t oom = tm_stats->oom_total;
    CUdeviceptr p = 0;
    assert_int_equal(fake_alloc(64 * MIB, &p), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(seen.make_room_calls - calls, 1);
    assert_int_equal(seen.make_room_asked, 32);
    assert_int_equal(tm_stats->oom_total - oom, 1);
    assert_int_equal(seen.created, created);
    assert_nothing_held();

    /* a watcher that gives room back: placement starts over and the request is served */
    CUdeviceptr victim;
    assert_int_equal(fake_alloc(40 * MIB, &victim), CUDA_SUCCESS);
    seen.victim = victim;
    seen.victim_chunks = 20;
    calls = seen.make_room_calls;
    int released = seen.released;
    assert_int_equal(fake_alloc(16 * MIB, &p), CUDA_SUCCESS);
    assert_int_equal(seen.make_room_calls - calls, 1);
    assert_int_equal(seen.make_room_asked, 8);
    assert_int_equal(seen.victim, 0);
    assert_int_equal(seen.released - released, 1);
    assert_plan(tm_alloc_at(p), 4, 4, 0);
    fake_free(p);
    assert_nothing_held();
}

static void test_device_watcher(void **state)
{
    (void)state;
    fake_device();
    /* one device, however many requests: set up once, ready once */
    assert_int_equal(devices_set_up, 1);
    assert_int_equal(devices_ready, 1);
    assert_ptr_equal(tm_device_ready(), fake_device());
}

int main(int argc, char **argv)
{
    const struct CMUnitTest children[] = {
        cmocka_unit_test(child_tier_refused),
        cmocka_unit_test(child_route_ipc_passthrough),
    };
    int status;
    if (fake_child(argc, argv, settings, children, sizeof children / sizeof *children, &status))
        return status;
    fake_start(settings);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spill_accounting),
        cmocka_unit_test(test_pool_reuse),
        cmocka_unit_test(test_tier_full_in_driver),
        cmocka_unit_test(test_tier_refused),
        cmocka_unit_test(test_internal_failure_passes_through),
        cmocka_unit_test(test_route),
        cmocka_unit_test(test_route_ipc_passthrough),
        cmocka_unit_test(test_serve),
        cmocka_unit_test(test_watchers),
        cmocka_unit_test(test_make_room),
        cmocka_unit_test(test_device_watcher),
    };
    return cmocka_run_group_tests_name("mem/ alone on the fake driver", tests, NULL, NULL);
}
