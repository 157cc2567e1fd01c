/* deferred_move.c — the queue of migrations made off the caller's path (see
 * deferred_move.h). */
#include "preload/move/deferred_move.h"

#include <pthread.h>

#include "preload/base/log.h"
#include "preload/move/migrate.h"
#include "preload/region/stats.h"

typedef struct move_request {
    CUdeviceptr address;
    uint64_t bytes;
    tm_tier_id tier;
} move_request;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static move_request queue[TM_DEFERRED_MOVES_MAX]; /* a ring: [head, head + count) */
static int head, count;
static bool running, stopping;
static pthread_t worker;

static void *move_loop(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&queue_lock);
    for (;;) {
        while (!count && !stopping)
            pthread_cond_wait(&queue_cond, &queue_lock);
        if (stopping)
            break;
        move_request r = queue[head];
        head = (head + 1) % TM_DEFERRED_MOVES_MAX;
        count--;
        pthread_mutex_unlock(&queue_lock);
        CUresult result = tm_migrate_range(r.address, r.bytes, r.tier);
        if (result != CUDA_SUCCESS && result != CUDA_ERROR_INVALID_VALUE) /* INVALID_VALUE: freed meanwhile */
            tm_log_once(TM_LOG_INFO, "a name rule's move of 0x%llx to %s did not complete (error %d)",
                        (unsigned long long)r.address, tm_tier_name(r.tier), (int)result);
        tm_stat_add(name_moves_done, 1);
        pthread_mutex_lock(&queue_lock);
    }
    pthread_mutex_unlock(&queue_lock);
    return NULL;
}

bool tm_deferred_move(CUdeviceptr address, uint64_t bytes, tm_tier_id tier)
{
    pthread_mutex_lock(&queue_lock);
    bool queued = false;
    if (!running && !stopping) {
        running = pthread_create(&worker, NULL, move_loop, NULL) == 0;
        if (!running)
            tm_log_once(TM_LOG_WARN, "cannot start the thread that moves chunks for name rules");
    }
    move_request *last = count ? &queue[(head + count - 1) % TM_DEFERRED_MOVES_MAX] : NULL;
    if (!running || stopping) {
        /* refused */
    } else if (last && last->tier == tier && last->address + last->bytes == address) {
        last->bytes += bytes;
        queued = true;
    } else if (count < TM_DEFERRED_MOVES_MAX) {
        queue[(head + count) % TM_DEFERRED_MOVES_MAX] = (move_request){ address, bytes, tier };
        count++;
        tm_stat_add(name_moves_queued, 1);
        queued = true;
        pthread_cond_signal(&queue_cond);
    }
    pthread_mutex_unlock(&queue_lock);
    return queued;
}

void tm_deferred_move_stop(void)
{
    pthread_mutex_lock(&queue_lock);
    bool was_running = running;
    stopping = true;
    if (count) /* dropped: nobody will make these moves */
        tm_stat_add(name_moves_done, count);
    count = 0;
    pthread_cond_signal(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
    if (was_running)
        pthread_join(worker, NULL);
    running = false;
}

void tm_deferred_move_forget_in_child(void)
{
    pthread_mutex_init(&queue_lock, NULL);
    pthread_cond_init(&queue_cond, NULL);
    head = count = 0;
    running = stopping = false;
}
