/* submit_gate.c — the submission gate (see submit_gate.h). */
#include "preload/driver/submit_gate.h"

#include <pthread.h>

static uint64_t submissions;
static pthread_rwlock_t gate;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;

/* Writers first: a migration waiting to close is not starved by a stream of launches. */
static void gate_init(void)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&gate, &attr);
    pthread_rwlockattr_destroy(&attr);
}

void tm_gate_enter(void)
{
    pthread_once(&gate_once, gate_init);
    pthread_rwlock_rdlock(&gate);
    __atomic_fetch_add(&submissions, 1, __ATOMIC_SEQ_CST);
}

void tm_gate_leave(void)
{
    pthread_rwlock_unlock(&gate);
}

uint64_t tm_gate_submissions(void)
{
    return __atomic_load_n(&submissions, __ATOMIC_SEQ_CST);
}

void tm_gate_close(void)
{
    pthread_once(&gate_once, gate_init);
    pthread_rwlock_wrlock(&gate);
}

void tm_gate_open(void)
{
    pthread_rwlock_unlock(&gate);
}

void tm_gate_reinit_in_child(void)
{
    pthread_once(&gate_once, gate_init);
    gate_init();
}
