/* generate.c — prefill, batched decode, streaming, and the per-run statistics. */
#include "engine/device_timer.h"
#include "engine/error.h"
#include "engine/generate.h"
#include "engine/step.h"
#include "engine/text.h"

#include <math.h>
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
    step_seq st;            /* prompt, KV blocks, the id fed next */
    int32_t *out;           /* [n_predict] generated ids */
    int32_t n_out;
    int32_t n_predict;      /* tokens it generates at most */
    tm_text text;           /* generated text (for printing under the prompt) */
} sequence;

static int append_piece(sequence *s, const tokenizer *tok, int32_t prev, int32_t id, bool stream)
{
    char piece[512];
    size_t n = tokenizer_decode(tok, prev, id, piece, sizeof piece);
    if (stream) {
        fwrite(piece, 1, n, stdout);
        fflush(stdout);
    }
    return tm_text_append(&s->text, piece, n);
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
        s->st.done = true;
        return 0;
    }
    if (append_piece(s, tok, s->st.next, id, opt->stream)) return -1;
    s->out[s->n_out++] = id;
    s->st.next = id;
    if (s->n_out >= s->n_predict) s->st.done = true;
    return 0;
}

/* ----------------------------------------------------------------------------
 * The run: the first step prefills every prompt in full, the next ones decode */

/* One look at the first logits: weights holding NaN or Inf would otherwise run to the end
 * and print whatever token the sampler makes of them. */
static bool all_finite(const float *logits, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (!isfinite(logits[i])) return false;
    return true;
}

int generate_run(tm_model *m, const tokenizer *tok, const generate_options *opt, int32_t *const *prompt_ids,
                 const int32_t *n_prompt_ids, generate_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    int32_t n = opt->n_prompts, vocab = m->cfg.vocab;
    sequence *seqs = calloc((size_t)n, sizeof *seqs);
    step_seq **all = calloc((size_t)n, sizeof *all);
    step_output so = {0};
    sampler smp = {0};
    device_timer timer;
    device_timer_open(&timer, m->drv);
    int rc = -1;
    if (!seqs || !all || step_output_init(&so, n, vocab) ||
        sampler_init(&smp, vocab, opt->temperature, opt->top_k, opt->top_p, opt->seed)) {
        tm_fail(m->err, sizeof m->err, "out of host memory");
        goto out;
    }
    for (int32_t i = 0; i < n; i++) {
        seqs[i].n_predict = opt->n_predict_each ? opt->n_predict_each[i] : opt->n_predict;
        seqs[i].out = calloc((size_t)seqs[i].n_predict + 1, sizeof *seqs[i].out);
        if (!seqs[i].out || step_seq_init(&seqs[i].st, m, prompt_ids[i], n_prompt_ids[i], i)) {
            tm_fail(m->err, sizeof m->err, "out of host memory");
            goto out;
        }
        seqs[i].st.done = seqs[i].n_predict == 0;
        all[i] = &seqs[i].st;
    }
    if (opt->stream && n == 1) {
        fputs(opt->prompts[0], stdout);
        fflush(stdout);
    }

    double t0 = now();
    device_timer_start(&timer);
    for (int step = 0;; step++) {
        bool active = step == 0;
        for (int32_t i = 0; i < n; i++) {
            if (seqs[i].st.done) kv_sequence_release(&m->kv, &seqs[i].st.kv); /* its blocks serve the others */
            else active = true;
        }
        if (!active) break;
        if (step_run(m, all, n, INT32_MAX, &so)) goto out;
        if (step > 0) stats->decode_steps++;
        for (int32_t r = 0; r < so.n; r++) {
            sequence *s = &seqs[so.seqs[r]->id];
            const float *row = so.logits + (size_t)r * vocab;
            dump_logits(opt->dump_logits, step, so.seqs[r]->id, row, vocab);
            if (step == 0 && so.seqs[r]->id == 0 && !all_finite(row, vocab)) {
                tm_fail(m->err, sizeof m->err, "the model produced NaN or Inf logits for the first prompt (are its "
                        "weights finite?)");
                goto out;
            }
            if (s->st.done) continue;
            int32_t before = s->n_out;
            if (take_token(s, tok, opt, sampler_pick(&smp, row))) goto out;
            if (!so.from_prefill[r]) stats->decode_tokens += s->n_out - before;
        }
        stats->prompt_tokens += so.prefill_tokens;
        if (step == 0) {
            stats->prefill_seconds = now() - t0;
            stats->prefill_device_ms = device_timer_stop(&timer);
        }
        if (step == 0 || step == opt->warmup) { /* decode figures start here */
            if (step > 0) device_timer_stop(&timer);
            stats->decode_steps = 0;
            stats->decode_tokens = 0;
            t0 = now();
            device_timer_start(&timer);
        }
    }
    stats->decode_seconds = now() - t0;
    stats->decode_device_ms = device_timer_stop(&timer);
    stats->device_times = timer.ok;

    for (int32_t i = 0; i < n; i++) {
        stats->generated_tokens += seqs[i].n_out;
        if (opt->texts && !(opt->texts[i] = strdup(seqs[i].text.data ? seqs[i].text.data : ""))) {
            tm_fail(m->err, sizeof m->err, "out of host memory");
            goto out;
        }
        if (opt->stream && n == 1) {
            fputc('\n', stdout);
        } else {
            printf("--- prompt %d/%d ---\n%s%s\n", i + 1, n, opt->prompts[i], seqs[i].text.data ? seqs[i].text.data : "");
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
        step_seq_free(&seqs[i].st, &m->kv);
        free(seqs[i].out);
        tm_text_free(&seqs[i].text);
    }
    sampler_free(&smp);
    device_timer_close(&timer);
    step_output_free(&so);
    free(seqs);
    free(all);
    return rc;
}
