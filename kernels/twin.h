/* twin.h — what the C twins share: unpacking a simcuda launch into the typed body,
 * checking the launch geometry and the arguments, and the thread count.
 *
 * TM_TWIN(name, family, geom, body, check, touch) defines the exported kernel `name`. It
 * unpacks launch->params into struct tm_args_<family> args, refuses a launch whose
 * grid/block/shared memory differ from tm_geom_<geom>(&args) (a CUDA kernel launched
 * that way would compute garbage, so the twin says so instead of hiding it), refuses
 * arguments that `check` (an expression over args) finds wrong, declares to simcuda what
 * it reads and writes with `touch` (an expression over launch and args, usually
 * tm_touch_<family>(launch, &args, ...) from twin_touch.c), and then calls
 * body(args.out, args.x, ...). A refused launch writes nothing and prints one line
 * to stderr per kernel name. It also exports the family's parameter layout
 * (SIMCUDA_KERNEL_PARAMS), so simcuda copies the arguments at launch.
 *
 * A new kernel of an existing family passes that family's touch function (with its
 * weight or KV type); a new family adds one tm_touch_<family> below and in twin_touch.c.
 */
#ifndef TM_TWIN_H
#define TM_TWIN_H

#include "tools/simcuda/simcuda.h"
#include "kernels/kernels.h"

/* Threads for the twins' parallel loops (tm_set_threads, else OpenMP's default). */
int tm_twin_threads(void);

/* 1 when the launch used `want`; otherwise reports it (once per `reported` flag) and 0. */
int tm_twin_geom_ok(const char *name, const simcuda_launch *launch, struct tm_geom want,
                    int *reported);

/* Reports a refused launch once per `reported` flag. */
void tm_twin_refuse(const char *name, const char *why, int *reported);

/* What each family touches (twin_touch.c); wtype / kv_dtype: the kernel's element type,
 * tokens_per_pass: tokens served per read of the weights (the geometry's token tile). */
void tm_touch_embed(const simcuda_launch *l, const struct tm_args_embed *a, int32_t wtype);
void tm_touch_rmsnorm(const simcuda_launch *l, const struct tm_args_rmsnorm *a);
void tm_touch_matmul(const simcuda_launch *l, const struct tm_args_matmul *a, int32_t wtype,
                     int32_t tokens_per_pass);
void tm_touch_rope(const simcuda_launch *l, const struct tm_args_rope *a);
void tm_touch_silu_mul(const simcuda_launch *l, const struct tm_args_silu_mul *a);
void tm_touch_add(const simcuda_launch *l, const struct tm_args_add *a);
void tm_touch_kv_append(const simcuda_launch *l, const struct tm_args_kv_append *a, int32_t kv_dtype);
void tm_touch_attn_decode(const simcuda_launch *l, const struct tm_args_attn_decode *a, int32_t kv_dtype);
void tm_touch_attn_prefill(const simcuda_launch *l, const struct tm_args_attn_prefill *a,
                           int32_t kv_dtype);
void tm_touch_softmax(const simcuda_launch *l, const struct tm_args_softmax *a);
void tm_touch_argmax(const simcuda_launch *l, const struct tm_args_argmax *a);
void tm_touch_absmax(const simcuda_launch *l, const struct tm_args_absmax *a);
/* The MoE families (moe.c): the expert matvec declares only the experts its tokens chose. */
void tm_touch_moe_route(const simcuda_launch *l, const struct tm_args_moe_route *a);
void tm_touch_moe_matvec(const simcuda_launch *l, const struct tm_args_moe_matvec *a, int32_t wtype);
void tm_touch_moe_combine(const simcuda_launch *l, const struct tm_args_moe_combine *a);

#define TM_P_SIMCUDA_PARAM(type, name) SIMCUDA_PARAM(type),

#define TM_TWIN(name, family, geom, body, check, touch)                                 \
    SIMCUDA_KERNEL_PARAMS(name, TM_PARAMS_##family(TM_P_SIMCUDA_PARAM));                \
    SIMCUDA_KERNEL(name) {                                                              \
        static int reported;                                                            \
        struct tm_args_##family args;                                                   \
        tm_unpack_##family(launch->params, &args);                                      \
        if (!tm_twin_geom_ok(#name, launch, tm_geom_##geom(&args), &reported)) return;  \
        const char *why = (check);                                                      \
        if (why) { tm_twin_refuse(#name, why, &reported); return; }                     \
        touch;                                                                          \
        body(TM_CALL_ARGS(family));                                                     \
    }

#endif /* TM_TWIN_H */
