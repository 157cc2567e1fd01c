/* generate.c — prefill, batched decode, streaming, and the per-run statistics. */
#include "engine/error.h"
#include "engine/generate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const generate_calibration_text =
    "Once upon a time, there was a little girl. The quick brown fox jumps over the lazy dog.";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int generate_tokenize(const tokenizer *tok, char **prompts, int32_t n_prompts, int32_t ***ids, int32_t **n_ids,
                      char *err, size_t errlen)
{
    *ids = calloc((size_t)n_prompts, sizeof **ids);
    *n_ids = calloc((size_t)n_prompts, sizeof **n_ids);
    if (!*ids || !*n_ids) return snprintf(err, errlen, "out of host memory"), -1;
    for (int32_t i = 0; i < n_prompts; i++) {
        int64_t n = tokenizer_encode(tok, prompts[i], tok->add_bos, NULL, 0);
        if (n < 0 || n > INT32_MAX / 2) return snprintf(err, errlen, "prompt %d cannot be tokenised", i + 1), -1;
        (*ids)[i] = malloc((size_t)(n ? n : 1) * sizeof ***ids);
        if (!(*ids)[i]) return snprintf(err, errlen, "out of host memory"), -1;
        (*n_ids)[i] = (int32_t)tokenizer_encode(tok, prompts[i], tok->add_bos, (*ids)[i], n);
        if ((*n_ids)[i] == 0) return snprintf(err, errlen, "prompt %d is empty (no tokens)", i + 1), -1;
    }
    return 0;
}

/* ----------------------------------------------------------------------------
 * One sequence's state */

typedef struct sequence {
    kv_sequence kv;
    int32_t *out;           /* [n_predict] generated ids */
    int32_t n_out;
    int32_t last;           /* the id to feed next (the prompt's last at first) */
    bool done;
    char *text;             /* generated text (for printing under the prompt) */
    size_t text_len, text_cap;
} sequence;

static int append_piece(sequence *s, const tokenizer *tok, int32_t prev, int32_t id, bool stream)
{
    char piece[512];
    size_t n = tokenizer_decode(tok, prev, id, piece, sizeof piece);
    if (stream) {
        fwrite(piece, 1, n, stdout);
        fflush(stdout);
    }
    if (s->text_len + n + 1 > s->text_cap) {
        size_t cap = (s->text_cap ? s->text_cap * 2 : 256) + n;
        char *t = realloc(s->text, cap);
        if (!t) return -1;
        s->text = t;
        s->text_cap = cap;
    }
    memcpy(s->text + s->text_len, piece, n);
    s->text_len += n;
    s->text[s->text_len] = 0;
    return 0;
}

static void dump_logits(FILE *f, int step, int seq, const float *logits, int32_t n)
{
    if (!f) return;
    fprintf(f, "%d %d", step, seq);
    for (int32_t i = 0; i < n; i++) fprintf(f, " %.9g", logits[i]);
    fputc('\n', f);
}

/* Records token id for s; returns 0, marking it done at EOS, at the end of a chat turn
 * or after n_predict tokens. */
static int take_token(sequence *s, const tokenizer *tok, const generate_options *opt, int32_t id)
{
    if (s->n_out < opt->n_forced) id = opt->forced[s->n_out];
    if (id == tok->eos_id || id == tok->eot_id) {
        s->done = true;
        return 0;
    }
    if (append_piece(s, tok, s->last, id, opt->stream)) return -1;
    s->out[s->n_out++] = id;
    s->last = id;
    if (s->n_out >= opt->n_predict) s->done = true;
    return 0;
}

/* ----------------------------------------------------------------------------
 * Device time: CUDA events around a phase, like any GPU program times its work (on
 * simcuda the events carry simulated time). A failing event call only turns them off. */

typedef struct device_timer {
    const tm_driver *drv;
    CUevent start, end;
    bool ok;
} device_timer;

static void timer_open(device_timer *t, const tm_driver *drv)
{
    t->drv = drv;
    t->start = t->end = NULL;
    t->ok = drv->cuEventCreate(&t->start, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
            drv->cuEventCreate(&t->end, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
}

static void timer_start(device_timer *t)
{
    if (t->ok) t->ok = t->drv->cuEventRecord(t->start, NULL) == CUDA_SUCCESS;
}

/* Milliseconds since timer_start on the device's clock (the host waits for the end). */
static double timer_stop(device_timer *t)
{
    float ms = 0;
    if (t->ok)
        t->ok = t->drv->cuEventRecord(t->end, NULL) == CUDA_SUCCESS &&
                t->drv->cuEventSynchronize(t->end) == CUDA_SUCCESS &&
                t->drv->cuEventElapsedTime(&ms, t->start, t->end) == CUDA_SUCCESS;
    return t->ok ? (double)ms : 0.0;
}

static void timer_close(device_timer *t)
{
    if (t->start) t->drv->cuEventDestroy(t->start);
    if (t->end) t->drv->cuEventDestroy(t->end);
}

/* ----------------------------------------------------------------------------
 * The run */

int generate_run(tm_model *m, const tokenizer *tok, const generate_options *opt, int32_t *const *prompt_ids,
                 const int32_t *n_prompt_ids, generate_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    int32_t n = opt->n_prompts, vocab = m->cfg.vocab;
    sequence *seqs = calloc((size_t)n, sizeof *seqs);
    kv_sequence **batch = calloc((size_t)n, sizeof *batch);
    int *batch_ids = calloc((size_t)n, sizeof *batch_ids);
    int32_t *batch_tokens = calloc((size_t)n, sizeof *batch_tokens);
    float *logits = malloc((size_t)n * vocab * sizeof *logits);
    sampler smp = {0};
    device_timer timer;
    timer_open(&timer, m->drv);
    int rc = -1;
    if (!seqs || !batch || !batch_ids || !batch_tokens || !logits ||
        sampler_init(&smp, vocab, opt->temperature, opt->top_k, opt->top_p, opt->seed)) {
        tm_fail(m->err, sizeof m->err, "out of host memory");
        goto out;
    }
    for (int32_t i = 0; i < n; i++) {
        seqs[i].out = calloc((size_t)opt->n_predict + 1, sizeof *seqs[i].out);
        if (!seqs[i].out || kv_sequence_init(&seqs[i].kv, m->max_positions, m->kv.layout.block_size)) {
            tm_fail(m->err, sizeof m->err, "out of host memory");
            goto out;
        }
        seqs[i].done = opt->n_predict == 0;
        seqs[i].last = prompt_ids[i][n_prompt_ids[i] - 1];
    }
    if (opt->stream && n == 1) {
        fputs(opt->prompts[0], stdout);
        fflush(stdout);
    }

    /* prefill each prompt; its last logits give the first token */
    double t0 = now();
    timer_start(&timer);
    for (int32_t i = 0; i < n; i++) {
        if (model_prefill(m, &seqs[i].kv, i, prompt_ids[i], n_prompt_ids[i], logits)) goto out;
        stats->prompt_tokens += n_prompt_ids[i];
        dump_logits(opt->dump_logits, 0, i, logits, vocab);
        if (!seqs[i].done && take_token(&seqs[i], tok, opt, sampler_pick(&smp, logits))) goto out;
    }
    stats->prefill_seconds = now() - t0;
    stats->prefill_device_ms = timer_stop(&timer);

    /* decode: one step feeds every unfinished sequence's last token */
    t0 = now();
    timer_start(&timer);
    for (int step = 1;; step++) {
        int32_t active = 0;
        for (int32_t i = 0; i < n; i++) {
            if (seqs[i].done) {
                kv_sequence_release(&m->kv, &seqs[i].kv); /* its blocks serve the others */
                continue;
            }
            batch[active] = &seqs[i].kv;
            batch_ids[active] = i;
            batch_tokens[active++] = seqs[i].last;
        }
        if (active == 0) break;
        if (model_decode(m, batch, batch_ids, batch_tokens, active, logits)) goto out;
        stats->decode_steps++;
        for (int32_t a = 0; a < active; a++) {
            sequence *s = &seqs[batch_ids[a]];
            const float *row = logits + (size_t)a * vocab;
            dump_logits(opt->dump_logits, step, batch_ids[a], row, vocab);
            int32_t before = s->n_out;
            if (take_token(s, tok, opt, sampler_pick(&smp, row))) goto out;
            stats->decode_tokens += s->n_out - before;
        }
    }
    stats->decode_seconds = now() - t0;
    stats->decode_device_ms = timer_stop(&timer);
    stats->device_times = timer.ok;

    for (int32_t i = 0; i < n; i++) {
        stats->generated_tokens += seqs[i].n_out;
        if (opt->texts && !(opt->texts[i] = strdup(seqs[i].text ? seqs[i].text : ""))) {
            tm_fail(m->err, sizeof m->err, "out of host memory");
            goto out;
        }
        if (opt->stream && n == 1) {
            fputc('\n', stdout);
        } else {
            printf("--- prompt %d/%d ---\n%s%s\n", i + 1, n, opt->prompts[i], seqs[i].text ? seqs[i].text : "");
        }
        if (opt->verbose) {
            fprintf(stderr, "tiermem-llm: seq %d prompt ids:", i);
            for (int32_t k = 0; k < n_prompt_ids[i]; k++) fprintf(stderr, " %d", prompt_ids[i][k]);
            fprintf(stderr, "\ntiermem-llm: seq %d generated ids:", i);
            for (int32_t k = 0; k < seqs[i].n_out; k++) fprintf(stderr, " %d", seqs[i].out[k]);
            fputc('\n', stderr);
        }
    }
    fflush(stdout);
    rc = 0;
out:
    for (int32_t i = 0; seqs && i < n; i++) {
        kv_sequence_release(&m->kv, &seqs[i].kv);
        kv_sequence_free(&seqs[i].kv);
        free(seqs[i].out);
        free(seqs[i].text);
    }
    sampler_free(&smp);
    timer_close(&timer);
    free(seqs);
    free(batch);
    free(batch_ids);
    free(batch_tokens);
    free(logits);
    return rc;
}
