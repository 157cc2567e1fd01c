/* submit_gate.h — the fence of a migration: hooked calls that submit work which may touch
 * chunked memory (launches, copies into the device) pass a gate, and count themselves.
 *
 * A migration closes the gate, so no new work is submitted while it drains what was
 * submitted before (cuCtxSynchronize covers every stream of the context, tracked or not)
 * and remaps; the count tells it whether anything was submitted while its copy ran, so a
 * chunk written meanwhile is copied again under the closed gate. Passing an open gate is
 * one uncontended read lock. */
#ifndef TM_PRELOAD_SUBMIT_GATE_H
#define TM_PRELOAD_SUBMIT_GATE_H

#include <stdint.h>

/* Around the submission in a hook. */
void tm_gate_enter(void);
void tm_gate_leave(void);

/* A driver call that submits work, passed through the gate. */
#define TM_GATED(call)                     \
    ({                                     \
        tm_gate_enter();                   \
        CUresult tm_gated_ = (call);       \
        tm_gate_leave();                   \
        tm_gated_;                         \
    })

/* Submissions counted so far. */
uint64_t tm_gate_submissions(void);

/* Migration side: no submission runs between close and open. */
void tm_gate_close(void);
void tm_gate_open(void);

/* A fork child starts with an open gate. */
void tm_gate_reinit_in_child(void);

#endif /* TM_PRELOAD_SUBMIT_GATE_H */
