/* model.h — a llama model ready to run: weights on the device, scratch buffers, the KV
 * pool, and the forward passes (prefill of one sequence, batched decode). */
#ifndef TM_ENGINE_MODEL_H
#define TM_ENGINE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/driver.h"
#include "engine/kv_cache.h"
#include "engine/model_config.h"
#include "engine/weights.h"

#define TM_ERR_MAX 1024

typedef struct scratch {
    CUdeviceptr x;          /* [max_tokens][dim] residual stream */
    CUdeviceptr xb;         /* [max_tokens][dim] normed input of a sublayer */
    CUdeviceptr xb2;        /* [max_tokens][dim] output of a sublayer */
    CUdeviceptr qkv;        /* [max_tokens][q_dim + 2 * kv_dim] q | k | v of each token */
    CUdeviceptr att;        /* [max_tokens][q_dim] attention output */
    CUdeviceptr hb;         /* [max_tokens][ffn_dim] gate, then silu(gate) * up */
    CUdeviceptr hb2;        /* [max_tokens][ffn_dim] up */
    CUdeviceptr logits;     /* [max_tokens][vocab] */
    CUdeviceptr ids;        /* [max_tokens] int32 */
    CUdeviceptr pos;        /* [max_tokens] int32 */
    CUdeviceptr slots;      /* [max_tokens] int32 */
    CUdeviceptr block_tables; /* [max_tokens][max_blocks_per_seq] int32 */
    CUdeviceptr seq_lens;   /* [max_tokens] int32 */
    CUdeviceptr absmax;     /* [1] f32, fp8 scale calibration */
    /* mixture of experts (0 in a dense model); K = experts per token, F = expert width */
    CUdeviceptr moe_logits; /* [max_tokens][n_expert] router logits */
    CUdeviceptr moe_ids;    /* [max_tokens][K] int32 chosen experts */
    CUdeviceptr moe_w;      /* [max_tokens][K] their gate weights */
    CUdeviceptr moe_hb;     /* [max_tokens][K][F] gate, then silu(gate) * up */
    CUdeviceptr moe_hb2;    /* [max_tokens][K][F] up */
    CUdeviceptr moe_y;      /* [max_tokens][K][dim] each expert's output */
    int64_t bytes;
    int32_t n_allocs;
} scratch;

typedef struct tm_model {
    const tm_driver *drv;
    llama_config cfg;
    model_weights w;
    kv_cache kv;
    scratch s;
    int32_t max_tokens;     /* rows of the scratch buffers: a prefill chunk or a decode batch */
    int32_t max_positions;  /* context length per sequence */
    int32_t max_blocks_per_seq;
    int32_t qkv_dim;        /* q_dim + 2 * kv_dim */
    int32_t *h_staging;     /* [max_tokens * (3 + max_blocks_per_seq)] host staging for uploads */
    bool calibrating;       /* the next pass sets each layer's fp8 scales from its K/V */
    int64_t *expert_use;    /* [n_layers][n_expert] tokens routed to each expert, or NULL */
    char err[TM_ERR_MAX];
} tm_model;

typedef struct model_options {
    int32_t max_tokens;     /* prefill chunk and decode batch limit */
    int32_t max_positions;  /* --ctx */
    kv_options kv;
    tm_load_options load;   /* how the weights are read (zero: from the mapping) */
} model_options;

/* Uploads the weights (config already loaded into m->cfg), allocates scratch, then sizes
 * and allocates the KV pool from what is free. 0, or -1 with m->err set. */
int model_load(tm_model *m, const tm_driver *drv, const gguf_file *f, const model_options *opt);
void model_free(tm_model *m);

/* Runs ids[n] of sequence s (positions s->len ..) through the model, growing its blocks.
 * logits (host [vocab], may be NULL) gets the last token's logits. */
int model_prefill(tm_model *m, kv_sequence *s, int seq_id, const int32_t *ids, int32_t n, float *logits);
/* One decode step for n sequences: token ids[i] at position seqs[i]->len.
 * logits: host [n][vocab]. */
int model_decode(tm_model *m, kv_sequence *const *seqs, const int *seq_ids, const int32_t *ids, int32_t n,
                 float *logits);
/* Sets the fp8 e4m3 K/V scales of every layer from a calibration pass over ids[n]:
 * scale = headroom * absmax / 448 (see model.c). */
int model_calibrate_kv(tm_model *m, const int32_t *ids, int32_t n);

#endif /* TM_ENGINE_MODEL_H */
