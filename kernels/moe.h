/* moe.h — the mixture-of-experts kernels' arguments, geometry and checks (included by
 * kernels.h, whose conventions they follow).
 *
 * A MoE feed-forward layer, per token t:
 *   tm_moe_route:          router logits [n_expert] -> the top_k experts ids[t][k] and
 *                          their weights, softmax over the chosen logits (Mixtral's gating:
 *                          softmax over all, keep the top k, renormalise: the same values)
 *   tm_moe_matvec_<wtype>: y[t][k] = W[ids[t][k]] · x, where W is [n_expert][n_out][n_in]
 *                          (a GGUF *_exps tensor) and x is token t's row (gate, up) or
 *                          slot (t, k)'s row (down): only the chosen experts are read
 *   tm_moe_combine:        out[t] = sum_k weights[t][k] * y[t][k]
 */
#ifndef TM_MOE_H
#define TM_MOE_H

#define TM_MOE_MAX_EXPERTS 256 /* router width the route kernel keeps in shared memory */
#define TM_MOE_MAX_USED 16     /* experts per token */

#define TM_PARAMS_moe_route(P)                                                          \
    P(int32_t *, ids)        /* [n_tokens][top_k] chosen experts, best first */         \
    P(float *, weights)      /* [n_tokens][top_k] their gate weights, summing to 1 */   \
    P(const float *, logits) /* [n_tokens][n_expert] router logits */                  \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, n_expert)                                                                \
    P(int32_t, top_k)

#define TM_PARAMS_moe_matvec(P)                                                         \
    P(float *, out)          /* [n_tokens][top_k][n_out] */                             \
    P(const float *, x)      /* [n_tokens][n_in], or [n_tokens][top_k][n_in] per slot */ \
    P(const void *, w)       /* [n_expert][n_out][n_in] of the kernel's weight type */   \
    P(const int32_t *, ids)  /* [n_tokens][top_k] from tm_moe_route */                  \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, top_k)                                                                   \
    P(int32_t, n_expert)                                                                \
    P(int32_t, n_in)                                                                    \
    P(int32_t, n_out)                                                                   \
    P(int32_t, x_per_slot)   /* 0: x row per token; 1: per (token, slot) */

#define TM_PARAMS_moe_combine(P)                                                        \
    P(float *, out)          /* [n_tokens][n_out] */                                    \
    P(const float *, y)      /* [n_tokens][top_k][n_out] */                             \
    P(const float *, weights) /* [n_tokens][top_k] */                                   \
    P(int32_t, n_tokens)                                                                \
    P(int32_t, top_k)                                                                   \
    P(int32_t, n_out)

TM_DEFINE_FAMILY(moe_route)
TM_DEFINE_FAMILY(moe_matvec)
TM_DEFINE_FAMILY(moe_combine)

/* route: one block per token; matvec: a warp per output row (as matvec), a grid row per
 * (token, slot); combine: one block per token. */
static inline struct tm_geom tm_geom_moe_route(const struct tm_args_moe_route *a) {
    return tm_geom_make(tm_div_up(a->n_tokens, 1), 1, 1, TM_BLOCK_THREADS, 0);
}
static inline struct tm_geom tm_geom_moe_matvec(const struct tm_args_moe_matvec *a) {
    return tm_geom_make(tm_div_up(a->n_out, TM_MATVEC_ROWS), tm_div_up((int64_t)a->n_tokens * a->top_k, 1),
                        1, TM_BLOCK_THREADS, 0);
}
static inline struct tm_geom tm_geom_moe_combine(const struct tm_args_moe_combine *a) {
    return tm_geom_make(tm_div_up(a->n_tokens, 1), 1, 1, TM_BLOCK_THREADS, 0);
}

static inline const char *tm_check_moe_counts(int32_t n_tokens, int32_t n_expert, int32_t top_k) {
    if (n_tokens < 0) return "moe: n_tokens must be >= 0";
    if (n_expert < 1 || n_expert > TM_MOE_MAX_EXPERTS) return "moe: n_expert must be 1 to 256";
    if (top_k < 1 || top_k > TM_MOE_MAX_USED || top_k > n_expert)
        return "moe: top_k must be 1 to 16 and at most n_expert";
    return NULL;
}
static inline const char *tm_check_moe_route(const struct tm_args_moe_route *a) {
    if (!a->ids || !a->weights || !a->logits) return "moe_route: NULL pointer";
    return tm_check_moe_counts(a->n_tokens, a->n_expert, a->top_k);
}
static inline const char *tm_check_moe_matvec(const struct tm_args_moe_matvec *a, int32_t wtype) {
    if (!a->out || !a->x || !a->w || !a->ids) return "moe_matvec: NULL pointer";
    const char *e = tm_check_moe_counts(a->n_tokens, a->n_expert, a->top_k);
    if (e) return e;
    if (a->n_in <= 0 || a->n_out <= 0) return "moe_matvec: n_in and n_out must be > 0";
    if (a->x_per_slot != 0 && a->x_per_slot != 1) return "moe_matvec: x_per_slot must be 0 or 1";
    if (tm_wtype_row_bytes(wtype, a->n_in) == 0)
        return tm_wtype_block(wtype) > 1 ? "moe_matvec: n_in must be a multiple of the weight type's block"
                                         : "moe_matvec: unsupported weight type";
    return NULL;
}
static inline const char *tm_check_moe_combine(const struct tm_args_moe_combine *a) {
    if (!a->out || !a->y || !a->weights) return "moe_combine: NULL pointer";
    if (a->n_tokens < 0 || a->top_k < 1 || a->top_k > TM_MOE_MAX_USED || a->n_out <= 0)
        return "moe_combine: n_tokens >= 0, top_k 1 to 16 and n_out > 0";
    return NULL;
}

#endif /* TM_MOE_H */
