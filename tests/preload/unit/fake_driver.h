/* fake_driver.h — the driver the unit tests of preload/'s core rooms run on, and their
 * shared set-up.
 *
 * simcuda (the emulated libcuda.so.1) is loaded through tm_driver_load() as the real
 * driver; then the VMM calls of tm_real are replaced by wrappers that count every call,
 * keep count of what is live (physical handles, address reservations, mapped bytes), and
 * fail a chosen call on request without reaching simcuda. simcuda_now_ns, the budget
 * clock of move/rebalancer.c (driver/clock.h), is replaced by a clock the test moves.
 *
 * A unit test program links the room it tests and the rooms below it with policy/ (never
 * preload/hooks/ or preload/lifecycle.c), defines its own tm_alloc_watchers[],
 * tm_launch_watchers[] and tm_device_watcher, and calls fake_start() before anything else.
 * Cases that need other settings, or leave the device changed for good (a tier refused),
 * run in a process of their own: fake_run_child(). */
#ifndef TM_TESTS_PRELOAD_UNIT_FAKE_DRIVER_H
#define TM_TESTS_PRELOAD_UNIT_FAKE_DRIVER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "preload/driver/cuda_api.h"
#include "preload/driver/driver.h"
#include "preload/driver/launch.h"
#include "preload/mem/alloc.h"
#include "preload/region/stats.h"
#include "preload/tiers/device.h"

#define MIB ((uint64_t)1 << 20)
#define CHUNK (2 * MIB) /* simcuda's VMM granularity */

/* The settings every unit test starts from (before the program's own): a device of 64 MiB
 * of which tiermem may use 8 MiB (4 chunks, no reserve), a CXL tier of 8 MiB on the
 * emulated node 1, DDR of 32 MiB on node 0, no shared ledger, the stats region in a
 * temporary file of the process's own, and tiermem's messages from `info` up (unless
 * TIERMEM_LOG says otherwise; every other TIERMEM_* and SIMCUDA_* variable inherited is
 * dropped). */
#define FAKE_HBM_LIMIT (8 * MIB)
#define FAKE_CXL_LIMIT (8 * MIB)
#define FAKE_DDR_LIMIT (32 * MIB)
#define FAKE_CXL_NODE 1
#define FAKE_DDR_NODE 0

/* ---------------------------------------------------------------- set-up */

/* Sets the environment (the defaults above, then `settings`: "NAME=value" strings,
 * NULL-terminated, may be NULL), loads simcuda as the driver, makes device 0's primary
 * context current and puts the wrappers into tm_real. Exits the program, saying why, when
 * any of it fails. */
void fake_start(const char *const *settings);

/* The context fake_start made current. */
CUcontext fake_context(void);

/* The tiered device of that context (set up at the first call). */
tm_device *fake_device(void);

/* ---------------------------------------------------------------- the wrappers */

typedef enum fake_call {
    FAKE_MEM_CREATE,            /* cuMemCreate */
    FAKE_MEM_RELEASE,           /* cuMemRelease */
    FAKE_MEM_MAP,               /* cuMemMap */
    FAKE_MEM_UNMAP,             /* cuMemUnmap */
    FAKE_MEM_SET_ACCESS,        /* cuMemSetAccess */
    FAKE_MEM_ADDRESS_RESERVE,   /* cuMemAddressReserve */
    FAKE_MEM_ADDRESS_FREE,      /* cuMemAddressFree */
    FAKE_MEMCPY_DTOD_ASYNC,     /* cuMemcpyDtoDAsync_v2 (migration's copy) */
    FAKE_CALL_COUNT
} fake_call;

/* Calls of `call` made through tm_real so far, failed ones included. */
uint64_t fake_calls(fake_call call);

/* Counting from now, calls `nth` to `nth + times - 1` of `call` (1: the next one) return
 * `error` without reaching simcuda. One rule per call; a new one replaces it. */
void fake_fail(fake_call call, uint64_t nth, uint64_t times, CUresult error);

/* One row of a test's table of failures to inject: which call, which one of them (as
 * fake_fail's `nth`), and what it is, for the test's log. */
typedef struct fake_failure {
    fake_call call;
    uint64_t nth;
    const char *what;
} fake_failure;

/* Every cuMemCreate at this location (a tier: DEVICE 0, or HOST_NUMA with its node)
 * returns `error` until fake_heal(). */
void fake_refuse_location(CUmemLocationType type, int id, CUresult error);

/* Calls failed by the rules so far. */
uint64_t fake_failed(fake_call call);

/* Drops every rule. */
void fake_heal(void);

/* What tiermem holds in the driver now: handles created and not released, address
 * reservations not freed, bytes mapped and not unmapped. */
int64_t fake_live_handles(void);
int64_t fake_live_reservations(void);
int64_t fake_mapped_bytes(void);

/* The budget clock: starts at 1 s and moves only when told. */
void fake_clock_advance(uint64_t ns);

/* ---------------------------------------------------------------- views */

/* The stats region's record, heat record and heat pool entry (tm_stats is the region:
 * the device is set up with TIERMEM_STATS naming a file). */
const tm_stats_record *fake_stats_record(int slot);
tm_stats_heat_record *fake_heat_record(int slot);
tm_stats_heat_chunk *fake_heat_chunk(uint64_t index);

/* Where a chunked allocation's chunk at `address` really lives, as the driver says (the
 * location of the handle mapped there); type -1 when nothing is mapped. */
CUmemLocation fake_location_at(CUdeviceptr address);

/* ---------------------------------------------------------------- allocations */

/* A chunked allocation of `bytes` on fake_device() (tm_alloc_chunked); asserts that it
 * was served (not passed through) and returns the program's answer, with *dptr set on
 * success. */
CUresult fake_alloc(uint64_t bytes, CUdeviceptr *dptr);

/* cuMemFree of a chunked allocation, as the hook makes it: untracked, then released. */
void fake_free(CUdeviceptr dptr);

/* Fills [dptr, dptr + bytes) with the pattern of `seed`, and checks it is there. */
void fake_fill(CUdeviceptr dptr, uint64_t bytes, uint32_t seed);
bool fake_holds(CUdeviceptr dptr, uint64_t bytes, uint32_t seed);

/* ---------------------------------------------------------------- cases in a process of their own */

/* Runs case `name` of this program in a new process (this program started again with
 * `--child NAME SETTING...`), with `settings` over the program's own. Returns its exit
 * status: 0 when the case passed. */
int fake_run_child(const char *name, const char *const *settings);

/* In main, before anything else: when argv names a child case, sets up with the
 * program's `settings` and the child's own, runs the case among `cases` (cmocka's plain
 * output, not TAP: the parent's TAP stream has the one result) and returns true with
 * *status its exit status. False otherwise. */
bool fake_child(int argc, char **argv, const char *const *settings, const struct CMUnitTest *cases, size_t count,
                int *status);

#endif /* TM_TESTS_PRELOAD_UNIT_FAKE_DRIVER_H */
