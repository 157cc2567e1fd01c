/* tiermem-stat — prints the stats region of a process running under libtiermem.so.
 *
 *   tiermem-stat [--json|--prometheus] [--heat] [--watch] [--interval SECONDS] [--count N] PID|PATH
 *   tiermem-stat --serve [HOST:]PORT PID|PATH
 *   tiermem-stat --gc [LEDGER]
 *   tiermem-stat --ledger [PATH]
 *   tiermem-stat
 *
 * PID reads /dev/shm/tiermem-UID/tiermem.PID (region_path.h); a PATH reads a region kept with TIERMEM_STATS=PATH.
 * The table shows each tier (limit, bytes in use, peak, chunks), the allocation counts,
 * every chunked or managed allocation (address, size, chunks per tier, how it was asked
 * for, its heat and class) and the calls per hooked driver function. --json prints the
 * same as one JSON object, with the heat of every chunk; --prometheus prints it in the
 * Prometheus text format, and --serve ADDR serves that at http://ADDR/metrics until
 * SIGTERM (prometheus.c). --heat lists allocations hottest first. --watch reprints every
 * interval (default 1 s) until the process exits; --count stops after N prints. A PID's
 * region must belong to the user the process runs as. --gc removes the regions of
 * processes that are gone (killed before they could) and frees their entries in the
 * ledger (LEDGER, default this user's), checking each region again under its lock (gc.c). With no argument, every live
 * process under libtiermem.so gets one line. --ledger prints the ledger the processes of
 * this user (or PATH's group) share their lower-tier budgets through (ledger_view.c).
 * Exit status: 0, 1 bad arguments, 2 no readable region. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "policy/units.h"
#include "tools/tiermem-stat/gc.h"
#include "tools/tiermem-stat/ledger_view.h"
#include "tools/tiermem-stat/list.h"
#include "tools/tiermem-stat/prometheus.h"
#include "tools/tiermem-stat/stats_read.h"

static const char *path_name(uint32_t path)
{
    switch (path) {
    case TM_PATH_MEM_ALLOC: return "cuMemAlloc";
    case TM_PATH_MEM_ALLOC_PITCH: return "cuMemAllocPitch";
    case TM_PATH_MEM_ALLOC_ASYNC: return "cuMemAllocAsync";
    case TM_PATH_MEM_ALLOC_POOL: return "cuMemAllocFromPoolAsync";
    case TM_PATH_MEM_CREATE: return "cuMemCreate";
    case TM_PATH_MEM_ALLOC_MANAGED: return "cuMemAllocManaged";
    default: return "?";
    }
}

/* The region's path as it may be printed, in text and inside a JSON string. */
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

/* Nanoseconds since the last rebalance pass, or -1 (none yet, or the process is gone: its
 * monotonic clock means nothing then). */
static long long since_rebalance_ns(const tm_stats_header *h)
{
    struct timespec now;
    if (!h->last_rebalance_ns || h->state == TM_STATS_EXITED || clock_gettime(CLOCK_MONOTONIC, &now) != 0)
        return -1;
    uint64_t ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    return ns > h->last_rebalance_ns ? (long long)(ns - h->last_rebalance_ns) : 0;
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
    long long since = since_rebalance_ns(h);
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
            snprintf(with, sizeof with, "%s%s%s%s", path_name(r->path),
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

/* ---------------------------------------------------------------- JSON */

static void print_heat_json_header(const tm_stats_header *h)
{
    printf("\"heat_source\":\"%.16s\",\"heat_halflife_ns\":%llu,\"heat_samples\":%llu,\"heat_launches\":%llu,"
           "\"heat_sample_every\":%llu,\"heat_sample_ns\":%llu,\"heat_chunks_dropped\":%llu,\"heat_collector_pid\":%d,\n",
           h->heat_source, (unsigned long long)h->heat_tick_ns * TM_HEAT_TICKS_PER_HALFLIFE,
           (unsigned long long)h->heat_samples, (unsigned long long)h->heat_launches,
           (unsigned long long)h->heat_sample_every, (unsigned long long)h->heat_sample_ns,
           (unsigned long long)h->heat_chunks_dropped, h->heat_collector_pid);
}

static void print_json(const tm_stats_snapshot *s, const char *path, const size_t *order)
{
    const tm_stats_header *h = &s->header;
    printf("{\"pid\":%d,\"state\":\"%s\",\"region\":\"%s\",\"device\":%d,\"device_memory\":%llu,"
           "\"chunk_size\":%llu,\"min_tiered\":%llu,\"hbm_reserve\":%llu,\"policy\":\"%.16s\","
           "\"tier_order\":\"%.16s\",\"meminfo\":\"%.16s\",\"backing\":\"%s\",\n",
           h->pid, state_name(h), shown_path(path), h->device, (unsigned long long)h->device_memory,
           (unsigned long long)h->chunk_size, (unsigned long long)h->min_tiered, (unsigned long long)h->hbm_reserve,
           h->policy, h->tier_order, h->meminfo, h->backing == TM_STATS_BACKING_PINNED_HOST ? "pinned_host" : "vmm");
    printf("\"tiers\":[\n");
    for (int t = 0; t < TM_STATS_TIERS; t++) {
        const tm_stats_tier *tier = &h->tier[t];
        printf("{\"name\":\"%.8s\",\"present\":%s,\"node\":%d,\"limit\":%llu,\"used\":%llu,\"peak\":%llu,"
               "\"chunks\":%llu}%s\n",
               tier->name, tier->present ? "true" : "false", tier->numa_node, (unsigned long long)tier->limit,
               (unsigned long long)tier->used, (unsigned long long)tier->peak, (unsigned long long)tier->chunks,
               t + 1 < TM_STATS_TIERS ? "," : "");
    }
    printf("],\n\"devices\":[");
    for (uint32_t d = 0; d < h->device_count && d < TM_STATS_DEVICES; d++) {
        const tm_stats_device *dev = &h->devices[d];
        printf("%s{\"ordinal\":%d,\"host_node\":%d,\"hbm_limit\":%llu,\"hbm_used\":%llu,\"hbm_peak\":%llu,"
               "\"hbm_chunks\":%llu}",
               d ? ",\n" : "\n", dev->ordinal, dev->host_node, (unsigned long long)dev->hbm_limit,
               (unsigned long long)dev->hbm_used, (unsigned long long)dev->hbm_peak,
               (unsigned long long)dev->hbm_chunks);
    }
    printf("],\n\"small_count\":%llu,\"small_bytes\":%llu,\"tiered_count\":%llu,\"tiered_bytes\":%llu,"
           "\"managed_count\":%llu,\"managed_bytes\":%llu,\"alloc_total\":%llu,\"free_total\":%llu,"
           "\"oom_total\":%llu,\"passthrough_total\":%llu,\"records_dropped\":%llu,\n",
           (unsigned long long)h->small_count, (unsigned long long)h->small_bytes,
           (unsigned long long)h->tiered_count, (unsigned long long)h->tiered_bytes,
           (unsigned long long)h->managed_count, (unsigned long long)h->managed_bytes,
           (unsigned long long)h->alloc_total, (unsigned long long)h->free_total, (unsigned long long)h->oom_total,
           (unsigned long long)h->passthrough_total, (unsigned long long)h->records_dropped);
    print_heat_json_header(h);
    printf("\"migrations\":%llu,\"migrated_bytes\":%llu,\"migration_rewrites\":%llu,\"pool_hits\":%llu,"
           "\"pool_misses\":%llu,\"ping_pongs\":%llu,\"migrate_rate\":%llu,\"last_rebalance_ns\":%llu,\n",
           (unsigned long long)h->migrations, (unsigned long long)h->migrated_bytes,
           (unsigned long long)h->migration_rewrites, (unsigned long long)h->pool_hits,
           (unsigned long long)h->pool_misses, (unsigned long long)h->ping_pongs,
           (unsigned long long)h->migrate_rate, (unsigned long long)h->last_rebalance_ns);
    printf("\"chunks_created\":%llu,\"chunks_reused\":%llu,",
           (unsigned long long)h->chunks_created, (unsigned long long)h->chunks_reused);
    printf("\"rebalance_budget\":%llu,\"since_rebalance_ns\":%lld,\"migrations_by_pair\":{",
           (unsigned long long)h->rebalance_budget, since_rebalance_ns(h));
    for (int from = 0; from < TM_STATS_TIERS; from++)
        for (int slot = 0; slot < TM_STATS_TIERS - 1; slot++)
            printf("%s\"%.8s>%.8s\":%llu", from || slot ? "," : "", h->tier[from].name,
                   h->tier[pair_target(from, slot)].name, (unsigned long long)h->tier[from].migrated_out[slot]);
    printf("},\n");
    printf("\"name_moves_queued\":%llu,\"name_moves_done\":%llu,\"file_tier\":%s,\"file_dropped\":%llu,"
           "\"file_drops\":%llu,\"file_faults\":%llu,\"file_fault_bytes\":%llu,\"file_refused\":%llu,\n",
           (unsigned long long)h->name_moves_queued, (unsigned long long)h->name_moves_done,
           h->file_tier ? "true" : "false", (unsigned long long)h->file_dropped, (unsigned long long)h->file_drops,
           (unsigned long long)h->file_faults, (unsigned long long)h->file_fault_bytes,
           (unsigned long long)h->file_refused);
    printf("\"allocations\":[\n");
    for (size_t k = 0; k < s->record_count; k++) {
        size_t i = order[k];
        const tm_stats_record *r = &s->records[i];
        printf("{\"address\":%llu,\"size\":%llu,\"chunks\":{\"hbm\":%u,\"cxl\":%u,\"ddr\":%u},\"path\":\"%s\","
               "\"pinned_host\":%s,\"managed\":%s,\"read_mostly\":%s,\"tensor\":%s%s%s,\"tensors\":%u",
               (unsigned long long)r->address, (unsigned long long)r->size, r->chunks[0], r->chunks[1], r->chunks[2],
               path_name(r->path), r->flags & TM_STATS_RECORD_PINNED_HOST ? "true" : "false",
               r->flags & TM_STATS_RECORD_MANAGED ? "true" : "false",
               r->flags & TM_STATS_RECORD_READ_MOSTLY ? "true" : "false",
               r->name[0] ? "\"" : "", r->name[0] ? r->name : "null", r->name[0] ? "\"" : "", r->tensors);
        tm_heat_view_json(stdout, &s->heat[i]);
        printf("}%s\n", k + 1 < s->record_count ? "," : "");
    }
    printf("],\n\"calls\":{");
    int shown = 0;
    for (uint32_t i = 0; i < h->call_count; i++)
        printf("%s\"%.*s\":%llu", shown++ ? "," : "", (int)sizeof s->calls[i].symbol, s->calls[i].symbol,
               (unsigned long long)s->calls[i].calls);
    printf("}}\n");
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *to)
{
    fprintf(to, "usage: tiermem-stat [--json|--prometheus] [--heat] [--watch] [--interval SECONDS] [--count N] PID|PATH\n"
                "       tiermem-stat --serve [HOST:]PORT PID|PATH\n"
                "       tiermem-stat --gc [LEDGER]   (leftovers of processes that are gone)\n"
                "       tiermem-stat --ledger [PATH]   (the lower-tier bytes tiermem processes share)\n"
                "       tiermem-stat            (every live process under libtiermem.so)\n");
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

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "json", no_argument, NULL, 'j' },     { "watch", no_argument, NULL, 'w' },
        { "interval", required_argument, NULL, 'i' }, { "count", required_argument, NULL, 'n' },
        { "heat", no_argument, NULL, 'H' },     { "gc", no_argument, NULL, 'g' },
        { "prometheus", no_argument, NULL, 'P' }, { "serve", required_argument, NULL, 'S' },
        { "ledger", no_argument, NULL, 'L' },   { "help", no_argument, NULL, 'h' },
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
                return 1;
            }
            break;
        case 'n':
            count = strtol(optarg, &end, 10);
            if (*end || count <= 0) {
                fprintf(stderr, "tiermem-stat: --count '%s' is not a positive number\n", optarg);
                return 1;
            }
            break;
        case 'g': gc = true; break;
        case 'L': ledger = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 1;
        }
    }
    if (ledger && optind >= argc - 1)
        return tm_ledger_print(optind < argc ? argv[optind] : NULL);
    if (gc && optind >= argc - 1) {
        printf("tiermem-stat: %d regions removed\n", tm_stats_gc("/dev/shm", optind < argc ? argv[optind] : NULL));
        return 0;
    }
    if (!gc && !json && !prometheus && !serve && !watch && !by_heat && count < 0 && optind == argc) {
        tm_stats_list("/dev/shm");
        return 0;
    }
    if (gc || optind != argc - 1) {
        usage(stderr);
        return 1;
    }
    char path[4096];
    pid_t pid = 0;
    if (all_digits(argv[optind])) {
        pid = (pid_t)atol(argv[optind]);
        tm_stats_default_path(pid, path, sizeof path);
    }
    else
        snprintf(path, sizeof path, "%s", argv[optind]);
    if (serve)
        return tm_stats_serve(serve, path);
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
            fprintf(stderr, "tiermem-stat: %s\n", shown_path(why));
            return 2;
        }
        size_t *order = malloc((snapshot.record_count ? snapshot.record_count : 1) * sizeof *order);
        if (!order) {
            fprintf(stderr, "tiermem-stat: out of memory\n");
            return 2;
        }
        for (size_t i = 0; i < snapshot.record_count; i++)
            order[i] = i;
        if (by_heat)
            tm_heat_view_order(snapshot.heat, snapshot.record_count, order);
        if (watch && !json && !prometheus)
            printf("\033[H\033[2J");
        if (prometheus)
            tm_stats_print_prometheus(&snapshot, stdout);
        else if (json)
            print_json(&snapshot, path, order);
        else
            print_table(&snapshot, path, order);
        fflush(stdout);
        free(order);
        tm_stats_snapshot_free(&snapshot);
        if (printed + 1 == count)
            break;
        nanosleep(&(struct timespec){ .tv_sec = (time_t)interval,
                                      .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9) }, NULL);
    }
    return 0;
}
