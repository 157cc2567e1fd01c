/* twin_touch.c — what each kernel reads and writes, declared to simcuda (ABI 2) so that a
 * launch is charged the roofline of the bytes the CUDA kernel really moves.
 *
 * One function per family, called by TM_TWIN once the arguments passed their check and
 * before the body runs (twin.h). Declare exactly what the CUDA kernel touches: only the
 * table rows of the current tokens, only the KV pages below each sequence's length, a
 * weight matrix once per pass the launch geometry makes over it. Rows are merged when
 * contiguous (one probe, one split). FLOPs count a multiply-add as 2.
 */
#include "kernels/kv_layout.h"
#include "kernels/twin.h"

/* n_rows rows of row_bytes, stride_bytes apart: one range when they are contiguous. */
static void touch_rows(const simcuda_launch *l, const void *base, int64_t n_rows, int64_t row_bytes,
                       int64_t stride_bytes, int is_write) {
    if (n_rows <= 0 || row_bytes <= 0) return;
    if (stride_bytes == row_bytes) {
        row_bytes *= n_rows;
        n_rows = 1;
    }
    for (int64_t r = 0; r < n_rows; r++) {
        const uint8_t *p = (const uint8_t *)base + r * stride_bytes;
        if (is_write) simcuda_writes(l, (void *)p, (uint64_t)row_bytes);
        else simcuda_reads(l, p, (uint64_t)row_bytes);
    }
}

#define F32 ((int64_t)sizeof(float))
#define I32 ((int64_t)sizeof(int32_t))

void tm_touch_embed(const simcuda_launch *l, const struct tm_args_embed *a, int32_t wtype) {
    int64_t row_bytes = tm_wtype_row_bytes(wtype, a->dim);
    simcuda_reads(l, a->ids, (uint64_t)(a->n_tokens * I32));
    for (int32_t t = 0; t < a->n_tokens; t++) /* only the rows of these tokens */
        if (a->ids[t] >= 0 && a->ids[t] < a->vocab)
            simcuda_reads(l, (const uint8_t *)a->table + a->ids[t] * row_bytes, (uint64_t)row_bytes);
    simcuda_writes(l, a->out, (uint64_t)((int64_t)a->n_tokens * a->dim * F32));
}

void tm_touch_rmsnorm(const simcuda_launch *l, const struct tm_args_rmsnorm *a) {
    int64_t bytes = (int64_t)a->n_rows * a->dim * F32;
    simcuda_reads(l, a->x, (uint64_t)bytes);
    simcuda_reads(l, a->weight, (uint64_t)(a->dim * F32));
    simcuda_writes(l, a->out, (uint64_t)bytes);
    simcuda_flops(l, 4.0 * (double)a->n_rows * a->dim);
}

/* tokens_per_pass: tokens a block serves per read of its weight rows (TM_MATVEC_MAX_TOKENS
 * for matvec, TM_MATMUL_TILE for matmul): the matrix is read once per such group. */
void tm_touch_matmul(const simcuda_launch *l, const struct tm_args_matmul *a, int32_t wtype,
                     int32_t tokens_per_pass) {
    int64_t w_bytes = (int64_t)a->n_out * tm_wtype_row_bytes(wtype, a->n_in);
    int64_t passes = ((int64_t)a->n_tokens + tokens_per_pass - 1) / tokens_per_pass;
    for (int64_t p = 0; p < passes; p++) simcuda_reads(l, a->w, (uint64_t)w_bytes);
    simcuda_reads(l, a->x, (uint64_t)((int64_t)a->n_tokens * a->n_in * F32));
    touch_rows(l, a->out, a->n_tokens, a->n_out * F32, a->out_stride * F32, 1);
    simcuda_flops(l, 2.0 * (double)a->n_tokens * a->n_in * a->n_out);
}

void tm_touch_rope(const simcuda_launch *l, const struct tm_args_rope *a) {
    int64_t row = (int64_t)a->n_heads * a->head_dim * F32;
    simcuda_reads(l, a->pos, (uint64_t)(a->n_tokens * I32));
    if (a->freq_factors) simcuda_reads(l, a->freq_factors, (uint64_t)(a->rot_dim / 2 * F32));
    touch_rows(l, a->x, a->n_tokens, row, a->row_stride * F32, 0);
    touch_rows(l, a->x, a->n_tokens, row, a->row_stride * F32, 1);
    simcuda_flops(l, 3.0 * (double)a->n_tokens * a->n_heads * a->rot_dim);
}

/* out = f(p, q) elementwise over n floats: silu_mul and add. */
static void touch_binary(const simcuda_launch *l, float *out, const float *p, const float *q, int64_t n,
                         double flops_each) {
    simcuda_reads(l, p, (uint64_t)(n * F32));
    simcuda_reads(l, q, (uint64_t)(n * F32));
    simcuda_writes(l, out, (uint64_t)(n * F32));
    simcuda_flops(l, flops_each * (double)n);
}

void tm_touch_silu_mul(const simcuda_launch *l, const struct tm_args_silu_mul *a) {
    touch_binary(l, a->out, a->gate, a->up, a->n, 4.0);
}

void tm_touch_add(const simcuda_launch *l, const struct tm_args_add *a) {
    touch_binary(l, a->out, a->a, a->b, a->n, 1.0);
}

void tm_touch_kv_append(const simcuda_launch *l, const struct tm_args_kv_append *a, int32_t kv_dtype) {
    int64_t head_bytes = (int64_t)a->head_dim * tm_kv_elem_bytes(kv_dtype);
    int64_t row = (int64_t)a->n_kv_heads * a->head_dim * F32;
    simcuda_reads(l, a->slots, (uint64_t)(a->n_tokens * I32));
    touch_rows(l, a->k, a->n_tokens, row, a->k_stride * F32, 0);
    touch_rows(l, a->v, a->n_tokens, row, a->v_stride * F32, 0);
    for (int32_t t = 0; t < a->n_tokens; t++) {
        int32_t slot = a->slots[t];
        if (slot < 0) continue;
        int64_t idx = tm_kv_index(slot / a->block_size, 0, slot % a->block_size, a->n_kv_heads, a->block_size,
                                  a->head_dim);
        int64_t head_stride = (int64_t)a->block_size * head_bytes; /* heads of a block are pages */
        int64_t at = idx * tm_kv_elem_bytes(kv_dtype);
        touch_rows(l, (uint8_t *)a->k_pool + at, a->n_kv_heads, head_bytes, head_stride, 1);
        touch_rows(l, (uint8_t *)a->v_pool + at, a->n_kv_heads, head_bytes, head_stride, 1);
    }
}

/* K and V of positions [0, n_pos) of one sequence: whole blocks in one range each, the
 * last partial block head by head (only the positions below n_pos). */
static void touch_kv_prefix(const simcuda_launch *l, const void *k_pool, const void *v_pool,
                            const int32_t *block_table, int64_t n_pos, int32_t n_kv_heads, int32_t head_dim,
                            int32_t block_size, int32_t kv_dtype) {
    int64_t elem = tm_kv_elem_bytes(kv_dtype);
    int64_t page = (int64_t)block_size * head_dim * elem; /* one head's page in a block */
    for (int64_t b = 0; b * block_size < n_pos; b++) {
        int64_t used = n_pos - b * block_size < block_size ? n_pos - b * block_size : block_size;
        int64_t at = tm_kv_index(block_table[b], 0, 0, n_kv_heads, block_size, head_dim) * elem;
        touch_rows(l, (const uint8_t *)k_pool + at, n_kv_heads, used * head_dim * elem, page, 0);
        touch_rows(l, (const uint8_t *)v_pool + at, n_kv_heads, used * head_dim * elem, page, 0);
    }
}

void tm_touch_attn_decode(const simcuda_launch *l, const struct tm_args_attn_decode *a, int32_t kv_dtype) {
    int64_t q_row = (int64_t)a->n_heads * a->head_dim * F32;
    touch_rows(l, a->q, a->n_seqs, q_row, a->q_stride * F32, 0);
    simcuda_reads(l, a->seq_lens, (uint64_t)(a->n_seqs * I32));
    for (int32_t s = 0; s < a->n_seqs; s++) {
        int32_t len = a->seq_lens[s];
        if (len <= 0) continue;
        const int32_t *table = a->block_tables + (int64_t)s * a->max_blocks_per_seq;
        int64_t blocks = ((int64_t)len + a->block_size - 1) / a->block_size;
        simcuda_reads(l, table, (uint64_t)(blocks * I32)); /* only the entries it follows */
        touch_kv_prefix(l, a->k_pool, a->v_pool, table, len, a->n_kv_heads, a->head_dim, a->block_size, kv_dtype);
        simcuda_flops(l, 4.0 * (double)a->n_heads * a->head_dim * len);
    }
    simcuda_writes(l, a->out, (uint64_t)((int64_t)a->n_seqs * q_row));
}

/* The sequence's K/V is declared once: every query of the prompt reads the same prefix,
 * which the GPU's L2 cache (50 MB on H100/H200) holds across the query blocks. */
void tm_touch_attn_prefill(const simcuda_launch *l, const struct tm_args_attn_prefill *a, int32_t kv_dtype) {
    int64_t q_row = (int64_t)a->n_heads * a->head_dim * F32;
    int64_t n_pos = (int64_t)a->start_pos + a->n_tokens;
    if (a->n_tokens <= 0) return;
    touch_rows(l, a->q, a->n_tokens, q_row, a->q_stride * F32, 0);
    simcuda_reads(l, a->block_table, (uint64_t)((n_pos + a->block_size - 1) / a->block_size * I32));
    touch_kv_prefix(l, a->k_pool, a->v_pool, a->block_table, n_pos, a->n_kv_heads, a->head_dim, a->block_size,
                    kv_dtype);
    simcuda_writes(l, a->out, (uint64_t)(a->n_tokens * q_row));
    /* query t attends to start_pos + t + 1 positions */
    simcuda_flops(l, 4.0 * (double)a->n_heads * a->head_dim * ((double)a->n_tokens * a->start_pos +
                                                                (double)a->n_tokens * (a->n_tokens + 1) / 2));
}

void tm_touch_softmax(const simcuda_launch *l, const struct tm_args_softmax *a) {
    int64_t bytes = (int64_t)a->n_rows * a->n_cols * F32;
    simcuda_reads(l, a->x, (uint64_t)bytes);
    simcuda_writes(l, a->x, (uint64_t)bytes);
    simcuda_flops(l, 4.0 * (double)a->n_rows * a->n_cols);
}

void tm_touch_argmax(const simcuda_launch *l, const struct tm_args_argmax *a) {
    simcuda_reads(l, a->x, (uint64_t)((int64_t)a->n_rows * a->n_cols * F32));
    simcuda_writes(l, a->out, (uint64_t)(a->n_rows * I32));
}

void tm_touch_absmax(const simcuda_launch *l, const struct tm_args_absmax *a) {
    simcuda_reads(l, a->x, (uint64_t)(a->n * F32));
    simcuda_reads(l, a->out, (uint64_t)F32);
    simcuda_writes(l, a->out, (uint64_t)F32);
}
