/* kernels.h — the interface of every tiermem-llm kernel.
 *
 * One table (TM_KERNEL_TABLE) lists every kernel. The same exported name is the CUDA
 * kernel (`extern "C" __global__` in the kernels' .cu files, loaded from the fatbin)
 * and its plain-C twin (the .c files, in build/lib/libtiermem-kernels.so, which simcuda
 * loads).
 * Both receive the same kernelParams: params[i] points at the i-th argument below.
 *
 * Kernels that take the same arguments form a family. For each family F this header
 * generates:
 *   struct tm_args_F                  the arguments, in launch order, with exact C types
 *   TM_NPARAMS_F                      how many kernelParams a launch passes
 *   tm_params_F(&args, params)        fills params[TM_NPARAMS_F] with &args.field
 *   tm_unpack_F(params, &args)        the reverse (the C twins use it)
 *   TM_DECLARE_PARAMS(F)              the typed parameter list (the .cu kernels and the
 *                                     twins' bodies are declared with it)
 *   TM_CALL_ARGS(F)                   `args.out, args.x, ...` (calls a body with the
 *                                     fields of a struct named args)
 * and by hand, beside each family:
 *   tm_geom_G(&args)                  the launch geometry the caller must use: grid,
 *                                     block, dynamic shared memory (G names the geometry;
 *                                     matvec and matmul share arguments, not geometry)
 *   tm_check_F(&args)                 NULL when the arguments are valid, otherwise a
 *                                     message naming what is wrong (call it before
 *                                     launching: the CUDA kernels do not check;
 *                                     embed and matmul also take the weight type)
 *
 * A launch from the engine, by way of example:
 *   struct tm_args_rmsnorm a = { .out = ..., .x = ..., .weight = ..., .n_rows = n,
 *                                .dim = dim, .eps = eps };
 *   const char *bad = tm_check_rmsnorm(&a);
 *   struct tm_geom g = tm_geom_rmsnorm(&a);
 *   void *params[TM_NPARAMS_rmsnorm]; tm_params_rmsnorm(&a, params);
 *   cuLaunchKernel(fn[TM_K_tm_rmsnorm], g.grid[0], g.grid[1], g.grid[2],
 *                  g.block[0], g.block[1], g.block[2], g.shared_bytes, stream, params, NULL);
 * Device pointers go in as typed pointers: (float *)(uintptr_t)dptr.
 *
 * Conventions shared by every kernel:
 * - Activations are f32, row-major, rows contiguous ([rows][cols]).
 * - Weights are GGUF tensors as stored: a [n_out][n_in] matrix is n_out rows of n_in
 *   values (GGUF ne0 = n_in). Types: F32, F16 (IEEE binary16), BF16, Q8_0 (blocks of 32:
 *   one f16 scale d, then 32 int8 q; value = d * q; 34 bytes; n_in a multiple of 32),
 *   Q4_0, Q4_1, Q5_0, Q5_1 (blocks of 32) and Q2_K .. Q6_K (blocks of 256), laid out
 *   and decoded exactly as ggml does (quants.h).
 * - Counts are int32_t; flat element counts are int64_t. Every kernel computes offsets
 *   in int64_t (row * n_in overflows int at 7B+).
 * - Nothing here is fast-math: division, sqrt, exp, sin and cos are the IEEE-accurate
 *   versions on both sides, so twins and CUDA kernels agree to rounding.
 * - Output may not alias input unless a kernel says so.
 *
 * This header needs only <stdint.h>/<stddef.h>; it is included by C (engine, twins,
 * tests) and by nvcc.
 */
#ifndef TM_KERNELS_H
#define TM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TM_HD __host__ __device__
#else
#define TM_HD
#endif

/* ---------------------------------------------------------------------------------- */
/* Types and limits                                                                    */
/* ---------------------------------------------------------------------------------- */

/* Weight types. Values are the GGML type ids (GGUF tensor info `type`). */
enum tm_wtype {
    TM_WTYPE_F32 = 0,
    TM_WTYPE_F16 = 1,
    TM_WTYPE_Q4_0 = 2,
    TM_WTYPE_Q4_1 = 3,
    TM_WTYPE_Q5_0 = 6,
    TM_WTYPE_Q5_1 = 7,
    TM_WTYPE_Q8_0 = 8,
    TM_WTYPE_Q2_K = 10,
    TM_WTYPE_Q3_K = 11,
    TM_WTYPE_Q4_K = 12,
    TM_WTYPE_Q5_K = 13,
    TM_WTYPE_Q6_K = 14,
    TM_WTYPE_BF16 = 30,
};

/* The block-quantised types (quants.h) as X(name, TM_WTYPE_...), in kernel-table order:
 * the per-type kernels, decoders and twins are generated from it. */
#define TM_QUANT_TYPES(X)                                                               \
    X(q4_0, TM_WTYPE_Q4_0)                                                              \
    X(q4_1, TM_WTYPE_Q4_1)                                                              \
    X(q5_0, TM_WTYPE_Q5_0)                                                              \
    X(q5_1, TM_WTYPE_Q5_1)                                                              \
    X(q2_k, TM_WTYPE_Q2_K)                                                              \
    X(q3_k, TM_WTYPE_Q3_K)                                                              \
    X(q4_k, TM_WTYPE_Q4_K)                                                              \
    X(q5_k, TM_WTYPE_Q5_K)                                                              \
    X(q6_k, TM_WTYPE_Q6_K)

/* KV cache element types (see kv_layout.h). */
enum tm_kv_dtype {
    TM_KV_F32 = 0,
    TM_KV_F16 = 1,
    TM_KV_FP8_E4M3 = 2,
    TM_KV_FP8_E5M2 = 3,
};

#define TM_Q8_0_BLOCK 32         /* values per Q8_0 block */
#define TM_Q8_0_BLOCK_BYTES 34   /* f16 scale + 32 int8 */

#define TM_ATTN_MAX_HEAD_DIM 256 /* attention kernels keep one head's accumulator in
                                  * shared memory */
#define TM_MATVEC_MAX_TOKENS 16  /* matvec is the right choice up to this many tokens
                                  * (batched decode); matmul above it. Both are correct
                                  * for any count. */

/* Values per block and bytes per block of weight type t (1 and the element size for
 * the float types); 0 for a type the kernels do not know. Block layouts: q8_0.h,
 * quants.h. */
static inline TM_HD int32_t tm_wtype_block(int32_t wtype) {
    switch (wtype) {
    case TM_WTYPE_F32: case TM_WTYPE_F16: case TM_WTYPE_BF16: return 1;
    case TM_WTYPE_Q4_0: case TM_WTYPE_Q4_1: case TM_WTYPE_Q5_0: case TM_WTYPE_Q5_1:
    case TM_WTYPE_Q8_0: return 32;
    case TM_WTYPE_Q2_K: case TM_WTYPE_Q3_K: case TM_WTYPE_Q4_K: case TM_WTYPE_Q5_K:
    case TM_WTYPE_Q6_K: return 256;
    default: return 0;
    }
}
static inline TM_HD int32_t tm_wtype_block_bytes(int32_t wtype) {
    switch (wtype) {
    case TM_WTYPE_F32: return 4;
    case TM_WTYPE_F16: case TM_WTYPE_BF16: return 2;
    case TM_WTYPE_Q4_0: return 18;
    case TM_WTYPE_Q4_1: return 20;
    case TM_WTYPE_Q5_0: return 22;
    case TM_WTYPE_Q5_1: return 24;
    case TM_WTYPE_Q8_0: return TM_Q8_0_BLOCK_BYTES;
    case TM_WTYPE_Q2_K: return 84;
    case TM_WTYPE_Q3_K: return 110;
    case TM_WTYPE_Q4_K: return 144;
    case TM_WTYPE_Q5_K: return 176;
    case TM_WTYPE_Q6_K: return 210;
    default: return 0;
    }
}

/* Bytes of one row of n_in values of weight type t; 0 for an unknown type or a row
 * whose length is not a multiple of the type's block (32 or 256 values). */
static inline TM_HD int64_t tm_wtype_row_bytes(int32_t wtype, int64_t n_in) {
    int32_t qk = tm_wtype_block(wtype);
    if (qk == 0 || n_in % qk) return 0;
    return n_in / qk * tm_wtype_block_bytes(wtype);
}

/* Launch geometry: what the caller passes to cuLaunchKernel. */
struct tm_geom {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_bytes; /* dynamic shared memory */
};

static inline TM_HD struct tm_geom tm_geom_make(unsigned gx, unsigned gy, unsigned gz,
                                                unsigned bx, unsigned shared_bytes) {
    struct tm_geom g = {{gx, gy, gz}, {bx, 1, 1}, shared_bytes};
    return g;
}

static inline TM_HD unsigned tm_div_up(int64_t n, int64_t d) {
    int64_t q = (n + d - 1) / d;
    return q < 1 ? 1u : (q > 0x7fffffff ? 0x7fffffffu : (unsigned)q);
}

/* ---------------------------------------------------------------------------------- */
/* Argument lists, one per family: P(type, name) in launch order                       */
/* ---------------------------------------------------------------------------------- */

/* tm_embed_<wtype>: out[t] = row ids[t] of the embedding table, converted to f32.
 * An id outside [0, vocab) gives a row of zeros (the engine rejects such ids before). */
#define TM_PARAMS_embed(P)                                                              \
    P(float *, out)          /* [n_tokens][dim] */                                      \
    P(const void *, table)   /* [vocab][dim] of the kernel's weight type */             \
    P(const int32_t *, ids)  /* [n_tokens] */                                           \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, dim)                                                                     \
    P(int32_t, vocab)

/* tm_rmsnorm: out[r][i] = x[r][i] / sqrt(mean_i(x[r][i]^2) + eps) * weight[i].
 * out may alias x. Norm weights are f32 (GGUF stores them so; convert others on load). */
#define TM_PARAMS_rmsnorm(P)                                                            \
    P(float *, out)          /* [n_rows][dim] */                                        \
    P(const float *, x)      /* [n_rows][dim] */                                        \
    P(const float *, weight) /* [dim] */                                                \
    P(int32_t, n_rows)                                                                  \
    P(int32_t, dim)                                                                     \
    P(float, eps)

/* tm_matvec_<wtype>, tm_matmul_<wtype>: out[t][o] = sum_i w[o][i] * x[t][i].
 * Same arguments and result (to rounding); matvec reads each weight row once per
 * TM_MATVEC_MAX_TOKENS tokens (decode), matmul tiles for many tokens (prefill).
 * out_stride lets the result land in a wider buffer (a fused QKV row); pass n_out
 * for a plain [n_tokens][n_out] output. */
#define TM_PARAMS_matmul(P)                                                             \
    P(float *, out)          /* [n_tokens][out_stride], columns [0, n_out) written */   \
    P(const float *, x)      /* [n_tokens][n_in] */                                     \
    P(const void *, w)       /* [n_out][n_in] of the kernel's weight type */            \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, n_in)                                                                    \
    P(int32_t, n_out)                                                                   \
    P(int32_t, out_stride)

/* tm_rope: rotates pairs of every head of every token, in place, by angle
 * pos[t] * base^(-2i/rot_dim) / freq_factors[i] (freq_factors NULL: no division; Llama 3.1
 * files carry them as rope_freqs.weight). Pair i < rot_dim/2 is (2i, 2i+1) when neox is 0
 * (GGUF / llama.cpp "normal" order, llama files), (i, i + rot_dim/2) when it is 1 (the
 * NEOX order of Qwen files). Dimensions from rot_dim up are left alone. Token t's heads
 * start at x + t * row_stride (row_stride = n_heads * head_dim for a plain q or k
 * buffer). A launch that names only the first eight arguments gets neither. */
#define TM_PARAMS_rope(P)                                                               \
    P(float *, x)            /* [n_tokens][row_stride], heads [n_heads][head_dim] */    \
    P(const int32_t *, pos)  /* [n_tokens] position of each token */                    \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, n_heads)                                                                 \
    P(int32_t, head_dim)                                                                \
    P(int32_t, rot_dim)                                                                 \
    P(int32_t, row_stride)                                                              \
    P(float, base)                                                                      \
    P(const float *, freq_factors) /* [rot_dim / 2] or NULL */                          \
    P(int32_t, neox)

/* tm_silu_mul: out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
 * out may alias gate or up. */
#define TM_PARAMS_silu_mul(P)                                                           \
    P(float *, out)          /* [n] */                                                  \
    P(const float *, gate)   /* [n] */                                                  \
    P(const float *, up)     /* [n] */                                                  \
    P(int64_t, n)

/* tm_add: out[i] = a[i] + b[i] (the residual). out may alias a or b. */
#define TM_PARAMS_add(P)                                                                \
    P(float *, out)          /* [n] */                                                  \
    P(const float *, a)      /* [n] */                                                  \
    P(const float *, b)      /* [n] */                                                  \
    P(int64_t, n)

/* tm_kv_append_<kvdtype>: stores token t's K and V (all KV heads) at slot slots[t]
 * (slot = block * block_size + offset in block) of this layer's K and V pools, laid
 * out as kv_layout.h says. A negative slot skips the token (padding).
 * f32: copied; f16: rounded to nearest even (overflow gives inf);
 * fp8_e4m3: sat(x / k_scale), sat(x / v_scale); fp8_e5m2: the same (pass 1.0f to run
 * unscaled). fp8 rounds to nearest even and saturates (fp8.h). Scales are ignored for
 * f32 and f16. */
#define TM_PARAMS_kv_append(P)                                                          \
    P(void *, k_pool)        /* this layer's K pages, kv_layout.h */                    \
    P(void *, v_pool)        /* this layer's V pages */                                 \
    P(const float *, k)      /* [n_tokens][k_stride], heads [n_kv_heads][head_dim] */   \
    P(const float *, v)      /* [n_tokens][v_stride], heads [n_kv_heads][head_dim] */   \
    P(const int32_t *, slots) /* [n_tokens] */                                          \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, n_kv_heads)                                                              \
    P(int32_t, head_dim)                                                                \
    P(int32_t, block_size)                                                              \
    P(int32_t, k_stride)     /* floats between tokens in k; n_kv_heads * head_dim */    \
    P(int32_t, v_stride)     /* floats between tokens in v */                           \
    P(float, k_scale)                                                                   \
    P(float, v_scale)

/* tm_attn_decode_<kvdtype>: one query token per sequence against that sequence's
 * paged K/V (the current token already appended):
 *   out[s][h] = sum_j softmax_j(attn_scale * q[s][h] . K[s][j][g]) V[s][j][g]
 * over j < seq_lens[s], with g = h / (n_heads / n_kv_heads) (grouped-query attention)
 * and K/V of position j at block block_tables[s][j / block_size], offset
 * j % block_size. Loaded fp8 values stand for q * k_scale (q * v_scale); both sides
 * fold k_scale into the score scale and v_scale into the output (kv_elem.h). A
 * sequence with seq_lens[s] <= 0 gets zeros. The softmax is the online (running max)
 * form, tile by tile of TM_ATTN_TILE positions, on both sides. As in kv_append, the
 * scales are ignored for f32 and f16 (tm_check_* still wants them > 0: pass 1.0f). */
#define TM_PARAMS_attn_decode(P)                                                        \
    P(float *, out)          /* [n_seqs][n_heads][head_dim] */                          \
    P(const float *, q)      /* [n_seqs][q_stride], heads [n_heads][head_dim] */        \
    P(const void *, k_pool)  /* this layer's K pages, kv_layout.h */                    \
    P(const void *, v_pool)  /* this layer's V pages */                                 \
    P(const int32_t *, block_tables) /* [n_seqs][max_blocks_per_seq] */                 \
    P(const int32_t *, seq_lens)     /* [n_seqs] positions to attend, current included */ \
    P(int32_t, n_seqs)                                                                  \
    P(int32_t, max_blocks_per_seq)                                                      \
    P(int32_t, n_heads)                                                                 \
    P(int32_t, n_kv_heads)                                                              \
    P(int32_t, head_dim)                                                                \
    P(int32_t, block_size)                                                              \
    P(int32_t, q_stride)     /* floats between sequences in q; n_heads * head_dim */    \
    P(float, attn_scale)     /* usually 1 / sqrt(head_dim) */                           \
    P(float, k_scale)                                                                   \
    P(float, v_scale)

/* tm_attn_prefill_<kvdtype>: causal attention for n_tokens consecutive query tokens of
 * ONE sequence, at positions start_pos .. start_pos + n_tokens - 1, over its paged K/V
 * (these tokens already appended). Query t attends to positions 0 .. start_pos + t.
 * Result for each query equals tm_attn_decode's for that position, to the bit: both
 * run the same per-query code. */
#define TM_PARAMS_attn_prefill(P)                                                       \
    P(float *, out)          /* [n_tokens][n_heads][head_dim] */                        \
    P(const float *, q)      /* [n_tokens][q_stride], heads [n_heads][head_dim] */      \
    P(const void *, k_pool)  /* this layer's K pages */                                 \
    P(const void *, v_pool)  /* this layer's V pages */                                 \
    P(const int32_t *, block_table) /* [n_blocks covering start_pos + n_tokens] */      \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, start_pos)                                                               \
    P(int32_t, n_heads)                                                                 \
    P(int32_t, n_kv_heads)                                                              \
    P(int32_t, head_dim)                                                                \
    P(int32_t, block_size)                                                              \
    P(int32_t, q_stride)                                                                \
    P(float, attn_scale)                                                                \
    P(float, k_scale)                                                                   \
    P(float, v_scale)

/* tm_softmax: each row in place, x[r][i] = exp(x[r][i] - max) / sum (max subtracted
 * first, so large logits do not overflow). */
#define TM_PARAMS_softmax(P)                                                            \
    P(float *, x)            /* [n_rows][n_cols] */                                     \
    P(int32_t, n_rows)                                                                  \
    P(int32_t, n_cols)

/* tm_argmax: out[r] = the index of the largest x[r][i]; ties go to the lowest index,
 * NaN is never chosen (a row of NaN gives 0). Greedy decoding. */
#define TM_PARAMS_argmax(P)                                                             \
    P(int32_t *, out)        /* [n_rows] */                                             \
    P(const float *, x)      /* [n_rows][n_cols] */                                     \
    P(int32_t, n_rows)                                                                  \
    P(int32_t, n_cols)

/* tm_absmax: out[0] = max(out[0], max_i |x[i]|) (NaN ignored). The caller sets out[0]
 * (0 to start). For calibrating fp8 KV scales: scale = absmax / 448 (e4m3). */
#define TM_PARAMS_absmax(P)                                                             \
    P(float *, out)          /* [1] */                                                  \
    P(const float *, x)      /* [n] */                                                  \
    P(int64_t, n)

/* tm_set_threads: the C twins use this many threads (0: OpenMP's default) from the
 * next launch on. The CUDA kernel does nothing. Launch it once, e.g. for --threads. */
#define TM_PARAMS_set_threads(P)                                                        \
    P(int32_t, n_threads)

/* ---------------------------------------------------------------------------------- */
/* The table: X(name, family, geometry)                                                */
/* ---------------------------------------------------------------------------------- */

#define TM_KERNEL_TABLE(X)                                                              \
    X(tm_embed_f32, embed, embed)                                                       \
    X(tm_embed_f16, embed, embed)                                                       \
    X(tm_embed_bf16, embed, embed)                                                      \
    X(tm_embed_q8_0, embed, embed)                                                      \
    X(tm_embed_q4_0, embed, embed)                                                      \
    X(tm_embed_q4_1, embed, embed)                                                      \
    X(tm_embed_q5_0, embed, embed)                                                      \
    X(tm_embed_q5_1, embed, embed)                                                      \
    X(tm_embed_q2_k, embed, embed)                                                      \
    X(tm_embed_q3_k, embed, embed)                                                      \
    X(tm_embed_q4_k, embed, embed)                                                      \
    X(tm_embed_q5_k, embed, embed)                                                      \
    X(tm_embed_q6_k, embed, embed)                                                      \
    X(tm_rmsnorm, rmsnorm, rmsnorm)                                                     \
    X(tm_matvec_f32, matmul, matvec)                                                    \
    X(tm_matvec_f16, matmul, matvec)                                                    \
    X(tm_matvec_bf16, matmul, matvec)                                                   \
    X(tm_matvec_q8_0, matmul, matvec)                                                   \
    X(tm_matvec_q4_0, matmul, matvec)                                                   \
    X(tm_matvec_q4_1, matmul, matvec)                                                   \
    X(tm_matvec_q5_0, matmul, matvec)                                                   \
    X(tm_matvec_q5_1, matmul, matvec)                                                   \
    X(tm_matvec_q2_k, matmul, matvec)                                                   \
    X(tm_matvec_q3_k, matmul, matvec)                                                   \
    X(tm_matvec_q4_k, matmul, matvec)                                                   \
    X(tm_matvec_q5_k, matmul, matvec)                                                   \
    X(tm_matvec_q6_k, matmul, matvec)                                                   \
    X(tm_matmul_f32, matmul, matmul)                                                    \
    X(tm_matmul_f16, matmul, matmul)                                                    \
    X(tm_matmul_bf16, matmul, matmul)                                                   \
    X(tm_matmul_q8_0, matmul, matmul)                                                   \
    X(tm_matmul_q4_0, matmul, matmul)                                                   \
    X(tm_matmul_q4_1, matmul, matmul)                                                   \
    X(tm_matmul_q5_0, matmul, matmul)                                                   \
    X(tm_matmul_q5_1, matmul, matmul)                                                   \
    X(tm_matmul_q2_k, matmul, matmul)                                                   \
    X(tm_matmul_q3_k, matmul, matmul)                                                   \
    X(tm_matmul_q4_k, matmul, matmul)                                                   \
    X(tm_matmul_q5_k, matmul, matmul)                                                   \
    X(tm_matmul_q6_k, matmul, matmul)                                                   \
    X(tm_rope, rope, rope)                                                              \
    X(tm_silu_mul, silu_mul, elementwise)                                               \
    X(tm_add, add, elementwise)                                                         \
    X(tm_kv_append_f32, kv_append, kv_append)                                           \
    X(tm_kv_append_f16, kv_append, kv_append)                                           \
    X(tm_kv_append_fp8_e4m3, kv_append, kv_append)                                      \
    X(tm_kv_append_fp8_e5m2, kv_append, kv_append)                                      \
    X(tm_attn_decode_f32, attn_decode, attn_decode)                                     \
    X(tm_attn_decode_f16, attn_decode, attn_decode)                                     \
    X(tm_attn_decode_fp8_e4m3, attn_decode, attn_decode)                                \
    X(tm_attn_decode_fp8_e5m2, attn_decode, attn_decode)                                \
    X(tm_attn_prefill_f32, attn_prefill, attn_prefill)                                  \
    X(tm_attn_prefill_f16, attn_prefill, attn_prefill)                                  \
    X(tm_attn_prefill_fp8_e4m3, attn_prefill, attn_prefill)                             \
    X(tm_attn_prefill_fp8_e5m2, attn_prefill, attn_prefill)                             \
    X(tm_softmax, softmax, row)                                                         \
    X(tm_argmax, argmax, row)                                                           \
    X(tm_absmax, absmax, absmax)                                                        \
    X(tm_moe_route, moe_route, moe_route)                                               \
    X(tm_moe_matvec_f32, moe_matvec, moe_matvec)                                        \
    X(tm_moe_matvec_f16, moe_matvec, moe_matvec)                                        \
    X(tm_moe_matvec_bf16, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q8_0, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q4_0, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q4_1, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q5_0, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q5_1, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q2_k, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q3_k, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q4_k, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q5_k, moe_matvec, moe_matvec)                                       \
    X(tm_moe_matvec_q6_k, moe_matvec, moe_matvec)                                       \
    X(tm_moe_combine, moe_combine, moe_combine)                                         \
    X(tm_set_threads, set_threads, single)

/* Kernel ids: fn[TM_K_tm_rmsnorm]; tm_kernel_names[id] is the symbol to look up. */
enum tm_kernel_id {
#define TM_X_ID(name, family, geom) TM_K_##name,
    TM_KERNEL_TABLE(TM_X_ID)
#undef TM_X_ID
    TM_KERNEL_COUNT
};

#ifndef __CUDACC__
static const char *const tm_kernel_names[TM_KERNEL_COUNT] = {
#define TM_X_NAME(name, family, geom) #name,
    TM_KERNEL_TABLE(TM_X_NAME)
#undef TM_X_NAME
};
#endif

/* Kernel names by type, for the engine's choice at load time. */
static inline int tm_kernel_for_wtype(int base, int32_t wtype) {
    /* base is TM_K_tm_embed_f32, TM_K_tm_matvec_f32 or TM_K_tm_matmul_f32 */
    switch (wtype) {
    case TM_WTYPE_F32: return base;
    case TM_WTYPE_F16: return base + 1;
    case TM_WTYPE_BF16: return base + 2;
    case TM_WTYPE_Q8_0: return base + 3;
    case TM_WTYPE_Q4_0: return base + 4;
    case TM_WTYPE_Q4_1: return base + 5;
    case TM_WTYPE_Q5_0: return base + 6;
    case TM_WTYPE_Q5_1: return base + 7;
    case TM_WTYPE_Q2_K: return base + 8;
    case TM_WTYPE_Q3_K: return base + 9;
    case TM_WTYPE_Q4_K: return base + 10;
    case TM_WTYPE_Q5_K: return base + 11;
    case TM_WTYPE_Q6_K: return base + 12;
    default: return -1;
    }
}
static inline int tm_kernel_for_kv(int base, int32_t kv_dtype) {
    /* base is TM_K_tm_kv_append_f32, TM_K_tm_attn_decode_f32 or TM_K_tm_attn_prefill_f32 */
    return kv_dtype >= TM_KV_F32 && kv_dtype <= TM_KV_FP8_E5M2 ? base + kv_dtype : -1;
}

/* ---------------------------------------------------------------------------------- */
/* Generated per family: args struct, param count, pack/unpack, typed parameter list   */
/* ---------------------------------------------------------------------------------- */

#define TM_P_FIELD(type, name) type name;
#define TM_P_COUNT(type, name) +1
#define TM_P_PACK(type, name) params[i++] = (void *)&a->name;
#define TM_P_UNPACK(type, name) a->name = *(type const *)params[i++];
#define TM_P_DECL(type, name) , type name
#define TM_P_ARG(type, name) , args.name
#define TM_DROP_FIRST_(first, ...) __VA_ARGS__
#define TM_DROP_FIRST(...) TM_DROP_FIRST_(__VA_ARGS__)

/* The typed parameter list of a family: `float *out, const float *x, ...` */
#define TM_DECLARE_PARAMS(family) TM_DROP_FIRST(~ TM_PARAMS_##family(TM_P_DECL))
/* The fields of a struct tm_args_<family> variable named `args` as call arguments:
 * `args.out, args.x, ...` */
#define TM_CALL_ARGS(family) TM_DROP_FIRST(~ TM_PARAMS_##family(TM_P_ARG))

#define TM_DEFINE_FAMILY(family)                                                        \
    struct tm_args_##family { TM_PARAMS_##family(TM_P_FIELD) };                         \
    enum { TM_NPARAMS_##family = 0 TM_PARAMS_##family(TM_P_COUNT) };                    \
    static inline void tm_params_##family(struct tm_args_##family *a, void **params) { \
        int i = 0;                                                                      \
        TM_PARAMS_##family(TM_P_PACK)                                                   \
    }                                                                                   \
    static inline void tm_unpack_##family(void *const *params,                          \
                                          struct tm_args_##family *a) {                 \
        int i = 0;                                                                      \
        TM_PARAMS_##family(TM_P_UNPACK)                                                 \
    }

TM_DEFINE_FAMILY(embed)
TM_DEFINE_FAMILY(rmsnorm)
TM_DEFINE_FAMILY(matmul)
TM_DEFINE_FAMILY(rope)
TM_DEFINE_FAMILY(silu_mul)
TM_DEFINE_FAMILY(add)
TM_DEFINE_FAMILY(kv_append)
TM_DEFINE_FAMILY(attn_decode)
TM_DEFINE_FAMILY(attn_prefill)
TM_DEFINE_FAMILY(softmax)
TM_DEFINE_FAMILY(argmax)
TM_DEFINE_FAMILY(absmax)
TM_DEFINE_FAMILY(set_threads)

/* ---------------------------------------------------------------------------------- */
/* Launch geometry. The CUDA kernels rely on exactly these block sizes.                */
/* ---------------------------------------------------------------------------------- */

#define TM_BLOCK_THREADS 256   /* rows, elementwise, embed, matvec (8 warps) */
#define TM_MATVEC_ROWS 8       /* matvec: one warp per output row, 8 rows per block */
#define TM_MATMUL_TILE 64      /* matmul: a 64 (out) x 64 (token) tile per block */
#define TM_ATTN_THREADS 128    /* attention: one block per (head, query) */
#define TM_ATTN_TILE 128       /* attention: positions scored per online-softmax step */
#define TM_KV_THREADS 128      /* kv_append: one block per (token, kv head) */

static inline struct tm_geom tm_geom_embed(const struct tm_args_embed *a) {
    return tm_geom_make(tm_div_up(a->n_tokens, 1), 1, 1, TM_BLOCK_THREADS, 0);
}
static inline struct tm_geom tm_geom_rmsnorm(const struct tm_args_rmsnorm *a) {
    return tm_geom_make(tm_div_up(a->n_rows, 1), 1, 1, TM_BLOCK_THREADS, 0);
}
static inline struct tm_geom tm_geom_matvec(const struct tm_args_matmul *a) {
    return tm_geom_make(tm_div_up(a->n_out, TM_MATVEC_ROWS), 1, 1, TM_BLOCK_THREADS, 0);
}
static inline struct tm_geom tm_geom_matmul(const struct tm_args_matmul *a) {
    return tm_geom_make(tm_div_up(a->n_out, TM_MATMUL_TILE),
                        tm_div_up(a->n_tokens, TM_MATMUL_TILE), 1, TM_BLOCK_THREADS, 0);
}
static inline struct tm_geom tm_geom_rope(const struct tm_args_rope *a) {
    return tm_geom_make(tm_div_up(a->n_tokens, 1), 1, 1, TM_KV_THREADS, 0);
}
/* Elementwise kernels loop grid-stride, so any grid is correct; this one is the contract. */
#define TM_ELEMENTWISE_MAX_BLOCKS 65535
static inline unsigned tm_elementwise_blocks(int64_t n) {
    unsigned b = tm_div_up(n, TM_BLOCK_THREADS);
    return b > TM_ELEMENTWISE_MAX_BLOCKS ? TM_ELEMENTWISE_MAX_BLOCKS : b;
}
static inline struct tm_geom tm_geom_elementwise_n(int64_t n) {
    return tm_geom_make(tm_elementwise_blocks(n), 1, 1, TM_BLOCK_THREADS, 0);
}
#define tm_geom_elementwise(a) tm_geom_elementwise_n((a)->n)
static inline struct tm_geom tm_geom_kv_append(const struct tm_args_kv_append *a) {
    return tm_geom_make(tm_div_up(a->n_tokens, 1), tm_div_up(a->n_kv_heads, 1), 1,
                        TM_KV_THREADS, 0);
}
static inline struct tm_geom tm_geom_attn_decode(const struct tm_args_attn_decode *a) {
    return tm_geom_make(tm_div_up(a->n_heads, 1), tm_div_up(a->n_seqs, 1), 1,
                        TM_ATTN_THREADS, 0);
}
static inline struct tm_geom tm_geom_attn_prefill(const struct tm_args_attn_prefill *a) {
    return tm_geom_make(tm_div_up(a->n_heads, 1), tm_div_up(a->n_tokens, 1), 1,
                        TM_ATTN_THREADS, 0);
}
#define tm_geom_row(a) tm_geom_make(tm_div_up((a)->n_rows, 1), 1, 1, TM_BLOCK_THREADS, 0)
static inline struct tm_geom tm_geom_absmax(const struct tm_args_absmax *a) {
    (void)a;
    return tm_geom_make(1, 1, 1, TM_BLOCK_THREADS, 0);
}
static inline struct tm_geom tm_geom_single(const struct tm_args_set_threads *a) {
    (void)a;
    return tm_geom_make(1, 1, 1, 1, 0);
}

/* ---------------------------------------------------------------------------------- */
/* Argument checks: NULL when valid, else what is wrong                                */
/* ---------------------------------------------------------------------------------- */

/* wtype: the weight type of the kernel about to be launched (Q8_0 needs dim % 32 == 0). */
static inline const char *tm_check_embed(const struct tm_args_embed *a, int32_t wtype) {
    if (!a->out || !a->table || !a->ids) return "embed: NULL pointer";
    if (a->n_tokens < 0 || a->dim <= 0 || a->vocab <= 0)
        return "embed: n_tokens must be >= 0, dim and vocab > 0";
    if (tm_wtype_row_bytes(wtype, a->dim) == 0)
        return tm_wtype_block(wtype) > 1 ? "embed: dim must be a multiple of the weight type's block (32 or 256 values)"
                                         : "embed: unsupported weight type";
    return NULL;
}
static inline const char *tm_check_rmsnorm(const struct tm_args_rmsnorm *a) {
    if (!a->out || !a->x || !a->weight) return "rmsnorm: NULL pointer";
    if (a->n_rows < 0 || a->dim <= 0) return "rmsnorm: n_rows must be >= 0, dim > 0";
    if (!(a->eps >= 0)) return "rmsnorm: eps must be >= 0";
    return NULL;
}
/* wtype: the weight type of the kernel about to be launched (Q8_0 needs n_in % 32 == 0). */
static inline const char *tm_check_matmul(const struct tm_args_matmul *a, int32_t wtype) {
    if (!a->out || !a->x || !a->w) return "matmul: NULL pointer";
    if (a->n_tokens < 0 || a->n_in <= 0 || a->n_out <= 0)
        return "matmul: n_tokens must be >= 0, n_in and n_out > 0";
    if (a->out_stride < a->n_out) return "matmul: out_stride must be >= n_out";
    if (tm_wtype_row_bytes(wtype, a->n_in) == 0)
        return tm_wtype_block(wtype) > 1 ? "matmul: n_in must be a multiple of the weight type's block (32 or 256 values)"
                                         : "matmul: unsupported weight type";
    return NULL;
}
static inline const char *tm_check_rope(const struct tm_args_rope *a) {
    if (!a->x || !a->pos) return "rope: NULL pointer";
    if (a->n_tokens < 0 || a->n_heads <= 0 || a->head_dim <= 0)
        return "rope: n_tokens must be >= 0, n_heads and head_dim > 0";
    if (a->rot_dim < 0 || a->rot_dim > a->head_dim || a->rot_dim % 2)
        return "rope: rot_dim must be even and at most head_dim";
    if ((int64_t)a->row_stride < (int64_t)a->n_heads * a->head_dim)
        return "rope: row_stride must be >= n_heads * head_dim";
    if (!(a->base > 0)) return "rope: base must be > 0";
    if (a->neox != 0 && a->neox != 1) return "rope: neox must be 0 or 1";
    return NULL;
}
static inline const char *tm_check_silu_mul(const struct tm_args_silu_mul *a) {
    if (!a->out || !a->gate || !a->up) return "silu_mul: NULL pointer";
    return a->n < 0 ? "silu_mul: n must be >= 0" : NULL;
}
static inline const char *tm_check_add(const struct tm_args_add *a) {
    if (!a->out || !a->a || !a->b) return "add: NULL pointer";
    return a->n < 0 ? "add: n must be >= 0" : NULL;
}
static inline const char *tm_check_kv_common(int32_t n_kv_heads, int32_t head_dim,
                                             int32_t block_size) {
    if (n_kv_heads <= 0 || head_dim <= 0 || block_size <= 0)
        return "n_kv_heads, head_dim and block_size must be > 0";
    if (head_dim > TM_ATTN_MAX_HEAD_DIM) return "head_dim above TM_ATTN_MAX_HEAD_DIM (256)";
    return NULL;
}
static inline const char *tm_check_kv_append(const struct tm_args_kv_append *a) {
    if (!a->k_pool || !a->v_pool || !a->k || !a->v || !a->slots)
        return "kv_append: NULL pointer";
    if (a->n_tokens < 0) return "kv_append: n_tokens must be >= 0";
    const char *e = tm_check_kv_common(a->n_kv_heads, a->head_dim, a->block_size);
    if (e) return e;
    if ((int64_t)a->k_stride < (int64_t)a->n_kv_heads * a->head_dim ||
        (int64_t)a->v_stride < (int64_t)a->n_kv_heads * a->head_dim)
        return "kv_append: k_stride and v_stride must be >= n_kv_heads * head_dim";
    if (!(a->k_scale > 0) || !(a->v_scale > 0)) return "kv_append: scales must be > 0";
    return NULL;
}
static inline const char *tm_check_attn_heads(int32_t n_heads, int32_t n_kv_heads,
                                              int32_t head_dim, int32_t q_stride) {
    if (n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads)
        return "attention: n_heads must be a positive multiple of n_kv_heads";
    if ((int64_t)q_stride < (int64_t)n_heads * head_dim)
        return "attention: q_stride must be >= n_heads * head_dim";
    return NULL;
}
static inline const char *tm_check_attn_decode(const struct tm_args_attn_decode *a) {
    if (!a->out || !a->q || !a->k_pool || !a->v_pool || !a->block_tables || !a->seq_lens)
        return "attn_decode: NULL pointer";
    if (a->n_seqs < 0 || a->max_blocks_per_seq <= 0)
        return "attn_decode: n_seqs must be >= 0, max_blocks_per_seq > 0";
    const char *e = tm_check_kv_common(a->n_kv_heads, a->head_dim, a->block_size);
    if (!e) e = tm_check_attn_heads(a->n_heads, a->n_kv_heads, a->head_dim, a->q_stride);
    if (!e && (!(a->k_scale > 0) || !(a->v_scale > 0))) e = "attn_decode: scales must be > 0";
    return e;
}
static inline const char *tm_check_attn_prefill(const struct tm_args_attn_prefill *a) {
    if (!a->out || !a->q || !a->k_pool || !a->v_pool || !a->block_table)
        return "attn_prefill: NULL pointer";
    if (a->n_tokens < 0 || a->start_pos < 0)
        return "attn_prefill: n_tokens and start_pos must be >= 0";
    const char *e = tm_check_kv_common(a->n_kv_heads, a->head_dim, a->block_size);
    if (!e) e = tm_check_attn_heads(a->n_heads, a->n_kv_heads, a->head_dim, a->q_stride);
    if (!e && (!(a->k_scale > 0) || !(a->v_scale > 0))) e = "attn_prefill: scales must be > 0";
    return e;
}
static inline const char *tm_check_softmax(const struct tm_args_softmax *a) {
    if (!a->x) return "softmax: NULL pointer";
    return a->n_rows < 0 || a->n_cols <= 0 ? "softmax: n_rows must be >= 0, n_cols > 0" : NULL;
}
static inline const char *tm_check_argmax(const struct tm_args_argmax *a) {
    if (!a->out || !a->x) return "argmax: NULL pointer";
    return a->n_rows < 0 || a->n_cols <= 0 ? "argmax: n_rows must be >= 0, n_cols > 0" : NULL;
}
static inline const char *tm_check_absmax(const struct tm_args_absmax *a) {
    if (!a->out || !a->x) return "absmax: NULL pointer";
    return a->n < 0 ? "absmax: n must be >= 0" : NULL;
}
static inline const char *tm_check_set_threads(const struct tm_args_set_threads *a) {
    return a->n_threads < 0 ? "set_threads: n_threads must be >= 0" : NULL;
}

#include "kernels/moe.h"

#endif /* TM_KERNELS_H */
