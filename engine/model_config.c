/* model_config.c — llama-family hyper-parameters with the format's defaults, validated. */
#include "engine/model_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"

static const struct {
    const char *name;
    llama_arch arch;
    bool rope_neox, qkv_bias, qk_norm;
} ARCHS[] = {
    {"llama", ARCH_LLAMA, false, false, false},
    {"qwen2", ARCH_QWEN2, true, true, false},
    {"qwen3", ARCH_QWEN3, true, false, true},
    {"qwen3moe", ARCH_QWEN3, true, false, true},
};

/* An integer key "<arch>.<name>" in [lo, hi]; `fallback` when absent, or an error when
 * fallback < 0. */
static int get_count(const gguf_file *f, const char *arch, const char *name, int64_t fallback, int64_t lo,
                     int64_t hi, int32_t *out, char *err)
{
    char key[GGUF_MAX_NAME + 32];
    snprintf(key, sizeof key, "%s.%s", arch, name);
    uint64_t v = 0;
    int rc = gguf_get_uint(f, key, &v, err);
    if (rc < 0) return -1;
    if (rc == 0) {
        if (fallback < 0) {
            snprintf(err, GGUF_ERROR_MAX, "missing metadata key %s", key);
            return -1;
        }
        v = (uint64_t)fallback;
    }
    if (v < (uint64_t)lo || v > (uint64_t)hi) {
        snprintf(err, GGUF_ERROR_MAX, "%s = %" PRIu64 " is out of range (%" PRId64 " to %" PRId64 ")", key, v,
                 lo, hi);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

int llama_config_load(llama_config *cfg, const gguf_file *f, char err[GGUF_ERROR_MAX])
{
    memset(cfg, 0, sizeof *cfg);
    gguf_str arch;
    int rc = gguf_get_str(f, "general.architecture", &arch, err);
    if (rc < 0) return -1;
    if (rc == 0) {
        snprintf(err, GGUF_ERROR_MAX, "missing metadata key general.architecture");
        return -1;
    }
    size_t a = 0;
    while (a < sizeof ARCHS / sizeof *ARCHS && !gguf_str_eq(arch, ARCHS[a].name)) a++;
    if (a == sizeof ARCHS / sizeof *ARCHS) {
        snprintf(err, GGUF_ERROR_MAX, "architecture '%.*s' is not supported (llama, qwen2, qwen3, qwen3moe; "
                 "Mistral and Mixtral files are llama)", (int)(arch.len > 40 ? 40 : arch.len), arch.data);
        return -1;
    }
    cfg->arch = ARCHS[a].arch;
    snprintf(cfg->arch_name, sizeof cfg->arch_name, "%s", ARCHS[a].name);
    cfg->rope_neox = ARCHS[a].rope_neox;
    cfg->qkv_bias = ARCHS[a].qkv_bias;
    cfg->qk_norm = ARCHS[a].qk_norm;
    const char *an = cfg->arch_name;
    const int64_t big = INT32_MAX;
    if (get_count(f, an, "block_count", -1, 1, 4096, &cfg->n_layers, err) ||
        get_count(f, an, "embedding_length", -1, 1, 1 << 20, &cfg->dim, err) ||
        get_count(f, an, "feed_forward_length", -1, 1, 1 << 22, &cfg->ffn_dim, err) ||
        get_count(f, an, "attention.head_count", -1, 1, 4096, &cfg->n_heads, err) ||
        get_count(f, an, "attention.head_count_kv", cfg->n_heads, 1, cfg->n_heads, &cfg->n_kv_heads, err) ||
        get_count(f, an, "context_length", 2048, 1, big, &cfg->ctx_train, err))
        return -1;
    /* Mixture of experts: Mixtral (llama) and Qwen 3 MoE keys */
    if (get_count(f, an, "expert_count", 0, 0, TM_MOE_MAX_EXPERTS, &cfg->n_expert, err) ||
        get_count(f, an, "expert_used_count", cfg->n_expert ? -1 : 0, cfg->n_expert ? 1 : 0,
                  cfg->n_expert < TM_MOE_MAX_USED ? cfg->n_expert : TM_MOE_MAX_USED, &cfg->n_expert_used, err) ||
        get_count(f, an, "expert_feed_forward_length", cfg->ffn_dim, 1, 1 << 22, &cfg->expert_ffn_dim, err))
        return -1;
    int32_t key_len = 0, value_len = 0;
    if (get_count(f, an, "attention.key_length", 0, 0, 1 << 16, &key_len, err) ||
        get_count(f, an, "attention.value_length", key_len, 0, 1 << 16, &value_len, err))
        return -1;
    if (key_len != value_len) {
        snprintf(err, GGUF_ERROR_MAX, "%s.attention.key_length %d and value_length %d differ (not supported)", an,
                 key_len, value_len);
        return -1;
    }
    if ((!key_len && cfg->dim % cfg->n_heads != 0) || cfg->n_heads % cfg->n_kv_heads != 0) {
        snprintf(err, GGUF_ERROR_MAX, "embedding_length %d, head_count %d, head_count_kv %d: the widths must divide",
                 cfg->dim, cfg->n_heads, cfg->n_kv_heads);
        return -1;
    }
    cfg->head_dim = key_len ? key_len : cfg->dim / cfg->n_heads;
    if (cfg->head_dim > TM_ATTN_MAX_HEAD_DIM || cfg->head_dim % 2) {
        snprintf(err, GGUF_ERROR_MAX, "head size %d is not supported (even, at most %d)", cfg->head_dim,
                 TM_ATTN_MAX_HEAD_DIM);
        return -1;
    }
    if (get_count(f, an, "rope.dimension_count", cfg->head_dim, 0, cfg->head_dim, &cfg->rot_dim, err))
        return -1;
    if (cfg->rot_dim % 2) {
        snprintf(err, GGUF_ERROR_MAX, "%s.rope.dimension_count %d is odd", an, cfg->rot_dim);
        return -1;
    }
    double base = 10000.0, eps = 1e-5;
    char base_key[48], eps_key[64];
    snprintf(base_key, sizeof base_key, "%s.rope.freq_base", an);
    snprintf(eps_key, sizeof eps_key, "%s.attention.layer_norm_rms_epsilon", an);
    if (gguf_get_float(f, base_key, &base, err) < 0 || gguf_get_float(f, eps_key, &eps, err) < 0)
        return -1;
    if (!(base > 0) || !(eps >= 0)) {
        snprintf(err, GGUF_ERROR_MAX, "rope.freq_base %g and layer_norm_rms_epsilon %g must be positive", base, eps);
        return -1;
    }
    cfg->rope_base = (float)base;
    cfg->rms_eps = (float)eps;
    const gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight");
    if (!embd) {
        snprintf(err, GGUF_ERROR_MAX, "tensor 'token_embd.weight' is missing");
        return -1;
    }
    if (embd->n_dims != 2 || embd->dims[0] != cfg->dim || embd->dims[1] > INT32_MAX) {
        snprintf(err, GGUF_ERROR_MAX, "tensor 'token_embd.weight' has shape [%" PRId64 ", %" PRId64
                 "], expected [%d, vocab]", embd->dims[0], embd->dims[1], cfg->dim);
        return -1;
    }
    cfg->vocab = (int32_t)embd->dims[1];
    return 0;
}
