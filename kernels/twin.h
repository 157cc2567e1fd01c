/* twin.h — what the C twins share: unpacking a simcuda launch into the typed body,
 * checking the launch geometry and the arguments, and the thread count.
 *
 * TM_TWIN(name, family, geom, body, check) defines the exported kernel `name`. It
 * unpacks launch->params into struct tm_args_<family> args, refuses a launch whose
 * grid/block/shared memory differ from tm_geom_<geom>(&args) (a CUDA kernel launched
 * that way would compute garbage, so the twin says so instead of hiding it), refuses
 * arguments that `check` (an expression over args) finds wrong, and then calls
 * body(args.out, args.x, ...). A refused launch writes nothing and prints one line
 * to stderr per kernel name.
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

#define TM_TWIN(name, family, geom, body, check)                                        \
    SIMCUDA_KERNEL(name) {                                                              \
        static int reported;                                                            \
        struct tm_args_##family args;                                                   \
        tm_unpack_##family(launch->params, &args);                                      \
        if (!tm_twin_geom_ok(#name, launch, tm_geom_##geom(&args), &reported)) return;  \
        const char *why = (check);                                                      \
        if (why) { tm_twin_refuse(#name, why, &reported); return; }                     \
        body(TM_CALL_ARGS(family));                                                     \
    }

#endif /* TM_TWIN_H */
