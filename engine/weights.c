/* weights.c — validating and uploading the model's tensors. */
#include "engine/error.h"
#include "engine/load.h"
#include "engine/weights.h"
#include "kernels/kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------------------
 * The tensors of a llama model, in one list */

typedef enum role { ROLE_MATRIX, ROLE_NORM, ROLE_EXPERTS } role;

typedef struct tensor_spec {
    char name[GGUF_MAX_NAME];
    role role;
    int64_t n_in, n_out;    /* a norm has n_out 1 */
    int64_t n_expert;       /* ROLE_EXPERTS: the third dimension */
    bool optional;
} tensor_spec;

#define GLOBAL_TENSORS 4     /* token_embd, output_norm, output, rope_freqs */
#define LAYER_TENSORS 18     /* the llama block's 9, q/k/v biases, q/k norms, router and experts */
#define MAX_TENSORS(c) (GLOBAL_TENSORS + LAYER_TENSORS * (size_t)(c)->n_layers)

/* Fills specs (MAX_TENSORS entries) in upload order; tensors an architecture does not
 * have are listed as optional and stay absent. */
static int64_t list_tensors(const llama_config *c, tensor_spec *s)
{
    int64_t n = 0, q_dim = (int64_t)c->n_heads * c->head_dim, kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
#define SPEC(r, in, out, opt, ...) do { snprintf(s[n].name, GGUF_MAX_NAME, __VA_ARGS__); \
        s[n].role = r; s[n].n_in = in; s[n].n_out = out; s[n].optional = opt; s[n].n_expert = c->n_expert; n++; \
    } while (0)
    bool moe = c->n_expert > 0;
    SPEC(ROLE_MATRIX, c->dim, c->vocab, false, "token_embd.weight");
    SPEC(ROLE_NORM, c->dim, 1, false, "output_norm.weight");
    SPEC(ROLE_MATRIX, c->dim, c->vocab, true, "output.weight");
    SPEC(ROLE_NORM, c->rot_dim / 2, 1, true, "rope_freqs.weight");
    for (int32_t l = 0; l < c->n_layers; l++) {
        SPEC(ROLE_NORM, c->dim, 1, false, "blk.%d.attn_norm.weight", l);
        SPEC(ROLE_MATRIX, c->dim, q_dim, false, "blk.%d.attn_q.weight", l);
        SPEC(ROLE_MATRIX, c->dim, kv_dim, false, "blk.%d.attn_k.weight", l);
        SPEC(ROLE_MATRIX, c->dim, kv_dim, false, "blk.%d.attn_v.weight", l);
        SPEC(ROLE_MATRIX, q_dim, c->dim, false, "blk.%d.attn_output.weight", l);
        SPEC(ROLE_NORM, c->dim, 1, false, "blk.%d.ffn_norm.weight", l);
        SPEC(ROLE_MATRIX, c->dim, c->ffn_dim, moe, "blk.%d.ffn_gate.weight", l);
        SPEC(ROLE_MATRIX, c->dim, c->ffn_dim, moe, "blk.%d.ffn_up.weight", l);
        SPEC(ROLE_MATRIX, c->ffn_dim, c->dim, moe, "blk.%d.ffn_down.weight", l);
        SPEC(ROLE_NORM, q_dim, 1, !c->qkv_bias, "blk.%d.attn_q.bias", l);
        SPEC(ROLE_NORM, kv_dim, 1, !c->qkv_bias, "blk.%d.attn_k.bias", l);
        SPEC(ROLE_NORM, kv_dim, 1, !c->qkv_bias, "blk.%d.attn_v.bias", l);
        SPEC(ROLE_NORM, c->head_dim, 1, !c->qk_norm, "blk.%d.attn_q_norm.weight", l);
        SPEC(ROLE_NORM, c->head_dim, 1, !c->qk_norm, "blk.%d.attn_k_norm.weight", l);
        SPEC(ROLE_MATRIX, c->dim, c->n_expert, !moe, "blk.%d.ffn_gate_inp.weight", l);
        SPEC(ROLE_EXPERTS, c->dim, c->expert_ffn_dim, !moe, "blk.%d.ffn_gate_exps.weight", l);
        SPEC(ROLE_EXPERTS, c->dim, c->expert_ffn_dim, !moe, "blk.%d.ffn_up_exps.weight", l);
        SPEC(ROLE_EXPERTS, c->expert_ffn_dim, c->dim, !moe, "blk.%d.ffn_down_exps.weight", l);
    }
#undef SPEC
    return n;
}

#define TM_SUPPORTED_TYPES "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K"

/* The weight types the kernels read (kernels.h): GGML ids, so a tensor's type is its
 * kernel's type. */
static bool type_supported(ggml_type t)
{
    return tm_wtype_block((int32_t)t) != 0;
}

static int check_one(const gguf_file *f, const tensor_spec *s, char *err, size_t errlen)
{
    const gguf_tensor *t = gguf_find_tensor(f, s->name);
    if (!t) return s->optional ? 0 : tm_fail(err, errlen, "tensor '%s' is missing", s->name);
    if (!type_supported(t->type)) {
        const char *name = ggml_type_name(t->type);
        return tm_fail(err, errlen, "tensor '%s' has type %s%s; tiermem-llm supports " TM_SUPPORTED_TYPES,
                    s->name, name ? name : "unknown", name ? "" : " (unknown)");
    }
    int64_t want1 = s->role == ROLE_NORM ? 1 : s->n_out, want2 = s->role == ROLE_EXPERTS ? s->n_expert : 1;
    bool shape_ok = t->dims[0] == s->n_in && t->dims[1] == want1 && t->dims[2] == want2 && t->dims[3] == 1;
    if (!shape_ok)
        return tm_fail(err, errlen, "tensor '%s' has shape [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                    "], expected [%" PRId64 ", %" PRId64 ", %" PRId64 "] from the metadata", s->name, t->dims[0],
                    t->dims[1], t->dims[2], t->dims[3], s->n_in, want1, want2);
    return 0;
}

int weights_check(const gguf_file *f, const llama_config *cfg, char *err, size_t errlen)
{
    tensor_spec *specs = calloc(MAX_TENSORS(cfg), sizeof *specs);
    if (!specs) return tm_fail(err, errlen, "out of host memory");
    int64_t n = list_tensors(cfg, specs);
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) rc = check_one(f, &specs[i], err, errlen);
    free(specs);
    return rc;
}

/* Norms go up as f32 whatever their stored type (the kernels read f32 norms). */
static int64_t device_bytes(const gguf_tensor *t, role r)
{
    return r == ROLE_NORM ? t->dims[0] * 4 : (int64_t)t->n_bytes;
}

int64_t weights_bytes(const gguf_file *f, const llama_config *cfg)
{
    tensor_spec *specs = calloc(MAX_TENSORS(cfg), sizeof *specs);
    if (!specs) return -1;
    int64_t n = list_tensors(cfg, specs), total = 0;
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, specs[i].name);
        if (t) total += device_bytes(t, specs[i].role);
    }
    free(specs);
    return total;
}

/* ----------------------------------------------------------------------------
 * Upload */

int weights_upload(model_weights *w, const tm_driver *drv, const gguf_file *f, const llama_config *cfg,
                   const tm_load_options *load, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    size_t max_specs = MAX_TENSORS(cfg);
    tensor_spec *specs = calloc(max_specs, sizeof *specs);
    tm_load_item *items = calloc(max_specs, sizeof *items);
    w->layers = calloc((size_t)cfg->n_layers, sizeof *w->layers);
    w->allocs = calloc(max_specs, sizeof *w->allocs);
    w->n_layers = cfg->n_layers;
    if (!specs || !items || !w->layers || !w->allocs) {
        free(specs);
        free(items);
        weights_free(w, drv);
        return tm_fail(err, errlen, "out of host memory");
    }
    int64_t n = list_tensors(cfg, specs), need = weights_bytes(f, cfg);
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, specs[i].name);
        if (!t) continue; /* only optional tensors may be absent (checked before) */
        int64_t bytes = device_bytes(t, specs[i].role);
        CUdeviceptr p = 0;
        CUresult cr = drv->cuMemAlloc(&p, (size_t)bytes);
        if (cr != CUDA_SUCCESS) {
            rc = cr == CUDA_ERROR_OUT_OF_MEMORY
                ? tm_fail(err, errlen, "out of device memory while loading weights: need %.1f MiB, device has %.1f MiB "
                       "total (cuMemAlloc: %s at tensor '%s', %.1f MiB, after %.1f MiB)", TM_MIB(need),
                       TM_MIB(drv->device_total), tm_cu_name(drv, cr), t->name, TM_MIB(bytes), TM_MIB(w->bytes))
                : tm_fail(err, errlen, "cuMemAlloc of %.1f MiB for tensor '%s' failed: %s", TM_MIB(bytes), t->name,
                       tm_cu_name(drv, cr));
            break;
        }
        /* the norm kernels read f32: other float types are widened on the way */
        bool widen = specs[i].role == ROLE_NORM && t->type != GGML_TYPE_F32;
        if (widen && t->type != GGML_TYPE_F16 && t->type != GGML_TYPE_BF16) {
            drv->cuMemFree(p);
            rc = tm_fail(err, errlen, "copying tensor '%s' to the device failed: norm of an unsupported type",
                         t->name);
            break;
        }
        w->allocs[w->n_allocs] = p;
        items[w->n_allocs++] = (tm_load_item){t, p, bytes, widen};
        w->bytes += bytes;
        dev_matrix m = {p, (int32_t)t->type, (int32_t)specs[i].n_in, (int32_t)specs[i].n_out};
        /* route the allocation to its field by list position: the globals, then each layer's */
        if (i == 0) w->token_embd = m;
        else if (i == 1) w->output_norm = p;
        else if (i == 2) w->output = m;
        else if (i == 3) w->rope_freqs = p;
        else {
            layer_weights *L = &w->layers[(i - GLOBAL_TENSORS) / LAYER_TENSORS];
            switch ((i - GLOBAL_TENSORS) % LAYER_TENSORS) {
            case 0: L->attn_norm = p; break;
            case 1: L->wq = m; break;
            case 2: L->wk = m; break;
            case 3: L->wv = m; break;
            case 4: L->wo = m; break;
            case 5: L->ffn_norm = p; break;
            case 6: L->w_gate = m; break;
            case 7: L->w_up = m; break;
            case 8: L->w_down = m; break;
            case 9: L->bq = p; break;
            case 10: L->bk = p; break;
            case 11: L->bv = p; break;
            case 12: L->q_norm = p; break;
            case 13: L->k_norm = p; break;
            case 14: L->router = m; break;
            case 15: L->gate_exps = m; break;
            case 16: L->up_exps = m; break;
            case 17: L->down_exps = m; break;
            }
        }
    }
    free(specs);
    if (!rc) rc = tm_load_weights(drv, f, items, w->n_allocs, load, &w->load, err, errlen);
    free(items);
    if (rc) {
        weights_free(w, drv);
        return rc;
    }
    if (!w->output.ptr) {
        w->output = w->token_embd;
        w->tied = true;
    }
    return 0;
}

void weights_free(model_weights *w, const tm_driver *drv)
{
    for (int64_t i = 0; i < w->n_allocs; i++) drv->cuMemFree(w->allocs[i]);
    free(w->allocs);
    free(w->layers);
    memset(w, 0, sizeof *w);
}
