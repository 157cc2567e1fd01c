/* generate.h — running prompts: prefill each, then batched decode of all of them until
 * each has its tokens (its own count, or one for all), streaming text and reporting speed
 * and memory. */
#ifndef TM_ENGINE_GENERATE_H
#define TM_ENGINE_GENERATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/model.h"
#include "engine/sampler.h"
#include "engine/tokenizer.h"

typedef struct generate_options {
    char **prompts;             /* [n_prompts] */
    int32_t n_prompts;
    int32_t n_predict;          /* -n: tokens to generate per prompt */
    float temperature;
    int32_t top_k;
    float top_p;
    uint64_t seed;
    bool stream;                /* print tokens as they come (one prompt) */
    bool verbose;               /* ids per sequence on stderr */
    FILE *dump_logits;          /* each step's logits, or NULL */
    char **texts;               /* [n_prompts] out: each sequence's generated text (malloc'd), or NULL */
    const int32_t *forced;      /* [n_forced] teacher forcing: these tokens, not the sampled ones, */
    int32_t n_forced;           /* are taken by every sequence (logits still dumped) */
    int32_t warmup;             /* decode steps run before the decode figures start */
    const int32_t *n_predict_each; /* [n_prompts] tokens to generate per prompt, each its own
                                    * stop (a finished sequence's KV blocks go back to the pool
                                    * while the others run on), or NULL: n_predict for every one */
} generate_options;

typedef struct generate_stats {
    int64_t prompt_tokens;
    int64_t generated_tokens;
    int64_t decode_tokens;      /* tokens produced by decode steps (the first comes from prefill) */
    double prefill_seconds;
    double decode_seconds;
    /* device time from CUDA events around prefill and decode (simulated on simcuda) */
    bool device_times;          /* the events worked; the fields below are valid */
    double prefill_device_ms;
    double decode_device_ms;
    int64_t decode_steps;
} generate_stats;

/* Tokenises every prompt with BOS; ids[i] is malloc'd, n_ids[i] its length. */
int generate_tokenize(const tokenizer *tok, char **prompts, int32_t n_prompts, int32_t ***ids, int32_t **n_ids,
                      char *err, size_t errlen);
/* Runs the prompts (already tokenised) on a loaded model. 0, or -1 with m->err set. */
int generate_run(tm_model *m, const tokenizer *tok, const generate_options *opt, int32_t *const *prompt_ids,
                 const int32_t *n_prompt_ids, generate_stats *stats);
/* The fixed text fp8 e4m3 scales are calibrated on (prompt-independent, so every run of
 * a model gets the same scales). */
extern const char *const generate_calibration_text;

#endif /* TM_ENGINE_GENERATE_H */
