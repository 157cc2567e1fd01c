/* sampler.c — greedy and temperature / top-k / top-p sampling on the host. */
#include "engine/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sampler_init(sampler *s, int32_t n_vocab, float temperature, int32_t top_k, float top_p, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->temperature = temperature;
    s->top_k = top_k;
    s->top_p = top_p;
    s->rng = seed ? seed : 0x9E3779B97F4A7C15ull; /* xorshift needs a non-zero state */
    s->n_vocab = n_vocab;
    s->work = malloc((size_t)n_vocab * sizeof *s->work);
    return s->work ? 0 : -1;
}

void sampler_free(sampler *s)
{
    free(s->work);
    s->work = NULL;
}

int32_t sampler_argmax(const float *logits, int32_t n)
{
    int32_t best = 0;
    float best_v = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (logits[i] > best_v) { best_v = logits[i]; best = i; }
    return best;
}

static float uniform01(sampler *s)
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return (float)((s->rng * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f; /* 24 bits in [0, 1) */
}

static int by_prob_desc(const void *a, const void *b)
{
    const struct prob_index *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;
}

int32_t sampler_pick(sampler *s, const float *logits)
{
    if (s->temperature <= 0) return sampler_argmax(logits, s->n_vocab);
    int32_t n = s->n_vocab;
    float max = logits[sampler_argmax(logits, n)];
    for (int32_t i = 0; i < n; i++) {
        float p = isnan(logits[i]) ? 0.0f : expf((logits[i] - max) / s->temperature);
        s->work[i] = (struct prob_index){p, i};
    }
    qsort(s->work, (size_t)n, sizeof *s->work, by_prob_desc);
    /* keep the top k, then the smallest prefix holding top_p of the mass */
    int32_t keep = s->top_k > 0 && s->top_k < n ? s->top_k : n;
    float kept = 0;
    for (int32_t i = 0; i < keep; i++) kept += s->work[i].p;
    if (s->top_p < 1.0f) {
        float acc = 0;
        for (int32_t i = 0; i < keep; i++) {
            acc += s->work[i].p;
            if (acc >= s->top_p * kept) { keep = i + 1; kept = acc; break; }
        }
    }
    float r = uniform01(s) * kept, acc = 0;
    for (int32_t i = 0; i < keep; i++) {
        acc += s->work[i].p;
        if (r < acc) return s->work[i].id;
    }
    return s->work[keep - 1].id;
}
