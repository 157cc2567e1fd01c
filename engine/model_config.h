/* model_config.h — a llama-family model's hyper-parameters, from the keys of its
 * architecture (llama.*, qwen2.*, qwen3.*). Mistral files use the llama architecture. */
#ifndef TM_ENGINE_MODEL_CONFIG_H
#define TM_ENGINE_MODEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/gguf.h"

/* The architectures tiermem-llm runs: the llama block, with these differences. */
typedef enum llama_arch {
    ARCH_LLAMA,             /* Llama 1-3, Mistral: RoPE on adjacent pairs */
    ARCH_QWEN2,             /* Qwen 2 / 2.5: q, k and v biases; NEOX RoPE */
    ARCH_QWEN3,             /* Qwen 3 (and its MoE, qwen3moe): per-head RMSNorm of q and k; NEOX RoPE */
} llama_arch;

typedef struct llama_config {
    llama_arch arch;
    char arch_name[16];     /* general.architecture, the prefix of the other keys */
    bool rope_neox;         /* RoPE pairs (i, i + rot_dim / 2) instead of (2i, 2i + 1) */
    bool qkv_bias;          /* blk.N.attn_{q,k,v}.bias */
    bool qk_norm;           /* blk.N.attn_{q,k}_norm.weight, [head_dim] each */
    int32_t n_layers;
    int32_t dim;            /* embedding width */
    int32_t n_heads;        /* query heads */
    int32_t n_kv_heads;     /* key/value heads (grouped-query attention) */
    int32_t head_dim;       /* attention.key_length, else dim / n_heads */
    int32_t ffn_dim;        /* feed-forward hidden width */
    int32_t vocab;          /* rows of token_embd */
    int32_t ctx_train;      /* llama.context_length */
    int32_t rot_dim;        /* dims of each head RoPE rotates (llama.rope.dimension_count) */
    float rope_base;        /* llama.rope.freq_base, 10000 when absent */
    float rms_eps;          /* llama.attention.layer_norm_rms_epsilon */
    int32_t n_expert;       /* expert_count: 0 for a dense model */
    int32_t n_expert_used;  /* expert_used_count: experts per token */
    int32_t expert_ffn_dim; /* expert_feed_forward_length, else feed_forward_length */
} llama_config;

/* Fills cfg from the file's metadata (the vocabulary size from token_embd). Counts may be
 * any unsigned or non-negative integer type. 0, or -1 with a message in err. */
int llama_config_load(llama_config *cfg, const gguf_file *f, char err[GGUF_ERROR_MAX]);

#endif /* TM_ENGINE_MODEL_CONFIG_H */
