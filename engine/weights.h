/* weights.h — the model's tensors on the device: one cuMemAlloc per tensor, filled from
 * the GGUF file by the loader (load.h). */
#ifndef TM_ENGINE_WEIGHTS_H
#define TM_ENGINE_WEIGHTS_H

#include <stdint.h>

#include "engine/driver.h"
#include "engine/gguf.h"
#include "engine/load.h"
#include "engine/model_config.h"

typedef struct dev_matrix {
    CUdeviceptr ptr;        /* [n_out][n_in] rows of wtype */
    int32_t wtype;          /* enum tm_wtype */
    int32_t n_in, n_out;
} dev_matrix;

typedef struct layer_weights {
    CUdeviceptr attn_norm;  /* [dim] f32 */
    dev_matrix wq;          /* [n_heads * head_dim][dim] */
    dev_matrix wk;          /* [n_kv_heads * head_dim][dim] */
    dev_matrix wv;          /* [n_kv_heads * head_dim][dim] */
    dev_matrix wo;          /* [dim][n_heads * head_dim] */
    CUdeviceptr ffn_norm;   /* [dim] f32 */
    dev_matrix w_gate;      /* [ffn_dim][dim] */
    dev_matrix w_up;        /* [ffn_dim][dim] */
    dev_matrix w_down;      /* [dim][ffn_dim] */
    CUdeviceptr bq, bk, bv; /* [n_heads * head_dim], [n_kv_heads * head_dim] x 2 f32; 0 without */
    CUdeviceptr q_norm, k_norm; /* [head_dim] f32 each; 0 without */
    dev_matrix router;      /* [n_expert][dim] ffn_gate_inp (MoE layers only) */
    dev_matrix gate_exps;   /* [n_expert][expert_ffn][dim] */
    dev_matrix up_exps;     /* [n_expert][expert_ffn][dim] */
    dev_matrix down_exps;   /* [n_expert][dim][expert_ffn] */
} layer_weights;

typedef struct model_weights {
    dev_matrix token_embd;  /* [vocab][dim] */
    CUdeviceptr output_norm; /* [dim] f32 */
    dev_matrix output;      /* [vocab][dim]; the same allocation as token_embd when tied */
    CUdeviceptr rope_freqs; /* [rot_dim / 2] f32 frequency factors (Llama 3.1); 0 without */
    layer_weights *layers;  /* [n_layers] */
    int32_t n_layers;
    CUdeviceptr *allocs;    /* [n_allocs] every allocation, for freeing */
    int64_t n_allocs;
    int64_t bytes;          /* device bytes of all weights */
    bool tied;              /* output.weight absent: token_embd serves */
    tm_load_result load;    /* how the file was read, and how fast */
} model_weights;

/* Checks every tensor's presence, shape and type (before any device memory is used). */
int weights_check(const gguf_file *f, const llama_config *cfg, char *err, size_t errlen);
/* Bytes weights_upload will allocate. */
int64_t weights_bytes(const gguf_file *f, const llama_config *cfg);
/* Allocates every tensor, then reads them in (load.h). On failure everything allocated is freed and err says what
 * failed, how much was needed and how much the device has. */
int weights_upload(model_weights *w, const tm_driver *drv, const gguf_file *f, const llama_config *cfg,
                   const tm_load_options *load, char *err, size_t errlen);
void weights_free(model_weights *w, const tm_driver *drv);

#endif /* TM_ENGINE_WEIGHTS_H */
