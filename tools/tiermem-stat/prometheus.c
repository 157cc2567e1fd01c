/* prometheus.c — see prometheus.h. HTTP is libmicrohttpd's. */
#include "tools/tiermem-stat/prometheus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "policy/heat.h"
#include "tools/tiermem-stat/stat_json.h"

/* ---------------------------------------------------------------- text */

/* The labels every sample of a process starts with. */
typedef struct process_labels {
    char pid[16], device[16], uuid[48];
} process_labels;

#define BASE_LABELS 3

/* pid, device and uuid of process `l` (the uuid of its tiered device) into labels[0..2];
 * returns where more labels go. */
static tm_prom_label *base_labels(const tm_stats_live *l, process_labels *text, tm_prom_label *labels)
{
    const tm_stats_header *h = &l->snapshot.header;
    snprintf(text->pid, sizeof text->pid, "%d", (int)h->pid);
    snprintf(text->device, sizeof text->device, "%d", (int)h->device);
    text->uuid[0] = '\0';
    for (uint32_t d = 0; d < h->device_count && d < TM_STATS_DEVICES; d++)
        if (h->devices[d].ordinal == h->device)
            tm_stats_uuid_text(h->devices[d].uuid, text->uuid, sizeof text->uuid);
    labels[0] = (tm_prom_label){"pid", text->pid};
    labels[1] = (tm_prom_label){"device", text->device};
    labels[2] = (tm_prom_label){"uuid", text->uuid};
    return labels + BASE_LABELS;
}

/* One value per process, no other label. */
typedef uint64_t (*process_value)(const tm_stats_live *l);

static void per_process(tm_prom *p, const tm_stats_live *live, int count, const char *name, const char *type,
                        const char *help, process_value value)
{
    tm_prom_family(p, name, type, help);
    for (int i = 0; i < count; i++) {
        process_labels text;
        tm_prom_label labels[TM_PROM_MAX_LABELS];
        base_labels(&live[i], &text, labels);
        tm_prom_u64(p, name, labels, BASE_LABELS, value(&live[i]));
    }
}

#define FIELD_VALUE(fn, expr) \
    static uint64_t fn(const tm_stats_live *l) { const tm_stats_header *h = &l->snapshot.header; return (expr); }
FIELD_VALUE(running, h->state != TM_STATS_EXITED && !(kill(h->pid, 0) != 0 && errno == ESRCH))
FIELD_VALUE(device_memory, h->device_memory)
FIELD_VALUE(chunk_bytes, h->chunk_size)
FIELD_VALUE(alloc_total, h->alloc_total)
FIELD_VALUE(free_total, h->free_total)
FIELD_VALUE(oom_total, h->oom_total)
FIELD_VALUE(passthrough_total, h->passthrough_total)
FIELD_VALUE(records_dropped, h->records_dropped)
FIELD_VALUE(migrations, h->migrations)
FIELD_VALUE(migrated_bytes, h->migrated_bytes)
FIELD_VALUE(migration_rewrites, h->migration_rewrites)
FIELD_VALUE(ping_pongs, h->ping_pongs)
FIELD_VALUE(streamed_bytes, h->streamed_bytes)
FIELD_VALUE(file_dropped, h->file_dropped)
FIELD_VALUE(file_drops, h->file_drops)
FIELD_VALUE(file_faults, h->file_faults)
FIELD_VALUE(file_fault_bytes, h->file_fault_bytes)
FIELD_VALUE(file_refused, h->file_refused)
FIELD_VALUE(heat_launches, h->heat_launches)
FIELD_VALUE(heat_samples, h->heat_samples)
#undef FIELD_VALUE

static void info(tm_prom *p, const tm_stats_live *live, int count)
{
    tm_prom_family(p, "tiermem_process_info", "gauge", "A process under libtiermem and its settings (always 1).");
    for (int i = 0; i < count; i++) {
        const tm_stats_header *h = &live[i].snapshot.header;
        process_labels text;
        tm_prom_label labels[TM_PROM_MAX_LABELS], *more = base_labels(&live[i], &text, labels);
        more[0] = (tm_prom_label){"command", live[i].command};
        more[1] = (tm_prom_label){"policy", h->policy};
        more[2] = (tm_prom_label){"meminfo", h->meminfo};
        more[3] = (tm_prom_label){"tier_order", h->tier_order};
        more[4] = (tm_prom_label){"backing", h->backing == TM_STATS_BACKING_PINNED_HOST ? "pinned_host" : "vmm"};
        tm_prom_u64(p, "tiermem_process_info", labels, BASE_LABELS + 5, 1);
    }
}

static void tiers(tm_prom *p, const tm_stats_live *live, int count)
{
    static const struct { const char *name, *help; } families[] = {
        {"tiermem_tier_present", "1 when the tier exists on this machine."},
        {"tiermem_tier_limit_bytes", "Bytes the process may place in the tier."},
        {"tiermem_tier_used_bytes", "Bytes placed in the tier now."},
        {"tiermem_tier_peak_bytes", "The most bytes placed in the tier."},
        {"tiermem_tier_chunks", "Chunks placed in the tier now."},
    };
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        tm_prom_family(p, families[f].name, "gauge", families[f].help);
        for (int i = 0; i < count; i++)
            for (int t = 0; t < TM_STATS_TIERS; t++) {
                const tm_stats_tier *tier = &live[i].snapshot.header.tier[t];
                if (f > 0 && !tier->present)
                    continue;
                const uint64_t v[] = {tier->present != 0, tier->limit, tier->used, tier->peak, tier->chunks};
                process_labels text;
                char node[16];
                tm_prom_label labels[TM_PROM_MAX_LABELS], *more = base_labels(&live[i], &text, labels);
                snprintf(node, sizeof node, "%d", tier->numa_node);
                more[0] = (tm_prom_label){"tier", tier->name};
                more[1] = (tm_prom_label){"node", node};
                tm_prom_u64(p, families[f].name, labels, BASE_LABELS + 2, v[f]);
            }
    }
}

/* Per tiered device: its own HBM, labelled with its ordinal and uuid. */
static void devices(tm_prom *p, const tm_stats_live *live, int count)
{
    static const struct { const char *name, *help; } families[] = {
        {"tiermem_device_hbm_limit_bytes", "Bytes of the device's HBM the process may use."},
        {"tiermem_device_hbm_used_bytes", "Bytes of the device's HBM in use (chunks and small allocations)."},
        {"tiermem_device_hbm_peak_bytes", "The most bytes of the device's HBM in use."},
        {"tiermem_device_hbm_chunks", "Chunks placed in the device's HBM now."},
    };
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        tm_prom_family(p, families[f].name, "gauge", families[f].help);
        for (int i = 0; i < count; i++) {
            const tm_stats_header *h = &live[i].snapshot.header;
            for (uint32_t d = 0; d < h->device_count && d < TM_STATS_DEVICES; d++) {
                const tm_stats_device *dev = &h->devices[d];
                const uint64_t v[] = {dev->hbm_limit, dev->hbm_used, dev->hbm_peak, dev->hbm_chunks};
                process_labels text;
                tm_prom_label labels[TM_PROM_MAX_LABELS];
                base_labels(&live[i], &text, labels);
                snprintf(text.device, sizeof text.device, "%d", dev->ordinal);
                tm_stats_uuid_text(dev->uuid, text.uuid, sizeof text.uuid);
                tm_prom_u64(p, families[f].name, labels, BASE_LABELS, v[f]);
            }
        }
    }
}

static void allocations(tm_prom *p, const tm_stats_live *live, int count)
{
    static const char *const kinds[] = {"small", "chunked", "managed"};
    for (int bytes = 0; bytes < 2; bytes++) {
        const char *name = bytes ? "tiermem_allocation_bytes" : "tiermem_allocations";
        tm_prom_family(p, name, "gauge",
                       bytes ? "Requested bytes of the live allocations by kind." : "Live allocations by kind.");
        for (int i = 0; i < count; i++) {
            const tm_stats_header *h = &live[i].snapshot.header;
            const uint64_t v[2][3] = {{h->small_count, h->tiered_count, h->managed_count},
                                      {h->small_bytes, h->tiered_bytes, h->managed_bytes}};
            for (int k = 0; k < 3; k++) {
                process_labels text;
                tm_prom_label labels[TM_PROM_MAX_LABELS], *more = base_labels(&live[i], &text, labels);
                more[0] = (tm_prom_label){"kind", kinds[k]};
                tm_prom_u64(p, name, labels, BASE_LABELS + 1, v[bytes][k]);
            }
        }
    }
}

/* Chunks moved between each pair of tiers. */
static void migration_pairs(tm_prom *p, const tm_stats_live *live, int count)
{
    tm_prom_family(p, "tiermem_tier_migrated_chunks_total", "counter", "Chunks migrated from one tier to another.");
    for (int i = 0; i < count; i++) {
        const tm_stats_header *h = &live[i].snapshot.header;
        for (int from = 0; from < TM_STATS_TIERS; from++)
            for (int slot = 0; slot < TM_STATS_TIERS - 1; slot++) {
                int to = slot < from ? slot : slot + 1; /* migrated_out leaves the tier itself out */
                process_labels text;
                tm_prom_label labels[TM_PROM_MAX_LABELS], *more = base_labels(&live[i], &text, labels);
                more[0] = (tm_prom_label){"from", h->tier[from].name};
                more[1] = (tm_prom_label){"to", h->tier[to].name};
                tm_prom_u64(p, "tiermem_tier_migrated_chunks_total", labels, BASE_LABELS + 2,
                            h->tier[from].migrated_out[slot]);
            }
    }
}

/* Allocations, their bytes and their chunks by heat class (a class by rank within the
 * process: policy/heat.h). Allocations without chunk heat are left out. */
static void heat_classes(tm_prom *p, const tm_stats_live *live, int count)
{
    static const tm_heat_class classes[] = {TM_HEAT_HOT, TM_HEAT_WARM, TM_HEAT_COLD};
    static const struct { const char *name, *help; } families[] = {
        {"tiermem_heat_allocations", "Chunked allocations with heat, by heat class."},
        {"tiermem_heat_allocation_bytes", "Requested bytes of the chunked allocations with heat, by heat class."},
        {"tiermem_heat_chunks", "Chunks with heat, by the class of each chunk."},
    };
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        tm_prom_family(p, families[f].name, "gauge", families[f].help);
        for (int i = 0; i < count; i++) {
            const tm_stats_snapshot *s = &live[i].snapshot;
            uint64_t v[3] = {0};
            for (size_t r = 0; r < s->record_count; r++) {
                const tm_heat_view *view = &s->heat[r];
                if (!view->chunk_count)
                    continue;
                if (f == 2) {
                    for (uint32_t c = 0; c < view->chunk_count; c++)
                        v[view->chunk_class[c] <= TM_HEAT_HOT ? view->chunk_class[c] : TM_HEAT_COLD]++;
                } else {
                    v[view->cls <= TM_HEAT_HOT ? view->cls : TM_HEAT_COLD] += f == 0 ? 1 : s->records[r].size;
                }
            }
            for (size_t c = 0; c < sizeof classes / sizeof *classes; c++) {
                process_labels text;
                tm_prom_label labels[TM_PROM_MAX_LABELS], *more = base_labels(&live[i], &text, labels);
                more[0] = (tm_prom_label){"class", tm_heat_class_name(classes[c])};
                tm_prom_u64(p, families[f].name, labels, BASE_LABELS + 1, v[classes[c]]);
            }
        }
    }
}

static void driver_calls(tm_prom *p, const tm_stats_live *live, int count)
{
    tm_prom_family(p, "tiermem_driver_calls_total", "counter", "Calls per hooked driver symbol.");
    for (int i = 0; i < count; i++) {
        const tm_stats_snapshot *s = &live[i].snapshot;
        for (uint32_t c = 0; c < s->header.call_count; c++) {
            if (!s->calls[c].calls)
                continue;
            char symbol[sizeof s->calls[c].symbol + 1];
            snprintf(symbol, sizeof symbol, "%.*s", (int)sizeof s->calls[c].symbol, s->calls[c].symbol);
            process_labels text;
            tm_prom_label labels[TM_PROM_MAX_LABELS], *more = base_labels(&live[i], &text, labels);
            more[0] = (tm_prom_label){"symbol", symbol};
            tm_prom_u64(p, "tiermem_driver_calls_total", labels, BASE_LABELS + 1, s->calls[c].calls);
        }
    }
}

void tm_stats_prometheus(tm_prom *p, const tm_stats_live *live, int count)
{
    info(p, live, count);
    per_process(p, live, count, "tiermem_process_running", "gauge", "1 while the process runs, 0 after it exited.",
                running);
    per_process(p, live, count, "tiermem_device_memory_bytes", "gauge", "Memory of the tiered device.",
                device_memory);
    per_process(p, live, count, "tiermem_chunk_bytes", "gauge", "Bytes per chunk (the VMM granularity).",
                chunk_bytes);
    tiers(p, live, count);
    devices(p, live, count);
    allocations(p, live, count);
    static const struct { const char *name, *help; process_value value; } counters[] = {
        {"tiermem_allocations_total", "Allocations made through the interposer.", alloc_total},
        {"tiermem_frees_total", "Frees made through the interposer.", free_total},
        {"tiermem_out_of_memory_total", "CUDA_ERROR_OUT_OF_MEMORY answers because no tier had room.", oom_total},
        {"tiermem_passthrough_total", "Calls passed straight through after an internal error.", passthrough_total},
        {"tiermem_records_dropped_total", "Chunked allocations without a record (the region was full).",
         records_dropped},
        {"tiermem_migrations_total", "Chunks migrated between tiers.", migrations},
        {"tiermem_migrated_bytes_total", "Bytes migrated between tiers.", migrated_bytes},
        {"tiermem_migration_rewrites_total", "Migration batches copied again (written during the copy).",
         migration_rewrites},
        {"tiermem_migration_ping_pongs_total", "Chunks moved back to the tier they left in the last rebalance.",
         ping_pongs},
        {"tiermem_streamed_bytes_total", "Bytes of spilled weights copied into the HBM staging ring.",
         streamed_bytes},
        {"tiermem_file_tier_drops_total", "Chunks whose memory the file tier released.", file_drops},
        {"tiermem_file_tier_faults_total", "Dropped chunks read back from their file before a launch.",
         file_faults},
        {"tiermem_file_tier_fault_bytes_total", "Bytes read back by the file tier.", file_fault_bytes},
        {"tiermem_file_tier_refused_total", "File tier read-backs refused (the file changed or could not be read).",
         file_refused},
        {"tiermem_heat_launches_total", "Launches seen while heat was on.", heat_launches},
        {"tiermem_heat_sampled_launches_total", "Launches whose parameters heat read.", heat_samples},
    };
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
        per_process(p, live, count, counters[i].name, "counter", counters[i].help, counters[i].value);
    per_process(p, live, count, "tiermem_file_tier_dropped_chunks", "gauge",
                "Chunks whose memory the file tier holds released now.", file_dropped);
    migration_pairs(p, live, count);
    heat_classes(p, live, count);
    driver_calls(p, live, count);
}

int tm_stats_print_prometheus(const tm_stats_live *live, int count, FILE *out)
{
    tm_prom p = {0};
    tm_stats_prometheus(&p, live, count);
    size_t len;
    char *text = tm_prom_finish(&p, &len);
    if (!text) {
        fprintf(stderr, "tiermem-stat: out of memory\n");
        return -1;
    }
    int rc = fwrite(text, 1, len, out) == len ? 0 : -1;
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- logging */

/* At most LOG_BURST lines per LOG_WINDOW_S seconds; what was left out is counted in the
 * first line after. A flood of bad or refused connections costs a few lines, not one each. */
#define LOG_BURST 5
#define LOG_WINDOW_S 60

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static time_t log_window;
static unsigned log_lines;
static unsigned long log_suppressed;

static void log_limited(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&log_lock);
    if (now.tv_sec - log_window >= LOG_WINDOW_S) {
        if (log_suppressed)
            fprintf(stderr, "tiermem-stat: %lu more server messages in the last %d s were not shown\n",
                    log_suppressed, LOG_WINDOW_S);
        log_window = now.tv_sec;
        log_lines = 0;
        log_suppressed = 0;
    }
    if (log_lines < LOG_BURST) {
        char line[512];
        vsnprintf(line, sizeof line, fmt, ap);
        size_t n = strlen(line);
        while (n && line[n - 1] == '\n')
            line[--n] = '\0';
        for (char *c = line; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
                *c = '?';
        fprintf(stderr, "tiermem-stat: server: %s%s\n", line,
                ++log_lines == LOG_BURST ? " (further messages limited)" : "");
    } else {
        log_suppressed++;
    }
    pthread_mutex_unlock(&log_lock);
}

/* ---------------------------------------------------------------- serving */

typedef struct serve_target {
    const char *path;         /* NULL: every live process's region */
    pid_t pid;                /* > 0: path is that pid's default region */
} serve_target;

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* The /metrics text, or NULL with an HTTP status and a reason in `why`. */
static char *scrape(const serve_target *t, size_t *len, unsigned *status, char *why, size_t why_len)
{
    tm_stats_live *live = NULL, one = {0};
    int count;
    if (t->path) {
        int got = t->pid > 0 ? tm_stats_read_pid(t->pid, &one.snapshot, why, why_len)
                             : tm_stats_read(t->path, &one.snapshot, why, why_len);
        if (got != 0) {
            *status = MHD_HTTP_SERVICE_UNAVAILABLE;
            return NULL;
        }
        one.pid = (pid_t)one.snapshot.header.pid;
        tm_stats_command(one.pid, one.command, sizeof one.command);
        live = &one;
        count = 1;
    } else if ((count = tm_stats_read_live(&live)) < 0) {
        *status = MHD_HTTP_SERVICE_UNAVAILABLE;
        snprintf(why, why_len, "/proc cannot be read");
        return NULL;
    }
    tm_prom p = {0};
    if (!t->path) {
        tm_prom_family(&p, "tiermem_exporter_processes", "gauge", "Processes under libtiermem this exporter serves.");
        tm_prom_u64(&p, "tiermem_exporter_processes", NULL, 0, (uint64_t)count);
    }
    tm_stats_prometheus(&p, live, count);
    if (t->path)
        tm_stats_snapshot_free(&one.snapshot);
    else
        tm_stats_live_free(live, count);
    char *text = tm_prom_finish(&p, len);
    if (!text) {
        *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        snprintf(why, why_len, "out of memory");
    }
    return text;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, char *text, size_t len)
{
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

static enum MHD_Result respond_line(struct MHD_Connection *c, unsigned status, const char *line)
{
    char *text = NULL;
    if (asprintf(&text, "%s\n", line) < 0)
        return MHD_NO;
    return respond(c, status, text, strlen(text));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload, (void)upload_size, (void)con_cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return respond_line(c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET");
    if (strcmp(url, "/health") == 0)
        return respond_line(c, MHD_HTTP_OK, "ok");
    if (strcmp(url, "/metrics") != 0)
        return respond_line(c, MHD_HTTP_NOT_FOUND, "tiermem-stat serves /metrics and /health");
    unsigned status = MHD_HTTP_OK;
    char why[4200];
    size_t len = 0;
    char *text = scrape(cls, &len, &status, why, sizeof why);
    return text ? respond(c, status, text, len) : respond_line(c, status, why);
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

/* Connections the server takes at once: what the descriptor limit allows (raised to its
 * hard limit), less a margin for the regions it reads, at most SERVE_MAX_CONNECTIONS. */
#define SERVE_MAX_CONNECTIONS 16384
#define SERVE_FD_MARGIN 64
#define SERVE_THREADS 4

static unsigned connection_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 256;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t soft = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > SERVE_MAX_CONNECTIONS * 2 ?
                      SERVE_MAX_CONNECTIONS * 2 : rl.rlim_max;
        if (rl.rlim_cur < soft || setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = soft;
    }
    rlim_t usable = rl.rlim_cur > SERVE_FD_MARGIN * 2 ? rl.rlim_cur - SERVE_FD_MARGIN : rl.rlim_cur / 2;
    return usable > SERVE_MAX_CONNECTIONS ? SERVE_MAX_CONNECTIONS : (unsigned)usable;
}

int tm_stats_serve(const char *addr, const char *path, pid_t pid)
{
    struct sockaddr_in sa;
    if (parse_addr(addr, &sa) != 0) {
        fprintf(stderr, "tiermem-stat: --serve '%s' is not HOST:PORT, :PORT or PORT with a numeric IPv4 host\n", addr);
        return 1;
    }
    static serve_target target;
    target = (serve_target){.path = path, .pid = pid};
    struct sigaction act = {.sa_handler = on_stop_signal};
    sigemptyset(&act.sa_mask);
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stops, &old); /* the HTTP threads leave the signals to this one */
    unsigned limit = connection_limit();
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, &target,
        MHD_OPTION_EXTERNAL_LOGGER, log_limited, NULL, /* first: every message goes through it */
        MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)SERVE_THREADS,
        MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)TM_STATS_SERVE_TIMEOUT_S,
        MHD_OPTION_END);
    if (!d) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        fprintf(stderr, "tiermem-stat: cannot listen on %s (in use, or not permitted)\n", addr);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
    unsigned port = di ? di->port : ntohs(sa.sin_port);
    if (path)
        fprintf(stderr, "tiermem-stat: serving %s at http://%s:%u/metrics\n", path, host, port);
    else
        fprintf(stderr, "tiermem-stat: serving every process under libtiermem at http://%s:%u/metrics\n", host, port);
    /* the signals stay blocked but while waiting: one that comes before the wait is not lost */
    sigset_t waiting = old;
    sigdelset(&waiting, SIGTERM);
    sigdelset(&waiting, SIGINT);
    while (!stop_signal)
        sigsuspend(&waiting);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    MHD_stop_daemon(d);
    return 0;
}
