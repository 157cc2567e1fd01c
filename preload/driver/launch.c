/* launch.c — the path of every launch (see launch.h). */
#include "preload/driver/launch.h"

#include "preload/driver/driver.h"
#include "preload/driver/submit_gate.h"

#define MAX_WATCHERS 32

bool tm_launched;

bool tm_launch_capturing(tm_launch *l)
{
    if (l->capturing < 0)
        l->capturing = tm_stream_capturing(l->stream, l->per_thread);
    return l->capturing;
}

/* The call through the gate, once what the watchers made ready still holds there. */
static CUresult submit_prepared(tm_launch *l, tm_launch_call call)
{
    for (;;) {
        uint64_t epoch[MAX_WATCHERS];
        uint32_t held = 0;
        for (int i = 0; tm_launch_watchers[i] && i < MAX_WATCHERS; i++) {
            const tm_launch_watcher *w = tm_launch_watchers[i];
            if (!w->prepare || !__atomic_load_n(w->preparing, __ATOMIC_RELAXED))
                continue;
            CUresult r = w->prepare(l, &epoch[i]);
            if (r != CUDA_SUCCESS)
                return r;
            if (epoch[i] != TM_LAUNCH_NOTHING_HELD)
                held |= 1u << i;
        }
        tm_gate_enter();
        bool holds = true;
        for (int i = 0; held >> i; i++)
            if (held >> i & 1)
                holds = holds && tm_launch_watchers[i]->holds(epoch[i]);
        CUresult r = holds ? call(l) : CUDA_SUCCESS;
        tm_gate_leave();
        if (holds)
            return r;
    }
}

CUresult tm_launch_submit(tm_launch *l, tm_launch_call call)
{
    uint32_t after = 0;
    if (l->f) {
        if (!__atomic_load_n(&tm_launched, __ATOMIC_RELAXED))
            __atomic_store_n(&tm_launched, true, __ATOMIC_RELEASE);
        for (int i = 0; tm_launch_watchers[i] && i < MAX_WATCHERS; i++) {
            const tm_launch_watcher *w = tm_launch_watchers[i];
            if (w->before && __atomic_load_n(w->watching, __ATOMIC_RELAXED) && w->before(l))
                after |= 1u << i;
        }
    }
    CUresult r = submit_prepared(l, call);
    for (int i = 0; after >> i; i++)
        if (after >> i & 1)
            tm_launch_watchers[i]->after(l, r);
    return r;
}
