/* forward.c — the llama forward pass, as a sequence of kernel launches.
 *
 * Per layer: x += Wo · attention(rope(Wq·n(x)), rope(Wk·n(x)), Wv·n(x)), then
 * x += Wdown · (silu(Wgate·n(x)) * Wup·n(x)), with n = RMSNorm. q, k and v of a token
 * share one row of the qkv buffer (q | k | v), so RoPE, the KV append and attention read
 * them in place through strides. Qwen 2 adds q/k/v biases and Qwen 3 normalises each q
 * and k head before RoPE, which turns NEOX pairs for both. Prefill runs one sequence's
 * tokens in chunks with causal attention over its pages; decode runs one token of each
 * of many sequences.
 */
#include "engine/error.h"
#include "engine/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/fp8.h"

#define F32(p) ((float *)(uintptr_t)(p))
#define I32(p) ((int32_t *)(uintptr_t)(p))

/* fp8 e4m3 scales leave this factor of headroom over the calibration absmax: values up
 * to twice what calibration saw still fit below 448 before saturating. e4m3 is floating
 * point, so the headroom costs precision only for values below 2^-6 of the scale. */
#define KV_SCALE_HEADROOM 4.0f

/* ----------------------------------------------------------------------------
 * Kernel launches */

static int launch(tm_model *m, int id, const char *bad, struct tm_geom g, void **params)
{
    if (bad) return tm_fail(m->err, sizeof m->err, "internal error: %s (%s)", bad, tm_kernel_names[id]);
    CUresult rc = tm_launch(m->drv, id, g, params);
    if (rc != CUDA_SUCCESS) return tm_fail(m->err, sizeof m->err, "launching %s failed: %s", tm_kernel_names[id], tm_cu_name(m->drv, rc));
    return 0;
}

static int op_embed(tm_model *m, int32_t n)
{
    const dev_matrix *e = &m->w.token_embd;
    struct tm_args_embed a = {F32(m->s.x), (const void *)(uintptr_t)e->ptr, I32(m->s.ids), n, m->cfg.dim, m->cfg.vocab};
    void *p[TM_NPARAMS_embed];
    tm_params_embed(&a, p);
    return launch(m, tm_kernel_for_wtype(TM_K_tm_embed_f32, e->wtype), tm_check_embed(&a, e->wtype), tm_geom_embed(&a), p);
}

static int op_rmsnorm_dim(tm_model *m, CUdeviceptr out, CUdeviceptr x, CUdeviceptr w, int32_t n_rows, int32_t dim)
{
    struct tm_args_rmsnorm a = {F32(out), F32(x), F32(w), n_rows, dim, m->cfg.rms_eps};
    void *p[TM_NPARAMS_rmsnorm];
    tm_params_rmsnorm(&a, p);
    return launch(m, TM_K_tm_rmsnorm, tm_check_rmsnorm(&a), tm_geom_rmsnorm(&a), p);
}

static int op_rmsnorm(tm_model *m, CUdeviceptr out, CUdeviceptr x, CUdeviceptr w, int32_t n_rows)
{
    return op_rmsnorm_dim(m, out, x, w, n_rows, m->cfg.dim);
}

/* out[t][0 .. n_out) = w · x[t], rows out_stride apart; matvec up to TM_MATVEC_MAX_TOKENS. */
static int op_matmul(tm_model *m, CUdeviceptr out, CUdeviceptr x, const dev_matrix *w, int32_t n_tokens,
                     int32_t out_stride)
{
    struct tm_args_matmul a = {F32(out), F32(x), (const void *)(uintptr_t)w->ptr, n_tokens, w->n_in, w->n_out,
                               out_stride};
    void *p[TM_NPARAMS_matmul];
    tm_params_matmul(&a, p);
    bool vec = n_tokens <= TM_MATVEC_MAX_TOKENS;
    int id = tm_kernel_for_wtype(vec ? TM_K_tm_matvec_f32 : TM_K_tm_matmul_f32, w->wtype);
    return launch(m, id, tm_check_matmul(&a, w->wtype), vec ? tm_geom_matvec(&a) : tm_geom_matmul(&a), p);
}

static int op_rope(tm_model *m, CUdeviceptr x, int32_t n_tokens, int32_t n_heads)
{
    struct tm_args_rope a = {F32(x), I32(m->s.pos), n_tokens, n_heads, m->cfg.head_dim, m->cfg.rot_dim,
                             m->qkv_dim, m->cfg.rope_base, m->w.rope_freqs ? F32(m->w.rope_freqs) : NULL,
                             m->cfg.rope_neox};
    void *p[TM_NPARAMS_rope];
    tm_params_rope(&a, p);
    return launch(m, TM_K_tm_rope, tm_check_rope(&a), tm_geom_rope(&a), p);
}

static int op_silu_mul(tm_model *m, int64_t n)
{
    struct tm_args_silu_mul a = {F32(m->s.hb), F32(m->s.hb), F32(m->s.hb2), n};
    void *p[TM_NPARAMS_silu_mul];
    tm_params_silu_mul(&a, p);
    return launch(m, TM_K_tm_silu_mul, tm_check_silu_mul(&a), tm_geom_elementwise(&a), p);
}

/* out[i] = a[i] + b[i] over n floats */
static int op_add(tm_model *m, CUdeviceptr out, CUdeviceptr x, CUdeviceptr y, int64_t n)
{
    struct tm_args_add a = {F32(out), F32(x), F32(y), n};
    void *p[TM_NPARAMS_add];
    tm_params_add(&a, p);
    return launch(m, TM_K_tm_add, tm_check_add(&a), tm_geom_elementwise(&a), p);
}

/* x += xb2 (the residual) */
static int op_residual(tm_model *m, int64_t n)
{
    return op_add(m, m->s.x, m->s.x, m->s.xb2, n);
}

/* Qwen's extras on each token's qkv row, before RoPE: the q, k and v biases (Qwen 2) and
 * the RMSNorm of each q and k head (Qwen 3). A launch per token and part: rows of the
 * qkv buffer are qkv_dim apart. */
static int op_qkv_extras(tm_model *m, const layer_weights *L, int32_t n_tokens)
{
    const llama_config *c = &m->cfg;
    int64_t q_dim = (int64_t)c->n_heads * c->head_dim, kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
    for (int32_t t = 0; t < n_tokens; t++) {
        CUdeviceptr q = m->s.qkv + (CUdeviceptr)((int64_t)t * m->qkv_dim * 4);
        CUdeviceptr k = q + (CUdeviceptr)(q_dim * 4), v = k + (CUdeviceptr)(kv_dim * 4);
        if (L->bq && (op_add(m, q, q, L->bq, q_dim) || op_add(m, k, k, L->bk, kv_dim) ||
                      op_add(m, v, v, L->bv, kv_dim)))
            return -1;
        if (L->q_norm && (op_rmsnorm_dim(m, q, q, L->q_norm, c->n_heads, c->head_dim) ||
                          op_rmsnorm_dim(m, k, k, L->k_norm, c->n_kv_heads, c->head_dim)))
            return -1;
    }
    return 0;
}

static int op_absmax(tm_model *m, CUdeviceptr x, int64_t n)
{
    struct tm_args_absmax a = {F32(m->s.absmax), F32(x), n};
    void *p[TM_NPARAMS_absmax];
    tm_params_absmax(&a, p);
    return launch(m, TM_K_tm_absmax, tm_check_absmax(&a), tm_geom_absmax(&a), p);
}

static int op_kv_append(tm_model *m, int32_t layer, int32_t n_tokens)
{
    const kv_cache *kv = &m->kv;
    int32_t q_dim = m->cfg.n_heads * m->cfg.head_dim, kv_dim = m->cfg.n_kv_heads * m->cfg.head_dim;
    struct tm_args_kv_append a = {
        (void *)(uintptr_t)kv->k_pools[layer], (void *)(uintptr_t)kv->v_pools[layer],
        F32(m->s.qkv) + q_dim, F32(m->s.qkv) + q_dim + kv_dim, I32(m->s.slots), n_tokens, m->cfg.n_kv_heads,
        m->cfg.head_dim, kv->layout.block_size, m->qkv_dim, m->qkv_dim, kv->scales[layer].k, kv->scales[layer].v};
    void *p[TM_NPARAMS_kv_append];
    tm_params_kv_append(&a, p);
    return launch(m, tm_kernel_for_kv(TM_K_tm_kv_append_f32, kv->layout.dtype), tm_check_kv_append(&a),
                  tm_geom_kv_append(&a), p);
}

static int op_attn_prefill(tm_model *m, int32_t layer, int32_t n_tokens, int32_t start_pos)
{
    const kv_cache *kv = &m->kv;
    struct tm_args_attn_prefill a = {
        F32(m->s.att), F32(m->s.qkv), (const void *)(uintptr_t)kv->k_pools[layer],
        (const void *)(uintptr_t)kv->v_pools[layer], I32(m->s.block_tables), n_tokens, start_pos, m->cfg.n_heads,
        m->cfg.n_kv_heads, m->cfg.head_dim, kv->layout.block_size, m->qkv_dim, 1.0f / sqrtf((float)m->cfg.head_dim),
        kv->scales[layer].k, kv->scales[layer].v};
    void *p[TM_NPARAMS_attn_prefill];
    tm_params_attn_prefill(&a, p);
    return launch(m, tm_kernel_for_kv(TM_K_tm_attn_prefill_f32, kv->layout.dtype), tm_check_attn_prefill(&a),
                  tm_geom_attn_prefill(&a), p);
}

static int op_attn_decode(tm_model *m, int32_t layer, int32_t n_seqs)
{
    const kv_cache *kv = &m->kv;
    struct tm_args_attn_decode a = {
        F32(m->s.att), F32(m->s.qkv), (const void *)(uintptr_t)kv->k_pools[layer],
        (const void *)(uintptr_t)kv->v_pools[layer], I32(m->s.block_tables), I32(m->s.seq_lens), n_seqs,
        m->max_blocks_per_seq, m->cfg.n_heads, m->cfg.n_kv_heads, m->cfg.head_dim, kv->layout.block_size,
        m->qkv_dim, 1.0f / sqrtf((float)m->cfg.head_dim), kv->scales[layer].k, kv->scales[layer].v};
    void *p[TM_NPARAMS_attn_decode];
    tm_params_attn_decode(&a, p);
    return launch(m, tm_kernel_for_kv(TM_K_tm_attn_decode_f32, kv->layout.dtype), tm_check_attn_decode(&a),
                  tm_geom_attn_decode(&a), p);
}

/* ----------------------------------------------------------------------------
 * Host <-> device helpers */

static int upload(tm_model *m, CUdeviceptr dst, const void *src, size_t bytes, const char *what)
{
    CUresult rc = m->drv->cuMemcpyHtoD(dst, src, bytes);
    return rc == CUDA_SUCCESS ? 0 : tm_fail(m->err, sizeof m->err, "copying %s to the device failed: %s", what, tm_cu_name(m->drv, rc));
}

static int download(tm_model *m, void *dst, CUdeviceptr src, size_t bytes, const char *what)
{
    CUresult rc = m->drv->cuMemcpyDtoH(dst, src, bytes);
    return rc == CUDA_SUCCESS ? 0 : tm_fail(m->err, sizeof m->err, "copying %s from the device failed: %s", what, tm_cu_name(m->drv, rc));
}

/* Sets layer's fp8 scales from the absmax of the K and V just computed (calibration). */
static int calibrate_layer(tm_model *m, int32_t layer, int32_t n_tokens)
{
    int32_t q_dim = m->cfg.n_heads * m->cfg.head_dim, kv_dim = m->cfg.n_kv_heads * m->cfg.head_dim;
    float amax[2];
    for (int which = 0; which < 2; which++) {
        if (m->drv->cuMemsetD8(m->s.absmax, 0, 4) != CUDA_SUCCESS) return tm_fail(m->err, sizeof m->err, "cuMemsetD8 failed");
        for (int32_t t = 0; t < n_tokens; t++) {
            CUdeviceptr row = m->s.qkv + (CUdeviceptr)(((int64_t)t * m->qkv_dim + q_dim + which * kv_dim) * 4);
            if (op_absmax(m, row, kv_dim)) return -1;
        }
        if (download(m, &amax[which], m->s.absmax, 4, "the calibration maximum")) return -1;
    }
    struct tm_kv_scales *s = &m->kv.scales[layer];
    s->k = amax[0] > 0 && isfinite(amax[0]) ? KV_SCALE_HEADROOM * amax[0] / TM_FP8_E4M3_MAX : 1.0f;
    s->v = amax[1] > 0 && isfinite(amax[1]) ? KV_SCALE_HEADROOM * amax[1] / TM_FP8_E4M3_MAX : 1.0f;
    return 0;
}

/* ----------------------------------------------------------------------------
 * Mixture of experts: route, the chosen experts' gate/up/down, weighted sum into xb2 */

static int op_moe_matvec(tm_model *m, CUdeviceptr out, CUdeviceptr x, const dev_matrix *w, int32_t n_tokens,
                         int32_t x_per_slot)
{
    const llama_config *c = &m->cfg;
    struct tm_args_moe_matvec a = {F32(out), F32(x), (const void *)(uintptr_t)w->ptr, I32(m->s.moe_ids), n_tokens,
                                   c->n_expert_used, c->n_expert, w->n_in, w->n_out, x_per_slot};
    void *p[TM_NPARAMS_moe_matvec];
    tm_params_moe_matvec(&a, p);
    return launch(m, tm_kernel_for_wtype(TM_K_tm_moe_matvec_f32, w->wtype), tm_check_moe_matvec(&a, w->wtype),
                  tm_geom_moe_matvec(&a), p);
}

/* Counts each layer's routing on the host (-v): the skew that heat sees. */
static int count_experts(tm_model *m, int32_t layer, int32_t n_tokens)
{
    const llama_config *c = &m->cfg;
    int64_t slots = (int64_t)n_tokens * c->n_expert_used;
    int32_t ids[16 * TM_MOE_MAX_USED];
    for (int64_t done = 0; done < slots;) {
        int64_t k = slots - done < 16 * TM_MOE_MAX_USED ? slots - done : 16 * TM_MOE_MAX_USED;
        if (download(m, ids, m->s.moe_ids + (CUdeviceptr)(done * 4), (size_t)k * 4, "expert ids")) return -1;
        for (int64_t i = 0; i < k; i++)
            if (ids[i] >= 0 && ids[i] < c->n_expert) m->expert_use[(int64_t)layer * c->n_expert + ids[i]]++;
        done += k;
    }
    return 0;
}

static int op_moe(tm_model *m, const layer_weights *L, int32_t layer, int32_t n)
{
    const llama_config *c = &m->cfg;
    if (op_matmul(m, m->s.moe_logits, m->s.xb, &L->router, n, c->n_expert)) return -1;
    struct tm_args_moe_route r = {I32(m->s.moe_ids), F32(m->s.moe_w), F32(m->s.moe_logits), n, c->n_expert,
                                  c->n_expert_used};
    void *p[TM_NPARAMS_moe_route];
    tm_params_moe_route(&r, p);
    if (launch(m, TM_K_tm_moe_route, tm_check_moe_route(&r), tm_geom_moe_route(&r), p)) return -1;
    if (m->expert_use && !m->calibrating && count_experts(m, layer, n)) return -1;
    int64_t hidden = (int64_t)n * c->n_expert_used * c->expert_ffn_dim;
    struct tm_args_silu_mul s = {F32(m->s.moe_hb), F32(m->s.moe_hb), F32(m->s.moe_hb2), hidden};
    void *ps[TM_NPARAMS_silu_mul];
    tm_params_silu_mul(&s, ps);
    struct tm_args_moe_combine cb = {F32(m->s.xb2), F32(m->s.moe_y), F32(m->s.moe_w), n, c->n_expert_used, c->dim};
    void *pc[TM_NPARAMS_moe_combine];
    tm_params_moe_combine(&cb, pc);
    return op_moe_matvec(m, m->s.moe_hb, m->s.xb, &L->gate_exps, n, 0) ||
           op_moe_matvec(m, m->s.moe_hb2, m->s.xb, &L->up_exps, n, 0) ||
           launch(m, TM_K_tm_silu_mul, tm_check_silu_mul(&s), tm_geom_elementwise(&s), ps) ||
           op_moe_matvec(m, m->s.moe_y, m->s.moe_hb, &L->down_exps, n, 1) ||
           launch(m, TM_K_tm_moe_combine, tm_check_moe_combine(&cb), tm_geom_moe_combine(&cb), pc) ? -1 : 0;
}

/* ----------------------------------------------------------------------------
 * The layers, for a batch already staged on the device (ids, pos, slots, tables) */

typedef struct batch {
    int32_t n_tokens;
    bool prefill;           /* one sequence (block table row 0), positions from start_pos */
    int32_t start_pos;
    int32_t logits_from;    /* rows [logits_from, n_tokens) get logits; n_tokens for none */
} batch;

static int run_layers(tm_model *m, const batch *b)
{
    const llama_config *c = &m->cfg;
    int32_t n = b->n_tokens, q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    if (op_embed(m, n)) return -1;
    for (int32_t l = 0; l < c->n_layers; l++) {
        const layer_weights *L = &m->w.layers[l];
        CUdeviceptr q = m->s.qkv, k = q + (CUdeviceptr)q_dim * 4, v = k + (CUdeviceptr)kv_dim * 4;
        if (op_rmsnorm(m, m->s.xb, m->s.x, L->attn_norm, n) ||
            op_matmul(m, q, m->s.xb, &L->wq, n, m->qkv_dim) ||
            op_matmul(m, k, m->s.xb, &L->wk, n, m->qkv_dim) ||
            op_matmul(m, v, m->s.xb, &L->wv, n, m->qkv_dim) ||
            op_qkv_extras(m, L, n) ||
            op_rope(m, q, n, c->n_heads) ||
            op_rope(m, k, n, c->n_kv_heads))
            return -1;
        if (m->calibrating && calibrate_layer(m, l, n)) return -1;
        if (op_kv_append(m, l, n)) return -1;
        if (b->prefill ? op_attn_prefill(m, l, n, b->start_pos) : op_attn_decode(m, l, n)) return -1;
        if (op_matmul(m, m->s.xb2, m->s.att, &L->wo, n, c->dim) ||
            op_residual(m, (int64_t)n * c->dim) ||
            op_rmsnorm(m, m->s.xb, m->s.x, L->ffn_norm, n))
            return -1;
        if (c->n_expert ? op_moe(m, L, l, n)
                        : op_matmul(m, m->s.hb, m->s.xb, &L->w_gate, n, c->ffn_dim) ||
                              op_matmul(m, m->s.hb2, m->s.xb, &L->w_up, n, c->ffn_dim) ||
                              op_silu_mul(m, (int64_t)n * c->ffn_dim) ||
                              op_matmul(m, m->s.xb2, m->s.hb, &L->w_down, n, c->dim))
            return -1;
        if (op_residual(m, (int64_t)n * c->dim)) return -1;
    }
    int32_t rows = n - b->logits_from;
    if (rows <= 0) return 0;
    CUdeviceptr x_rows = m->s.x + (CUdeviceptr)((int64_t)b->logits_from * c->dim * 4);
    return op_rmsnorm(m, m->s.xb, x_rows, m->w.output_norm, rows) ||
           op_matmul(m, m->s.logits, m->s.xb, &m->w.output, rows, c->vocab);
}

/* ----------------------------------------------------------------------------
 * Prefill and decode */

int model_prefill(tm_model *m, kv_sequence *s, int seq_id, const int32_t *ids, int32_t n, float *logits)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab) return tm_fail(m->err, sizeof m->err, "token id %d is outside the vocabulary", ids[i]);
    for (int32_t done = 0; done < n;) {
        int32_t chunk = n - done < m->max_tokens ? n - done : m->max_tokens, start = s->len;
        if (kv_sequence_grow(&m->kv, s, start + chunk, seq_id, m->err, sizeof m->err)) return -1;
        int32_t *pos = m->h_staging, *slots = m->h_staging + m->max_tokens;
        for (int32_t t = 0; t < chunk; t++) {
            pos[t] = start + t;
            slots[t] = tm_kv_slot(s->block_table, start + t, m->kv.layout.block_size);
        }
        bool last = done + chunk == n;
        batch b = {chunk, true, start, last && logits ? chunk - 1 : chunk};
        if (upload(m, m->s.ids, ids + done, (size_t)chunk * 4, "token ids") ||
            upload(m, m->s.pos, pos, (size_t)chunk * 4, "positions") ||
            upload(m, m->s.slots, slots, (size_t)chunk * 4, "KV slots") ||
            upload(m, m->s.block_tables, s->block_table, (size_t)s->n_blocks * 4, "the block table") ||
            run_layers(m, &b))
            return -1;
        done += chunk;
    }
    if (logits) return download(m, logits, m->s.logits, (size_t)m->cfg.vocab * 4, "logits");
    return 0;
}

int model_decode(tm_model *m, kv_sequence *const *seqs, const int *seq_ids, const int32_t *ids, int32_t n,
                 float *logits)
{
    if (n > m->max_tokens) return tm_fail(m->err, sizeof m->err, "internal error: decode batch %d above %d", n, m->max_tokens);
    int32_t *pos = m->h_staging, *slots = pos + m->max_tokens, *lens = slots + m->max_tokens;
    int32_t *tables = lens + m->max_tokens, mb = m->max_blocks_per_seq;
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab) return tm_fail(m->err, sizeof m->err, "token id %d is outside the vocabulary", ids[i]);
        kv_sequence *s = seqs[i];
        int32_t p = s->len;
        if (kv_sequence_grow(&m->kv, s, p + 1, seq_ids[i], m->err, sizeof m->err)) return -1;
        pos[i] = p;
        slots[i] = tm_kv_slot(s->block_table, p, m->kv.layout.block_size);
        lens[i] = p + 1;
        memset(tables + (size_t)i * mb, 0, (size_t)mb * 4);
        memcpy(tables + (size_t)i * mb, s->block_table, (size_t)s->n_blocks * 4);
    }
    batch b = {n, false, 0, 0};
    if (upload(m, m->s.ids, ids, (size_t)n * 4, "token ids") ||
        upload(m, m->s.pos, pos, (size_t)n * 4, "positions") ||
        upload(m, m->s.slots, slots, (size_t)n * 4, "KV slots") ||
        upload(m, m->s.seq_lens, lens, (size_t)n * 4, "sequence lengths") ||
        upload(m, m->s.block_tables, tables, (size_t)n * mb * 4, "block tables") ||
        run_layers(m, &b))
        return -1;
    return download(m, logits, m->s.logits, (size_t)n * m->cfg.vocab * 4, "logits");
}

int model_calibrate_kv(tm_model *m, const int32_t *ids, int32_t n)
{
    kv_sequence s;
    if (kv_sequence_init(&s, m->max_positions, m->kv.layout.block_size)) return tm_fail(m->err, sizeof m->err, "out of host memory");
    if (n > m->max_tokens) n = m->max_tokens; /* one chunk: every layer calibrates on the same tokens */
    m->calibrating = true;
    int rc = model_prefill(m, &s, -1, ids, n, NULL);
    m->calibrating = false;
    kv_sequence_release(&m->kv, &s);
    kv_sequence_free(&s);
    return rc;
}
