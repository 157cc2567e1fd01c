/* tiermem-stat — prints the stats regions of processes running under libtiermem.so.
 *
 *   tiermem-stat [--json|--prometheus] [--heat] [--watch] [--interval SECONDS] [--count N] [PID|PATH]
 *   tiermem-stat --serve [HOST:]PORT [PID|PATH]
 *   tiermem-stat --gc [LEDGER]
 *   tiermem-stat --ledger [PATH]
 *   tiermem-stat --version
 *
 * PID reads that process's region, /dev/shm/tiermem-UID/tiermem.PID (region_path.h); a PATH reads a region kept with
 * TIERMEM_STATS=PATH. The table shows each tier (limit, bytes in use, peak, chunks), the
 * allocation counts, every chunked or managed allocation (address, size, chunks per tier,
 * how it was asked for, its heat and class) and the calls per hooked driver function.
 * --json prints the same as one JSON object (stat_json.c), with the heat of every chunk;
 * --prometheus prints it in the Prometheus text format, and --serve ADDR serves that at
 * http://ADDR/metrics until SIGTERM (prometheus.c). --heat lists allocations hottest
 * first. --watch reprints every interval (default 1 s) until the process exits; --count
 * stops after N prints. A PID's region must belong to the user the process runs as.
 *
 * Without PID or PATH every live process under libtiermem.so is shown: one line each
 * (list.c), a JSON array of their objects with --json, all of them in one exposition with
 * --prometheus, and --serve follows them as they start and exit (one exporter per node).
 *
 * --gc removes the regions of processes that are gone (killed before they could) and
 * frees their entries in the ledger (LEDGER, default this user's), checking each region
 * again under its lock (gc.c). --ledger prints the ledger the processes of this user (or
 * PATH's group) share their lower-tier budgets through (ledger_view.c).
 *
 * Exit status: 0; 1 bad arguments; 2 no readable region (process N is not under
 * libtiermem, or its region cannot be read); 3 no process N (and no region of it). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy/units.h"
#include "tools/tiermem-stat/gc.h"
#include "tools/tiermem-stat/ledger_view.h"
#include "tools/tiermem-stat/list.h"
#include "tools/tiermem-stat/prometheus.h"
#include "tools/tiermem-stat/stat_json.h"
#include "tools/tiermem-stat/stats_read.h"

/* Where --gc looks for leftover regions. */
#define REGION_DIR "/dev/shm"

enum { EXIT_BAD_ARGS = 1, EXIT_NO_REGION = 2, EXIT_NO_PROCESS = 3 };

/* The region's path as it may be printed in text (JSON escapes it itself). */
static const char *shown_path(const char *path)
{
    static char shown[4096];
    size_t i = 0;
    for (; path[i] && i + 1 < sizeof shown; i++)
        shown[i] = path[i] < 0x20 || path[i] == 0x7f || path[i] == '"' || path[i] == '\\' ? '?' : path[i];
    shown[i] = '\0';
    return shown;
}

static const char *state_name(const tm_stats_header *h)
{
    if (h->state == TM_STATS_EXITED)
        return "exited";
    if (kill(h->pid, 0) != 0 && errno == ESRCH)
        return "gone, region left behind";
    return "running";
}

/* ---------------------------------------------------------------- table */

/* The tier a tier's migrated_out[slot] counts moves to (stats_layout.h). */
static int pair_target(int from, int slot)
{
    return slot < from ? slot : slot + 1;
}

/* "moved hbm>ddr 5, ddr>hbm 5; last pass 0.12 s ago, its budget 20 MiB" */
static void print_migration_pairs(const tm_stats_header *h)
{
    const char *sep = "moved ";
    for (int from = 0; from < TM_STATS_TIERS; from++)
        for (int slot = 0; slot < TM_STATS_TIERS - 1; slot++)
            if (h->tier[from].migrated_out[slot]) {
                printf("%s%.8s>%.8s %llu", sep, h->tier[from].name, h->tier[pair_target(from, slot)].name,
                       (unsigned long long)h->tier[from].migrated_out[slot]);
                sep = ", ";
            }
    if (!h->last_rebalance_ns) {
        printf("%sno rebalance pass yet\n", *sep == 'm' ? "" : "; ");
        return;
    }
    char a[32];
    long long since = tm_stats_since_rebalance_ns(h);
    printf("%slast pass ", *sep == 'm' ? "" : "; ");
    if (since >= 0)
        printf("%.2f s ago", since / 1e9);
    else
        printf("before exit");
    printf(", its budget %s\n", tm_format_size(h->rebalance_budget, a, sizeof a));
}

/* "migrations 12 (24 MiB; 3 copied again), pool 10 hit 2 missed, ping-pongs 0": only
 * once something moved. */
static void print_migration_summary(const tm_stats_header *h)
{
    if (!h->migrations && !h->migrate_rate)
        return;
    char a[32];
    printf("migrations %llu (%s; %llu copied again), pool %llu hit %llu missed, ping-pongs %llu",
           (unsigned long long)h->migrations, tm_format_size(h->migrated_bytes, a, sizeof a),
           (unsigned long long)h->migration_rewrites, (unsigned long long)h->pool_hits,
           (unsigned long long)h->pool_misses, (unsigned long long)h->ping_pongs);
    if (h->migrate_rate)
        printf(", budget %s/s", tm_format_size(h->migrate_rate, a, sizeof a));
    printf("\n");
    print_migration_pairs(h);
}

/* "file tier: 12 chunks dropped now (40 in all), 28 read back (56 MiB), 0 refused": only
 * with TIERMEM_FILE_TIER=1. */
static void print_file_tier_summary(const tm_stats_header *h)
{
    if (!h->file_tier)
        return;
    char a[32];
    printf("file tier: %llu chunks dropped now (%llu in all), %llu read back (%s), %llu refused\n",
           (unsigned long long)h->file_dropped, (unsigned long long)h->file_drops,
           (unsigned long long)h->file_faults, tm_format_size(h->file_fault_bytes, a, sizeof a),
           (unsigned long long)h->file_refused);
}

static void print_heat_summary(const tm_stats_header *h)
{
    printf("heat: %.16s, half-life %.3gs; %llu of %llu launches sampled (now 1 in %llu, %llu ns each)%s\n",
           h->heat_source, (double)h->heat_tick_ns * TM_HEAT_TICKS_PER_HALFLIFE / 1e9,
           (unsigned long long)h->heat_samples, (unsigned long long)h->heat_launches,
           (unsigned long long)h->heat_sample_every, (unsigned long long)h->heat_sample_ns,
           h->heat_chunks_dropped ? "; some allocations have no chunk heat (pool full)" : "");
}

static void print_table(const tm_stats_snapshot *s, const char *path, const size_t *order)
{
    const tm_stats_header *h = &s->header;
    char a[32], b[32], c[32], d[32];
    printf("tiermem: pid %d (%s), region %s\n", h->pid, state_name(h), shown_path(path));
    printf("device %d with %s; chunk %s, chunked from %s, hbm reserve %s; policy %s, order %s, meminfo %s; "
           "lower tiers %s\n",
           h->device, tm_format_size(h->device_memory, a, sizeof a), tm_format_size(h->chunk_size, b, sizeof b),
           tm_format_size(h->min_tiered, c, sizeof c), tm_format_size(h->hbm_reserve, d, sizeof d), h->policy,
           h->tier_order, h->meminfo, h->backing == TM_STATS_BACKING_PINNED_HOST ? "pinned host memory" : "VMM");
    printf("\n%-5s %-6s %12s %12s %12s %8s\n", "tier", "where", "limit", "used", "peak", "chunks");
    for (int t = 0; t < TM_STATS_TIERS; t++) {
        const tm_stats_tier *tier = &h->tier[t];
        char where[16];
        if (!tier->present) {
            printf("%-5s %-6s %12s %12s %12s %8s\n", tier->name, "-", "absent", "-", "-", "-");
            continue;
        }
        snprintf(where, sizeof where, t == 0 ? "gpu%d" : "node%d", tier->numa_node);
        printf("%-5s %-6s %12s %12s %12s %8llu\n", tier->name, where, tm_format_size(tier->limit, a, sizeof a),
               tm_format_size(tier->used, b, sizeof b), tm_format_size(tier->peak, c, sizeof c),
               (unsigned long long)tier->chunks);
    }
    /* with several devices, the hbm row is their sum: each one's own follows */
    for (uint32_t i = 0; h->device_count > 1 && i < h->device_count && i < TM_STATS_DEVICES; i++) {
        const tm_stats_device *dev = &h->devices[i];
        char where[16];
        snprintf(where, sizeof where, "gpu%d", dev->ordinal);
        printf("%-5s %-6s %12s %12s %12s %8llu\n", "hbm", where, tm_format_size(dev->hbm_limit, a, sizeof a),
               tm_format_size(dev->hbm_used, b, sizeof b), tm_format_size(dev->hbm_peak, c, sizeof c),
               (unsigned long long)dev->hbm_chunks);
    }
    printf("\nsmall allocations %llu (%s, in hbm); chunked %llu (%s); managed %llu (%s)\n",
           (unsigned long long)h->small_count, tm_format_size(h->small_bytes, a, sizeof a),
           (unsigned long long)h->tiered_count, tm_format_size(h->tiered_bytes, b, sizeof b),
           (unsigned long long)h->managed_count, tm_format_size(h->managed_bytes, c, sizeof c));
    printf("allocations %llu, frees %llu, out of memory %llu, passed through after an error %llu, "
           "records %llu (%llu not recorded)\n",
           (unsigned long long)h->alloc_total, (unsigned long long)h->free_total, (unsigned long long)h->oom_total,
           (unsigned long long)h->passthrough_total, (unsigned long long)h->records_used,
           (unsigned long long)h->records_dropped);
    print_heat_summary(h);
    print_migration_summary(h);
    print_file_tier_summary(h);
    if (h->streamed_bytes) /* the heat policy's staging ring (stream_ring.h) */
        printf("stream ring: %s copied into the HBM staging ring\n", tm_format_size(h->streamed_bytes, a, sizeof a));
    if (s->record_count) {
        printf("\n%-18s %12s %8s %8s %8s %8s %-5s  %-18s %s\n", "address", "size", "hbm", "cxl", "ddr", "heat",
               "class", "allocated with", "tensor");
        for (size_t k = 0; k < s->record_count; k++) {
            size_t i = order[k];
            const tm_stats_record *r = &s->records[i];
            const tm_heat_view *v = &s->heat[i];
            char address[24];
            if (r->address)
                snprintf(address, sizeof address, "0x%llx", (unsigned long long)r->address);
            else
                snprintf(address, sizeof address, "(handle)");
            char heat[16], with[96], tensor[sizeof r->name + 32] = "-";
            snprintf(heat, sizeof heat, v->chunk_count ? "%.3f" : "-", v->heat);
            snprintf(with, sizeof with, "%s%s%s%s", tm_stats_path_name(r->path),
                     r->flags & TM_STATS_RECORD_PINNED_HOST ? " (pinned host)" : "",
                     r->flags & TM_STATS_RECORD_MANAGED && r->path != TM_PATH_MEM_ALLOC_MANAGED ? " (managed)" : "",
                     r->flags & TM_STATS_RECORD_READ_MOSTLY ? " (read-mostly)" : "");
            if (r->name[0] && r->tensors > 1)
                snprintf(tensor, sizeof tensor, "%s (+%u more)", r->name, r->tensors - 1);
            else if (r->name[0])
                snprintf(tensor, sizeof tensor, "%s", r->name);
            printf("%-18s %12s %8u %8u %8u %8s %-5s  %-18s %s\n", address, tm_format_size(r->size, a, sizeof a),
                   r->chunks[0], r->chunks[1], r->chunks[2], heat, v->chunk_count ? tm_heat_class_name(v->cls) : "-",
                   with, tensor);
        }
    }
    printf("\ncalls:");
    int shown = 0;
    for (uint32_t i = 0; i < h->call_count; i++) {
        if (!s->calls[i].calls)
            continue;
        printf("%s %.*s %llu", shown++ ? "," : "", (int)sizeof s->calls[i].symbol, s->calls[i].symbol,
               (unsigned long long)s->calls[i].calls);
    }
    printf("%s\n", shown ? "" : " none");
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *to)
{
    fprintf(to, "usage: tiermem-stat [--json|--prometheus] [--heat] [--watch] [--interval SECONDS] [--count N] [PID|PATH]\n"
                "       tiermem-stat --serve [HOST:]PORT [PID|PATH]   (no PID: every process on this node)\n"
                "       tiermem-stat --gc [LEDGER]   (leftovers of processes that are gone)\n"
                "       tiermem-stat --ledger [PATH]   (the lower-tier bytes tiermem processes share)\n"
                "       tiermem-stat            (every live process under libtiermem.so)\n"
                "       tiermem-stat --version\n");
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Why process `pid` has no region to read: exit 3 for no such process, 2 for a process
 * not under libtiermem (no region of its own), else 2 with the reader's reason. */
static int no_region(pid_t pid, const char *path, const char *why)
{
    char proc[64];
    struct stat st;
    snprintf(proc, sizeof proc, "/proc/%d", (int)pid);
    bool region_exists = lstat(path, &st) == 0 || errno != ENOENT;
    if (!region_exists && stat(proc, &st) != 0) {
        fprintf(stderr, "tiermem-stat: no process %d\n", (int)pid);
        return EXIT_NO_PROCESS;
    }
    if (!region_exists) {
        fprintf(stderr, "tiermem-stat: process %d is not under libtiermem (it has no stats region %s: it runs "
                "without libtiermem.so, has not allocated device memory yet, or keeps its region elsewhere with "
                "TIERMEM_STATS)\n", (int)pid, shown_path(path));
        return EXIT_NO_REGION;
    }
    fprintf(stderr, "tiermem-stat: %s\n", shown_path(why));
    return EXIT_NO_REGION;
}

static void sleep_for(double interval)
{
    nanosleep(&(struct timespec){ .tv_sec = (time_t)interval,
                                  .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9) }, NULL);
}

/* Every live process: the table, their JSON or their metrics, `count` times (< 0: until
 * interrupted). */
static int show_all(bool json, bool prometheus, bool by_heat, bool watch, double interval, long count)
{
    for (long printed = 0; count < 0 || printed < count; printed++) {
        if (watch && !json && !prometheus)
            printf("\033[H\033[2J");
        int rc = 0;
        if (json) {
            rc = tm_stats_list_json(by_heat);
        } else if (prometheus) {
            tm_stats_live *live;
            int n = tm_stats_read_live(&live);
            rc = n < 0 ? -1 : tm_stats_print_prometheus(live, n, stdout);
            if (n > 0)
                tm_stats_live_free(live, n);
        } else {
            rc = tm_stats_list() < 0 ? -1 : 0;
        }
        fflush(stdout);
        if (rc != 0)
            return EXIT_NO_REGION;
        if (printed + 1 == count)
            break;
        sleep_for(interval);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "json", no_argument, NULL, 'j' },     { "watch", no_argument, NULL, 'w' },
        { "interval", required_argument, NULL, 'i' }, { "count", required_argument, NULL, 'n' },
        { "heat", no_argument, NULL, 'H' },     { "gc", no_argument, NULL, 'g' },
        { "prometheus", no_argument, NULL, 'P' }, { "serve", required_argument, NULL, 'S' },
        { "ledger", no_argument, NULL, 'L' },   { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    bool json = false, watch = false, gc = false, by_heat = false, prometheus = false, ledger = false;
    const char *serve = NULL;
    double interval = 1.0;
    long count = -1;
    for (int c; (c = getopt_long(argc, argv, "jwi:n:h", options, NULL)) != -1;) {
        char *end;
        switch (c) {
        case 'j': json = true; break;
        case 'w': watch = true; break;
        case 'H': by_heat = true; break;
        case 'P': prometheus = true; break;
        case 'S': serve = optarg; break;
        case 'i':
            interval = strtod(optarg, &end);
            if (*end || !(interval > 0 && interval <= 3600)) {
                fprintf(stderr, "tiermem-stat: --interval '%s' is not a number of seconds (0 to 3600)\n", optarg);
                return EXIT_BAD_ARGS;
            }
            break;
        case 'n':
            count = strtol(optarg, &end, 10);
            if (*end || count <= 0) {
                fprintf(stderr, "tiermem-stat: --count '%s' is not a positive number\n", optarg);
                return EXIT_BAD_ARGS;
            }
            break;
        case 'g': gc = true; break;
        case 'L': ledger = true; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("tiermem-stat %s\n", TM_VERSION); return 0;
        default: usage(stderr); return EXIT_BAD_ARGS;
        }
    }
    if (ledger && optind >= argc - 1)
        return tm_ledger_print(optind < argc ? argv[optind] : NULL);
    if (gc && optind >= argc - 1) {
        printf("tiermem-stat: %d regions removed\n", tm_stats_gc(REGION_DIR, optind < argc ? argv[optind] : NULL));
        return 0;
    }
    if (gc || ledger || optind < argc - 1 || (json && prometheus)) {
        usage(stderr);
        return EXIT_BAD_ARGS;
    }
    if (serve && (json || prometheus || watch || by_heat || count >= 0)) {
        fprintf(stderr, "tiermem-stat: --serve takes no other option (it serves the Prometheus text)\n");
        return EXIT_BAD_ARGS;
    }
    if (optind == argc) {
        if (serve)
            return tm_stats_serve(serve, NULL, 0);
        return show_all(json, prometheus, by_heat, watch, interval, watch || count > 0 ? count : 1);
    }
    char path[4096];
    pid_t pid = 0;
    if (all_digits(argv[optind])) {
        long n = atol(argv[optind]);
        if (n <= 0 || n > 0x3fffffff || strlen(argv[optind]) > 10) {
            fprintf(stderr, "tiermem-stat: '%s' is not a process id\n", argv[optind]);
            return EXIT_BAD_ARGS;
        }
        pid = (pid_t)n;
        tm_stats_default_path(pid, path, sizeof path);
    } else {
        snprintf(path, sizeof path, "%s", argv[optind]);
    }
    if (serve)
        return tm_stats_serve(serve, path, pid);
    if (!watch && count < 0)
        count = 1;

    for (long printed = 0; count < 0 || printed < count; printed++) {
        tm_stats_snapshot snapshot;
        char why[4200];
        int got = pid ? tm_stats_read_pid(pid, &snapshot, why, sizeof why)
                      : tm_stats_read(path, &snapshot, why, sizeof why);
        if (got != 0) {
            if (printed > 0) {
                printf("tiermem: the process has exited (%s)\n", shown_path(why));
                return 0;
            }
            if (pid)
                return no_region(pid, path, why);
            fprintf(stderr, "tiermem-stat: %s\n", shown_path(why));
            return EXIT_NO_REGION;
        }
        size_t *order = tm_heat_view_order_new(snapshot.heat, snapshot.record_count, by_heat);
        if (!order) {
            fprintf(stderr, "tiermem-stat: out of memory\n");
            tm_stats_snapshot_free(&snapshot);
            return EXIT_NO_REGION;
        }
        if (watch && !json && !prometheus)
            printf("\033[H\033[2J");
        int rc = 0;
        tm_stats_live one = { .pid = (pid_t)snapshot.header.pid, .snapshot = snapshot };
        tm_stats_command(one.pid, one.command, sizeof one.command);
        if (prometheus) {
            rc = tm_stats_print_prometheus(&one, 1, stdout);
        } else if (json) {
            json_t *doc = tm_stats_json(&snapshot, path, one.command[0] ? one.command : NULL, state_name(&snapshot.header),
                                        order);
            rc = doc ? tm_stats_json_write(doc, stdout) : -1;
            if (!doc)
                fprintf(stderr, "tiermem-stat: out of memory\n");
            json_decref(doc);
        } else {
            print_table(&snapshot, path, order);
        }
        fflush(stdout);
        free(order);
        tm_stats_snapshot_free(&snapshot);
        if (rc != 0)
            return EXIT_NO_REGION;
        if (printed + 1 == count)
            break;
        sleep_for(interval);
    }
    return 0;
}
