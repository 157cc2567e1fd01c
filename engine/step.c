/* step.c — see step.h. */
#include "engine/error.h"
#include "engine/step.h"

#include <stdlib.h>
#include <string.h>

int step_output_init(step_output *out, int32_t max_rows, int32_t vocab)
{
    memset(out, 0, sizeof *out);
    size_t rows = max_rows > 0 ? (size_t)max_rows : 1;
    out->seqs = calloc(rows, sizeof *out->seqs);
    out->from_prefill = calloc(rows, sizeof *out->from_prefill);
    out->logits = malloc(rows * (size_t)vocab * sizeof *out->logits);
    if (out->seqs && out->from_prefill && out->logits) return 0;
    step_output_free(out);
    return -1;
}

void step_output_free(step_output *out)
{
    free(out->seqs);
    free(out->from_prefill);
    free(out->logits);
    memset(out, 0, sizeof *out);
}

int step_seq_init(step_seq *s, const tm_model *m, const int32_t *ids, int32_t n, int id)
{
    memset(s, 0, sizeof *s);
    s->prompt = ids;
    s->n_prompt = n;
    s->next = n > 0 ? ids[n - 1] : 0;
    s->id = id;
    return kv_sequence_init(&s->kv, m->max_positions, m->kv.layout.block_size);
}

void step_seq_free(step_seq *s, kv_cache *kv)
{
    kv_sequence_release(kv, &s->kv);
    kv_sequence_free(&s->kv);
}

int step_run(tm_model *m, step_seq *const *seqs, int32_t n, int32_t prefill_budget, step_output *out)
{
    int32_t vocab = m->cfg.vocab;
    out->n = out->prefill_tokens = out->decode_tokens = 0;

    /* who decodes is fixed before any prefill, so a prompt finishing now waits a step */
    int32_t n_decode = 0;
    for (int32_t i = 0; i < n; i++)
        if (!step_seq_prefilling(seqs[i]) && !seqs[i]->done) n_decode++;

    /* prefill, in order, within the budget; a finished prompt's last logits make a row */
    for (int32_t i = 0; i < n && prefill_budget > 0; i++) {
        step_seq *s = seqs[i];
        if (!step_seq_prefilling(s)) continue;
        int32_t chunk = s->n_prompt - s->n_prefilled;
        if (chunk > prefill_budget) chunk = prefill_budget;
        bool last = s->n_prefilled + chunk == s->n_prompt;
        float *row = out->logits + (size_t)out->n * vocab;
        if (model_prefill(m, &s->kv, s->id, s->prompt + s->n_prefilled, chunk, last ? row : NULL)) return -1;
        s->n_prefilled += chunk;
        prefill_budget -= chunk;
        out->prefill_tokens += chunk;
        if (last) {
            out->from_prefill[out->n] = true;
            out->seqs[out->n++] = s;
        }
    }

    /* one decode step for the rest, in batches the scratch buffers hold */
    kv_sequence **batch = malloc((size_t)(n_decode ? n_decode : 1) * sizeof *batch);
    int *batch_ids = malloc((size_t)(n_decode ? n_decode : 1) * sizeof *batch_ids);
    int32_t *tokens = malloc((size_t)(n_decode ? n_decode : 1) * sizeof *tokens);
    int rc = 0;
    if (!batch || !batch_ids || !tokens) {
        rc = tm_fail(m->err, sizeof m->err, "out of host memory");
        goto out;
    }
    int32_t first = out->n, k = 0;
    for (int32_t i = 0; i < n && k < n_decode; i++) {
        step_seq *s = seqs[i];
        if (step_seq_prefilling(s) || s->done) continue;
        /* a prompt that finished prefill in this very step is not in the decode set */
        bool just_prefilled = false;
        for (int32_t r = 0; r < first; r++) just_prefilled |= out->seqs[r] == s;
        if (just_prefilled) continue;
        batch[k] = &s->kv;
        batch_ids[k] = s->id;
        tokens[k++] = s->next;
        out->from_prefill[out->n] = false;
        out->seqs[out->n++] = s;
    }
    for (int32_t done = 0; done < k;) {
        int32_t chunk = k - done < m->max_tokens ? k - done : m->max_tokens;
        if (model_decode(m, batch + done, batch_ids + done, tokens + done, chunk,
                         out->logits + (size_t)(first + done) * vocab)) {
            rc = -1;
            goto out;
        }
        done += chunk;
    }
    out->decode_tokens = k;
out:
    free(batch);
    free(batch_ids);
    free(tokens);
    return rc;
}
