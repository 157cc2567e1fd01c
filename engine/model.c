/* model.c — putting a model on the device: weights, scratch buffers, then the KV pool
 * sized from what remains free. */
#include "engine/error.h"
#include "engine/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int scratch_alloc(tm_model *m)
{
    const llama_config *c = &m->cfg;
    int64_t T = m->max_tokens, q_dim = (int64_t)c->n_heads * c->head_dim;
    struct { CUdeviceptr *p; int64_t bytes; const char *what; } bufs[] = {
        {&m->s.x, T * c->dim * 4, "x"},
        {&m->s.xb, T * c->dim * 4, "xb"},
        {&m->s.xb2, T * c->dim * 4, "xb2"},
        {&m->s.qkv, T * m->qkv_dim * 4, "qkv"},
        {&m->s.att, T * q_dim * 4, "att"},
        {&m->s.hb, T * c->ffn_dim * 4, "hb"},
        {&m->s.hb2, T * c->ffn_dim * 4, "hb2"},
        {&m->s.logits, T * c->vocab * 4, "logits"},
        {&m->s.ids, T * 4, "ids"},
        {&m->s.pos, T * 4, "pos"},
        {&m->s.slots, T * 4, "slots"},
        {&m->s.block_tables, T * m->max_blocks_per_seq * 4, "block tables"},
        {&m->s.seq_lens, T * 4, "seq_lens"},
        {&m->s.absmax, 4, "absmax"},
        {&m->s.moe_logits, T * c->n_expert * 4, "moe logits"},
        {&m->s.moe_ids, T * c->n_expert_used * 4, "moe ids"},
        {&m->s.moe_w, T * c->n_expert_used * 4, "moe weights"},
        {&m->s.moe_hb, T * c->n_expert_used * c->expert_ffn_dim * 4, "moe hb"},
        {&m->s.moe_hb2, T * c->n_expert_used * c->expert_ffn_dim * 4, "moe hb2"},
        {&m->s.moe_y, T * c->n_expert_used * c->dim * 4, "moe y"},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        if (bufs[i].bytes == 0) continue; /* the MoE buffers of a dense model */
        CUresult rc = m->drv->cuMemAlloc(bufs[i].p, (size_t)bufs[i].bytes);
        if (rc != CUDA_SUCCESS) {
            size_t free_now = 0, total = 0;
            m->drv->cuMemGetInfo(&free_now, &total);
            return tm_fail(m->err, sizeof m->err, "out of device memory while allocating activation buffers: need %.1f MiB for '%s', "
                        "device has %.1f MiB total, %.1f MiB free (cuMemAlloc: %s)", TM_MIB(bufs[i].bytes),
                        bufs[i].what, TM_MIB(total), TM_MIB(free_now), tm_cu_name(m->drv, rc));
        }
        m->s.bytes += bufs[i].bytes;
        m->s.n_allocs++;
    }
    return 0;
}

static void scratch_free(tm_model *m)
{
    CUdeviceptr *all[] = {&m->s.x, &m->s.xb, &m->s.xb2, &m->s.qkv, &m->s.att, &m->s.hb, &m->s.hb2,
                          &m->s.logits, &m->s.ids, &m->s.pos, &m->s.slots, &m->s.block_tables,
                          &m->s.seq_lens, &m->s.absmax, &m->s.moe_logits, &m->s.moe_ids, &m->s.moe_w,
                          &m->s.moe_hb, &m->s.moe_hb2, &m->s.moe_y};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (*all[i]) m->drv->cuMemFree(*all[i]);
    memset(&m->s, 0, sizeof m->s);
}

int model_load(tm_model *m, const tm_driver *drv, const gguf_file *f, const model_options *opt)
{
    m->drv = drv;
    const llama_config *c = &m->cfg;
    m->max_tokens = opt->max_tokens;
    m->max_positions = opt->max_positions;
    m->max_blocks_per_seq = (int32_t)tm_kv_blocks_for(opt->max_positions, opt->kv.block_size);
    m->qkv_dim = (c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
    /* pos, slots and lengths, then the block tables of a decode batch */
    m->h_staging = malloc((size_t)m->max_tokens * (3 + (size_t)m->max_blocks_per_seq) * sizeof *m->h_staging);
    if (!m->h_staging) return tm_fail(m->err, sizeof m->err, "out of host memory");
    if (weights_upload(&m->w, drv, f, c, &opt->load, m->err, sizeof m->err) || scratch_alloc(m) ||
        kv_cache_init(&m->kv, drv, c->n_layers, c->n_kv_heads, c->head_dim, &opt->kv, m->err, sizeof m->err)) {
        model_free(m);
        return -1;
    }
    /* copies to the device are done before anything runs (cuCtxSynchronize_v2 takes the context) */
    CUresult rc = drv->cuCtxSynchronize(drv->context);
    if (rc != CUDA_SUCCESS) {
        tm_fail(m->err, sizeof m->err, "cuCtxSynchronize after loading failed: %s", tm_cu_name(drv, rc));
        model_free(m);
        return -1;
    }
    return 0;
}

void model_free(tm_model *m)
{
    if (m->drv) {
        kv_cache_free(&m->kv, m->drv);
        scratch_free(m);
        weights_free(&m->w, m->drv);
    }
    free(m->h_staging);
    m->h_staging = NULL;
    free(m->expert_use);
    m->expert_use = NULL;
}
