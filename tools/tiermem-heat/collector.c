/* collector.c — loading and reading the eBPF heat source (see collector.h). */
#include "tools/tiermem-heat/collector.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "heat.skel.h"

/* Bytes already reported per chunk, to report only what is new. */
typedef struct seen_chunk {
    uint64_t index;
    uint64_t reads, writes;
} seen_chunk;

typedef struct seen_table {
    seen_chunk *slot;            /* open addressing on index, [capacity] */
    size_t capacity;
    size_t count;
} seen_table;

struct tm_bpf_collector {
    struct tm_heat_bpf *skel;
    struct bpf_link *links[24];
    int link_count;
    seen_table touched;          /* what the touch probes reported */
    seen_table launched;         /* what launch attribution reported */
};

static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
    (void)level;
    (void)fmt;
    (void)args;
    return 0; /* failures are reported in one line each by the caller */
}

bool tm_bpf_ensure_tracefs(char *why, size_t why_len)
{
    struct stat st;
    if (stat("/sys/kernel/tracing/events", &st) == 0)
        return true;
    if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 || errno == EBUSY)
        return stat("/sys/kernel/tracing/events", &st) == 0;
    snprintf(why, why_len, "tracefs is not mounted at /sys/kernel/tracing and cannot be (%s)", strerror(errno));
    return false;
}

static bool keep_link(tm_bpf_collector *c, struct bpf_link *link)
{
    if (!link)
        return false;
    if (c->link_count < (int)(sizeof c->links / sizeof c->links[0]))
        c->links[c->link_count++] = link;
    else
        bpf_link__destroy(link);
    return true;
}

static bool attach_uprobe(tm_bpf_collector *c, struct bpf_program *prog, int pid, const char *driver,
                          const char *symbol)
{
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = symbol);
    return keep_link(c, bpf_program__attach_uprobe_opts(prog, pid, driver, 0, &opts));
}

static void attach_driver(tm_bpf_collector *c, int pid, const char *driver, tm_bpf_attach_report *r)
{
    static const char *const launches[] = { "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
                                            "cuLaunchKernelEx_ptsz" };
    static const char *const copies[] = { "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemcpyAsync",
                                          "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2" };
    static const char *const allocs[] = { "cuMemAlloc_v2", "cuMemAllocAsync", "cuMemAllocAsync_ptsz" };
    int attached = 0;
    for (size_t i = 0; i < sizeof launches / sizeof *launches; i++)
        attached += attach_uprobe(c, c->skel->progs.on_launch, pid, driver, launches[i]);
    for (size_t i = 0; i < sizeof copies / sizeof *copies; i++)
        attached += attach_uprobe(c, c->skel->progs.on_copy, pid, driver, copies[i]);
    for (size_t i = 0; i < sizeof allocs / sizeof *allocs; i++) {
        attached += attach_uprobe(c, c->skel->progs.on_alloc, pid, driver, allocs[i]);
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = allocs[i], .retprobe = true);
        keep_link(c, bpf_program__attach_uprobe_opts(c->skel->progs.on_alloc_return, pid, driver, 0, &opts));
    }
    r->driver = attached > 0;
    if (!attached)
        snprintf(r->driver_why, sizeof r->driver_why, "no uprobe attached to %s (%s)", driver, strerror(errno));
}

static void attach_files(tm_bpf_collector *c, tm_bpf_attach_report *r)
{
    if (!tm_bpf_ensure_tracefs(r->files_why, sizeof r->files_why))
        return;
    struct bpf_program *progs[] = { c->skel->progs.on_openat, c->skel->progs.on_openat_exit, c->skel->progs.on_read,
                                    c->skel->progs.on_pread64, c->skel->progs.on_mmap };
    int attached = 0;
    for (size_t i = 0; i < sizeof progs / sizeof *progs; i++)
        attached += keep_link(c, bpf_program__attach(progs[i]));
    keep_link(c, bpf_program__attach(c->skel->progs.on_page_cache_add)); /* optional: not every kernel has it */
    r->files = attached == (int)(sizeof progs / sizeof *progs);
    if (!r->files)
        snprintf(r->files_why, sizeof r->files_why, "the syscall tracepoints did not attach (%s)", strerror(errno));
}

tm_bpf_collector *tm_bpf_collector_open(int pid, const char *driver, bool touch, tm_bpf_attach_report *report,
                                        char *why, size_t why_len)
{
    memset(report, 0, sizeof *report);
    libbpf_set_print(quiet);
    struct stat st;
    if (stat("/sys/kernel/btf/vmlinux", &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        snprintf(why, why_len, "this kernel has no BTF (/sys/kernel/btf/vmlinux): the CO-RE programs cannot load");
        return NULL;
    }
    tm_bpf_collector *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    c->skel = tm_heat_bpf__open();
    if (!c->skel) {
        snprintf(why, why_len, "cannot open the BPF programs (%s)", strerror(errno));
        free(c);
        return NULL;
    }
    /* the program that some kernels lack must not stop the others from loading */
    if (stat("/sys/kernel/tracing/events/filemap/mm_filemap_add_to_page_cache", &st) != 0 &&
        stat("/sys/kernel/debug/tracing/events/filemap/mm_filemap_add_to_page_cache", &st) != 0)
        bpf_program__set_autoload(c->skel->progs.on_page_cache_add, false);
    int err = tm_heat_bpf__load(c->skel);
    if (err) {
        int e = -err;
        snprintf(why, why_len, "cannot load the BPF programs: %s%s", strerror(e),
                 e == EPERM || e == EACCES ? " (needs root or CAP_BPF and CAP_PERFMON)" : "");
        tm_heat_bpf__destroy(c->skel);
        free(c);
        return NULL;
    }
    c->skel->bss->target_tgid = pid;

    if (!touch)
        snprintf(report->touch_why, sizeof report->touch_why, "touch probes not used (asked not to)");
    else if (keep_link(c, bpf_program__attach_usdt(c->skel->progs.on_touch, -1, driver, "simcuda", "touch", NULL)))
        report->touch = true;
    else
        snprintf(report->touch_why, sizeof report->touch_why,
                 "no simcuda:touch probe in %s (a real driver has none): no exact bytes per chunk", driver);
    attach_driver(c, -1, driver, report);
    attach_files(c, report);
    if (!report->touch && !report->driver && !report->files) {
        snprintf(why, why_len, "nothing attached: %s; %s; %s", report->touch_why, report->driver_why,
                 report->files_why);
        tm_bpf_collector_close(c);
        return NULL;
    }
    return c;
}

void tm_bpf_collector_close(tm_bpf_collector *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->link_count; i++)
        bpf_link__destroy(c->links[i]);
    tm_heat_bpf__destroy(c->skel);
    free(c->touched.slot);
    free(c->launched.slot);
    free(c);
}

/* ---------------------------------------------------------------- reading */

static seen_chunk *seen_slot(seen_table *t, uint64_t index)
{
    if (t->count * 2 >= t->capacity) {
        size_t capacity = t->capacity ? t->capacity * 2 : 1024;
        seen_chunk *table = calloc(capacity, sizeof *table);
        if (!table)
            return NULL;
        for (size_t i = 0; i < t->capacity; i++) {
            if (!t->slot[i].index)
                continue;
            size_t j = (size_t)(t->slot[i].index * 0x9E3779B97F4A7C15ull) & (capacity - 1);
            while (table[j].index)
                j = (j + 1) & (capacity - 1);
            table[j] = t->slot[i];
        }
        free(t->slot);
        t->slot = table;
        t->capacity = capacity;
    }
    size_t j = (size_t)(index * 0x9E3779B97F4A7C15ull) & (t->capacity - 1);
    while (t->slot[j].index && t->slot[j].index != index)
        j = (j + 1) & (t->capacity - 1);
    if (!t->slot[j].index) {
        t->slot[j].index = index; /* chunk 0 (address 0) is never device memory */
        t->count++;
    }
    return &t->slot[j];
}

/* Visits what is new in a chunk map since the last drain; `as_chunk` turns a map value
 * into bytes read and written (and a kernel name). */
static long drain_map(int fd, seen_table *seen, size_t value_size,
                      void (*as_chunk)(const void *value, struct tm_bpf_chunk *chunk), tm_bpf_chunk_visit visit,
                      void *arg)
{
    uint64_t key, next;
    long visited = 0;
    bool first = true;
    char value[sizeof(struct tm_bpf_chunk)];
    if (value_size > sizeof value)
        return -1;
    while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
        first = false;
        key = next;
        if (bpf_map_lookup_elem(fd, &key, value) != 0 || !key)
            continue;
        struct tm_bpf_chunk chunk;
        as_chunk(value, &chunk);
        seen_chunk *s = seen_slot(seen, key);
        if (!s)
            return -1;
        uint64_t reads = chunk.reads - s->reads, writes = chunk.writes - s->writes;
        if (!reads && !writes)
            continue;
        s->reads = chunk.reads;
        s->writes = chunk.writes;
        chunk.kernel[sizeof chunk.kernel - 1] = '\0';
        visit(key << TM_BPF_CHUNK_SHIFT, reads, writes, chunk.kernel, arg);
        visited++;
    }
    return visited;
}

static void touched_chunk(const void *value, struct tm_bpf_chunk *chunk)
{
    memcpy(chunk, value, sizeof *chunk);
}

static void launched_chunk(const void *value, struct tm_bpf_chunk *chunk)
{
    memset(chunk, 0, sizeof *chunk);
    memcpy(&chunk->reads, value, sizeof chunk->reads);
}

long tm_bpf_collector_drain(tm_bpf_collector *c, tm_bpf_chunk_visit visit, void *arg)
{
    return drain_map(bpf_map__fd(c->skel->maps.chunks), &c->touched, sizeof(struct tm_bpf_chunk), touched_chunk,
                     visit, arg);
}

long tm_bpf_collector_drain_launches(tm_bpf_collector *c, tm_bpf_chunk_visit visit, void *arg)
{
    return drain_map(bpf_map__fd(c->skel->maps.launch_chunks), &c->launched, sizeof(uint64_t), launched_chunk,
                     visit, arg);
}

void tm_bpf_collector_know(tm_bpf_collector *c, uint64_t address, uint64_t size)
{
    bpf_map_update_elem(bpf_map__fd(c->skel->maps.allocations), &address, &size, BPF_ANY);
}

void tm_bpf_collector_counts(const tm_bpf_collector *c, struct tm_bpf_counts *counts)
{
    memcpy(counts, &c->skel->bss->counts, sizeof *counts);
}

void tm_bpf_collector_allocations(tm_bpf_collector *c, tm_bpf_alloc_visit visit, void *arg)
{
    int fd = bpf_map__fd(c->skel->maps.allocations);
    uint64_t key, next, size;
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
        first = false;
        key = next;
        if (bpf_map_lookup_elem(fd, &key, &size) == 0)
            visit(key, size, arg);
    }
}

void tm_bpf_collector_files(tm_bpf_collector *c, tm_bpf_file_visit visit, void *arg)
{
    int fd = bpf_map__fd(c->skel->maps.files);
    int32_t key, next;
    bool first = true;
    while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
        first = false;
        key = next;
        struct tm_bpf_file value;
        if (bpf_map_lookup_elem(fd, &key, &value) == 0) {
            value.path[sizeof value.path - 1] = '\0';
            visit(key, &value, arg);
        }
    }
}
