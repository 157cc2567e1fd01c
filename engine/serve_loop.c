/* serve_loop.c — the queue and the engine loop: admission into the batch, one step at a
 * time, sampling, text and stop strings, finishing, and the drain after SIGTERM.
 *
 * The engine runs on the main thread; HTTP connections run on libmicrohttpd's threads.
 * They meet under one lock: a connection queues a request and waits on its condition;
 * the loop takes requests from the queue between steps and signals each request as its
 * text grows. The model runs outside the lock. */
#include "engine/chat.h"
#include "engine/error.h"
#include "engine/kv_prefix.h"
#include "engine/serve_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void deadline_in(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    int64_t ns = ts->tv_nsec + (int64_t)(seconds * 1e9);
    ts->tv_sec += ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
}

/* ----------------------------------------------------------------------------
 * Requests and the queue */

void serve_request_put(server *srv, serve_request *r)
{
    if (--r->refs > 0) return;
    srv->n_live--;
    pthread_cond_signal(&srv->wake);
    step_seq_free(&r->seq, &srv->m->kv);
    sampler_free(&r->smp);
    for (int32_t i = 0; i < r->n_stop; i++) free(r->stop[i]);
    pthread_cond_destroy(&r->cond);
    free(r->ids);
    tm_text_free(&r->text);
    free(r);
}

static int64_t blocks_for(const server *srv, int64_t tokens)
{
    return tm_kv_blocks_for(tokens, srv->m->kv.layout.block_size);
}

int serve_enqueue(server *srv, serve_request *r)
{
    if (srv->draining) return 503;
    if (srv->n_queued >= srv->opt->max_queue) return 429;
    r->refs++;
    r->t_queued = now();
    r->dev_queued_ms = srv->device_ms;
    r->next = NULL;
    if (srv->queue_tail) srv->queue_tail->next = r; else srv->queue_head = r;
    srv->queue_tail = r;
    srv->n_queued++;
    pthread_cond_signal(&srv->wake);
    return 0;
}

/* Blocks the running requests may still take, at most, up to their max_tokens. */
static int64_t blocks_promised(const server *srv)
{
    int64_t n = 0;
    for (int32_t i = 0; i < srv->n_running; i++) {
        const serve_request *r = srv->running[i];
        n += blocks_for(srv, r->n_prompt + r->max_tokens) - r->seq.kv.n_blocks;
    }
    return n;
}

/* Moves queued requests into the batch while it has room and the pool can hold every
 * admitted request to its max_tokens (so a running request never meets a full pool). */
static void admit(server *srv)
{
    kv_cache *kv = &srv->m->kv;
    while (srv->queue_head && srv->n_running < srv->opt->max_batch) {
        serve_request *r = srv->queue_head;
        if (!r->cancelled) {
            int64_t need = blocks_for(srv, r->n_prompt + r->max_tokens);
            if (need > kv_prefix_available(kv) - blocks_promised(srv)) break;
        }
        srv->queue_head = r->next;
        if (!srv->queue_head) srv->queue_tail = NULL;
        srv->n_queued--;
        if (r->cancelled) {
            srv->metrics.requests_aborted++;
            serve_request_put(srv, r);
            continue;
        }
        if (step_seq_init(&r->seq, srv->m, r->ids, r->n_prompt, (int)(srv->next_id & INT32_MAX)) ||
            sampler_init(&r->smp, srv->m->cfg.vocab, r->temperature, r->top_k, r->top_p, r->seed)) {
            r->finish = "abort";
            r->done = true;
            pthread_cond_broadcast(&r->cond);
            serve_request_put(srv, r);
            continue;
        }
        r->n_cached = kv_prefix_match(kv, &r->seq.kv, r->ids, r->n_prompt);
        r->seq.n_prefilled = r->n_cached;
        r->admitted = true;
        srv->metrics.prompt_tokens += (uint64_t)r->n_prompt;
        srv->metrics.cached_prompt_tokens += (uint64_t)r->n_cached;
        srv->running[srv->n_running++] = r;
    }
}

/* Takes r out of the batch: its full blocks stay in the prefix cache, named after the
 * tokens whose KV they hold; the rest go back to the pool. */
static void retire(server *srv, int32_t i)
{
    serve_request *r = srv->running[i];
    kv_prefix_publish(&srv->m->kv, &r->seq.kv, r->ids, r->seq.kv.len);
    step_seq_free(&r->seq, &srv->m->kv);
    if (r->cancelled && !r->done) srv->metrics.requests_aborted++;
    else srv->metrics.requests_ok++;
    if (!r->done) {
        r->finish = r->finish ? r->finish : "abort";
        r->done = true;
    }
    r->ready = r->text.len;
    pthread_cond_broadcast(&r->cond);
    if (srv->opt->verbose)
        fprintf(stderr, "tiermem-llm: request %s: prompt_tokens=%d cached_tokens=%d completion_tokens=%d "
                "finish=%s ttft_ms=%.3f sim_ttft_ms=%.4f\n", r->id, r->n_prompt, r->n_cached, r->n_out, r->finish,
                r->ttft_ms, srv->metrics.device_time ? r->dev_ttft_ms : 0.0);
    srv->running[i] = srv->running[--srv->n_running];
    serve_request_put(srv, r);
}

/* ----------------------------------------------------------------------------
 * Tokens to text */

/* Cuts the text at the first stop string found in what this token added; true if one was. */
static bool cut_at_stop(serve_request *r, size_t old_len)
{
    size_t from = old_len >= r->longest_stop ? old_len - r->longest_stop + 1 : 0;
    size_t cut = SIZE_MAX;
    for (int32_t i = 0; i < r->n_stop; i++) {
        const char *hit = memmem(r->text.data + from, r->text.len - from, r->stop[i], strlen(r->stop[i]));
        if (hit && (size_t)(hit - r->text.data) < cut) cut = (size_t)(hit - r->text.data);
    }
    if (cut == SIZE_MAX) return false;
    r->text.len = cut;
    r->text.data[cut] = 0;
    return true;
}

/* Records token id for r (lock held). */
static void take_token(server *srv, serve_request *r, int32_t id, double t)
{
    if (r->n_out == 0 && r->t_last_token == 0) {
        r->ttft_ms = (t - r->t_queued) * 1e3;
        r->dev_ttft_ms = srv->device_ms - r->dev_queued_ms;
        serve_histogram_add(&srv->metrics.ttft, t - r->t_queued);
        if (srv->metrics.device_time) serve_histogram_add(&srv->metrics.device_ttft, r->dev_ttft_ms / 1e3);
    } else {
        serve_histogram_add(&srv->metrics.itl, t - r->t_last_token);
    }
    r->t_last_token = t;
    if (id == srv->tok->eos_id) {
        r->finish = "stop";
    } else {
        char piece[512];
        size_t n = tokenizer_decode(srv->tok, r->seq.next, id, piece, sizeof piece), old = r->text.len;
        r->ids[r->n_prompt + r->n_out++] = id;
        r->seq.next = id;
        srv->metrics.generated_tokens++;
        if (tm_text_append(&r->text, piece, n)) r->finish = "abort";
        else if (r->n_stop && cut_at_stop(r, old)) r->finish = "stop";
        else if (r->n_out >= r->max_tokens || r->n_prompt + r->n_out >= srv->m->max_positions) r->finish = "length";
    }
    if (r->finish) {
        r->done = r->seq.done = true;
        r->ready = r->text.len;
    } else {
        /* hold back what could still become a stop string, and an unfinished character */
        size_t hold = r->longest_stop ? r->longest_stop - 1 : 0;
        size_t ready = r->text.len > hold ? r->text.len - hold : 0;
        ready = serve_utf8_complete(r->text.data, ready);
        if (ready > r->ready) r->ready = ready;
    }
    pthread_cond_broadcast(&r->cond);
}

/* ----------------------------------------------------------------------------
 * The loop */

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

static void refresh_gauges(server *srv, int32_t batch)
{
    serve_metrics *mt = &srv->metrics;
    kv_prefix_stats ps;
    kv_prefix_get_stats(&srv->m->kv, &ps);
    mt->queued = srv->n_queued;
    mt->running = srv->n_running;
    mt->batch = batch;
    if (batch > mt->batch_peak) mt->batch_peak = batch;
    mt->kv_total = srv->m->kv.layout.n_blocks;
    mt->kv_free = srv->m->kv.n_free;
    mt->kv_used = mt->kv_total - mt->kv_free - ps.idle;
    mt->kv_cached = ps.cached;
    mt->kv_evictions = ps.evictions;
}

static int engine_loop(server *srv)
{
    tm_model *m = srv->m;
    step_output so;
    if (step_output_init(&so, srv->opt->max_batch, m->cfg.vocab)) {
        fprintf(stderr, "error: out of host memory\n");
        return 1;
    }
    step_seq **seqs = calloc((size_t)srv->opt->max_batch, sizeof *seqs);
    double drain_deadline = 0;
    int rc = 0;
    pthread_mutex_lock(&srv->lock);
    for (;;) {
        if (stop_signal && !srv->draining) {
            srv->draining = true;
            drain_deadline = now() + srv->opt->grace_seconds;
            fprintf(stderr, "tiermem-llm: %s: draining %d running and %d queued requests (grace %.0f s)\n",
                    strsignal(stop_signal), srv->n_running, srv->n_queued, srv->opt->grace_seconds);
            /* the listener stays open: /health answers 503 and new requests get 503 */
        }
        if (srv->draining && now() > drain_deadline)
            for (serve_request *q = srv->queue_head; q; q = q->next) q->cancelled = true;
        for (int32_t i = srv->n_running - 1; i >= 0; i--) {
            serve_request *r = srv->running[i];
            if (srv->draining && now() > drain_deadline) r->cancelled = true;
            if (r->done || r->cancelled) retire(srv, i);
        }
        admit(srv);
        refresh_gauges(srv, 0);
        if (srv->draining && srv->n_running == 0 && srv->n_queued == 0) break;
        if (srv->n_running == 0) {
            struct timespec ts;
            deadline_in(&ts, 0.1);
            pthread_cond_timedwait(&srv->wake, &srv->lock, &ts);
            continue;
        }
        int32_t n = srv->n_running;
        for (int32_t i = 0; i < n; i++) seqs[i] = &srv->running[i]->seq;
        pthread_mutex_unlock(&srv->lock);
        device_timer_start(&srv->timer);
        int step_rc = step_run(m, seqs, n, srv->opt->prefill_chunk, &so);
        double step_ms = device_timer_stop(&srv->timer);
        double t = now();
        pthread_mutex_lock(&srv->lock);
        srv->metrics.steps++;
        srv->metrics.device_time = srv->timer.ok;
        srv->device_ms += step_ms;
        srv->metrics.device_seconds = srv->device_ms / 1e3;
        if (step_rc) {
            fprintf(stderr, "error: %s\n", m->err);
            for (int32_t i = 0; i < n; i++) srv->running[i]->finish = "abort";
            for (int32_t i = n - 1; i >= 0; i--) retire(srv, i);
            rc = 1;
            break;
        }
        for (int32_t i = 0; i < so.n; i++) {
            serve_request *r = (serve_request *)so.seqs[i];
            const float *row = so.logits + (size_t)i * m->cfg.vocab;
            if (so.from_prefill[i]) kv_prefix_publish(&m->kv, &r->seq.kv, r->ids, r->n_prompt);
            if (!r->done && !r->cancelled) take_token(srv, r, sampler_pick(&r->smp, row), t);
        }
        refresh_gauges(srv, so.prefill_tokens ? so.decode_tokens + 1 : so.decode_tokens);
    }
    /* after an engine error: nothing more runs, so every waiting request ends now */
    srv->draining = true;
    for (serve_request *q = srv->queue_head; q; q = q->next) {
        q->finish = "abort";
        q->done = true;
        pthread_cond_broadcast(&q->cond);
    }
    /* the last events of finished streams are still on their way: let them go out */
    for (double until = now() + 10; srv->n_live > 0 && now() < until;) {
        struct timespec ts;
        deadline_in(&ts, 0.1);
        pthread_cond_timedwait(&srv->wake, &srv->lock, &ts);
    }
    pthread_mutex_unlock(&srv->lock);
    step_output_free(&so);
    free(seqs);
    return rc;
}

int serve_run(tm_model *m, const tokenizer *tok, const gguf_file *f, const serve_options *opt)
{
    server srv = {.m = m, .tok = tok, .opt = opt};
    char err[TM_ERR_MAX];
    gguf_str tmpl;
    char *tmpl_copy = NULL;
    if (gguf_get_str(f, "tokenizer.chat_template", &tmpl, err) == 1)
        srv.chat_template = tmpl_copy = strndup(tmpl.data, (size_t)tmpl.len);
    srv.running = calloc((size_t)opt->max_batch, sizeof *srv.running);
    if (!srv.running || kv_prefix_enable(&m->kv)) {
        fprintf(stderr, "error: out of host memory\n");
        free(srv.running);
        free(tmpl_copy);
        return 1;
    }
    pthread_mutex_init(&srv.lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv.wake, &ca);
    pthread_condattr_destroy(&ca);
    device_timer_open(&srv.timer, m->drv);

    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* the HTTP threads leave the stop signals to this one */
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stops, &old);
    int rc = serve_http_start(&srv, err, sizeof err);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        fprintf(stderr, "error: %s\n", err);
        rc = 1;
    } else {
        fprintf(stderr, "tiermem-llm: serve: model %s, batch %d, queue %d, prefill chunk %d, context %d, chat "
                "template %s, prefix cache on\n", opt->model_name, opt->max_batch, opt->max_queue,
                opt->prefill_chunk, m->max_positions, chat_template_name(chat_template_from(srv.chat_template, CHAT_PLAIN)));
        rc = engine_loop(&srv);
        serve_http_stop(&srv);
        fprintf(stderr, "tiermem-llm: serve: stopped: requests ok=%" PRIu64 " aborted=%" PRIu64 " rejected=%"
                PRIu64 " bad=%" PRIu64 " prompt_tokens=%" PRIu64 " cached_tokens=%" PRIu64 " generated_tokens=%"
                PRIu64 " device_ms=%.3f\n", srv.metrics.requests_ok, srv.metrics.requests_aborted,
                srv.metrics.requests_rejected, srv.metrics.requests_bad, srv.metrics.prompt_tokens,
                srv.metrics.cached_prompt_tokens, srv.metrics.generated_tokens,
                srv.metrics.device_time ? srv.device_ms : 0.0);
    }
    device_timer_close(&srv.timer);
    pthread_cond_destroy(&srv.wake);
    pthread_mutex_destroy(&srv.lock);
    free(srv.running);
    free(tmpl_copy);
    return rc;
}
