/* tiermem-heat — access heat of a CUDA process, measured from outside it with eBPF.
 *
 *   tiermem-heat [options] --pid PID        attach to a running process
 *   tiermem-heat [options] -- COMMAND ARGS  start COMMAND under observation
 *
 * Options: --json (one JSON object at the end instead of a live top), --duration S (stop
 * after S seconds; default: when the target exits), --interval S (how often maps are read
 * and the top is printed, default 1), --record FILE (every interval, a line
 * "MILLISECONDS CHUNK_ADDRESS HEAT" per chunk with heat, for tiermem-heatmap), --driver PATH
 * (the libcuda.so.1 to probe; default: the one the target maps, or the one dlopen finds),
 * --halflife S (default TIERMEM_HEAT_HALFLIFE's default, 10 s), --top N, --stats PATH (the
 * target's stats region when TIERMEM_STATS moved it; default
 * /dev/shm/tiermem-UID/tiermem.PID), --feed (write the heat measured into that region for
 * the process's heat policy; without it the region is only read), --read-only (the
 * default, kept for scripts), --no-touch (leave simcuda's touch probes alone: heat from the
 * launch attribution in BPF only, as on a real driver), --version.
 *
 * Sources: simcuda:touch (exact bytes per chunk), uprobes on the driver's launch, copy and
 * allocation entry points, syscall and filemap tracepoints (files read). With both the touch
 * probes and the launch uprobes, --json gives each allocation the launch attribution's heat
 * and class beside the touch probes' (launch_heat, launch_class): the two side by side, in
 * one run, at the same addresses. Needs root or
 * CAP_BPF + CAP_PERFMON; each source that cannot attach is named with its reason in one
 * line. When the target has libtiermem.so, its stats region gives the allocations' exact
 * extents (read into a private copy, region_path.h's ownership checks first), and with
 * --feed the heat measured is written into it with pwrite at offsets validated each time
 * (region_write.h; the process leaves heat to the collector meanwhile, and its heat policy
 * ranks chunks by what the collector wrote); allocations made through the driver after attaching are learnt
 * from return probes on cuMemAlloc_v2/cuMemAllocAsync; the rest are inferred from runs of
 * touched chunks and marked so.
 * Exit status: 0, 1 bad arguments, 2 the target could not be found or started, 3 eBPF
 * could not be used (the reason is printed; a started COMMAND still runs to its end). */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/tiermem-heat/collector.h"
#include "policy/units.h"
#include "tools/tiermem-heat/chunk_heat.h"
#include "tools/tiermem-heat/region_write.h"
#include "tools/tiermem-stat/stats_read.h"

typedef struct options {
    int pid;
    char **command;
    bool json;
    double duration, interval;
    const char *record, *driver, *stats;
    bool feed, no_touch;
    uint64_t halflife_ns;
    int top;
} options;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void sleep_s(double s)
{
    nanosleep(&(struct timespec){ .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) }, NULL);
}

/* ---------------------------------------------------------------- the target */

/* The libcuda the process maps, from /proc/PID/maps. */
static bool driver_of_pid(int pid, char *out, size_t len)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char *file = strchr(line, '/');
        if (!file || !strstr(file, "/libcuda.so"))
            continue;
        file[strcspn(file, "\n")] = '\0';
        snprintf(out, len, "%s", file);
        found = true;
    }
    fclose(f);
    return found;
}

/* The libcuda.so.1 a program started with this environment would load. */
static bool driver_by_search(char *out, size_t len)
{
    void *handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    struct link_map *map = NULL;
    bool found = handle && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name[0];
    if (found)
        snprintf(out, len, "%s", map->l_name);
    return found;
}

static bool alive(int pid)
{
    return kill(pid, 0) == 0 || errno != ESRCH;
}

/* Starts COMMAND held on a pipe until the probes are attached. */
static int start_held(char **command, int *gate)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[1]);
        char go;
        if (read(fds[0], &go, 1) != 1)
            _exit(127); /* the collector went away before it let the command start */
        close(fds[0]);
        execvp(command[0], command);
        fprintf(stderr, "tiermem-heat: cannot run %s: %s\n", command[0], strerror(errno));
        _exit(127);
    }
    close(fds[0]);
    *gate = fds[1];
    return pid;
}

static void release(int gate)
{
    if (write(gate, "g", 1) != 1)
        fprintf(stderr, "tiermem-heat: cannot start the command (%s)\n", strerror(errno));
    close(gate);
}

/* ---------------------------------------------------------------- gathering */

typedef struct gather {
    tm_chunk_table *table;
    uint64_t tick;
} gather;

static void on_chunk(uint64_t address, uint64_t reads, uint64_t writes, const char *kernel, void *arg)
{
    gather *g = arg;
    tm_chunk_table_add(g->table, address, reads, writes, kernel, g->tick);
}

/* Whether a line already said why the target's region is not used: one is enough. */
static bool region_refusal_said;

static void region_path(int pid, const char *stats, char *path, size_t len)
{
    if (stats)
        snprintf(path, len, "%s", stats);
    else
        tm_stats_default_path(pid, path, len);
}

/* With --feed, once the target has a stats region: heat goes into it too, the file being
 * one the target's user owns. The heat there is valued with the region's interval, so the
 * collector takes it on while it has measured nothing. */
static void open_writer(tm_region_writer **writer, bool *tried, tm_chunk_table *table, int pid, const char *stats)
{
    char path[4096], why[4200];
    region_path(pid, stats, path, sizeof path);
    if (*writer || *tried || access(path, F_OK) != 0 || tm_region_being_made(path))
        return;
    *tried = true;
    long owner = tm_stats_uid_of_pid(pid);
    if (owner < 0) {
        fprintf(stderr, "tiermem-heat: not writing heat into %s: process %d is gone\n", path, pid);
        return;
    }
    tm_region_writer *w = tm_region_writer_open(path, owner, (int)getpid(), why, sizeof why);
    if (!w) {
        fprintf(stderr, "tiermem-heat: not writing heat into the target's stats region: %s\n", why);
        region_refusal_said = true;
        return;
    }
    if (!tm_chunk_table_empty(table)) {
        fprintf(stderr, "tiermem-heat: not writing heat into %s: its region appeared after measuring began\n", path);
        tm_region_writer_close(w);
        return;
    }
    tm_chunk_table_set_halflife(table, tm_region_writer_tick_ns(w) * TM_HEAT_TICKS_PER_HALFLIFE);
    fprintf(stderr, "tiermem-heat: writing heat into %s (half-life %.3g s, the process's)\n", path,
            (double)tm_region_writer_tick_ns(w) * TM_HEAT_TICKS_PER_HALFLIFE / 1e9);
    *writer = w;
}

static void on_alloc(uint64_t address, uint64_t size, void *arg)
{
    tm_chunk_table_known(arg, address, size, TM_EXTENT_UPROBE);
}

/* Allocations of a target under libtiermem.so, from its stats region (the launch
 * attribution in BPF learns them too). */
static void learn_extents(tm_chunk_table *table, tm_chunk_table *launched, tm_bpf_collector *collector, int pid,
                          const char *stats)
{
    char path[4096], why[4200];
    region_path(pid, stats, path, sizeof path);
    tm_stats_snapshot s;
    if (access(path, R_OK) != 0)
        return;
    /* the default region must be the target's own (its user's 0700 directory and file) */
    if ((stats ? tm_stats_read(path, &s, why, sizeof why) : tm_stats_read_pid(pid, &s, why, sizeof why)) != 0) {
        if (!region_refusal_said)
            fprintf(stderr, "tiermem-heat: not using the target's stats region: %s\n", why);
        region_refusal_said = true;
        return;
    }
    for (size_t i = 0; i < s.record_count; i++)
        if (s.records[i].address) {
            tm_chunk_table_known(table, s.records[i].address, s.records[i].size, TM_EXTENT_REGION);
            if (launched)
                tm_chunk_table_known(launched, s.records[i].address, s.records[i].size, TM_EXTENT_REGION);
            tm_bpf_collector_know(collector, s.records[i].address, s.records[i].size);
        }
    tm_stats_snapshot_free(&s);
}

/* ---------------------------------------------------------------- output */

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
           ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

static int hotter(const void *a, const void *b)
{
    double x = ((const tm_heat_alloc_view *)a)->heat, y = ((const tm_heat_alloc_view *)b)->heat;
    return (x < y) - (x > y);
}

static void print_row(const tm_heat_alloc_view *v)
{
    char size[32];
    printf("0x%-16llx %12s %7u %8.3f %-5s %12.0f %12.0f %-9s %s\n", (unsigned long long)v->address,
           tm_format_size(v->size, size, sizeof size), v->chunk_count, v->heat, tm_heat_class_name(v->cls), v->reads,
           v->writes, tm_extent_name(v->from), v->kernel[0] ? v->kernel : "-");
}

static void print_top(tm_chunk_table *table, uint64_t tick, int pid, const struct tm_bpf_counts *n, int top)
{
    size_t count;
    tm_heat_alloc_view *v = tm_chunk_table_allocations(table, tick, &count);
    if (!v)
        return;
    qsort(v, count, sizeof *v, hotter);
    printf("tiermem-heat: pid %d: %llu launches, %llu copies, %llu touch events; %zu allocations\n", pid,
           (unsigned long long)n->launches, (unsigned long long)n->copies, (unsigned long long)n->touches, count);
    printf("%-18s %12s %7s %8s %-5s %12s %12s %-9s %s\n", "address", "size", "chunks", "heat", "class", "reads",
           "writes", "extent", "first kernel");
    for (size_t i = 0; i < count && (int)i < top; i++)
        print_row(&v[i]);
    if (count > (size_t)top) {
        printf("... coldest:\n");
        for (size_t i = count > (size_t)top * 2 ? count - (size_t)top : (size_t)top; i < count; i++)
            print_row(&v[i]);
    }
    fflush(stdout);
    free(v);
}

typedef struct files_json {
    int shown;
} files_json;

static void file_json(int fd, const struct tm_bpf_file *f, void *arg)
{
    files_json *j = arg;
    printf("%s{\"fd\":%d,\"path\":\"", j->shown++ ? "," : "", fd);
    for (const char *p = f->path; *p; p++)
        printf(*p == '"' || *p == '\\' ? "\\%c" : (unsigned char)*p < 0x20 ? "?" : "%c", *p);
    printf("\",\"read_calls\":%llu,\"read_bytes\":%llu,\"first_offset\":%lld,\"last_end\":%llu,\"mmap_bytes\":%llu}",
           f->read_calls, f->read_bytes, f->first_offset == ~0ull ? -1ll : (long long)f->first_offset, f->last_end,
           f->mmap_bytes);
}

static int view_at(const void *key, const void *view)
{
    uint64_t x = *(const uint64_t *)key, y = ((const tm_heat_alloc_view *)view)->address;
    return (x > y) - (x < y);
}

/* `launched` (or NULL): the launch attribution's table beside the touch probes' `table`. */
static void print_json(tm_chunk_table *table, tm_chunk_table *launched, tm_bpf_collector *c,
                       const tm_bpf_attach_report *r, uint64_t tick, int pid, double seconds, double cpu)
{
    struct tm_bpf_counts n;
    tm_bpf_collector_counts(c, &n);
    size_t count, launched_count = 0;
    tm_heat_alloc_view *v = tm_chunk_table_allocations(table, tick, &count);
    tm_heat_alloc_view *lv = launched ? tm_chunk_table_allocations(launched, tick, &launched_count) : NULL;
    printf("{\"pid\":%d,\"sources\":{\"touch\":%s,\"driver\":%s,\"files\":%s},\"launches\":%llu,\"copies\":%llu,"
           "\"allocs\":%llu,\"touches\":%llu,\"launch_credits\":%llu,\"dropped\":%llu,\"page_cache_adds\":%llu,\"seconds\":%.3f,"
           "\"collector_cpu_seconds\":%.3f,\n\"allocations\":[\n",
           pid, r->touch ? "true" : "false", r->driver ? "true" : "false", r->files ? "true" : "false", n.launches,
           n.copies, n.allocs, n.touches, n.launch_credits, n.dropped, n.page_cache_adds, seconds, cpu);
    for (size_t i = 0; v && i < count; i++) {
        printf("{\"address\":%llu,\"size\":%llu,\"extent\":\"%s\",\"heat\":%.6g,\"reads\":%.0f,\"writes\":%.0f,"
               "\"class\":\"%s\",\"kernel\":\"%s\",",
               (unsigned long long)v[i].address, (unsigned long long)v[i].size, tm_extent_name(v[i].from),
               v[i].heat, v[i].reads, v[i].writes, tm_heat_class_name(v[i].cls), v[i].kernel);
        const tm_heat_alloc_view *l = lv ? bsearch(&v[i].address, lv, launched_count, sizeof *lv, view_at) : NULL;
        if (lv)
            printf("\"launch_heat\":%.6g,\"launch_class\":\"%s\",", l ? l->heat : 0.0,
                   tm_heat_class_name(l ? l->cls : TM_HEAT_COLD));
        printf("\"chunks\":[");
        for (uint32_t k = 0; k < v[i].chunk_count; k++) {
            if (k)
                putchar(',');
            tm_chunk_table_chunk_json(table, stdout, v[i].first_chunk + ((uint64_t)k << 21), tick);
        }
        printf("]}%s\n", i + 1 < count ? "," : "");
    }
    printf("],\n\"files\":[");
    files_json j = { 0 };
    tm_bpf_collector_files(c, file_json, &j);
    printf("]}\n");
    free(v);
    free(lv);
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *to)
{
    fprintf(to, "usage: tiermem-heat [--json] [--duration S] [--interval S] [--record FILE] [--driver PATH]\n"
                "                    [--halflife S] [--top N] [--stats PATH] [--feed | --read-only] [--no-touch]\n"
                "                    (--pid PID | -- COMMAND ARGS...)\n"
                "       tiermem-heat --version\n"
                "The target's stats region is only read, unless --feed: then the heat measured is\n"
                "written into it (pwrite, offsets checked each time) for the process's heat policy.\n");
}

static bool parse_seconds(const char *text, double max, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (*end || !(v > 0 && v <= max))
        return false;
    *out = v;
    return true;
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option longs[] = {
        { "pid", required_argument, NULL, 'p' },      { "json", no_argument, NULL, 'j' },
        { "duration", required_argument, NULL, 'd' }, { "interval", required_argument, NULL, 'i' },
        { "record", required_argument, NULL, 'r' },   { "driver", required_argument, NULL, 'D' },
        { "halflife", required_argument, NULL, 'H' }, { "top", required_argument, NULL, 't' },
        { "stats", required_argument, NULL, 's' },    { "read-only", no_argument, NULL, 'R' },
        { "no-touch", no_argument, NULL, 'N' },       { "feed", no_argument, NULL, 'F' },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 },
    };
    *o = (options){ .interval = 1.0, .halflife_ns = TM_HEAT_DEFAULT_HALFLIFE_NS, .top = 8 };
    double halflife;
    for (int c; (c = getopt_long(argc, argv, "+p:jd:i:r:D:H:t:s:RNFVh", longs, NULL)) != -1;) {
        char *end;
        switch (c) {
        case 'p':
            o->pid = (int)strtol(optarg, &end, 10);
            if (*end || o->pid <= 0) {
                fprintf(stderr, "tiermem-heat: --pid '%s' is not a process id\n", optarg);
                return 1;
            }
            break;
        case 'j': o->json = true; break;
        case 'd':
            if (!parse_seconds(optarg, 1e7, &o->duration)) {
                fprintf(stderr, "tiermem-heat: --duration '%s' is not a number of seconds above 0\n", optarg);
                return 1;
            }
            break;
        case 'i':
            if (!parse_seconds(optarg, 3600, &o->interval)) {
                fprintf(stderr, "tiermem-heat: --interval '%s' is not a number of seconds (0 to 3600)\n", optarg);
                return 1;
            }
            break;
        case 'H':
            if (!parse_seconds(optarg, 1e6, &halflife)) {
                fprintf(stderr, "tiermem-heat: --halflife '%s' is not a number of seconds above 0\n", optarg);
                return 1;
            }
            o->halflife_ns = (uint64_t)(halflife * 1e9);
            break;
        case 't':
            o->top = (int)strtol(optarg, &end, 10);
            if (*end || o->top <= 0) {
                fprintf(stderr, "tiermem-heat: --top '%s' is not a positive number\n", optarg);
                return 1;
            }
            break;
        case 'r': o->record = optarg; break;
        case 'D': o->driver = optarg; break;
        case 's': o->stats = optarg; break;
        case 'R': o->feed = false; break;
        case 'F': o->feed = true; break;
        case 'V': printf("tiermem-heat %s\n", TM_VERSION); exit(0);
        case 'N': o->no_touch = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 1;
        }
    }
    if (optind < argc)
        o->command = &argv[optind];
    if (!o->pid == !o->command) {
        usage(stderr);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_options(argc, argv, &o))
        return 1;
    signal(SIGPIPE, SIG_IGN);
    char driver[4096] = "";
    int gate = -1, pid = o.pid;
    if (o.driver)
        snprintf(driver, sizeof driver, "%s", o.driver);
    if (o.command) {
        if (!driver[0] && !driver_by_search(driver, sizeof driver)) {
            fprintf(stderr, "tiermem-heat: cannot find libcuda.so.1 to probe (give --driver PATH)\n");
            return 2;
        }
        pid = start_held(o.command, &gate);
        if (pid < 0) {
            fprintf(stderr, "tiermem-heat: cannot start %s: %s\n", o.command[0], strerror(errno));
            return 2;
        }
    } else {
        /* a process may load its driver late: wait a while for it */
        for (int i = 0; !driver[0] && i < 100 && alive(pid); i++) {
            if (driver_of_pid(pid, driver, sizeof driver))
                break;
            sleep_s(0.05);
        }
        if (!alive(pid)) {
            fprintf(stderr, "tiermem-heat: no process %d (it exited or never was)\n", pid);
            return 2;
        }
        if (!driver[0]) {
            fprintf(stderr, "tiermem-heat: process %d has loaded no libcuda.so after 5 s\n", pid);
            return 2;
        }
    }

    tm_bpf_attach_report report;
    char why[512];
    tm_bpf_collector *collector = tm_bpf_collector_open(pid, driver, !o.no_touch, &report, why, sizeof why);
    if (!collector) {
        fprintf(stderr, "tiermem-heat: cannot use eBPF: %s; in-process heat (libtiermem.so, TIERMEM_HEAT=launch) "
                        "still works\n", why);
        if (gate >= 0) { /* the command runs anyway, unobserved */
            release(gate);
            int status;
            waitpid(pid, &status, 0);
        }
        return 3;
    }
    fprintf(stderr, "tiermem-heat: pid %d, driver %s: touch probes %s, driver uprobes %s, file tracepoints %s\n", pid,
            driver, report.touch ? "on" : "off", report.driver ? "on" : "off", report.files ? "on" : "off");
    if (!report.touch)
        fprintf(stderr, "tiermem-heat: %s\n", report.touch_why);
    if (!report.driver)
        fprintf(stderr, "tiermem-heat: %s\n", report.driver_why);
    if (!report.files)
        fprintf(stderr, "tiermem-heat: %s\n", report.files_why);

    tm_chunk_table *table = tm_chunk_table_new(o.halflife_ns);
    /* with exact bytes at hand, the launch attribution is measured beside them */
    tm_chunk_table *launched = report.touch && report.driver ? tm_chunk_table_new(o.halflife_ns) : NULL;
    FILE *record = o.record ? fopen(o.record, "wx") : NULL;
    if (o.record && !record)
        fprintf(stderr, "tiermem-heat: cannot create %s (%s); not recording\n", o.record, strerror(errno));
    if (gate >= 0)
        release(gate); /* probes are in place: the command may start */

    tm_region_writer *writer = NULL;
    bool writer_tried = false;
    uint64_t start = now_ns();
    double cpu_start = cpu_seconds();
    int status = 0;
    bool exited = false;
    while (!exited) {
        uint64_t step_end = now_ns() + (uint64_t)(o.interval * 1e9);
        while (!exited && now_ns() < step_end) {
            if (gate >= 0)
                exited = waitpid(pid, &status, WNOHANG) == pid;
            else
                exited = !alive(pid);
            if (!exited)
                sleep_s(o.interval < 0.05 ? o.interval : 0.05);
        }
        if (o.duration > 0 && (double)(now_ns() - start) / 1e9 >= o.duration)
            exited = true;
        if (!exited || gate < 0) {
            if (o.feed && !writer) {
                open_writer(&writer, &writer_tried, table, pid, o.stats);
                if (writer && launched)
                    tm_chunk_table_set_halflife(launched, tm_region_writer_tick_ns(writer) * TM_HEAT_TICKS_PER_HALFLIFE);
            }
            learn_extents(table, launched, collector, pid, o.stats);
        }
        tm_bpf_collector_allocations(collector, on_alloc, table);
        gather g = { .table = table, .tick = tm_chunk_table_tick(table, now_ns()) };
        /* exact bytes when the driver has touch probes; what launches could reach otherwise */
        if (report.touch)
            tm_bpf_collector_drain(collector, on_chunk, &g);
        else
            tm_bpf_collector_drain_launches(collector, on_chunk, &g);
        if (launched) {
            tm_bpf_collector_allocations(collector, on_alloc, launched);
            gather lg = { .table = launched, .tick = g.tick };
            tm_bpf_collector_drain_launches(collector, on_chunk, &lg);
        }
        if (writer && tm_region_writer_publish(writer, table, TM_HEAT_FROM_USDT, why, sizeof why) < 0) {
            fprintf(stderr, "tiermem-heat: no longer writing heat into the target's stats region: %s\n", why);
            tm_region_writer_close(writer);
            writer = NULL; /* writer_tried stays set: not opened again */
        }
        if (record)
            tm_chunk_table_record(table, record, (now_ns() - start) / 1000000, g.tick);
        if (!o.json) {
            struct tm_bpf_counts n;
            tm_bpf_collector_counts(collector, &n);
            print_top(table, g.tick, pid, &n, o.top);
        }
    }
    double seconds = (double)(now_ns() - start) / 1e9, cpu = cpu_seconds() - cpu_start;
    uint64_t tick = tm_chunk_table_tick(table, now_ns());
    if (o.json)
        print_json(table, launched, collector, &report, tick, pid, seconds, cpu);
    fprintf(stderr, "tiermem-heat: collector CPU %.3f s over %.3f s (%.2f%% of one core)\n", cpu, seconds,
            seconds > 0 ? 100.0 * cpu / seconds : 0.0);
    if (record)
        fclose(record);
    tm_region_writer_close(writer);
    tm_chunk_table_free(table);
    tm_chunk_table_free(launched);
    tm_bpf_collector_close(collector);
    if (gate >= 0 && !exited)
        waitpid(pid, &status, 0);
    return 0;
}
