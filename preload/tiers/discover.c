/* discover.c — finding the tiers: libnuma for nodes, distances and CPU-less nodes,
 * libcxl (loaded on demand) for CXL regions, the driver for the GPU's host node. */
#include "preload/tiers/discover.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cxl/libcxl.h>

#include "policy/units.h"
#include "preload/driver/driver.h"
#include "preload/tiers/available.h"
#include "preload/base/libc_real.h"
#include "preload/base/log.h"

/* ---------------------------------------------------------------- NUMA facts */

static bool numa_usable(void)
{
    static int available = -2;
    if (available == -2)
        available = numa_available();
    return available >= 0;
}

static bool node_known(int node)
{
    return numa_usable() && node >= 0 && node <= numa_max_node() &&
           numa_bitmask_isbitset(numa_nodes_ptr, (unsigned)node);
}

static bool node_has_cpus(int node)
{
    struct bitmask *cpus = numa_allocate_cpumask();
    bool any = false;
    if (cpus && numa_node_to_cpus(node, cpus) == 0)
        any = numa_bitmask_weight(cpus) > 0;
    if (cpus)
        numa_free_cpumask(cpus);
    return any;
}

/* Half of what the node can give now: its share of MemAvailable, so that the page cache
 * (a model file just read) never shrinks the tier (of the host's MemAvailable when the
 * node is not known here, as for a node the driver emulates). Where /proc and sysfs say
 * nothing, half of what the node has free. */
static uint64_t default_node_limit(int node)
{
    uint64_t available = node_known(node) ? tm_node_available(node, numa_max_node(), node_known) : tm_host_available();
    if (available > 0)
        return available / 2;
    long long free_bytes = 0;
    if (node_known(node) && numa_node_size64(node, &free_bytes) > 0 && free_bytes > 0)
        return (uint64_t)free_bytes / 2;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 0;
}

/* Does the driver take HOST_NUMA allocations on `node`? (It may emulate nodes the host
 * lacks, as simcuda does with SIMCUDA_NUMA_NODES.) */
uint64_t tm_minimum_granularity(CUmemLocationType type, int id)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = type;
    prop.location.id = id;
    size_t granularity = 0;
    if (tm_real.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS)
        return 0;
    return granularity;
}

/* Does the driver take HOST_NUMA allocations on `node`? (It may emulate nodes the host
 * lacks, as simcuda does with SIMCUDA_NUMA_NODES.) */
static bool driver_accepts_node(CUdevice device, int node)
{
    int supported = 0;
    return tm_real.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                        device) == CUDA_SUCCESS && supported &&
           tm_minimum_granularity(CU_MEM_LOCATION_TYPE_HOST_NUMA, node) > 0;
}

/* "0,1": the host's nodes, for messages. */
static void host_nodes(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int node = 0; numa_usable() && node <= numa_max_node() && used < len; node++) {
        if (!node_known(node))
            continue;
        int n = snprintf(buf + used, len - used, "%s%d", used ? "," : "", node);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (!buf[0])
        snprintf(buf, len, "none known to libnuma");
}

/* A node named in the environment: one of the host's, or one the driver accepts. */
static bool node_valid(const char *variable, int node, CUdevice device, const char *instead)
{
    if (node_known(node) || driver_accepts_node(device, node))
        return true;
    char nodes[128];
    host_nodes(nodes, sizeof nodes);
    tm_warn("%s=%d: node %d is not a NUMA node of this host (nodes %s) and the driver does not accept it; %s",
            variable, node, node, nodes, instead);
    return false;
}

/* A limit given for a real node stays within the node's memory. */
static uint64_t node_limit(const char *variable, uint64_t limit, int node)
{
    long long total = node_known(node) ? numa_node_size64(node, NULL) : -1;
    if (total > 0 && limit > (uint64_t)total) {
        char asked[32], has[32];
        tm_warn("%s=%s is more than node %d has (%s); using %s", variable, tm_format_size(limit, asked, sizeof asked),
                node, tm_format_size((uint64_t)total, has, sizeof has), has);
        return (uint64_t)total;
    }
    return limit;
}

/* ---------------------------------------------------------------- CXL regions */

typedef struct cxl_api {
    __typeof__(&cxl_new) new_ctx;
    __typeof__(&cxl_unref) unref;
    __typeof__(&cxl_bus_get_first) bus_first;
    __typeof__(&cxl_bus_get_next) bus_next;
    __typeof__(&cxl_bus_get_port) bus_port;
    __typeof__(&cxl_decoder_get_first) decoder_first;
    __typeof__(&cxl_decoder_get_next) decoder_next;
    __typeof__(&cxl_region_get_first) region_first;
    __typeof__(&cxl_region_get_next) region_next;
    __typeof__(&cxl_region_get_resource) region_resource;
    __typeof__(&cxl_region_get_size) region_size;
} cxl_api;

#define MAX_CXL_REGIONS 64

typedef struct address_range {
    uint64_t start, end;
} address_range;

/* The physical address ranges of the CXL regions libcxl knows; 0 without libcxl or CXL. */
static int cxl_regions(address_range *ranges, int max)
{
    void *lib = dlopen("libcxl.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib)
        return 0;
    /* glibc's dlsym: the library's own (hooks/hook_resolve.c) would answer a call by name */
    cxl_api api = {
        .new_ctx = (__typeof__(&cxl_new))tm_real_dlsym(lib, "cxl_new"),
        .unref = (__typeof__(&cxl_unref))tm_real_dlsym(lib, "cxl_unref"),
        .bus_first = (__typeof__(&cxl_bus_get_first))tm_real_dlsym(lib, "cxl_bus_get_first"),
        .bus_next = (__typeof__(&cxl_bus_get_next))tm_real_dlsym(lib, "cxl_bus_get_next"),
        .bus_port = (__typeof__(&cxl_bus_get_port))tm_real_dlsym(lib, "cxl_bus_get_port"),
        .decoder_first = (__typeof__(&cxl_decoder_get_first))tm_real_dlsym(lib, "cxl_decoder_get_first"),
        .decoder_next = (__typeof__(&cxl_decoder_get_next))tm_real_dlsym(lib, "cxl_decoder_get_next"),
        .region_first = (__typeof__(&cxl_region_get_first))tm_real_dlsym(lib, "cxl_region_get_first"),
        .region_next = (__typeof__(&cxl_region_get_next))tm_real_dlsym(lib, "cxl_region_get_next"),
        .region_resource = (__typeof__(&cxl_region_get_resource))tm_real_dlsym(lib, "cxl_region_get_resource"),
        .region_size = (__typeof__(&cxl_region_get_size))tm_real_dlsym(lib, "cxl_region_get_size"),
    };
    int count = 0;
    struct cxl_ctx *ctx = NULL;
    if (api.new_ctx && api.unref && api.bus_first && api.bus_next && api.bus_port && api.decoder_first &&
        api.decoder_next && api.region_first && api.region_next && api.region_resource && api.region_size &&
        api.new_ctx(&ctx) == 0) {
        for (struct cxl_bus *bus = api.bus_first(ctx); bus; bus = api.bus_next(bus)) {
            struct cxl_port *root = api.bus_port(bus);
            for (struct cxl_decoder *d = root ? api.decoder_first(root) : NULL; d; d = api.decoder_next(d)) {
                for (struct cxl_region *r = api.region_first(d); r && count < max; r = api.region_next(r)) {
                    uint64_t start = api.region_resource(r), size = api.region_size(r);
                    if (start != ULLONG_MAX && size && size != ULLONG_MAX)
                        ranges[count++] = (address_range){ start, start + size };
                }
            }
        }
        api.unref(ctx);
    }
    dlclose(lib);
    return count;
}

/* Is some memory block of `node` inside one of the ranges? Blocks are listed in sysfs as
 * nodeN/memoryM, block M starting at M * block_size_bytes. */
static bool node_memory_in(int node, const address_range *ranges, int count)
{
    FILE *f = fopen("/sys/devices/system/memory/block_size_bytes", "r");
    unsigned long long block = 0;
    if (!f)
        return false;
    int got = fscanf(f, "%llx", &block);
    fclose(f);
    if (got != 1 || block == 0)
        return false;
    char path[64];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d", node);
    DIR *dir = opendir(path);
    if (!dir)
        return false;
    bool inside = false;
    for (struct dirent *e; !inside && (e = readdir(dir));) {
        unsigned long long index;
        char tail;
        if (sscanf(e->d_name, "memory%llu%c", &index, &tail) != 1)
            continue;
        uint64_t start = index * block;
        for (int i = 0; i < count && !inside; i++)
            inside = start >= ranges[i].start && start < ranges[i].end;
    }
    closedir(dir);
    return inside;
}

/* The CPU-less node backed by a CXL region closest to `near`, or -1. */
static int find_cxl_node(int near)
{
    if (!numa_usable())
        return -1;
    address_range ranges[MAX_CXL_REGIONS];
    int count = cxl_regions(ranges, MAX_CXL_REGIONS);
    if (count == 0)
        return -1;
    int best = -1, best_distance = 0;
    for (int node = 0; node <= numa_max_node(); node++) {
        if (!node_known(node) || node_has_cpus(node) || !node_memory_in(node, ranges, count))
            continue;
        int distance = node_known(near) ? numa_distance(near, node) : 0;
        if (best < 0 || distance < best_distance) {
            best = node;
            best_distance = distance;
        }
    }
    return best;
}

/* ---------------------------------------------------------------- the GPU's host node */

static int pci_node(CUdevice device)
{
    char bus_id[32], path[96];
    if (!tm_real.cuDeviceGetPCIBusId || tm_real.cuDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != CUDA_SUCCESS)
        return -1;
    for (char *c = bus_id; *c; c++)
        if (*c >= 'A' && *c <= 'F')
            *c = (char)(*c - 'A' + 'a');
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", bus_id);
    FILE *f = fopen(path, "r");
    int node = -1;
    if (f) {
        if (fscanf(f, "%d", &node) != 1)
            node = -1;
        fclose(f);
    }
    return node;
}

static int ddr_node(const tm_config *config, CUdevice device, char *source, size_t len)
{
    if (config->ddr_node >= 0 && node_valid("TIERMEM_DDR_NODE", config->ddr_node, device,
                                            "the DDR tier is found as if it were not set")) {
        snprintf(source, len, "node %d, TIERMEM_DDR_NODE", config->ddr_node);
        return config->ddr_node;
    }
    int node = -1;
    if (tm_real.cuDeviceGetAttribute(&node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, device) == CUDA_SUCCESS && node >= 0) {
        snprintf(source, len, "node %d, the device's host node", node);
        return node;
    }
    if ((node = pci_node(device)) >= 0) {
        snprintf(source, len, "node %d, the device's PCI node", node);
        return node;
    }
    int cpu = sched_getcpu();
    node = numa_usable() && cpu >= 0 ? numa_node_of_cpu(cpu) : 0;
    if (node < 0)
        node = 0;
    snprintf(source, len, "node %d, this CPU's node", node);
    return node;
}

/* ---------------------------------------------------------------- all tiers */

void tm_discover_tiers(const tm_config *config, CUdevice device, uint64_t device_memory, tm_discovery *out)
{
    memset(out, 0, sizeof *out);
    tm_tiers *tiers = &out->tiers;

    tm_tier_state *hbm = &tiers->tier[TM_TIER_HBM];
    hbm->present = true;
    hbm->node = -1;
    hbm->limit = device_memory;
    tm_opt_size hbm_limit = tm_config_hbm_limit(config, (int)device);
    if (hbm_limit.set) {
        if (hbm_limit.bytes > device_memory)
            tm_warn("TIERMEM_HBM_LIMIT is above device %d's memory; using the device's %llu bytes", (int)device,
                    (unsigned long long)device_memory);
        else
            hbm->limit = hbm_limit.bytes;
    }
    snprintf(out->source[TM_TIER_HBM], sizeof out->source[0], "device %d", (int)device);

    tm_tier_state *ddr = &tiers->tier[TM_TIER_DDR];
    ddr->present = true;
    ddr->node = ddr_node(config, device, out->source[TM_TIER_DDR], sizeof out->source[0]);
    ddr->limit = config->ddr_limit.set ? node_limit("TIERMEM_DDR_LIMIT", config->ddr_limit.bytes, ddr->node)
                                       : default_node_limit(ddr->node);

    tm_tier_state *cxl = &tiers->tier[TM_TIER_CXL];
    cxl->node = -1;
    if (config->cxl_node >= 0) {
        if (node_valid("TIERMEM_CXL_NODE", config->cxl_node, device, "there is no CXL tier"))
            cxl->node = config->cxl_node;
        snprintf(out->source[TM_TIER_CXL], sizeof out->source[0], "node %d, TIERMEM_CXL_NODE", cxl->node);
    } else {
        cxl->node = find_cxl_node(ddr->node);
        snprintf(out->source[TM_TIER_CXL], sizeof out->source[0], "node %d, a CXL region", cxl->node);
    }
    cxl->present = cxl->node >= 0;
    if (cxl->present) {
        cxl->limit = config->cxl_limit.set ? node_limit("TIERMEM_CXL_LIMIT", config->cxl_limit.bytes, cxl->node)
                                           : default_node_limit(cxl->node);
        /* a node the driver emulates has no memory of its own: it and the DDR tier share the
         * host's, so their default limits split half of it rather than take half each */
        if (!node_known(cxl->node) && !config->cxl_limit.set)
            cxl->limit /= 2;
        if (!node_known(cxl->node) && !config->ddr_limit.set)
            ddr->limit /= 2;
        if (cxl->node == ddr->node && config->cxl_node >= 0)
            tm_warn("TIERMEM_CXL_NODE=%d names the DDR tier's node too (%s): the CXL and DDR tiers share its memory",
                    cxl->node, out->source[TM_TIER_DDR]);
        else if (cxl->node == ddr->node)
            tm_warn("the CXL tier and the DDR tier are both node %d", cxl->node);
    } else if (config->cxl_node >= 0) {
        snprintf(out->source[TM_TIER_CXL], sizeof out->source[0], "node %d is not usable", config->cxl_node);
    } else {
        snprintf(out->source[TM_TIER_CXL], sizeof out->source[0], "none found");
    }
}
