/* step.h — one scheduler step over a set of sequences, shared by the CLI's batched run
 * and the server's continuous batching.
 *
 * A step first runs prefill for sequences whose prompt is not all in the KV cache, up
 * to a budget of prompt tokens (so a long prompt is cut into chunks spread over steps
 * and never stalls the running streams for long), then one batched decode step for every
 * sequence that had finished its prefill before this step. Sampling is the caller's: the
 * step returns the logits of each sequence that produced one.
 */
#ifndef TM_ENGINE_STEP_H
#define TM_ENGINE_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/model.h"

typedef struct step_seq {
    kv_sequence kv;
    const int32_t *prompt;      /* [n_prompt] ids, BOS first */
    int32_t n_prompt;
    int32_t n_prefilled;        /* prompt tokens with KV stored (cached ones included) */
    int32_t next;               /* the id decode feeds next; set by the caller after sampling */
    bool done;                  /* no more decode steps (the caller decides) */
    int id;                     /* for messages */
} step_seq;

typedef struct step_output {
    step_seq **seqs;            /* [n] sequences with a logits row this step */
    bool *from_prefill;         /* [n] the row ends a prefill (the sequence's first token) */
    float *logits;              /* [n][vocab] host */
    int32_t n;
    int32_t prefill_tokens;     /* prompt tokens run this step */
    int32_t decode_tokens;      /* sequences in the decode batch */
} step_output;

/* Buffers for up to max_rows rows a step. 0, or -1 (host memory). */
int step_output_init(step_output *out, int32_t max_rows, int32_t vocab);
void step_output_free(step_output *out);

/* Sets s up for prompt ids[n] (not copied) with an empty KV sequence. 0, or -1. */
int step_seq_init(step_seq *s, const tm_model *m, const int32_t *ids, int32_t n, int id);
void step_seq_free(step_seq *s, kv_cache *kv);
static inline bool step_seq_prefilling(const step_seq *s) { return s->n_prefilled < s->n_prompt; }

/* One step over seqs[n] (rows of out: at most n). prefill_budget caps the prompt tokens
 * run (INT32_MAX: every pending prompt in full). 0, or -1 with m->err set. */
int step_run(tm_model *m, step_seq *const *seqs, int32_t n, int32_t prefill_budget, step_output *out);

#endif /* TM_ENGINE_STEP_H */
