/* model_config.h — the llama architecture's hyper-parameters, from llama.* keys. */
#ifndef TM_ENGINE_MODEL_CONFIG_H
#define TM_ENGINE_MODEL_CONFIG_H

#include <stdint.h>

#include "engine/gguf.h"

typedef struct llama_config {
    int32_t n_layers;
    int32_t dim;            /* embedding width */
    int32_t n_heads;        /* query heads */
    int32_t n_kv_heads;     /* key/value heads (grouped-query attention) */
    int32_t head_dim;       /* dim / n_heads */
    int32_t ffn_dim;        /* feed-forward hidden width */
    int32_t vocab;          /* rows of token_embd */
    int32_t ctx_train;      /* llama.context_length */
    int32_t rot_dim;        /* dims of each head RoPE rotates (llama.rope.dimension_count) */
    float rope_base;        /* llama.rope.freq_base, 10000 when absent */
    float rms_eps;          /* llama.attention.layer_norm_rms_epsilon */
} llama_config;

/* Fills cfg from the file's metadata (the vocabulary size from token_embd). Counts may be
 * any unsigned or non-negative integer type. 0, or -1 with a message in err. */
int llama_config_load(llama_config *cfg, const gguf_file *f, char err[GGUF_ERROR_MAX]);

#endif /* TM_ENGINE_MODEL_CONFIG_H */
