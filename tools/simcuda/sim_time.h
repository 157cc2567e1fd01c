/* sim_time.h — simcuda's model of time: a hardware profile, simulated clocks and the
 * shared resources work occupies.
 *
 * Model (all times in simulated nanoseconds; 1 GB/s moves 1 byte per ns):
 *   - every stream has a clock: the moment its last operation ends. The legacy default
 *     stream (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) orders with the blocking
 *     streams as on a GPU; non-blocking streams only with themselves and their events.
 *   - the host has a clock. It advances with the wall time the program spends between
 *     driver calls (SIMCUDA_HOST_TIME=1, the default; 0 makes host code free) but never
 *     with the time simcuda spends running kernels on the CPU. Host synchronisation
 *     (cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize, synchronous copies)
 *     moves it to the end of the work it waited for. Nothing starts before it is
 *     submitted: an operation starts at the later of its stream's clock, the host clock
 *     and the moment the resource it needs is free.
 *   - resources are shared by all streams: one copy engine per direction, each direction
 *     of the host link, and HBM. A resource serves one operation at a time.
 *   - a copy costs its bytes over the bandwidth of the path it crosses; a kernel the
 *     roofline of what it declares (simcuda.h), per memory location; both pay a fixed
 *     overhead. Events carry the simulated time of the work before them.
 *
 * Every function here is called with the simcuda lock held.
 */
#ifndef SIM_TIME_H
#define SIM_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "tools/simcuda/sim_uvm.h"

struct sim_stream;

/* ---------------------------------------------------------------- the profile */

/* X(field, SIMCUDA_ suffix, h200-pcie5, gh200-c2c, h100-pcie5): every parameter, its
 * variable and its value per profile. Sources are in sim_profile.c and docs/simcuda-profiles.md. */
#define SIM_PROFILE_PARAMS(X)                                  \
    X(hbm_gbps, "HBM_GBPS", 4080, 3400, 1700)                  \
    X(h2d_gbps, "H2D_GBPS", 50, 375, 50)                       \
    X(d2h_gbps, "D2H_GBPS", 50, 297, 50)                       \
    X(bidir_gbps, "BIDIR_GBPS", 83, 672, 83)                   \
    X(zero_copy_gbps, "ZERO_COPY_GBPS", 35, 300, 35)           \
    X(cxl_gbps, "CXL_GBPS", 36, 36, 36)                        \
    X(host_latency_us, "HOST_LATENCY_US", 1.0, 0.5, 1.0)       \
    X(cxl_latency_us, "CXL_LATENCY_US", 0.25, 0.25, 0.25)      \
    X(tflops, "TFLOPS", 60, 67, 51)                            \
    X(launch_us, "LAUNCH_US", 3, 3, 3)                         \
    X(copy_us, "COPY_US", 4, 4, 4)                             \
    X(nvme_gbps, "NVME_GBPS", 14, 14, 14)                      \
    X(create_us, "CREATE_US", 7.6, 7.6, 7.6)                   \
    X(create_2m_us, "CREATE_2M_US", 185.7, 185.7, 185.7)       \
    X(release_us, "RELEASE_US", 12.8, 12.8, 12.8)              \
    X(release_2m_us, "RELEASE_2M_US", 0, 0, 0)                 \
    X(map_us, "MAP_US", 1.0, 1.0, 1.0)                         \
    X(map_2m_us, "MAP_2M_US", 0.45, 0.45, 0.45)                \
    X(unmap_us, "UNMAP_US", 22, 22, 22)                        \
    X(unmap_2m_us, "UNMAP_2M_US", 3.6, 3.6, 3.6)               \
    X(set_access_us, "SET_ACCESS_US", 32, 32, 32)              \
    X(set_access_2m_us, "SET_ACCESS_2M_US", 4, 4, 4)

typedef struct sim_profile {
    const char *name;
#define SIM_PROFILE_FIELD(field, env, h200, gh200, h100) double field;
    SIM_PROFILE_PARAMS(SIM_PROFILE_FIELD)
#undef SIM_PROFILE_FIELD
} sim_profile;

/* Fills *profile from SIMCUDA_PROFILE and the per-parameter overrides, looked up with
 * `lookup` (the configuration module passes getenv). On a bad value prints one line
 * naming it and returns false. */
bool sim_profile_load(sim_profile *profile, const char *(*lookup)(const char *name));

/* ---------------------------------------------------------------- locations */

/* Where memory lives, as the GPU sees it. */
typedef enum sim_location {
    SIM_LOC_DEVICE,     /* cuMemAlloc memory, VMM chunks at the device: HBM */
    SIM_LOC_HOST,       /* pinned, registered or pageable host memory, over the link */
    SIM_LOC_HOST_NUMA,  /* VMM chunks on a host NUMA node (DDR), over the link */
    SIM_LOC_CXL,        /* VMM chunks on a node listed in SIMCUDA_CXL_NODES */
    SIM_LOC_MANAGED,    /* cuMemAllocManaged: HBM when resident, else the fault model (sim_uvm.h) */
    SIM_LOC_COUNT
} sim_location;

extern const char *const sim_location_names[SIM_LOC_COUNT];

/* The location of `address` and how many bytes from it on share that location (at
 * least 1; to the end of its region). */
sim_location sim_location_at(uintptr_t address, uint64_t *run);

/* ---------------------------------------------------------------- what work touches */

enum { SIM_COST_RANGES = 32 };

/* The bytes a kernel or memset touched, per location. */
typedef struct sim_cost {
    uint64_t read[SIM_LOC_COUNT];
    uint64_t written[SIM_LOC_COUNT];
    double flops;
    bool declared;          /* an ABI 2 kernel: the ranges are what it touched */
    /* the ranges of device-side and HOST_NUMA memory it touched, merged where they meet,
     * so that an unmap of a range waits for the work on it; past SIM_COST_RANGES the work
     * counts as touching every mapping */
    struct { uintptr_t base; uint64_t bytes; } ranges[SIM_COST_RANGES];
    int range_count;
    bool ranges_overflow;
    sim_uvm_cost managed;   /* what managed ranges cost in faults and migrations */
} sim_cost;

/* THE per-location split: charges [address, address + bytes) to *cost, piece by piece
 * of the location each piece lives in. A managed piece goes through the fault model:
 * what is resident counts as SIM_LOC_MANAGED (HBM), what is read in place as
 * SIM_LOC_HOST, and faults and migrations accumulate in cost->managed. */
void sim_cost_range(sim_cost *cost, uintptr_t address, uint64_t bytes, bool is_write);

/* A new launch sequence number (the probe's 4th argument). */
uint64_t sim_time_next_seq(void);

/* ---------------------------------------------------------------- clocks and resources */

typedef enum sim_resource {
    SIM_RES_CE_H2D,     /* the copy engine host to device */
    SIM_RES_CE_D2H,     /* the copy engine device to host */
    SIM_RES_LINK_H2D,   /* the host link, towards the device (copies and SM loads) */
    SIM_RES_LINK_D2H,   /* the host link, towards the host */
    SIM_RES_HBM,
    SIM_RES_COUNT
} sim_resource;

/* Moves the host clock by the wall time spent outside simcuda since the last mark,
 * then marks; returns the host clock. Call when a driver call begins. */
double sim_time_host_enter(void);
/* Marks the wall clock: time until the next enter is host time (call when work simcuda
 * ran on the CPU is over, so that time is not counted). */
void sim_time_host_leave(void);
/* The host waits until `t` (a synchronous call). */
void sim_time_host_wait(double t);
/* A host synchronisation call: enter, wait until `t`, leave. */
void sim_time_synchronize(double t);

/* When an operation submitted to `stream` (NULL: the default stream) at host time
 * `submitted` may start. */
double sim_time_ready(const struct sim_stream *stream, double submitted);
/* When everything submitted to `stream` so far is done (what an event recorded now
 * captures). */
double sim_time_stream_done(const struct sim_stream *stream);
/* When everything submitted to any stream is done. */
double sim_time_device_done(void);
/* The stream's clock moves to `t` (an operation ended, or it waits for an event). */
void sim_time_advance(struct sim_stream *stream, double t);

/* Occupies `resource` for `ns` from no earlier than `earliest`; returns when it ends. */
double sim_time_occupy(sim_resource resource, double earliest, double ns);

/* Charges a copy of `bytes` from src to dst on `stream`, submitted at host time
 * `submitted`, split by location; returns when it ends. */
double sim_time_copy(struct sim_stream *stream, double submitted, uintptr_t dst, uintptr_t src, uint64_t bytes);
/* Charges a kernel (or memset) that touched *cost on `stream` (cost NULL: an ABI 1
 * kernel, overhead only); overhead_us is the profile's launch or copy overhead. */
double sim_time_kernel(struct sim_stream *stream, double submitted, const sim_cost *cost, double overhead_us);

/* Managed memory's fault service from `start`: its migrations occupy the link, and the
 * work that faulted waits for all of it (batches are serviced one after the other).
 * Returns when the service ends. */
double sim_time_managed(double start, const sim_uvm_cost *cost);

/* ---------------------------------------------------------------- VMM calls */

/* The VMM calls the profile charges host time for: each costs its per-call value plus its
 * per-2 MiB value times the 2 MiB units of its size (sim_profile.c gives the sources). */
typedef enum sim_vmm_call {
    SIM_VMM_CREATE,
    SIM_VMM_RELEASE,
    SIM_VMM_MAP,
    SIM_VMM_UNMAP,
    SIM_VMM_SET_ACCESS,
    SIM_VMM_CALL_COUNT
} sim_vmm_call;

/* What one call of `call` over `bytes` costs the host, in simulated ns. */
double sim_time_vmm_cost(sim_vmm_call call, uint64_t bytes);
/* The host spends a VMM call: it waits until `wait_until` (work in flight on the range,
 * or 0), then for the call's cost. Charged whatever SIMCUDA_HOST_TIME says: it is time
 * the driver takes, not host code. */
void sim_time_vmm(sim_vmm_call call, uint64_t bytes, double wait_until);
/* When the last work submitted that touched a VMM mapping in [address, address + bytes)
 * ends (0 when none did). */
double sim_time_range_busy(uintptr_t address, uint64_t bytes);

/* Lines for the SIMCUDA_LOG=info exit summary. */
void sim_time_summary(void);

#endif /* SIM_TIME_H */
