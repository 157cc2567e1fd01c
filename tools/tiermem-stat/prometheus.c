/* prometheus.c — see prometheus.h. HTTP is libmicrohttpd's (one internal thread). */
#include "tools/tiermem-stat/prometheus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- text */

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP tiermem_%s %s\n# TYPE tiermem_%s %s\n", name, help, name, type);
}

void tm_stats_print_prometheus(const tm_stats_snapshot *s, FILE *out)
{
    const tm_stats_header *h = &s->header;
    bool running = h->state != TM_STATS_EXITED && !(kill(h->pid, 0) != 0 && errno == ESRCH);
    family(out, "info", "gauge", "The interposed process and its settings.");
    fprintf(out, "tiermem_info{pid=\"%d\",policy=\"%.16s\",meminfo=\"%.16s\",tier_order=\"%.16s\",backing=\"%s\"} 1\n",
            h->pid, h->policy, h->meminfo, h->tier_order,
            h->backing == TM_STATS_BACKING_PINNED_HOST ? "pinned_host" : "vmm");
    family(out, "process_running", "gauge", "1 while the process runs, 0 after it exited.");
    fprintf(out, "tiermem_process_running %d\n", running);
    family(out, "device_memory_bytes", "gauge", "Memory of the tiered device.");
    fprintf(out, "tiermem_device_memory_bytes %llu\n", (unsigned long long)h->device_memory);
    family(out, "chunk_bytes", "gauge", "Bytes per chunk (the VMM granularity).");
    fprintf(out, "tiermem_chunk_bytes %llu\n", (unsigned long long)h->chunk_size);

    static const struct { const char *name, *type, *help; } tier_families[] = {
        {"tier_present", "gauge", "1 when the tier exists on this machine."},
        {"tier_limit_bytes", "gauge", "Bytes the process may place in the tier."},
        {"tier_used_bytes", "gauge", "Bytes placed in the tier now."},
        {"tier_peak_bytes", "gauge", "The most bytes placed in the tier."},
        {"tier_chunks", "gauge", "Chunks placed in the tier now."},
    };
    for (size_t f = 0; f < sizeof tier_families / sizeof *tier_families; f++) {
        family(out, tier_families[f].name, tier_families[f].type, tier_families[f].help);
        for (int t = 0; t < TM_STATS_TIERS; t++) {
            const tm_stats_tier *tier = &h->tier[t];
            uint64_t v[] = {tier->present, tier->limit, tier->used, tier->peak, tier->chunks};
            if (f > 0 && !tier->present) continue;
            fprintf(out, "tiermem_%s{tier=\"%.8s\",node=\"%d\"} %llu\n", tier_families[f].name, tier->name,
                    tier->numa_node, (unsigned long long)v[f]);
        }
    }

    family(out, "allocations", "gauge", "Live allocations by kind.");
    fprintf(out, "tiermem_allocations{kind=\"small\"} %llu\ntiermem_allocations{kind=\"chunked\"} %llu\n"
            "tiermem_allocations{kind=\"managed\"} %llu\n", (unsigned long long)h->small_count,
            (unsigned long long)h->tiered_count, (unsigned long long)h->managed_count);
    family(out, "allocation_bytes", "gauge", "Requested bytes of the live allocations by kind.");
    fprintf(out, "tiermem_allocation_bytes{kind=\"small\"} %llu\ntiermem_allocation_bytes{kind=\"chunked\"} %llu\n"
            "tiermem_allocation_bytes{kind=\"managed\"} %llu\n", (unsigned long long)h->small_bytes,
            (unsigned long long)h->tiered_bytes, (unsigned long long)h->managed_bytes);
    static const struct { const char *name, *help; } counters[] = {
        {"allocations_total", "Allocations made through the interposer."},
        {"frees_total", "Frees made through the interposer."},
        {"out_of_memory_total", "CUDA_ERROR_OUT_OF_MEMORY answers because no tier had room."},
        {"passthrough_total", "Calls passed straight through after an internal error."},
        {"records_dropped_total", "Chunked allocations without a record (the region was full)."},
    };
    uint64_t counts[] = {h->alloc_total, h->free_total, h->oom_total, h->passthrough_total, h->records_dropped};
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++) {
        family(out, counters[i].name, "counter", counters[i].help);
        fprintf(out, "tiermem_%s %llu\n", counters[i].name, (unsigned long long)counts[i]);
    }
    family(out, "driver_calls_total", "counter", "Calls per hooked driver symbol.");
    for (uint32_t i = 0; i < h->call_count; i++)
        if (s->calls[i].calls)
            fprintf(out, "tiermem_driver_calls_total{symbol=\"%.*s\"} %llu\n", (int)sizeof s->calls[i].symbol,
                    s->calls[i].symbol, (unsigned long long)s->calls[i].calls);
}

/* ---------------------------------------------------------------- serving */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload, (void)upload_size, (void)con_cls;
    const char *path = cls;
    unsigned status = MHD_HTTP_OK;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return MHD_NO;
    if (strcmp(method, "GET") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        fputs("use GET\n", out);
    } else if (strcmp(url, "/metrics") != 0) {
        status = MHD_HTTP_NOT_FOUND;
        fputs("tiermem-stat serves /metrics\n", out);
    } else {
        tm_stats_snapshot snap;
        char why[4200];
        if (tm_stats_read(path, &snap, why, sizeof why) != 0) {
            status = MHD_HTTP_SERVICE_UNAVAILABLE;
            fprintf(out, "%s\n", why);
        } else {
            tm_stats_print_prometheus(&snap, out);
            tm_stats_snapshot_free(&snap);
        }
    }
    if (fclose(out) != 0) {
        free(text);
        return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* "HOST:PORT", "PORT" or ":PORT" into an IPv4 address. */
static int parse_addr(const char *addr, struct sockaddr_in *sa)
{
    char host[64] = "127.0.0.1";
    const char *colon = strrchr(addr, ':'), *port = colon ? colon + 1 : addr;
    if (colon && colon > addr) {
        if ((size_t)(colon - addr) >= sizeof host) return -1;
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = 0;
    }
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (errno || end == port || *end || p < 0 || p > 65535) return -1;
    *sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)p)};
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

int tm_stats_serve(const char *addr, const char *path)
{
    struct sockaddr_in sa;
    if (parse_addr(addr, &sa) != 0) {
        fprintf(stderr, "tiermem-stat: --serve '%s' is not HOST:PORT, :PORT or PORT with a numeric IPv4 host\n", addr);
        return 1;
    }
    struct sigaction act = {.sa_handler = on_stop_signal};
    sigemptyset(&act.sa_mask);
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stops, &old); /* the HTTP thread leaves the signals to this one */
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                            on_request, (void *)path, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!d) {
        fprintf(stderr, "tiermem-stat: cannot listen on %s (in use, or not permitted)\n", addr);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
    fprintf(stderr, "tiermem-stat: serving %s at http://%s:%u/metrics\n", path, host,
            di ? di->port : ntohs(sa.sin_port));
    while (!stop_signal) pause();
    MHD_stop_daemon(d);
    return 0;
}
