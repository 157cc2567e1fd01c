/* sim_state.c — simcuda's global state: configuration, the handle table, the address
 * range trees, device-memory accounting, diagnostics and the exit summary. */
#include <ctype.h>
#include <errno.h>
#include <numa.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/simcuda/sim_internal.h"
#include "tools/simcuda/sim_symbols.h"

sim_state sim = { .lock = PTHREAD_MUTEX_INITIALIZER, .async_done = PTHREAD_COND_INITIALIZER };

/* ---------------------------------------------------------------- diagnostics */

static void sim_vprint(const char *fmt, va_list args)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, args);
    fprintf(stderr, "simcuda: %s\n", line);
}

void sim_log(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    sim_vprint(fmt, args);
    va_end(args);
}

void sim_info(const char *fmt, ...)
{
    if (sim.config.log_level < 1)
        return;
    va_list args;
    va_start(args, fmt);
    sim_vprint(fmt, args);
    va_end(args);
}

/* Names already reported as not implemented; a short list, searched under its own lock
 * because the stubs may be called with the main lock free or held. */
static pthread_mutex_t reported_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *reported[256];
static int reported_count;

CUresult sim_not_supported(const char *name)
{
    bool first = true;
    pthread_mutex_lock(&reported_lock);
    for (int i = 0; i < reported_count; i++)
        if (strcmp(reported[i], name) == 0)
            first = false;
    if (first && reported_count < (int)(sizeof reported / sizeof reported[0]))
        reported[reported_count++] = name;
    pthread_mutex_unlock(&reported_lock);
    if (first)
        sim_log("%s is not implemented (returns CUDA_ERROR_NOT_SUPPORTED)", name);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---------------------------------------------------------------- configuration */

/* Parses "123", "512K", "512M", "16G", "1T" (binary units, optional trailing "B"/"iB"). */
static bool parse_size(const char *text, size_t *out)
{
    const char *p = text;
    if (!isdigit((unsigned char)*p))
        return false;
    errno = 0;
    char *end;
    unsigned long long value = strtoull(p, &end, 10);
    if (errno != 0)
        return false;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || value == 0)
        return false;
    if (shift && value > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)value << shift;
    return true;
}

/* A whole number in [low, high]. */
static bool parse_count(const char *text, long low, long high, long *out)
{
    if (!isdigit((unsigned char)*text))
        return false;
    errno = 0;
    char *end;
    long value = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < low || value > high)
        return false;
    *out = value;
    return true;
}

/* SIMCUDA_UVM_*: the managed-memory model's parameters (sources in sim_uvm.c). */
static CUresult load_uvm_config(sim_uvm_params *uvm)
{
    sim_uvm_default_params(uvm);
    const char *value;
    long n;
    if ((value = getenv("SIMCUDA_UVM_FAULT_US")) && *value) {
        char *end;
        errno = 0;
        double us = strtod(value, &end);
        if (errno != 0 || *end != '\0' || end == value || !(us >= 0.0 && us <= 1e6)) {
            sim_log("SIMCUDA_UVM_FAULT_US='%s' is not a time in microseconds (accepts 0 to 1000000, e.g. 50)", value);
            return CUDA_ERROR_INVALID_VALUE;
        }
        uvm->fault_batch_us = us;
    }
    if ((value = getenv("SIMCUDA_UVM_BATCH")) && *value) {
        if (!parse_count(value, 1, 65536, &n)) {
            sim_log("SIMCUDA_UVM_BATCH='%s' is not a fault count (accepts 1 to 65536, e.g. 256)", value);
            return CUDA_ERROR_INVALID_VALUE;
        }
        uvm->batch_faults = (unsigned)n;
    }
    if ((value = getenv("SIMCUDA_UVM_PREFETCH")) && *value) {
        if (!parse_count(value, 0, 100, &n)) {
            sim_log("SIMCUDA_UVM_PREFETCH='%s' is not a percentage (accepts 0 to 100, 0 turns it off)", value);
            return CUDA_ERROR_INVALID_VALUE;
        }
        uvm->prefetch_percent = (unsigned)n;
    }
    return CUDA_SUCCESS;
}

/* Comma-separated node ids 0-1023 into nodes[] (at most SIM_MAX_NUMA_NODES). */
static bool parse_node_list(const char *text, int *nodes, int *count)
{
    *count = 0;
    const char *p = text;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return false;
        char *end;
        long node = strtol(p, &end, 10);
        if (node < 0 || node >= 1024 || *count == SIM_MAX_NUMA_NODES)
            return false;
        nodes[(*count)++] = (int)node;
        p = end;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return false;
    }
    return *count > 0;
}

/* A 0/1 variable; unset or empty keeps *on. False (reported) for anything else. */
static bool switch_setting(const char *name, bool *on)
{
    const char *value = getenv(name);
    if (!value || !*value)
        return true;
    if (strcmp(value, "0") == 0 || strcmp(value, "1") == 0) {
        *on = value[0] == '1';
        return true;
    }
    sim_log("%s='%s' is not 0 or 1", name, value);
    return false;
}

static const char *lookup_environment(const char *name)
{
    return getenv(name);
}

/* 16 GiB, or half the host's memory when that is less: programs that size buffers from
 * free device memory must not be handed more than the host can back. */
static size_t default_capacity(void)
{
    size_t capacity = (size_t)16 << 30;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (size_t)pages * (size_t)page / 2 < capacity)
        capacity = (size_t)pages * (size_t)page / 2 / SIM_GRANULARITY * SIM_GRANULARITY;
    return capacity;
}

static void host_numa_nodes(sim_config *config)
{
    config->numa_node_count = 0;
    if (numa_available() < 0) {
        config->numa_nodes[config->numa_node_count++] = 0;
        return;
    }
    for (int node = 0; node <= numa_max_node() && config->numa_node_count < SIM_MAX_NUMA_NODES; node++)
        if (numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)node))
            config->numa_nodes[config->numa_node_count++] = node;
}

/* Parses "cuMemCreate:3,cuMemMap:1:CUDA_ERROR_INVALID_VALUE": a driver function simcuda
 * exports, which call of it fails (from 1), and the error (default out of memory). */
static bool parse_fail_rules(const char *text, sim_config *config)
{
    config->fail_count = 0;
    for (const char *item = text; *item;) {
        const char *end = strchr(item, ',');
        size_t len = end ? (size_t)(end - item) : strlen(item);
        const char *colon = memchr(item, ':', len);
        if (!colon || config->fail_count == SIM_MAX_FAIL_RULES)
            return false;
        sim_fail_rule *rule = &config->fail[config->fail_count];
        size_t name_len = (size_t)(colon - item);
        bool known = false;
        for (size_t i = 0; i < sim_symbol_count && !known; i++)
            known = strlen(sim_symbols[i].name) == name_len && strncmp(sim_symbols[i].name, item, name_len) == 0;
        if (!known || name_len >= sizeof rule->name)
            return false;
        memcpy(rule->name, item, name_len);
        rule->name[name_len] = '\0';
        const char *number = colon + 1, *stop = item + len;
        char *after;
        if (!isdigit((unsigned char)*number))
            return false;
        errno = 0;
        unsigned long long nth = strtoull(number, &after, 10);
        if (errno || nth == 0 || after > stop)
            return false;
        rule->nth = nth;
        rule->error = CUDA_ERROR_OUT_OF_MEMORY;
        if (after < stop && (*after != ':' || !sim_error_from_name(after + 1, (size_t)(stop - after - 1), &rule->error)))
            return false;
        config->fail_count++;
        item = end ? end + 1 : stop;
        if (end && !*item)
            return false;
    }
    return config->fail_count > 0;
}

/* SIMCUDA_MEM: one size for every device, or a comma-separated size per device. */
static bool parse_capacities(const char *text, sim_config *config)
{
    char item[64];
    int count = 0;
    for (const char *at = text; count < SIM_MAX_DEVICES;) {
        const char *comma = strchr(at, ',');
        size_t length = comma ? (size_t)(comma - at) : strlen(at);
        if (length == 0 || length >= sizeof item)
            return false;
        memcpy(item, at, length);
        item[length] = '\0';
        if (!parse_size(item, &config->device_capacities[count++]))
            return false;
        if (!comma)
            break;
        at = comma + 1;
    }
    if (count == 1)
        for (int d = 1; d < SIM_MAX_DEVICES; d++)
            config->device_capacities[d] = config->device_capacities[0];
    else if (count != config->device_count)
        return false; /* a list names every device */
    config->device_capacity = config->device_capacities[0];
    return true;
}

/* SIMCUDA_HOLD=LAUNCH:PATH */
static bool parse_hold(const char *value, sim_config *config)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(value, &end, 10);
    if (end == value || *end != ':' || errno || n == 0 || value[0] == '-' || !end[1] ||
        strlen(end + 1) >= sizeof config->hold_path)
        return false;
    config->hold_launch = n;
    snprintf(config->hold_path, sizeof config->hold_path, "%s", end + 1);
    return true;
}

CUresult sim_config_load(sim_config *config)
{
    memset(config, 0, sizeof *config);
    config->device_capacity = default_capacity();
    config->capacity_default = true;
    config->host_numa_vmm = true;
    config->posix_fd = true;
    host_numa_nodes(config);

    const char *value;
    config->device_count = 1;
    if ((value = getenv("SIMCUDA_DEVICES")) && *value) {
        char *end;
        long count = strtol(value, &end, 10);
        if (*end || count < 1 || count > SIM_MAX_DEVICES) {
            sim_log("SIMCUDA_DEVICES='%s' is not a device count (accepts 1 to %d)", value, SIM_MAX_DEVICES);
            return CUDA_ERROR_INVALID_VALUE;
        }
        config->device_count = (int)count;
    }
    for (int d = 0; d < SIM_MAX_DEVICES; d++)
        config->device_capacities[d] = config->device_capacity;
    if ((value = getenv("SIMCUDA_MEM")) && *value) {
        if (!parse_capacities(value, config)) {
            sim_log("SIMCUDA_MEM='%s' is not a size or one size per device (accepts bytes, or a number with K, M, "
                    "G or T, e.g. 512M, or 512M,1G for two devices)", value);
            return CUDA_ERROR_INVALID_VALUE;
        }
        config->capacity_default = false;
    }
    if ((value = getenv("SIMCUDA_NUMA_NODES")) && *value &&
        !parse_node_list(value, config->numa_nodes, &config->numa_node_count)) {
        sim_log("SIMCUDA_NUMA_NODES='%s' is not a node list (accepts comma-separated ids 0-1023, e.g. 0,1)", value);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!switch_setting("SIMCUDA_HOST_NUMA_VMM", &config->host_numa_vmm) ||
        !switch_setting("SIMCUDA_POSIX_FD", &config->posix_fd))
        return CUDA_ERROR_INVALID_VALUE;
    if ((value = getenv("SIMCUDA_CXL_NODES")) && *value &&
        !parse_node_list(value, config->cxl_nodes, &config->cxl_node_count)) {
        sim_log("SIMCUDA_CXL_NODES='%s' is not a node list (accepts comma-separated ids 0-1023, e.g. 1)", value);
        return CUDA_ERROR_INVALID_VALUE;
    }
    config->host_time = true;
    if (!switch_setting("SIMCUDA_HOST_TIME", &config->host_time) || !switch_setting("SIMCUDA_ASYNC", &config->async))
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_profile_load(&config->profile, lookup_environment))
        return CUDA_ERROR_INVALID_VALUE;
    if ((value = getenv("SIMCUDA_FAIL")) && *value && !parse_fail_rules(value, config)) {
        sim_log("SIMCUDA_FAIL='%s' is not a list of FUNCTION:N[:ERROR] (a driver function, the call that fails "
                "counting from 1, a CUDA_ERROR_* name; e.g. cuMemCreate:3,cuMemMap:1:CUDA_ERROR_INVALID_VALUE)", value);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((value = getenv("SIMCUDA_TIMELINE")) && *value) {
        if (strlen(value) >= sizeof config->timeline) {
            sim_log("SIMCUDA_TIMELINE='%s' is not a file path under 256 bytes", value);
            return CUDA_ERROR_INVALID_VALUE;
        }
        snprintf(config->timeline, sizeof config->timeline, "%s", value);
    }
    if ((value = getenv("SIMCUDA_HOLD")) && *value && !parse_hold(value, config)) {
        sim_log("SIMCUDA_HOLD='%s' is not LAUNCH:PATH (the kernel launch that waits, counting from 1, and the "
                "file whose creation lets it run, under 256 bytes; e.g. 1:/tmp/go)", value);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!sim_export_trace_parse(getenv("SIMCUDA_EXPORT_TRACE"), &config->export_trace)) {
        sim_log("SIMCUDA_EXPORT_TRACE='%s' is not 0, 1 or traps", getenv("SIMCUDA_EXPORT_TRACE"));
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((value = getenv("SIMCUDA_LOG")) && *value) {
        if (strcmp(value, "info") == 0)
            config->log_level = 1;
        else if (strcmp(value, "warn") != 0) {
            sim_log("SIMCUDA_LOG='%s' is not warn or info", value);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return load_uvm_config(&config->uvm);
}

bool sim_export_trace_parse(const char *value, int *level)
{
    *level = SIM_EXPORT_TRACE_OFF;
    if (!value || !*value || strcmp(value, "0") == 0)
        return true;
    if (strcmp(value, "1") == 0)
        *level = SIM_EXPORT_TRACE_LOG;
    else if (strcmp(value, "traps") == 0)
        *level = SIM_EXPORT_TRACE_TRAPS;
    else
        return false;
    return true;
}

/* The runtime asks for export tables before cuInit loads the configuration, so the
 * setting is read on its own, once (a bad value is reported by cuInit). */
static int export_trace_level;
static void export_trace_read(void)
{
    if (!sim_export_trace_parse(getenv("SIMCUDA_EXPORT_TRACE"), &export_trace_level))
        export_trace_level = SIM_EXPORT_TRACE_OFF;
}

int sim_export_trace(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, export_trace_read);
    return export_trace_level;
}

bool sim_config_numa_node_ok(const sim_config *config, int node)
{
    for (int i = 0; i < config->numa_node_count; i++)
        if (config->numa_nodes[i] == node)
            return true;
    return false;
}

/* ---------------------------------------------------------------- handles */

void sim_object_add(sim_object *object, sim_kind kind)
{
    object->key = (uintptr_t)object;
    object->kind = kind;
    HASH_ADD(hh, sim.objects, key, sizeof object->key, object);
}

void sim_object_remove(sim_object *object)
{
    HASH_DELETE(hh, sim.objects, object);
    object->kind = 0;
}

void *sim_object_find(const void *handle, sim_kind kind)
{
    uintptr_t key = (uintptr_t)handle;
    sim_object *object = NULL;
    if (key == 0)
        return NULL;
    HASH_FIND(hh, sim.objects, &key, sizeof key, object);
    return object && object->kind == kind ? object : NULL;
}

/* ---------------------------------------------------------------- address ranges */

/* Ranges never overlap inside one tree, so "overlaps" is "equal" to tsearch. */
static int region_compare(const void *a, const void *b)
{
    const sim_region *x = a, *y = b;
    if (x->base + x->size <= y->base)
        return -1;
    if (y->base + y->size <= x->base)
        return 1;
    return 0;
}

static void **tree_root(sim_tree tree)
{
    return tree == TREE_REGIONS ? &sim.regions : &sim.reservations;
}

void sim_region_insert(sim_tree tree, sim_region *region)
{
    tsearch(region, tree_root(tree), region_compare);
}

void sim_region_delete(sim_tree tree, sim_region *region)
{
    tdelete(region, tree_root(tree), region_compare);
}

sim_region *sim_region_overlap(sim_tree tree, uintptr_t base, size_t size)
{
    /* The ranges in a tree are disjoint and ordered, so a search with a range key meets
     * an overlapping range whenever one exists. */
    sim_region key = { .base = base, .size = size };
    sim_region **found = tfind(&key, tree_root(tree), region_compare);
    return found ? *found : NULL;
}

sim_region *sim_region_find(sim_tree tree, uintptr_t address)
{
    return sim_region_overlap(tree, address, 1);
}

struct each_closure {
    void (*visit)(sim_region *, void *);
    void *arg;
};

static void each_node(const void *node, VISIT which, void *closure)
{
    if (which == postorder || which == leaf) {
        struct each_closure *c = closure;
        c->visit(*(sim_region *const *)node, c->arg);
    }
}

void sim_region_each(sim_tree tree, void (*visit)(sim_region *, void *), void *arg)
{
    struct each_closure closure = { visit, arg };
    twalk_r(*tree_root(tree), each_node, &closure);
}

CUresult sim_range_check(CUdevice device, uintptr_t address, size_t bytes, bool for_write)
{
    uintptr_t end = address + bytes;
    if (end < address)
        return CUDA_ERROR_INVALID_VALUE;
    while (address < end) {
        sim_region *region = sim_region_find(TREE_REGIONS, address);
        if (!region)
            return CUDA_ERROR_INVALID_VALUE;
        if (region->kind == REGION_MAPPING) {
            CUmemAccess_flags access = region->access_by[device];
            if (access == CU_MEM_ACCESS_FLAGS_PROT_NONE)
                return CUDA_ERROR_INVALID_VALUE;
            if (for_write && access != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
                return CUDA_ERROR_INVALID_VALUE;
        }
        address = region->base + region->size;
    }
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- accounting */

bool sim_device_reserve(CUdevice device, size_t bytes)
{
    if (bytes > sim.config.device_capacities[device] - sim.device_used_of[device])
        return false;
    sim.device_used_of[device] += bytes;
    sim.device_used += bytes;
    if (sim.device_used > sim.device_peak)
        sim.device_peak = sim.device_used;
    return true;
}

void sim_device_release(CUdevice device, size_t bytes)
{
    sim.device_used_of[device] -= bytes;
    sim.device_used -= bytes;
}

/* ---------------------------------------------------------------- init, fork, exit */

CUresult sim_check_init(void)
{
    if (sim.forked_after_init || !sim.initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    return CUDA_SUCCESS;
}

static void format_bytes(char *out, size_t size, uint64_t bytes)
{
    if (bytes >= (1ull << 30))
        snprintf(out, size, "%.2f GiB", (double)bytes / (1ull << 30));
    else
        snprintf(out, size, "%.1f MiB", (double)bytes / (1ull << 20));
}

static void count_region(sim_region *region, void *count)
{
    (void)region;
    ++*(size_t *)count;
}

static void exit_summary(void)
{
    if (!sim.initialized || sim.forked_after_init || sim.config.log_level < 1)
        return;
    char in_use[32], peak[32], cap[32];
    format_bytes(in_use, sizeof in_use, sim.device_used);
    format_bytes(peak, sizeof peak, sim.device_peak);
    format_bytes(cap, sizeof cap, sim.config.device_capacity);
    sim_info("exit: device memory in use %zu bytes (%s) in %zu allocations, peak %s of %s",
             sim.device_used, in_use, sim.live_device_allocations, peak, cap);
    sim_info("exit: %llu kernel launches", (unsigned long long)sim.launches);
    sim_time_summary();
    size_t handles = 0, reservations = 0;
    for (sim_object *o = sim.objects; o; o = o->hh.next)
        handles += o->kind == SIM_PHYS;
    sim_region_each(TREE_RESERVATIONS, count_region, &reservations);
    sim_info("exit: %zu physical allocations and %zu address reservations live", handles, reservations);
    sim_fail_summary();
    sim_uvm_cost uvm;
    sim_managed_totals(&uvm);
    if (sim.uvm)
        sim_info("exit: managed memory: %llu faults in %llu batches, %llu bytes migrated to the device, "
                 "%llu written back, %llu read in place, %llu blocks evicted, %.3f ms of fault service",
                 (unsigned long long)uvm.faults, (unsigned long long)uvm.batches,
                 (unsigned long long)uvm.bytes_migrated, (unsigned long long)uvm.bytes_written_back,
                 (unsigned long long)uvm.bytes_remote, (unsigned long long)uvm.evictions, uvm.service_ms);
}

/* A child of a process that initialised the driver inherits no usable driver state:
 * like the real driver, every call in it fails with CUDA_ERROR_NOT_INITIALIZED. */
static void after_fork_in_child(void)
{
    if (sim.initialized)
        sim.forked_after_init = true;
    pthread_mutex_init(&sim.lock, NULL);
    pthread_cond_init(&sim.async_done, NULL);
}

__attribute__((constructor)) static void sim_load(void)
{
    pthread_atfork(sim_lock, sim_unlock, after_fork_in_child);
    atexit(exit_summary);
}
