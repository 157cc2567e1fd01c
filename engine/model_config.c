/* model_config.c — llama hyper-parameters with the format's defaults, validated. */
#include "engine/model_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"

/* An integer key in [lo, hi]; `fallback` when absent, or an error when fallback < 0. */
static int get_count(const gguf_file *f, const char *key, int64_t fallback, int64_t lo, int64_t hi,
                     int32_t *out, char *err)
{
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
    if (!gguf_str_eq(arch, "llama")) {
        snprintf(err, GGUF_ERROR_MAX, "architecture '%.*s' is not supported (only llama)",
                 (int)(arch.len > 40 ? 40 : arch.len), arch.data);
        return -1;
    }
    const int64_t big = INT32_MAX;
    if (get_count(f, "llama.block_count", -1, 1, 4096, &cfg->n_layers, err) ||
        get_count(f, "llama.embedding_length", -1, 1, 1 << 20, &cfg->dim, err) ||
        get_count(f, "llama.feed_forward_length", -1, 1, 1 << 22, &cfg->ffn_dim, err) ||
        get_count(f, "llama.attention.head_count", -1, 1, 4096, &cfg->n_heads, err) ||
        get_count(f, "llama.attention.head_count_kv", cfg->n_heads, 1, cfg->n_heads, &cfg->n_kv_heads, err) ||
        get_count(f, "llama.context_length", 2048, 1, big, &cfg->ctx_train, err))
        return -1;
    if (cfg->dim % cfg->n_heads != 0 || cfg->n_heads % cfg->n_kv_heads != 0) {
        snprintf(err, GGUF_ERROR_MAX, "embedding_length %d, head_count %d, head_count_kv %d: the widths must divide",
                 cfg->dim, cfg->n_heads, cfg->n_kv_heads);
        return -1;
    }
    cfg->head_dim = cfg->dim / cfg->n_heads;
    if (cfg->head_dim > TM_ATTN_MAX_HEAD_DIM || cfg->head_dim % 2) {
        snprintf(err, GGUF_ERROR_MAX, "head size %d is not supported (even, at most %d)", cfg->head_dim,
                 TM_ATTN_MAX_HEAD_DIM);
        return -1;
    }
    if (get_count(f, "llama.rope.dimension_count", cfg->head_dim, 0, cfg->head_dim, &cfg->rot_dim, err))
        return -1;
    if (cfg->rot_dim % 2) {
        snprintf(err, GGUF_ERROR_MAX, "llama.rope.dimension_count %d is odd", cfg->rot_dim);
        return -1;
    }
    double base = 10000.0, eps = 1e-5;
    if (gguf_get_float(f, "llama.rope.freq_base", &base, err) < 0 ||
        gguf_get_float(f, "llama.attention.layer_norm_rms_epsilon", &eps, err) < 0)
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
