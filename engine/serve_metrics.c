/* serve_metrics.c — see serve_metrics.h. Names follow Prometheus conventions: a
 * tiermem_llm_ prefix, _total on counters, _seconds on durations. */
#include "engine/serve_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Upper bounds in seconds; decode steps of small models take milliseconds, a cold
 * prefill of a long prompt on a big one seconds. */
static const double serve_hist_bounds[SERVE_HIST_BUCKETS - 1] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                0.1,   0.25,   0.5,   1.0,  2.5};

void serve_histogram_add(serve_histogram *h, double seconds)
{
    int b = 0;
    while (b < SERVE_HIST_BUCKETS - 1 && seconds > serve_hist_bounds[b]) b++;
    h->counts[b]++;
    h->n++;
    h->sum += seconds;
}

typedef struct text {
    char *buf;
    size_t len;
    size_t cap;
    int failed;
} text;

__attribute__((format(printf, 2, 3))) static void put(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { t->failed = 1; return; }
        if (t->buf && t->len + (size_t)n < t->cap) { t->len += (size_t)n; return; }
        size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)n;
        char *b = realloc(t->buf, cap);
        if (!b) { t->failed = 1; return; }
        t->buf = b;
        t->cap = cap;
    }
}

static void metric(text *t, const char *name, const char *type, const char *help, double value)
{
    put(t, "# HELP tiermem_llm_%s %s\n# TYPE tiermem_llm_%s %s\ntiermem_llm_%s %.17g\n", name, help, name, type,
        name, value);
}

static void histogram(text *t, const char *name, const char *help, const serve_histogram *h)
{
    put(t, "# HELP tiermem_llm_%s %s\n# TYPE tiermem_llm_%s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int b = 0; b < SERVE_HIST_BUCKETS - 1; b++) {
        cum += h->counts[b];
        put(t, "tiermem_llm_%s_bucket{le=\"%g\"} %llu\n", name, serve_hist_bounds[b], (unsigned long long)cum);
    }
    put(t, "tiermem_llm_%s_bucket{le=\"+Inf\"} %llu\ntiermem_llm_%s_sum %.9g\ntiermem_llm_%s_count %llu\n", name,
        (unsigned long long)h->n, name, h->sum, name, (unsigned long long)h->n);
}

char *serve_metrics_text(const serve_metrics *m)
{
    text t = {0};
    put(&t, "# HELP tiermem_llm_requests_total Requests by outcome.\n# TYPE tiermem_llm_requests_total counter\n");
    put(&t, "tiermem_llm_requests_total{outcome=\"ok\"} %llu\n", (unsigned long long)m->requests_ok);
    put(&t, "tiermem_llm_requests_total{outcome=\"bad_request\"} %llu\n", (unsigned long long)m->requests_bad);
    put(&t, "tiermem_llm_requests_total{outcome=\"rejected\"} %llu\n", (unsigned long long)m->requests_rejected);
    put(&t, "tiermem_llm_requests_total{outcome=\"aborted\"} %llu\n", (unsigned long long)m->requests_aborted);
    metric(&t, "prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", (double)m->prompt_tokens);
    metric(&t, "prompt_tokens_cached_total", "counter", "Prompt tokens found in the prefix cache.",
           (double)m->cached_prompt_tokens);
    metric(&t, "generation_tokens_total", "counter", "Tokens generated.", (double)m->generated_tokens);
    metric(&t, "steps_total", "counter", "Engine steps (prefill chunks and a decode batch).", (double)m->steps);
    metric(&t, "queue_depth", "gauge", "Requests waiting for a place in the batch.", (double)m->queued);
    metric(&t, "running_requests", "gauge", "Requests in the batch.", (double)m->running);
    metric(&t, "batch_size", "gauge", "Sequences in the last step.", (double)m->batch);
    metric(&t, "batch_size_max", "gauge", "The most sequences in one step since the start.", (double)m->batch_peak);
    metric(&t, "kv_blocks_total", "gauge", "Blocks in the KV pool.", (double)m->kv_total);
    metric(&t, "kv_blocks_used", "gauge", "KV blocks held by running requests.", (double)m->kv_used);
    metric(&t, "kv_blocks_free", "gauge", "KV blocks holding nothing.", (double)m->kv_free);
    metric(&t, "kv_blocks_cached", "gauge", "KV blocks named in the prefix cache (held or idle).",
           (double)m->kv_cached);
    metric(&t, "kv_block_evictions_total", "counter", "Idle cached blocks reused for new KV.",
           (double)m->kv_evictions);
    metric(&t, "prefix_hit_rate", "gauge", "Fraction of prompt tokens found in the prefix cache.",
           m->prompt_tokens ? (double)m->cached_prompt_tokens / (double)m->prompt_tokens : 0.0);
    histogram(&t, "time_to_first_token_seconds", "From arrival to the first generated token.", &m->ttft);
    histogram(&t, "inter_token_latency_seconds", "Between consecutive tokens of a request.", &m->itl);
    if (m->device_time) {
        metric(&t, "device_seconds_total", "counter", "Device time of the engine's steps (CUDA events).",
               m->device_seconds);
        histogram(&t, "device_time_to_first_token_seconds",
                  "Device time of the steps run from arrival to the first token.", &m->device_ttft);
    }
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
