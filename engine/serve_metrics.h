/* serve_metrics.h — the server's counters, gauges and latency histograms, and their
 * Prometheus text form. The caller serialises access (the server's lock). */
#ifndef TM_ENGINE_SERVE_METRICS_H
#define TM_ENGINE_SERVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define SERVE_HIST_BUCKETS 12

typedef struct serve_histogram {
    uint64_t counts[SERVE_HIST_BUCKETS];    /* per upper bound of serve_hist_bounds; the last is +Inf */
    uint64_t n;
    double sum;                             /* seconds */
} serve_histogram;

typedef struct serve_metrics {
    uint64_t requests_ok, requests_bad, requests_rejected, requests_aborted;
    uint64_t prompt_tokens, cached_prompt_tokens, generated_tokens, steps;
    /* gauges, refreshed by the engine loop after each step */
    int64_t queued, running, batch;         /* batch: sequences in the last step */
    int64_t batch_peak;                     /* the most sequences in one step */
    int64_t kv_total, kv_used, kv_free, kv_cached, kv_evictions;
    serve_histogram ttft, itl;              /* time to first token, inter-token latency */
    int device_time;                        /* CUDA events time the steps: the device_ figures hold */
    double device_seconds;                  /* device time of every step */
    serve_histogram device_ttft;            /* time to first token in device time (steps run meanwhile) */
} serve_metrics;

void serve_histogram_add(serve_histogram *h, double seconds);
/* Prometheus text exposition (version 0.0.4) of m; malloc'd. */
char *serve_metrics_text(const serve_metrics *m);

#endif /* TM_ENGINE_SERVE_METRICS_H */
