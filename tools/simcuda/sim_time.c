/* sim_time.c — simulated clocks, shared resources, the per-location split of what work
 * touches, and the cost of copies and kernels (the model is described in sim_time.h).
 * Every function runs with the simcuda lock held. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <time.h>

#include "tools/simcuda/sim_internal.h"

const char *const sim_location_names[SIM_LOC_COUNT] = { "device", "host", "host-numa", "cxl", "managed" };

static const char *const resource_names[SIM_RES_COUNT] = {
    "copy engine h2d", "copy engine d2h", "link h2d", "link d2h", "hbm",
};

typedef struct resource {
    double free_ns;         /* when its current occupant is done */
    double busy_ns;         /* total time occupied */
} resource;

static struct {
    double host_ns;             /* the host clock */
    struct timespec host_mark;  /* wall time of the last enter or leave */
    bool marked;
    double default_ns;          /* the legacy default stream's clock */
    double blocking_ns;         /* the latest end of work on blocking streams */
    double device_ns;           /* the latest end of any work */
    resource res[SIM_RES_COUNT];
    uint64_t seq;
    /* statistics for the exit summary */
    uint64_t kernel_bytes[2][SIM_LOC_COUNT];  /* [0 read, 1 written][location] */
    uint64_t v1_launches;
    uint64_t declared_launches;
    uint64_t storage_bytes;     /* read from storage (simcuda_storage_read) */
    double untracked_busy_ns;   /* the latest end of work whose ranges were too many to keep */
    uint64_t vmm_calls[SIM_VMM_CALL_COUNT];
    double vmm_ns[SIM_VMM_CALL_COUNT];          /* host time the calls cost */
    double vmm_wait_ns[SIM_VMM_CALL_COUNT];     /* host time they waited for work on their range */
} tm;

static const char *const vmm_call_names[SIM_VMM_CALL_COUNT] = {
    "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess",
};

/* ---------------------------------------------------------------- locations */

static bool cxl_node(int node)
{
    for (int i = 0; i < sim.config.cxl_node_count; i++)
        if (sim.config.cxl_nodes[i] == node)
            return true;
    return false;
}

sim_location sim_location_at(uintptr_t address, uint64_t *run)
{
    sim_region *region = sim_region_find(TREE_REGIONS, address);
    if (!region) {
        *run = UINT64_MAX; /* pageable host memory, as far as simcuda knows */
        return SIM_LOC_HOST;
    }
    *run = region->base + region->size - address;
    switch (region->kind) {
    case REGION_DEVICE:
        return region->managed ? SIM_LOC_MANAGED : SIM_LOC_DEVICE;
    case REGION_MAPPING:
        switch (region->phys->prop.location.type) {
        case CU_MEM_LOCATION_TYPE_DEVICE: return SIM_LOC_DEVICE;
        case CU_MEM_LOCATION_TYPE_HOST_NUMA:
            return cxl_node(region->phys->prop.location.id) ? SIM_LOC_CXL : SIM_LOC_HOST_NUMA;
        default: return SIM_LOC_HOST;
        }
    default:
        return SIM_LOC_HOST;
    }
}

/* Keeps [address, address + bytes) among the ranges *cost touched, merged with the last
 * one when they meet. */
static void cost_keep_range(sim_cost *cost, uintptr_t address, uint64_t bytes)
{
    if (cost->range_count > 0) {
        uintptr_t base = cost->ranges[cost->range_count - 1].base;
        uint64_t *last = &cost->ranges[cost->range_count - 1].bytes;
        if (address >= base && address <= base + *last) {
            if (address + bytes > base + *last)
                *last = address + bytes - base;
            return;
        }
    }
    if (cost->range_count == SIM_COST_RANGES) {
        cost->ranges_overflow = true;
        return;
    }
    cost->ranges[cost->range_count].base = address;
    cost->ranges[cost->range_count].bytes = bytes;
    cost->range_count++;
}

void sim_cost_range(sim_cost *cost, uintptr_t address, uint64_t bytes, bool is_write)
{
    while (bytes > 0) {
        uint64_t run;
        sim_location where = sim_location_at(address, &run);
        uint64_t piece = run < bytes ? run : bytes;
        if (where == SIM_LOC_DEVICE || where == SIM_LOC_HOST_NUMA || where == SIM_LOC_CXL)
            cost_keep_range(cost, address, piece);
        sim_uvm_cost faulted = { 0 };
        if (where == SIM_LOC_MANAGED && sim_managed_device_access(address, piece, is_write, &faulted)) {
            uint64_t *side = is_write ? cost->written : cost->read;
            side[SIM_LOC_MANAGED] += faulted.bytes_resident;
            side[SIM_LOC_HOST] += faulted.bytes_remote;
            sim_uvm_cost_add(&cost->managed, &faulted);
        } else if (is_write) {
            cost->written[where] += piece;
        } else {
            cost->read[where] += piece;
        }
        address += piece;
        bytes -= piece;
    }
}

uint64_t sim_time_next_seq(void)
{
    return ++tm.seq;
}

/* ---------------------------------------------------------------- clocks */

static double wall_ns_since(const struct timespec *mark, struct timespec *now)
{
    clock_gettime(CLOCK_MONOTONIC, now);
    return (double)(now->tv_sec - mark->tv_sec) * 1e9 + (double)(now->tv_nsec - mark->tv_nsec);
}

double sim_time_host_enter(void)
{
    struct timespec now;
    double gap = wall_ns_since(&tm.host_mark, &now);
    if (tm.marked && sim.config.host_time && gap > 0)
        tm.host_ns += gap;
    tm.host_mark = now;
    tm.marked = true;
    return tm.host_ns;
}

void sim_time_host_leave(void)
{
    clock_gettime(CLOCK_MONOTONIC, &tm.host_mark);
    tm.marked = true;
}

void sim_time_host_wait(double t)
{
    if (t > tm.host_ns)
        tm.host_ns = t;
}

void sim_time_synchronize(double t)
{
    sim_time_host_enter();
    sim_time_host_wait(t);
    sim_time_host_leave();
}

static bool blocking(const sim_stream *stream)
{
    return !(stream->flags & CU_STREAM_NON_BLOCKING);
}

double sim_time_stream_done(const sim_stream *stream)
{
    if (!stream)
        return fmax(tm.default_ns, tm.blocking_ns);
    return blocking(stream) ? fmax(stream->clock_ns, tm.default_ns) : stream->clock_ns;
}

double sim_time_ready(const sim_stream *stream, double submitted)
{
    return fmax(submitted, sim_time_stream_done(stream));
}

double sim_time_device_done(void)
{
    return tm.device_ns;
}

void sim_time_advance(sim_stream *stream, double t)
{
    if (!stream) {
        tm.default_ns = fmax(tm.default_ns, t);
    } else {
        stream->clock_ns = fmax(stream->clock_ns, t);
        if (blocking(stream))
            tm.blocking_ns = fmax(tm.blocking_ns, t);
    }
    tm.device_ns = fmax(tm.device_ns, t);
}

double sim_time_occupy(sim_resource which, double earliest, double ns)
{
    resource *r = &tm.res[which];
    if (ns <= 0)
        return earliest;
    double start = fmax(earliest, r->free_ns);
    r->free_ns = start + ns;
    r->busy_ns += ns;
    return r->free_ns;
}

/* ---------------------------------------------------------------- work in flight on mappings */

/* Calls visit for every VMM mapping overlapping [address, address + bytes). Mappings start
 * at multiples of the granularity, so a gap is skipped a granule at a time. */
static void each_mapping(uintptr_t address, uint64_t bytes, void (*visit)(sim_region *mapping, void *arg),
                         void *arg)
{
    uintptr_t end = address + bytes < address ? UINTPTR_MAX : address + bytes;
    for (uintptr_t at = address; at < end;) {
        sim_region *region = sim_region_find(TREE_REGIONS, at);
        uintptr_t next;
        if (region) {
            if (region->kind == REGION_MAPPING)
                visit(region, arg);
            next = region->base + region->backing_size;
        } else {
            next = (at / SIM_GRANULARITY + 1) * SIM_GRANULARITY;
        }
        if (next <= at)
            break;
        at = next;
    }
}

static void mark_busy(sim_region *mapping, void *arg)
{
    mapping->busy_until_ns = fmax(mapping->busy_until_ns, *(const double *)arg);
}

static void latest_busy(sim_region *mapping, void *arg)
{
    double *latest = arg;
    *latest = fmax(*latest, mapping->busy_until_ns);
}

/* Work that touched [address, address + bytes) ends at `end`. */
static void range_busy_until(uintptr_t address, uint64_t bytes, double end)
{
    each_mapping(address, bytes, mark_busy, &end);
}

double sim_time_range_busy(uintptr_t address, uint64_t bytes)
{
    double latest = tm.untracked_busy_ns;
    each_mapping(address, bytes, latest_busy, &latest);
    return latest;
}

/* ---------------------------------------------------------------- VMM calls */

double sim_time_vmm_cost(sim_vmm_call call, uint64_t bytes)
{
    const sim_profile *p = &sim.config.profile;
    double units = (double)((bytes + SIM_GRANULARITY - 1) / SIM_GRANULARITY);
    double us = 0;
    switch (call) {
    case SIM_VMM_CREATE: us = p->create_us + units * p->create_2m_us; break;
    case SIM_VMM_RELEASE: us = p->release_us + units * p->release_2m_us; break;
    case SIM_VMM_MAP: us = p->map_us + units * p->map_2m_us; break;
    case SIM_VMM_UNMAP: us = p->unmap_us + units * p->unmap_2m_us; break;
    case SIM_VMM_SET_ACCESS: us = p->set_access_us + units * p->set_access_2m_us; break;
    case SIM_VMM_CALL_COUNT: break;
    }
    return us * 1e3;
}

void sim_time_vmm(sim_vmm_call call, uint64_t bytes, double wait_until)
{
    double now = sim_time_host_enter();
    double start = fmax(now, wait_until);
    double cost = sim_time_vmm_cost(call, bytes);
    sim_time_host_wait(start + cost);
    sim_time_host_leave();
    tm.vmm_calls[call]++;
    tm.vmm_ns[call] += cost;
    tm.vmm_wait_ns[call] += start - now;
}

/* ---------------------------------------------------------------- copies */

static bool device_side(sim_location where)
{
    return where == SIM_LOC_DEVICE || where == SIM_LOC_MANAGED;
}

/* One direction of the link through its copy engine. While the other direction is busy
 * the two share bidir_gbps in proportion to their own rates (PCIe 5: 83 GB/s in all,
 * not 2 x 50). */
static double link_copy(bool to_device, double earliest, uint64_t bytes, double gbps)
{
    const sim_profile *p = &sim.config.profile;
    sim_resource ce = to_device ? SIM_RES_CE_H2D : SIM_RES_CE_D2H;
    sim_resource lane = to_device ? SIM_RES_LINK_H2D : SIM_RES_LINK_D2H;
    double other_gbps = to_device ? p->d2h_gbps : p->h2d_gbps;
    double other_free = tm.res[to_device ? SIM_RES_LINK_D2H : SIM_RES_LINK_H2D].free_ns;
    double start = fmax(earliest, fmax(tm.res[ce].free_ns, tm.res[lane].free_ns));
    double shared_gbps = fmin(gbps, p->bidir_gbps * gbps / (gbps + other_gbps));
    double ns = (double)bytes / gbps;
    if (other_free > start) {
        double window = other_free - start;
        double in_window = window * shared_gbps;
        ns = (double)bytes <= in_window ? (double)bytes / shared_gbps
                                        : window + ((double)bytes - in_window) / gbps;
    }
    double end = sim_time_occupy(ce, start, ns);
    sim_time_occupy(lane, start, ns);
    return end;
}

/* Charges one piece of a copy whose two sides each lie in one location. */
static double copy_piece(double earliest, sim_location dst, sim_location src, uint64_t bytes)
{
    const sim_profile *p = &sim.config.profile;
    sim.copy_bytes[dst][src] += bytes;
    if (device_side(dst) && device_side(src)) /* read and write HBM */
        return sim_time_occupy(SIM_RES_HBM, earliest, 2.0 * (double)bytes / p->hbm_gbps);
    if (device_side(dst))
        return link_copy(true, earliest, bytes, src == SIM_LOC_CXL ? fmin(p->h2d_gbps, p->cxl_gbps) : p->h2d_gbps);
    if (device_side(src))
        return link_copy(false, earliest, bytes, dst == SIM_LOC_CXL ? fmin(p->d2h_gbps, p->cxl_gbps) : p->d2h_gbps);
    /* host to host: through the host-to-device copy engine, at its rate */
    return link_copy(true, earliest, bytes, p->h2d_gbps);
}

/* ---------------------------------------------------------------- the timeline */

/* SIMCUDA_TIMELINE: one line per copy and kernel, "KIND STREAM START_US END_US BYTES",
 * into a file simcuda creates (never one that exists, never through a symlink). */
static FILE *timeline;
static bool timeline_tried;

static void trace(const char *kind, const sim_stream *stream, double start, double end, uint64_t bytes)
{
    if (!sim.config.timeline[0])
        return;
    if (!timeline_tried) {
        timeline_tried = true;
        int fd = open(sim.config.timeline, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || !(timeline = fdopen(fd, "w"))) {
            sim_log("SIMCUDA_TIMELINE='%s' could not be created (it must not exist yet): no timeline",
                    sim.config.timeline);
            if (fd >= 0)
                close(fd);
            return;
        }
    }
    if (timeline) {
        fprintf(timeline, "%s %p %.3f %.3f %llu\n", kind, (const void *)stream, start / 1e3, end / 1e3,
                (unsigned long long)bytes);
        fflush(timeline);
    }
}

double sim_time_copy(sim_stream *stream, double submitted, uintptr_t dst, uintptr_t src, uint64_t bytes)
{
    /* The set-up starts when the copy is submitted, so behind work queued before it, it
     * overlaps that work, as a copy engine pipelines queued copies; on an idle stream it is
     * paid in full. */
    double start = fmax(sim_time_ready(stream, submitted), submitted + sim.config.profile.copy_us * 1e3);
    double end = start;
    uintptr_t dst_start = dst, src_start = src;
    uint64_t total = bytes;
    /* Pieces run one after the other: one copy engine per direction. */
    while (bytes > 0) {
        uint64_t dst_run, src_run;
        sim_location d = sim_location_at(dst, &dst_run);
        sim_location s = sim_location_at(src, &src_run);
        uint64_t piece = bytes;
        if (dst_run < piece)
            piece = dst_run;
        if (src_run < piece)
            piece = src_run;
        if (d == SIM_LOC_MANAGED || s == SIM_LOC_MANAGED) {
            sim_uvm_cost faulted = { 0 };
            sim_managed_copy(dst, d, src, s, piece, &faulted);
            end = sim_time_managed(end, &faulted);
        }
        end = copy_piece(end, d, s, piece);
        dst += piece;
        src += piece;
        bytes -= piece;
    }
    range_busy_until(dst_start, total, end);
    range_busy_until(src_start, total, end);
    trace("copy", stream, start, end, total);
    sim_time_advance(stream, end);
    return end;
}

/* ---------------------------------------------------------------- managed memory */

double sim_time_managed(double start, const sim_uvm_cost *cost)
{
    const sim_profile *p = &sim.config.profile;
    if (cost->service_ms <= 0)
        return start;
    sim_time_occupy(SIM_RES_LINK_H2D, start, (double)cost->bytes_migrated / p->h2d_gbps);
    sim_time_occupy(SIM_RES_LINK_D2H, start, (double)cost->bytes_written_back / p->d2h_gbps);
    return start + cost->service_ms * 1e6;
}

/* ---------------------------------------------------------------- kernels */

double sim_time_kernel(sim_stream *stream, double submitted, const sim_cost *cost, double overhead_us)
{
    const sim_profile *p = &sim.config.profile;
    double start = sim_time_ready(stream, submitted) + overhead_us * 1e3;
    double end = start;
    if (!cost || !cost->declared) {
        tm.v1_launches += cost == NULL;
    } else {
        tm.declared_launches++;
        start = sim_time_managed(start, &cost->managed); /* faulting warps wait for the service */
        double hbm = 0, in = 0, out = 0, latency = 0;
        for (int loc = 0; loc < SIM_LOC_COUNT; loc++) {
            tm.kernel_bytes[0][loc] += cost->read[loc];
            tm.kernel_bytes[1][loc] += cost->written[loc];
            if (device_side((sim_location)loc)) {
                hbm += (double)(cost->read[loc] + cost->written[loc]) / p->hbm_gbps;
                continue;
            }
            double gbps = loc == SIM_LOC_CXL ? fmin(p->zero_copy_gbps, p->cxl_gbps) : p->zero_copy_gbps;
            in += (double)cost->read[loc] / gbps;
            out += (double)cost->written[loc] / gbps;
            if (cost->read[loc] + cost->written[loc])
                latency = fmax(latency, p->host_latency_us * 1e3 + (loc == SIM_LOC_CXL ? p->cxl_latency_us * 1e3 : 0));
        }
        /* The roofline: the slowest of the memory streams and the arithmetic. */
        end = fmax(end, start + cost->flops / (p->tflops * 1e3));
        end = fmax(end, sim_time_occupy(SIM_RES_HBM, start, hbm));
        /* Host memory streams over the link once its first access latency is paid. */
        end = fmax(end, sim_time_occupy(SIM_RES_LINK_H2D, start + latency, in));
        end = fmax(end, sim_time_occupy(SIM_RES_LINK_D2H, start + latency, out));
        for (int i = 0; i < cost->range_count; i++)
            range_busy_until(cost->ranges[i].base, cost->ranges[i].bytes, end);
    }
    /* work that did not say what it touched, or touched too many ranges, may be on any */
    if (!cost || !cost->declared || cost->ranges_overflow)
        tm.untracked_busy_ns = fmax(tm.untracked_busy_ns, end);
    trace("kernel", stream, start, end, 0);
    sim_time_advance(stream, end);
    return end;
}

/* ---------------------------------------------------------------- summary */

static void format_gib(char *out, size_t size, uint64_t bytes)
{
    snprintf(out, size, "%.3f GiB", (double)bytes / (1ull << 30));
}

void sim_time_summary(void)
{
    const sim_profile *p = &sim.config.profile;
    double total = fmax(tm.device_ns, tm.host_ns);
    sim_info("exit: simulated time %.3f ms on profile %s (device busy until %.3f ms)", total / 1e6, p->name,
             tm.device_ns / 1e6);
    for (int loc = 0; loc < SIM_LOC_COUNT; loc++)
        if (tm.kernel_bytes[0][loc] || tm.kernel_bytes[1][loc]) {
            char r[32], w[32];
            format_gib(r, sizeof r, tm.kernel_bytes[0][loc]);
            format_gib(w, sizeof w, tm.kernel_bytes[1][loc]);
            sim_info("exit: kernels in %s: read %s, wrote %s", sim_location_names[loc], r, w);
        }
    for (int d = 0; d < SIM_LOC_COUNT; d++)
        for (int s = 0; s < SIM_LOC_COUNT; s++)
            if (sim.copy_bytes[d][s])
                sim_info("exit: copied %s -> %s: %llu bytes", sim_location_names[s], sim_location_names[d],
                         (unsigned long long)sim.copy_bytes[d][s]);
    for (int r = 0; r < SIM_RES_COUNT; r++)
        if (tm.res[r].busy_ns > 0)
            sim_info("exit: %s busy %.3f ms (%.1f%% of simulated time)", resource_names[r], tm.res[r].busy_ns / 1e6,
                     total > 0 ? 100.0 * tm.res[r].busy_ns / total : 0.0);
    sim_info("exit: %llu kernels and memsets charged the roofline of what they touched",
             (unsigned long long)tm.declared_launches);
    if (tm.v1_launches)
        sim_info("exit: %llu kernel launches of ABI 1 modules were charged the launch overhead only (they declare "
                 "nothing they touch)", (unsigned long long)tm.v1_launches);
    for (int c = 0; c < SIM_VMM_CALL_COUNT; c++)
        if (tm.vmm_calls[c])
            sim_info("exit: %llu %s calls cost the host %.3f ms, and %.3f ms more waiting for work on their ranges",
                     (unsigned long long)tm.vmm_calls[c], vmm_call_names[c], tm.vmm_ns[c] / 1e6,
                     tm.vmm_wait_ns[c] / 1e6);
    if (tm.storage_bytes)
        sim_info("exit: read %llu bytes from storage at %g GB/s", (unsigned long long)tm.storage_bytes, p->nvme_gbps);
}

/* ---------------------------------------------------------------- the clock, exported */

/* simcuda_now_ns(): simulated nanoseconds now, the later of the host clock and the end of
 * the work submitted so far. Not a driver function: a tiermem process times what it
 * budgets by simulated time (migrations at TIERMEM_MIGRATE_RATE), so that a run decides
 * the same way however busy the machine running it is. */
SIM_EXPORT uint64_t simcuda_now_ns(void)
{
    sim_lock();
    double now = fmax(sim_time_host_enter(), tm.device_ns);
    sim_time_host_leave();
    sim_unlock();
    return now > 0 ? (uint64_t)now : 0;
}

/* ---------------------------------------------------------------- storage */

/* simcuda_storage_read(bytes): the caller has just read `bytes` from a model file on the
 * host and waited for it. The wall time of that read is whatever the page cache made it;
 * the host clock waits for what one NVMe drive (nvme_gbps) would have taken instead. Not
 * a driver function: a tiermem process calls it when the driver it loaded has it. */
SIM_EXPORT void simcuda_storage_read(uint64_t bytes)
{
    sim_lock();
    double now = sim_time_host_enter();
    sim_time_host_wait(now + (double)bytes / sim.config.profile.nvme_gbps);
    tm.storage_bytes += bytes;
    sim_time_host_leave();
    sim_unlock();
}
