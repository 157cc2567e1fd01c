/* sim_profile.c — the hardware profiles of the time model and their overrides.
 *
 * SIMCUDA_PROFILE picks one (h200-pcie5 by default); SIMCUDA_<PARAM> overrides one
 * parameter, SIMCUDA_LINK_GBPS both copy directions at once. Values and their sources
 * (the table itself is SIM_PROFILE_PARAMS in sim_time.h):
 *
 *   hbm_gbps        achievable HBM bandwidth: 85% of the datasheet peak, what streaming
 *                   kernels reach in published measurements. H200 (NVL/PCIe and SXM):
 *                   4.8 TB/s HBM3e; GH200 96 GB: 4.0 TB/s HBM3; H100 PCIe: 2.0 TB/s HBM2e
 *                   (NVIDIA datasheets).
 *   h2d_gbps,       copy engines over the link. PCIe 5 x16 at 2 MiB blocks: about 50 GB/s
 *   d2h_gbps        each way (nvbandwidth on H100/H200 PCIe hosts). GH200 NVLink-C2C:
 *                   375 GB/s host to device, 297 GB/s device to host, measured
 *                   (Chips and Cheese, "Grace Hopper" microbenchmarks).
 *   bidir_gbps      both directions at once, in total: PCIe 5 x16 83 GB/s (nvbandwidth
 *                   bidirectional copy); C2C: no shared limit known, the sum of the two.
 *   zero_copy_gbps  SM loads of host memory in place: about 35 GB/s on PCIe 5 (below the
 *                   copy engines: many small read requests). C2C: assumed 300 GB/s (the
 *                   link is coherent and SMs read host memory near the copy rate; not a
 *                   measured figure).
 *   cxl_gbps        a CXL Type-3 x8 memory module: 36 GB/s (vendor figures for CXL 2.0
 *                   x8 E3.S modules); reached over the host link, so a kernel or copy
 *                   gets the lower of the two.
 *   host_latency_us first-access latency of host memory over the link, paid once by a
 *                   kernel that reads host memory in place (PCIe round trip about 1 us;
 *                   C2C about half; an estimate).
 *   cxl_latency_us  what CXL adds on top: 2-5x DRAM latency (about 100 ns), so about
 *                   250 ns more (published CXL memory expander measurements).
 *   tflops          peak FP32 without tensor cores (the engine's kernels use none): H200
 *                   NVL 60, GH200 67, H100 PCIe 51 TFLOPS (NVIDIA datasheets).
 *   launch_us,      kernel launch and copy set-up overheads: a few microseconds on every
 *   copy_us         current GPU (CUDA launch-latency measurements: 2-5 us).
 *   nvme_gbps       sequential read of one NVMe drive, what a file-tier read-back waits for
 *                   (simcuda_storage_read): PCIe 5 x4 drives read 14 GB/s (Samsung 9100 PRO:
 *                   14.7 GB/s, Crucial T705: 14.5 GB/s, vendor datasheets); all three
 *                   profiles are PCIe 5 hosts. A PCIe 4 x4 drive reads 7 GB/s (Samsung 990
 *                   PRO: 7.45 GB/s): SIMCUDA_NVME_GBPS=7.
 *   create_us, ...  the VMM calls, host time per call (*_US) and per 2 MiB of the call's
 *   *_2m_us         size (*_2M_US). kvcached's VMM benchmark (benchmarks/bench_vmm, A100,
 *                   one thread, 4096 calls of one 2 MiB page each, averages) measured
 *                   cuMemCreate 193.32 us, cuMemMap 1.45, cuMemSetAccess 35.99, cuMemUnmap
 *                   25.63: each pair here sums to that figure. No such figures are
 *                   published for H100, H200 or GH200; all three profiles take the A100's.
 *                   The split between call and size is an estimate: set-access and unmap
 *                   pay a TLB invalidation and an ordering point once per call and write
 *                   one page-table entry per 2 MiB (about a ninth of the time); cuMemCreate
 *                   pays per page for finding and clearing memory, its per-call floor the
 *                   7.58 us the same benchmark measured on another GPU; cuMemMap only
 *                   records the range. cuMemRelease is not in the benchmark: estimated at
 *                   half of cuMemUnmap, per call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/simcuda/sim_internal.h"

enum { PROFILE_H200_PCIE5, PROFILE_GH200_C2C, PROFILE_H100_PCIE5, PROFILE_COUNT };

static const char *const profile_names[PROFILE_COUNT] = { "h200-pcie5", "gh200-c2c", "h100-pcie5" };

static void profile_fill(sim_profile *p, int which)
{
    p->name = profile_names[which];
#define SIM_PROFILE_SET(field, env, h200, gh200, h100) \
    p->field = which == PROFILE_H200_PCIE5 ? h200 : which == PROFILE_GH200_C2C ? gh200 : h100;
    SIM_PROFILE_PARAMS(SIM_PROFILE_SET)
#undef SIM_PROFILE_SET
}

/* A positive finite number (latencies and overheads may be 0). */
static bool parse_value(const char *name, const char *text, bool may_be_zero, double *out)
{
    errno = 0;
    char *end;
    double v = strtod(text, &end);
    if (errno == 0 && end != text && *end == '\0' && v == v && v < 1e12 && (v > 0 || (may_be_zero && v == 0))) {
        *out = v;
        return true;
    }
    sim_log("SIMCUDA_%s='%s' is not a %s number (e.g. 64 or 2.5)", name, text,
            may_be_zero ? "non-negative" : "positive");
    return false;
}

static bool override(const char *(*lookup)(const char *), const char *suffix, bool may_be_zero, double *field)
{
    char name[64];
    snprintf(name, sizeof name, "SIMCUDA_%s", suffix);
    const char *value = lookup(name);
    if (!value || !*value)
        return true;
    return parse_value(suffix, value, may_be_zero, field);
}

bool sim_profile_load(sim_profile *profile, const char *(*lookup)(const char *name))
{
    int which = PROFILE_H200_PCIE5;
    const char *value = lookup("SIMCUDA_PROFILE");
    if (value && *value) {
        which = -1;
        for (int i = 0; i < PROFILE_COUNT; i++)
            if (strcmp(value, profile_names[i]) == 0)
                which = i;
        if (which < 0) {
            sim_log("SIMCUDA_PROFILE='%s' is not a profile (accepts h200-pcie5, gh200-c2c, h100-pcie5)", value);
            return false;
        }
    }
    profile_fill(profile, which);
    double link = 0;
    if (!override(lookup, "LINK_GBPS", false, &link))
        return false;
    if (link > 0)
        profile->h2d_gbps = profile->d2h_gbps = link;
    bool ok = true;
#define SIM_PROFILE_OVERRIDE(field, env, h200, gh200, h100) \
    ok = ok && override(lookup, env, strstr(env, "_US") != NULL, &profile->field);
    SIM_PROFILE_PARAMS(SIM_PROFILE_OVERRIDE)
#undef SIM_PROFILE_OVERRIDE
    return ok;
}
