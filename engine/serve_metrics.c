/* serve_metrics.c — see serve_metrics.h. Names follow Prometheus conventions: a
 * tiermem_llm_ prefix, _total on counters, _seconds on durations. The text is written by
 * the writer tiermem-stat's exporter uses too (tools/tiermem-stat/prom_text.h). */
#include "engine/serve_metrics.h"

#include <stdio.h>

#include "tools/tiermem-stat/prom_text.h"

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

/* tiermem_llm_NAME: one family of one unlabelled sample. */
static void counter(tm_prom *p, const char *name, const char *help, uint64_t value)
{
    char full[96];
    snprintf(full, sizeof full, "tiermem_llm_%s", name);
    tm_prom_family(p, full, "counter", help);
    tm_prom_u64(p, full, NULL, 0, value);
}

static void gauge(tm_prom *p, const char *name, const char *help, int64_t value)
{
    char full[96];
    snprintf(full, sizeof full, "tiermem_llm_%s", name);
    tm_prom_family(p, full, "gauge", help);
    tm_prom_i64(p, full, NULL, 0, value);
}

static void histogram(tm_prom *p, const char *name, const char *help, const serve_histogram *h)
{
    char full[96];
    snprintf(full, sizeof full, "tiermem_llm_%s", name);
    tm_prom_histogram(p, full, help, serve_hist_bounds, SERVE_HIST_BUCKETS - 1, h->counts, h->sum);
}

char *serve_metrics_text(const serve_metrics *m)
{
    tm_prom p = {0};
    tm_prom_family(&p, "tiermem_llm_requests_total", "counter", "Requests by outcome.");
    static const char *const outcomes[] = {"ok", "bad_request", "rejected", "aborted"};
    const uint64_t by_outcome[] = {m->requests_ok, m->requests_bad, m->requests_rejected, m->requests_aborted};
    for (size_t i = 0; i < sizeof outcomes / sizeof *outcomes; i++)
        tm_prom_u64(&p, "tiermem_llm_requests_total", &(tm_prom_label){"outcome", outcomes[i]}, 1, by_outcome[i]);
    counter(&p, "prompt_tokens_total", "Prompt tokens of admitted requests.", m->prompt_tokens);
    counter(&p, "prompt_tokens_cached_total", "Prompt tokens found in the prefix cache.", m->cached_prompt_tokens);
    counter(&p, "generation_tokens_total", "Tokens generated.", m->generated_tokens);
    counter(&p, "steps_total", "Engine steps (prefill chunks and a decode batch).", m->steps);
    gauge(&p, "queue_depth", "Requests waiting for a place in the batch.", m->queued);
    gauge(&p, "running_requests", "Requests in the batch.", m->running);
    gauge(&p, "batch_size", "Sequences in the last step.", m->batch);
    gauge(&p, "batch_size_max", "The most sequences in one step since the start.", m->batch_peak);
    gauge(&p, "kv_blocks_capacity", "Blocks in the KV pool.", m->kv_total); /* a gauge: no _total */
    gauge(&p, "kv_blocks_used", "KV blocks held by running requests.", m->kv_used);
    gauge(&p, "kv_blocks_free", "KV blocks holding nothing.", m->kv_free);
    gauge(&p, "kv_blocks_cached", "KV blocks named in the prefix cache (held or idle).", m->kv_cached);
    counter(&p, "kv_block_evictions_total", "Idle cached blocks reused for new KV.", (uint64_t)m->kv_evictions);
    tm_prom_family(&p, "tiermem_llm_prefix_hit_rate", "gauge", "Fraction of prompt tokens found in the prefix cache.");
    tm_prom_double(&p, "tiermem_llm_prefix_hit_rate", NULL, 0,
                   m->prompt_tokens ? (double)m->cached_prompt_tokens / (double)m->prompt_tokens : 0.0);
    histogram(&p, "time_to_first_token_seconds", "From arrival to the first generated token.", &m->ttft);
    histogram(&p, "inter_token_latency_seconds", "Between consecutive tokens of a request.", &m->itl);
    if (m->device_time) {
        tm_prom_family(&p, "tiermem_llm_device_seconds_total", "counter",
                       "Device time of the engine's steps (CUDA events).");
        tm_prom_double(&p, "tiermem_llm_device_seconds_total", NULL, 0, m->device_seconds);
        histogram(&p, "device_time_to_first_token_seconds",
                  "Device time of the steps run from arrival to the first token.", &m->device_ttft);
    }
    return tm_prom_finish(&p, NULL);
}
