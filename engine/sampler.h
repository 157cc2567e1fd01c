/* sampler.h — picking the next token from logits: greedy, or temperature with top-k and
 * top-p (nucleus) filtering, from a seeded generator. */
#ifndef TM_ENGINE_SAMPLER_H
#define TM_ENGINE_SAMPLER_H

#include <stdint.h>

typedef struct sampler {
    float temperature;      /* 0: greedy */
    int32_t top_k;          /* 0: no limit */
    float top_p;            /* 1: no limit */
    uint64_t rng;           /* xorshift64* state */
    int32_t n_vocab;
    struct prob_index { float p; int32_t id; } *work; /* [n_vocab] */
} sampler;

int sampler_init(sampler *s, int32_t n_vocab, float temperature, int32_t top_k, float top_p, uint64_t seed);
void sampler_free(sampler *s);
/* logits: [n_vocab]; not modified. */
int32_t sampler_pick(sampler *s, const float *logits);
/* The greedy choice: the largest logit, lowest id on ties, never NaN. */
int32_t sampler_argmax(const float *logits, int32_t n);

#endif /* TM_ENGINE_SAMPLER_H */
